package compare

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// The reference values come from benchstat itself, built from the module
// flightdeck pins (in a scratch module: GOFLAGS=-mod=mod GOPROXY=off go
// build golang.org/x/perf/cmd/benchstat). Each case's A values were
// written to a.txt and its B values to b.txt, one benchfmt line per value
// ("BenchmarkSep5 1 1505 tok/s"), and compared with
//
//	benchstat a.txt b.txt
//	benchstat -format csv a.txt b.txt   (the medians with all their digits)
//
// which printed:
//
//	        │     a.txt     │                  b.txt                   │
//	        │     tok/s     │     tok/s      vs base                   │
//	Sep5      1.510k ±  ∞ ¹   1.466k ±  ∞ ¹   -2.91% (p=0.008 n=5)
//	Sep6       62.55 ± 1%      89.10 ± 1%    +42.45% (p=0.002 n=6)
//	Three      101.0 ±  ∞ ¹    111.0 ±  ∞ ¹        ~ (p=0.100 n=3)   ²
//	Same       52.00 ±  ∞ ¹    52.00 ±  ∞ ¹        ~ (p=1.000 n=5)
//	Overlap    100.1 ± 1%      101.2 ± 1%          ~ (p=0.065 n=8)
//	Uneven     75.60 ±  ∞ ¹    87.95 ± 1%    +16.34% (p=0.004 n=5+6)
//	Ten       10.450 ± 3%      9.600 ± 3%     -8.13% (p=0.000 n=10)
//	Close      100.1 ± 0%      100.8 ± 0%     +0.65% (p=0.015 n=6)
//	¹ need >= 6 samples for confidence interval at level 0.95
//	² need >= 4 samples to detect a difference at alpha level 0.05
//
// and, in CSV, the medians 1510/1466, 62.55/89.1, 101/111, 52/52,
// 100.1/101.25, 75.6/87.95, 10.45/9.6, 100.1/100.75.
var compareCases = []struct {
	name           string
	a, b           []float64
	medA, medB     float64
	pctA, pctB     string
	delta, pn      string
	significant    bool
	fewForVerdict  bool // benchstat's footnote ²
	unboundedA, uB bool // footnote ¹ on that side
}{
	{name: "Sep5", a: []float64{1505, 1510, 1512, 1508, 1514}, b: []float64{1466, 1470, 1462, 1468, 1465},
		medA: 1510, medB: 1466, pctA: "∞", pctB: "∞", delta: "-2.91%", pn: "p=0.008 n=5", significant: true, unboundedA: true, uB: true},
	{name: "Sep6", a: []float64{62.1, 62.8, 62.5, 63.0, 62.3, 62.6}, b: []float64{89.2, 88.5, 89.9, 88.8, 89.4, 89.0},
		medA: 62.55, medB: 89.1, pctA: "1%", pctB: "1%", delta: "+42.45%", pn: "p=0.002 n=6", significant: true},
	{name: "Three", a: []float64{100, 101, 102}, b: []float64{110, 111, 112},
		medA: 101, medB: 111, pctA: "∞", pctB: "∞", delta: "~", pn: "p=0.100 n=3", fewForVerdict: true, unboundedA: true, uB: true},
	{name: "Same", a: []float64{50, 51, 52, 53, 54}, b: []float64{50, 51, 52, 53, 54},
		medA: 52, medB: 52, pctA: "∞", pctB: "∞", delta: "~", pn: "p=1.000 n=5", unboundedA: true, uB: true},
	{name: "Overlap", a: []float64{100.2, 99.1, 101.5, 100.8, 98.7, 100.0, 101.1, 99.6}, b: []float64{100.9, 101.8, 99.9, 102.2, 100.4, 101.6, 100.1, 102.5},
		medA: 100.1, medB: 101.25, pctA: "1%", pctB: "1%", delta: "~", pn: "p=0.065 n=8"},
	{name: "Uneven", a: []float64{75.1, 76.0, 75.6, 76.4, 75.3}, b: []float64{86.9, 88.2, 87.5, 89.1, 87.7, 88.6},
		medA: 75.6, medB: 87.95, pctA: "∞", pctB: "1%", delta: "+16.34%", pn: "p=0.004 n=5+6", significant: true, unboundedA: true},
	{name: "Ten", a: []float64{10.5, 10.1, 10.9, 10.3, 10.7, 10.2, 10.8, 10.4, 10.6, 10.0}, b: []float64{9.6, 9.9, 9.4, 9.8, 9.5, 9.7, 9.3, 9.9, 9.6, 9.2},
		medA: 10.45, medB: 9.6, pctA: "3%", pctB: "3%", delta: "-8.13%", pn: "p=0.000 n=10", significant: true},
	{name: "Close", a: []float64{100.0, 100.4, 99.8, 100.6, 100.2, 99.9}, b: []float64{100.3, 101.0, 100.5, 101.2, 100.8, 100.7},
		medA: 100.1, medB: 100.75, pctA: "0%", pctB: "0%", delta: "+0.65%", pn: "p=0.015 n=6", significant: true},
}

