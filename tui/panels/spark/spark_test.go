package spark

import (
	"math"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The median skips gaps; none without a figure.
func TestMedian(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		v    []float64
		want float64
		ok   bool
	}{
		{nil, 0, false},
		{[]float64{nan, nan}, 0, false},
		{[]float64{3, 1, 2}, 2, true},
		{[]float64{4, nan, 1, 3, 2}, 2.5, true},
	} {
		if got, ok := median(c.v); got != c.want || ok != c.ok {
			t.Errorf("median(%v) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

// A series past Points keeps the newest, and the line is never wider than
// asked.
func TestSeriesKeepsTheNewest(t *testing.T) {
	var s Series
	for i := range Points + 10 {
		s.Apply(event.TokRate{TokPerSec: float64(i)})
	}
	if len(s.vals) != Points || s.at(0) != 10 || s.at(Points-1) != Points+9 {
		t.Fatalf("%d values, oldest %v, newest %v", len(s.vals), s.at(0), s.at(Points-1))
	}
	st := style.Plain()
	for w := 1; w <= 120; w++ {
		if got := style.Width(style.StripSGR(s.Render(&st, w))); got > w {
			t.Errorf("width %d: %d cells", w, got)
		}
	}
}
