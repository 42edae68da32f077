package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// metric is how one result row reads an experiment.
type metric struct {
	name, unit    string
	lowerIsBetter bool
	bench         bool // a benchmark row
	// within is the experiment's own samples (nil: it has none); launch
	// its one value as a launch (ok false: none).
	within func(x *ledger.Experiment) []float64
	launch func(x *ledger.Experiment) (float64, bool)
}

// weight is how many samples x has of m: which experiment of a launch
// gives the launch's value.
func (m *metric) weight(x *ledger.Experiment) int {
	if m.bench {
		return benchWeight(x)
	}
	return logWeight(x)
}

var metrics = []metric{
	{name: MetricLogTokS, unit: "tok/s",
		within: func(x *ledger.Experiment) []float64 {
			if x.Result.N == 0 {
				return nil
			}
			if len(x.Result.Samples) == 0 {
				return []float64{x.Result.Median} // a result without its samples
			}
			return x.Result.Samples
		},
		launch: func(x *ledger.Experiment) (float64, bool) {
			return x.Result.Median, x.Result.N >= ledger.MinLaunchSamples
		}},
	{name: MetricBenchTokS, unit: "tok/s", bench: true,
		within: func(x *ledger.Experiment) []float64 {
			if r := ledger.LastBench(x); r != nil {
				return []float64{r.OutputTokPerSec}
			}
			return nil
		},
		launch: func(x *ledger.Experiment) (float64, bool) {
			if r := ledger.LastBench(x); r != nil {
				return r.OutputTokPerSec, true
			}
			return 0, false
		}},
	benchLatency(MetricTTFT, func(q *event.BenchRequest) (float64, bool) { return q.TTFT, true }, func(r *event.BenchResult) event.Dist { return r.TTFT }),
	// The run's ITL Dist pools every gap of every request, a statistic
	// of its own: the row uses the per-request medians throughout.
	benchLatency(MetricITL, func(q *event.BenchRequest) (float64, bool) { return q.ITLMedian, q.ITLMedian > 0 }, nil),
	benchLatency(MetricTPOT, func(q *event.BenchRequest) (float64, bool) { return q.TPOT, q.OutputTokens > 1 }, func(r *event.BenchResult) event.Dist { return r.TPOT }),
	benchLatency(MetricE2E, func(q *event.BenchRequest) (float64, bool) { return q.E2E, true }, func(r *event.BenchResult) event.Dist { return r.E2E }),
}

// benchLatency is a latency row: within a run the successful requests'
// values (those where req says ok), across launches each run's median of
// them. dist is the run's summary of the same values, used for a run
// stored without its requests; nil when the run has no such summary.
func benchLatency(name string, req func(q *event.BenchRequest) (float64, bool), dist func(r *event.BenchResult) event.Dist) metric {
	values := func(r *event.BenchResult) []float64 {
		var out []float64
		for i := range r.Requests {
			q := &r.Requests[i]
			if v, ok := req(q); ok && q.Err == "" {
				out = append(out, v)
			}
		}
		if len(out) == 0 && len(r.Requests) == 0 && dist != nil && dist(r).N > 0 {
			out = []float64{dist(r).Median} // a run stored without its requests
		}
		return out
	}
	return metric{name: name, unit: "ms", lowerIsBetter: true, bench: true,
		within: func(x *ledger.Experiment) []float64 {
			if r := ledger.LastBench(x); r != nil {
				return values(r)
			}
			return nil
		},
		launch: func(x *ledger.Experiment) (float64, bool) {
			r := ledger.LastBench(x)
			if r == nil {
				return 0, false
			}
			if dist != nil && dist(r).N > 0 {
				return dist(r).Median, true
			}
			if v := values(r); len(v) > 0 {
				return ledger.Median(v), true
			}
			return 0, false
		}}
}

