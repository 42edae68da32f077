package ledger

import (
	"math"
	"slices"
	"testing"
)

// The reference values come from benchstat itself. Each sample was written
// to a file in benchfmt format, one line per value:
//
//	goos: linux
//	BenchmarkRun 1 89.1 tok/s
//	...
//
// and summarised with
//
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -format csv FILE
//
// which printed (median, CI):
//
//	eight.txt:    Run,89.19999999999999,1%
//	five.txt:     Run,62.4,∞   (footnote: need >= 6 samples for confidence interval at level 0.95)
//	twenty.txt:   Run,81.35,2%
//	fortyone.txt: Run,1467,1%
//
// (the text format shows the same: "89.20 ± 1%", "62.40 ± ∞ ¹", "81.35 ±
// 2%", "1.467k ± 1%"). fortyone has more than 30 values, where the
// interval comes from the normal approximation of the binomial.
var benchstatCases = []struct {
	name    string
	values  []float64
	median  float64
	pct     string
	bounded bool
	warning string
}{
	{"eight", []float64{89.1, 88.4, 90.2, 87.9, 89.6, 91.0, 88.8, 89.3}, 89.2, "1%", true, ""},
	{"five", []float64{62.1, 63.0, 61.8, 62.6, 62.4}, 62.4, "∞", false, "need >= 6 samples for confidence interval at level 0.95"},
	{"twenty", []float64{78.5, 78.6, 84.0, 75.1, 81.6, 75.2, 85.3, 82.6, 86.1, 80.5, 83.2, 81.1, 79.8, 82.4, 78.2, 80.9, 84.1, 82.2, 80.8, 88.6}, 81.35, "2%", true, ""},
	{"fortyone", []float64{1468, 1443, 1472, 1445, 1451, 1452, 1547, 1467, 1473, 1493, 1547, 1457, 1441, 1565, 1408, 1451, 1493, 1557, 1428, 1369, 1492,
		1445, 1451, 1484, 1475, 1478, 1449, 1518, 1526, 1467, 1448, 1495, 1485, 1424, 1448, 1508, 1462, 1453, 1474, 1465, 1466}, 1467, "1%", true, ""},
}

func TestSummarizeAgreesWithBenchstat(t *testing.T) {
	for _, tc := range benchstatCases {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.values)
			s := Summarize(in)
			if !slices.Equal(in, tc.values) {
				t.Error("Summarize changed its input")
			}
			if s.N != len(tc.values) {
				t.Errorf("N = %d, want %d", s.N, len(tc.values))
			}
			if math.Abs(s.Median-tc.median) > 1e-9 {
				t.Errorf("median %v, benchstat says %v", s.Median, tc.median)
			}
			if got := s.PctRange(); got != tc.pct {
				t.Errorf("interval ±%s, benchstat says ±%s", got, tc.pct)
			}
			if tc.bounded != (s.Lo != nil && s.Hi != nil) {
				t.Fatalf("bounded = %v (lo %v, hi %v), want %v", !tc.bounded, s.Lo, s.Hi, tc.bounded)
			}
			if tc.bounded {
				// Order statistics: the bounds are values of the sample.
				if !slices.Contains(tc.values, *s.Lo) || !slices.Contains(tc.values, *s.Hi) || *s.Lo > s.Median || *s.Hi < s.Median {
					t.Errorf("bounds [%v, %v] around %v are not order statistics of the sample", *s.Lo, *s.Hi, s.Median)
				}
				if s.Confidence < Confidence || s.Confidence > 1 {
					t.Errorf("confidence %v", s.Confidence)
				}
			}
			switch {
			case tc.warning == "" && len(s.Warnings) > 0:
				t.Errorf("warnings %q", s.Warnings)
			case tc.warning != "" && !slices.Contains(s.Warnings, tc.warning):
				t.Errorf("warnings %q, want %q", s.Warnings, tc.warning)
			}
		})
	}
}

func TestSummarizeFive(t *testing.T) {
	// With 5 values only the lower side is unbounded at 95 % (benchmath's
	// own table: "lower bound −∞").
	s := Summarize([]float64{62.1, 63.0, 61.8, 62.6, 62.4})
	if s.Lo != nil {
		t.Errorf("lo %v, want unbounded", *s.Lo)
	}
}

func TestSummarizeRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		want   string
	}{
		{"none", nil, "no samples"},
		{"NaN", []float64{1, math.NaN(), 3}, "3 values include one that is not a finite number"},
		{"Inf", []float64{math.Inf(1)}, "1 values include one that is not a finite number"},
	} {
		s := Summarize(tc.values)
		if s.N != 0 || s.Median != 0 || s.Lo != nil || s.Hi != nil || !slices.Equal(s.Warnings, []string{tc.want}) {
			t.Errorf("%s: %+v", tc.name, s)
		}
	}
}

func TestPctRangeSigns(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		s    Summary
		want string
	}{
		{Summary{Median: 0, Lo: f(0), Hi: f(0)}, "0%"},
		{Summary{Median: 1, Lo: f(-1), Hi: f(2)}, "?"},
		{Summary{Median: 100, Lo: f(90), Hi: f(104)}, "10%"},
		{Summary{Median: 100, Hi: f(104)}, "∞"},
	} {
		if got := tc.s.PctRange(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}
