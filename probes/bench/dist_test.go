package bench

import (
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"math"
	"testing"
)

// The reference values come from numpy 1.24.2 (Debian bookworm's
// python3-numpy), as sglang.bench_serving computes them:
//
//	/usr/bin/python3 -c "
//	import numpy as np
//	for x in [[12.5, 3.25, 7.0, 19.75, 4.5, 4.5, 30.125, 8.0, 11.0, 2.0, 16.5], [5.0], [1.0, 2.0], [0.1*i*i for i in range(1,101)]]:
//	  a=np.array(x)
//	  print(repr(float(np.mean(a))), repr(float(np.median(a))), repr(float(np.percentile(a,90))), repr(float(np.percentile(a,99))), repr(float(np.std(a))), repr(float(np.max(a))))"
func TestNewDistMatchesNumpy(t *testing.T) {
	squares := make([]float64, 100)
	for i := range squares {
		squares[i] = 0.1 * float64(i+1) * float64(i+1)
	}
	for _, tc := range []struct {
		name string
		x    []float64
		want event.Dist
	}{
		{"eleven unsorted with a tie", []float64{12.5, 3.25, 7.0, 19.75, 4.5, 4.5, 30.125, 8.0, 11.0, 2.0, 16.5},
			event.Dist{N: 11, Mean: 10.829545454545455, Median: 8.0, P90: 19.75, P99: 29.087500000000002, Std: 8.118839050052733, Max: 30.125}},
		{"one", []float64{5}, event.Dist{N: 1, Mean: 5, Median: 5, P90: 5, P99: 5, Std: 0, Max: 5}},
		{"two", []float64{2, 1}, event.Dist{N: 2, Mean: 1.5, Median: 1.5, P90: 1.9, P99: 1.99, Std: 0.5, Max: 2}},
		{"hundred squares", squares, event.Dist{N: 100, Mean: 338.35, Median: 255.05, P90: 811.8100000000002, P99: 980.2990000000001, Std: 300.91960803510295, Max: 1000}},
		{"empty", nil, event.Dist{}},
		{"NaN and Inf left out", []float64{math.NaN(), 1, math.Inf(1), 2}, event.Dist{N: 2, Mean: 1.5, Median: 1.5, P90: 1.9, P99: 1.99, Std: 0.5, Max: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewDist(tc.x)
			near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
			if got.N != tc.want.N || !near(got.Mean, tc.want.Mean) || !near(got.Median, tc.want.Median) || !near(got.P90, tc.want.P90) ||
				!near(got.P99, tc.want.P99) || !near(got.Std, tc.want.Std) || !near(got.Max, tc.want.Max) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestPercentileBounds(t *testing.T) {
	x := []float64{1, 2, 3}
	for _, p := range []float64{-1, 101, math.NaN()} {
		if v := Percentile(x, p); !math.IsNaN(v) {
			t.Errorf("Percentile(%v) = %v, want NaN", p, v)
		}
	}
	if v := Percentile(nil, 50); !math.IsNaN(v) {
		t.Errorf("empty: %v", v)
	}
	if Percentile(x, 0) != 1 || Percentile(x, 100) != 3 {
		t.Errorf("ends: %v %v", Percentile(x, 0), Percentile(x, 100))
	}
}