const (
	warnCI      = "need >= 6 samples for confidence interval at level 0.95"
	warnVerdict = "need >= 4 samples to detect a difference at alpha level 0.05"
)

func TestSamplesAgreesWithBenchstat(t *testing.T) {
	for _, tc := range compareCases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := slices.Clone(tc.a), slices.Clone(tc.b)
			c := Samples(a, b)
			if !slices.Equal(a, tc.a) || !slices.Equal(b, tc.b) {
				t.Error("Samples changed its input")
			}
			if math.Abs(c.A.Median-tc.medA) > 1e-9 || math.Abs(c.B.Median-tc.medB) > 1e-9 {
				t.Errorf("medians %v, %v; benchstat says %v, %v", c.A.Median, c.B.Median, tc.medA, tc.medB)
			}
			if got := c.A.PctRange(); got != tc.pctA {
				t.Errorf("A ±%s, benchstat says ±%s", got, tc.pctA)
			}
			if got := c.B.PctRange(); got != tc.pctB {
				t.Errorf("B ±%s, benchstat says ±%s", got, tc.pctB)
			}
			if got := c.Delta(); got != tc.delta {
				t.Errorf("Delta() = %s, benchstat says %s", got, tc.delta)
			}
			if got := c.PN(); got != tc.pn {
				t.Errorf("PN() = %s, benchstat says %s", got, tc.pn)
			}
			if c.Significant != tc.significant {
				t.Errorf("Significant = %v (p=%v)", c.Significant, c.P)
			}
			if got := slices.Contains(c.Warnings, warnVerdict); got != tc.fewForVerdict {
				t.Errorf("warning %q present = %v; warnings %q", warnVerdict, got, c.Warnings)
			}
			if got := slices.Contains(c.A.Warnings, warnCI); got != tc.unboundedA {
				t.Errorf("A's CI warning present = %v; warnings %q", got, c.A.Warnings)
			}
			if got := slices.Contains(c.B.Warnings, warnCI); got != tc.uB {
				t.Errorf("B's CI warning present = %v; warnings %q", got, c.B.Warnings)
			}
			if !c.HasDelta || math.Abs(c.DeltaPct-(tc.medB-tc.medA)/tc.medA*100) > 1e-9 {
				t.Errorf("DeltaPct = %v, HasDelta %v", c.DeltaPct, c.HasDelta)
			}
		})
	}
}

// TestSamplesDegenerate: an empty side, a zero median and values that are
// not finite give "?" and never a verdict.
func TestSamplesDegenerate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		a, b  []float64
		delta string
		pn    string
		warn  string
	}{
		{"empty A", nil, []float64{1, 2, 3, 4}, "?", "p=1.000 n=0+4", "no samples"},
		{"empty both", nil, nil, "?", "p=1.000 n=0", "no samples"},
		{"zero median", []float64{0, 0, 0, 0}, []float64{1, 2, 3, 4}, "?", "p=0.029 n=4", ""},
		// benchstat checks p first: not significant is "~" even when A's
		// median is 0.
		{"zero median, not significant", []float64{0, 0, 0, 1}, []float64{0, 1, 0, 0}, "~", "p=1.000 n=4", ""},
		{"all zero", []float64{0, 0, 0, 0}, []float64{0, 0, 0, 0}, "~", "p=1.000 n=4", ""},
		{"NaN", []float64{1, math.NaN(), 3, 4}, []float64{5, 6, 7, 8}, "?", "p=1.000 n=0+4", "not a finite number"},
		{"Inf", []float64{1, 2, 3, 4}, []float64{5, math.Inf(1), 7, 8}, "?", "p=1.000 n=4+0", "not a finite number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Samples(tc.a, tc.b)
			if got := c.Delta(); got != tc.delta {
				t.Errorf("Delta() = %s, want %s", got, tc.delta)
			}
			if got := c.PN(); got != tc.pn {
				t.Errorf("PN() = %s, want %s", got, tc.pn)
			}
			if c.HasDelta {
				t.Errorf("HasDelta with %v vs %v", tc.a, tc.b)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(c.Warnings, "\n"), tc.warn) {
				t.Errorf("warnings %q lack %q", c.Warnings, tc.warn)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		pct  float64
		okay bool
	}{
		{nil, 0, false},
		{[]float64{88}, 0, false},
		{[]float64{0, 0, 0}, 0, false},
		{[]float64{100, 100}, 0, true},
		{[]float64{100, 102, 98, 101}, 2.5 / 100.5 * 100, true},       // median 100.5; 98 is farthest
		{[]float64{89, 88.5, 89.9, 88.8, 89.4}, 0.9 / 89 * 100, true}, // median 89; 89.9 is farthest
		{[]float64{-10, -12, -11}, 1.0 / 11 * 100, true},
	} {
		pct, ok := Spread(tc.in)
		if ok != tc.okay || math.Abs(pct-tc.pct) > 1e-9 {
			t.Errorf("Spread(%v) = %v, %v; want %v, %v", tc.in, pct, ok, tc.pct, tc.okay)
		}
	}
}
