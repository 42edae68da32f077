package ledger

import (
	"math"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// series makes points every step seconds from start (seconds after t0).
func series(start, step float64, values ...float64) []Point {
	ps := make([]Point, len(values))
	for i, v := range values {
		ps[i] = Point{At: t0.Add(time.Duration((start + step*float64(i)) * float64(time.Second))), Value: v}
	}
	return ps
}

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestSteadyState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		points  []Point
		ready   time.Time
		values  []float64
		dropped int
	}{
		{"empty", nil, at(0), nil, 0},
		{"three after ready when reports are slow",
			// Every 5 s: 10 s after ready covers 2 samples, the first 3 go.
			series(5, 5, 40, 80, 88, 89, 90, 91), at(0), []float64{89, 90, 91}, 3},
		{"ten seconds after ready when reports are fast",
			// Every 2 s from 2 s: samples at 2,4,6,8 are inside 10 s; 10 is not.
			series(2, 2, 10, 50, 70, 85, 88, 89, 90), at(0), []float64{88, 89, 90}, 4},
		{"before ready",
			series(0, 5, 1, 2, 3, 80, 81, 82, 83, 84), at(12), []float64{83, 84}, 6},
		{"ready unknown: from the first point",
			series(100, 5, 60, 70, 80, 89, 90), time.Time{}, []float64{89, 90}, 3},
		{"idle trickle between requests",
			series(0, 5, 9, 9, 9, 88, 3.5, 89, 0.2, 90, 91), at(0), []float64{88, 89, 90, 91}, 5},
		{"nine percent of the median is idle, ten is not",
			series(0, 5, 9, 9, 9, 100, 100, 9.9, 10, 100), at(0), []float64{100, 100, 10, 100}, 4},
		{"zero, negative and non-finite values",
			series(0, 5, 1, 1, 1, 88, 0, -5, math.NaN(), math.Inf(1), 89), at(0), []float64{88, 89}, 7},
		{"everything is warm-up", series(1, 1, 5, 6, 7, 8), at(0), nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := SteadyState(tc.points, tc.ready)
			if !slices.Equal(s.Values, tc.values) || s.Dropped != tc.dropped {
				t.Errorf("kept %v, dropped %d; want %v, %d", s.Values, s.Dropped, tc.values, tc.dropped)
			}
			if len(s.Kept) != len(s.Values) {
				t.Fatalf("%d indices for %d values", len(s.Kept), len(s.Values))
			}
			for j, i := range s.Kept {
				if tc.points[i].Value != s.Values[j] || (j > 0 && s.Kept[j-1] >= i) {
					t.Errorf("index %d does not give value %v in order", i, s.Values[j])
				}
			}
		})
	}
}

func TestMedian(t *testing.T) {
	if !math.IsNaN(Median(nil)) {
		t.Error("median of nothing is a number")
	}
	in := []float64{3, 1, 2, 10}
	if m := Median(in); m != 2.5 || in[0] != 3 {
		t.Errorf("median %v of %v", m, in)
	}
	if m := Median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median %v", m)
	}
}

// BenchmarkSteadyState24h is a 24 h session's tok/s series (one report a
// second): what a provisional result costs when the screen draws it.
func BenchmarkSteadyState24h(b *testing.B) {
	ps := make([]Point, 86400)
	for i := range ps {
		ps[i] = Point{At: at(float64(i)), Value: 80 + float64(i%17)}
	}
	b.ReportAllocs()
	for b.Loop() {
		s := SteadyState(ps, t0)
		Summarize(s.Values)
	}
}
