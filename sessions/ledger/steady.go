package ledger

import (
	"math"
	"slices"
	"time"
)

// Point is one sample of a series: a value (tok/s) and when it was
// observed.
type Point struct {
	At    time.Time
	Value float64
}

// The warm-up and idle rules of SteadyState.
const (
	// WarmupSamples is how many samples after the reference time are
	// always dropped: the first reports after ready come from the first
	// requests of a benchmark (CUDA graphs being replayed for new batch
	// sizes, caches filling).
	WarmupSamples = 3
	// WarmupTime is how long after the reference time samples are dropped,
	// however many there are.
	WarmupTime = 10 * time.Second
	// IdleFraction: a sample below this fraction of the median of the
	// positive samples that survive the warm-up is an idle value (the
	// server idles between benchmark requests and logs a trickle) and is
	// dropped.
	IdleFraction = 0.10
)

// Steady is the steady state of a series.
type Steady struct {
	// Kept are the indices of the kept points, ascending; Values their
	// values, in the same order.
	Kept   []int
	Values []float64
	// Dropped counts the points left out: before the reference time, in the
	// warm-up, idle, or not a finite positive number.
	Dropped int
}

// SteadyState returns the steady-state part of points (in time order; the
// samples the caller already knows to be artefacts, such as serverlog's
// Dropped rates, must not be passed). ready is when the server became ready
// (or the run began, if later); zero means unknown, and the first point's
// time is used instead.
//
// The rules, in order:
//  1. points before ready are dropped (the server was not serving);
//  2. of the rest, the first WarmupSamples points and every point less
//     than WarmupTime after ready are dropped, whichever drops more;
//  3. values that are not finite or not positive are dropped;
//  4. values below IdleFraction × the median of what is left are dropped.
//
// It costs O(n log n) time and O(n) memory.
func SteadyState(points []Point, ready time.Time) Steady {
	if len(points) == 0 {
		return Steady{}
	}
	if ready.IsZero() {
		ready = points[0].At
	}
	cut := ready.Add(WarmupTime)
	var cand []int
	after := 0 // points at or after ready seen so far
	for i, p := range points {
		if p.At.Before(ready) {
			continue
		}
		after++
		if after <= WarmupSamples || p.At.Before(cut) {
			continue
		}
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) || p.Value <= 0 {
			continue
		}
		cand = append(cand, i)
	}
	var s Steady
	if len(cand) > 0 {
		vals := make([]float64, len(cand))
		for j, i := range cand {
			vals[j] = points[i].Value
		}
		floor := IdleFraction * Median(vals)
		s.Kept = make([]int, 0, len(cand))
		s.Values = make([]float64, 0, len(cand))
		for _, i := range cand {
			if v := points[i].Value; v >= floor {
				s.Kept = append(s.Kept, i)
				s.Values = append(s.Values, v)
			}
		}
	}
	s.Dropped = len(points) - len(s.Kept)
	return s
}

// Median returns the median of values (the mean of the two middle ones for
// an even count), or NaN for none. values is not modified.
func Median(values []float64) float64 {
	n := len(values)
	if n == 0 {
		return math.NaN()
	}
	v := slices.Clone(values)
	slices.Sort(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// MinLaunchSamples is how many steady-state tok/s samples a launch needs
// to count as one sample of the across-launch verdict: a launch killed in
// its warm-up measured nothing.
const MinLaunchSamples = 3
