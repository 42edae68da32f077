package experiments

import (
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestResultText(t *testing.T) {
	lo, hi := 87.14, 90.25
	for _, c := range []struct {
		r    event.ExperimentResult
		want string
	}{
		{event.ExperimentResult{}, "no tok/s samples"},
		// The words of the reports for an interval there is none of
		// (compare.FormatInterval).
		{event.ExperimentResult{N: 4, Median: 88.94}, "88.9 tok/s [n<6] n=4"},
		{event.ExperimentResult{N: 8, Median: 88.94}, "88.9 tok/s [unbounded] n=8"},
		{event.ExperimentResult{N: 24, Median: 88.94, Lo: &lo, Hi: &hi}, "88.9 tok/s [87.1, 90.2] n=24"},
	} {
		if got := ResultText(c.r); got != c.want {
			t.Errorf("ResultText(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}

// TestDeltaText: the cockpit's deltas read as the journal's
// (compare.FormatDelta).
func TestDeltaText(t *testing.T) {
	for _, c := range []struct {
		v, base float64
		want    string
	}{
		{88.9, 82.3, "+8.0%"}, {61.6, 82.3, "-25.2%"}, {82.3, 82.3, "+0.0%"}, {82.3001, 82.3, "+0.0%"},
		{5, 0, "-"}, {5, -1, "-"},
	} {
		if got := DeltaText(c.v, c.base); got != c.want {
			t.Errorf("DeltaText(%v, %v) = %q, want %q", c.v, c.base, got, c.want)
		}
	}
}