// launchValues returns m's value for each launch that has one: x's for
// its own launch, else that of the launch's experiment with the most
// samples of m.
func (m *metric) launchValues(groups [][]*ledger.Experiment, x *ledger.Experiment) []float64 {
	var out []float64
	for _, g := range groups {
		y := pick(g, x, m.weight)
		if v, ok := m.launch(y); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

// benchRuns returns the clean benchmark run each launch's bench rows use
// (see launchValues), in launch order; launches without one are left out.
func benchRuns(groups [][]*ledger.Experiment, x *ledger.Experiment) []*event.BenchResult {
	var out []*event.BenchResult
	for _, g := range groups {
		if r := ledger.LastBench(pick(g, x, benchWeight)); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// resultRows builds the server-log row and, when either side ran a
// benchmark, the benchmark rows. settings are the bench field rows: when
// one changed, the benchmark rows give no verdict.
func resultRows(d *Diff, ga, gb [][]*ledger.Experiment, settings []FieldRow) []ResultRow {
	var rows []ResultRow
	benched := ledger.LastBench(d.A) != nil || ledger.LastBench(d.B) != nil
	var differ []string
	for _, f := range settings {
		if f.Changed {
			differ = append(differ, f.Name)
		}
	}
	for i := range metrics {
		m := &metrics[i]
		if m.bench && !benched {
			continue
		}
		row := ResultRow{Metric: m.name, Unit: m.unit, LowerIsBetter: m.lowerIsBetter,
			A: ledger.Summarize(m.within(d.A)), B: ledger.Summarize(m.within(d.B))}
		la, lb := m.launchValues(ga, d.A), m.launchValues(gb, d.B)
		row.Launches = Samples(la, lb)
		row.Noise, row.HasNoise = Spread(la)
		if m.bench && len(differ) > 0 {
			row.Verdict = "no verdict: benchmark settings differ (" + strings.Join(differ, ", ") + ")"
		} else {
			row.Verdict = verdict(m, d, &row, len(la), len(lb))
		}
		if strings.HasPrefix(row.Verdict, "no verdict") {
			// The test's p stays for the record, but nothing was
			// found: Mann–Whitney can reach p <= 0.05 with 3 launches
			// against 6, below the rule of MinLaunches a side.
			row.Launches.Significant = false
		}
		row.WithinNoise = row.Launches.Significant && row.HasNoise && math.Abs(row.Launches.DeltaPct) <= row.Noise
		rows = append(rows, row)
	}
	return rows
}

// verdict says the row's across-launch verdict in words.
func verdict(m *metric, d *Diff, row *ResultRow, na, nb int) string {
	for _, x := range []*ledger.Experiment{d.A, d.B} {
		if _, ok := m.launch(x); ok {
			continue
		}
		switch {
		case !m.bench && x.Result.N > 0:
			return fmt.Sprintf("no verdict: %s has %d steady samples (a launch needs %d)", sanitize.OneLine(x.ID), x.Result.N, ledger.MinLaunchSamples)
		case m.bench && len(x.Bench) > 0:
			return "no verdict: " + sanitize.OneLine(x.ID) + "'s benchmark runs had failures or were stopped"
		case m.bench:
			return "no verdict: no benchmark of " + sanitize.OneLine(x.ID) + " (b runs one)"
		}
		return "no verdict: no value for " + sanitize.OneLine(x.ID)
	}
	if d.SameConfig {
		return "no verdict: the same configuration (an A/A comparison: its launch-to-launch spread is the A/A noise)"
	}
	if na < MinLaunches || nb < MinLaunches {
		return fmt.Sprintf("no verdict: %d+%d launches (need ≥ %d each; R repeats a launch)", na, nb, MinLaunches)
	}
	c := row.Launches
	switch {
	case !c.Significant:
		// Checked first, as benchstat does: no difference was found,
		// whatever the medians are.
		return "no significant difference"
	case !c.HasDelta:
		return "no verdict: zero median"
	case m.lowerIsBetter && c.DeltaPct < 0:
		return "better"
	case m.lowerIsBetter:
		return "worse"
	case c.DeltaPct > 0:
		return "faster"
	}
	return "slower"
}

// DeltaPct is the change of x's median over base's, in percent; ok is false
// when either has no result.
func DeltaPct(x, base *ledger.Experiment) (pct float64, ok bool) {
	if x == nil || base == nil || x.Result.N == 0 || base.Result.N == 0 || base.Result.Median == 0 {
		return 0, false
	}
	return (x.Result.Median/base.Result.Median - 1) * 100, true
}

// CIsOverlap reports whether both results have a bounded confidence
// interval and the two intervals overlap: the difference between them is
// then not established.
func CIsOverlap(a, b event.ExperimentResult) bool {
	if a.Lo == nil || a.Hi == nil || b.Lo == nil || b.Hi == nil {
		return false
	}
	return *a.Lo <= *b.Hi && *b.Lo <= *a.Hi
}
