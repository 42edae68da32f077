// Package compare compares experiments. Compare puts experiment B (new)
// against A (old) among a session's experiments (package ledger) and gives
// a Diff: each result (the server log's tok/s; the benchmark's output tok/s
// and latencies) with its verdict across server launches, the Mann–Whitney
// U test over one value per launch the way benchstat does it (Samples:
// golang.org/x/perf/benchmath, AssumeNothing, α = 0.05); the
// launch-to-launch (A/A) noise of each configuration (Spread); and every
// fingerprint variable of both (commit, dirty patch, env, flags, benchmark
// settings, versions, GPUs, host), the changed ones first.
//
// Fingerprint values are compared as the words the reports (package
// report) write them in, so the words are here: the checkout's (PatchText,
// DiffStat, FilesText, BranchText, FormatBytes) and the GPUs'
// (GPUStateSummary, ThrottleReasons). Medians and their intervals are
// ledger.Summarize's.
package compare

import (
	"fmt"
	"math"

	"golang.org/x/perf/benchmath"

	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// Alpha is the significance level of Samples' verdict, benchstat's default.
const Alpha = 0.05

// Comparison is the verdict on two samples, A the old and B the new, as
// benchstat gives it: the medians, the delta, and the Mann–Whitney U test's
// p-value at level Alpha.
type Comparison struct {
	A, B ledger.Summary // each side's median and 95 % interval
	// DeltaPct is (B.Median − A.Median) / A.Median × 100, percent; 0 and
	// HasDelta false when A's median is 0 or a side is empty.
	DeltaPct float64
	HasDelta bool
	// P is the two-sided Mann–Whitney U test's p-value (benchmath
	// AssumeNothing.Compare); 1 when a side is empty.
	P float64
	// N1 and N2 are the sample sizes that were compared: 0 for a side
	// refused for a value that is not finite.
	N1, N2 int
	// Significant says P ≤ Alpha (and both sides have values): the
	// difference is unlikely to be noise.
	Significant bool
	// Warnings are benchmath's, as text ("need >= 4 samples to detect a
	// difference at alpha level 0.05"), and the sides' summary warnings.
	Warnings []string
}

// Samples compares samples a (old) and b (new) with benchmath.AssumeNothing
// at level Alpha, exactly as benchstat compares two columns. Values that
// are not finite make a side empty, with a warning. a and b are not
// modified.
func Samples(a, b []float64) Comparison {
	c := Comparison{A: ledger.Summarize(a), B: ledger.Summarize(b), P: 1}
	c.N1, c.N2 = c.A.N, c.B.N
	c.Warnings = append(c.Warnings, c.A.Warnings...)
	c.Warnings = append(c.Warnings, c.B.Warnings...)
	if c.A.N == 0 || c.B.N == 0 {
		return c
	}
	if c.A.Median != 0 {
		c.DeltaPct = (c.B.Median - c.A.Median) / c.A.Median * 100
		c.HasDelta = true
	}
	sa := benchmath.NewSample(append([]float64(nil), a...), &benchmath.DefaultThresholds)
	sb := benchmath.NewSample(append([]float64(nil), b...), &benchmath.DefaultThresholds)
	cmp := benchmath.AssumeNothing.Compare(sa, sb)
	c.P = cmp.P
	if math.IsNaN(c.P) {
		c.P = 1
	}
	for _, w := range cmp.Warnings {
		c.Warnings = append(c.Warnings, w.Error())
	}
	c.Significant = c.P <= Alpha
	return c
}

// Delta is the verdict as benchstat prints it (benchmath's FormatDelta),
// checked in its order: "?" when a side is empty (nothing was compared);
// "~" when not significant, whatever the medians; "0.00%" when the
// medians are equal; "?" when A's median is 0; else the signed delta with
// two decimals ("+42.40%", "-8.00%").
func (c Comparison) Delta() string {
	switch {
	case c.A.N == 0 || c.B.N == 0:
		return "?"
	case !c.Significant:
		return "~"
	case c.A.Median == c.B.Median:
		return "0.00%"
	case !c.HasDelta:
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", c.DeltaPct)
}

// PN is the test's p-value and sample sizes as benchstat prints them:
// "p=0.008 n=5" when the sizes agree, "p=0.008 n=5+6" when they differ.
func (c Comparison) PN() string {
	if c.N1 == c.N2 {
		return fmt.Sprintf("p=%.3f n=%d", c.P, c.N1)
	}
	return fmt.Sprintf("p=%.3f n=%d+%d", c.P, c.N1, c.N2)
}

// Spread is the launch-to-launch (A/A) noise of values, one per run of the
// same configuration: the largest distance of a value from their median,
// in percent of the median. ok is false with fewer than 2 values or a zero
// median.
func Spread(values []float64) (pct float64, ok bool) {
	if len(values) < 2 {
		return 0, false
	}
	m := ledger.Median(values)
	if m == 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return 0, false
	}
	for _, v := range values {
		pct = math.Max(pct, math.Abs(v-m)/math.Abs(m)*100)
	}
	return pct, true
}
