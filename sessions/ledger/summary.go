package ledger

import (
	"fmt"
	"math"

	"golang.org/x/perf/benchmath"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Confidence is the confidence level of the interval Summarize computes.
const Confidence = 0.95

// Summary is the median of a sample and its confidence interval.
type Summary struct {
	N      int     // how many values
	Median float64 // same unit as the values; 0 when N is 0
	// Lo and Hi bound the median's confidence interval; nil when that side
	// is unbounded (benchmath needs at least 6 values for a finite 95 %
	// interval; with 5 only the upper bound is finite).
	Lo, Hi *float64
	// Confidence is the interval's actual confidence level (≥ the level
	// asked for: order statistics give discrete levels); 0 when N is 0.
	Confidence float64
	// Warnings are benchmath's, as text: "need >= 6 samples for
	// confidence interval at level 0.95"; "no samples" when N is 0.
	Warnings []string
}

// Summarize returns the median of values and its Confidence (95 %)
// interval, computed by benchmath.AssumeNothing as benchstat does. Values
// that are not finite make the summary meaningless: they are refused with
// a warning and a zero summary. values is not modified.
func Summarize(values []float64) Summary {
	if len(values) == 0 {
		return Summary{Warnings: []string{"no samples"}}
	}
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Summary{Warnings: []string{fmt.Sprintf("%d values include one that is not a finite number", len(values))}}
		}
	}
	sample := benchmath.NewSample(append([]float64(nil), values...), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(sample, Confidence)
	s := Summary{N: len(values), Median: sum.Center, Confidence: sum.Confidence}
	if !math.IsInf(sum.Lo, 0) && !math.IsNaN(sum.Lo) {
		lo := sum.Lo
		s.Lo = &lo
	}
	if !math.IsInf(sum.Hi, 0) && !math.IsNaN(sum.Hi) {
		hi := sum.Hi
		s.Hi = &hi
	}
	for _, w := range sum.Warnings {
		s.Warnings = append(s.Warnings, w.Error())
	}
	return s
}

// PctRange is the interval's half-width as benchstat prints it
// (benchmath.Summary.PctRangeString): the larger of Hi/Median−1 and
// 1−Lo/Median, in percent rounded to a whole number ("1%"); "∞" when a side
// is unbounded, "?" when a bound has the other sign than the median, "0%"
// for an all-zero sample.
func (s Summary) PctRange() string {
	b := benchmath.Summary{Center: s.Median, Lo: math.Inf(-1), Hi: math.Inf(1)}
	if s.Lo != nil {
		b.Lo = *s.Lo
	}
	if s.Hi != nil {
		b.Hi = *s.Hi
	}
	return b.PctRangeString()
}

// ResultOf summarises kept tok/s values into an event.ExperimentResult.
func ResultOf(values []float64, dropped int, accept []float64) event.ExperimentResult {
	sum := Summarize(values)
	r := event.ExperimentResult{Metric: "tok/s", Samples: values, N: sum.N, Dropped: dropped, Median: sum.Median,
		Lo: sum.Lo, Hi: sum.Hi, Confidence: sum.Confidence, Warnings: sum.Warnings}
	if len(accept) > 0 {
		r.AcceptLength = Median(accept)
	}
	return r
}
