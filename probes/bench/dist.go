package bench

import (
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"math"
	"slices"
)

// NewDist summarises values (ms) as sglang.bench_serving does with numpy:
// np.mean, np.median, np.percentile(…, 90 and 99) with linear
// interpolation, np.std (population) and max. NaN and infinite values are
// left out (they cannot come from a clock). values is not modified. An
// empty input gives the zero Dist.
func NewDist(values []float64) event.Dist {
	x := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			x = append(x, v)
		}
	}
	if len(x) == 0 {
		return event.Dist{}
	}
	slices.Sort(x)
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	mean := sum / float64(len(x))
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return event.Dist{
		N:      len(x),
		Mean:   mean,
		Median: Percentile(x, 50),
		P90:    Percentile(x, 90),
		P99:    Percentile(x, 99),
		Std:    math.Sqrt(ss / float64(len(x))),
		Max:    x[len(x)-1],
	}
}

// Percentile is numpy's default ("linear") percentile of sorted, p in
// [0, 100]: the value at rank (n−1)·p/100, interpolated between its two
// neighbours (lerp written as numpy writes it, from the nearer side). It
// returns NaN for an empty slice or p outside [0, 100].
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 || !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	q := p / 100
	vi := float64(n-1) * q
	lo := math.Floor(vi)
	i := int(lo)
	if i >= n-1 {
		return sorted[n-1]
	}
	t := vi - lo
	a, b := sorted[i], sorted[i+1]
	if t >= 0.5 {
		return b - (b-a)*(1-t)
	}
	return a + (b-a)*t
}
