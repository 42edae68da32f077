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
	// up and down are the verdict's words for a significant rise and
	// fall: faster/slower, worse/better, longer/shorter.
	up, down string
	// noiseRow says the A/A noise rows (Diff.Noise) list this metric.
	noiseRow bool
	// accept says the row is shown only when a side has a value (the
	// server reported an EAGLE accept length).
	accept bool
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
	{name: MetricLogTokS, unit: UnitTokS, up: WordFaster, down: WordSlower, noiseRow: true,
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
	{name: MetricAccept, unit: UnitTokens, up: WordLonger, down: WordShorter, accept: true,
		within: func(x *ledger.Experiment) []float64 {
			if x.Result.N == 0 || !(x.Result.AcceptLength > 0) {
				return nil
			}
			return []float64{x.Result.AcceptLength} // the median over the kept samples
		},
		launch: func(x *ledger.Experiment) (float64, bool) {
			return x.Result.AcceptLength, x.Result.AcceptLength > 0 && x.Result.N >= ledger.MinLaunchSamples
		}},
	{name: MetricBenchTokS, unit: UnitTokS, bench: true, up: WordFaster, down: WordSlower, noiseRow: true,
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
	return metric{name: name, unit: UnitMs, lowerIsBetter: true, bench: true, up: WordWorse, down: WordBetter,
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

// resultRows builds the server-log row, the accept-length row when a
// side has an accept length, and, when either side ran a benchmark, the
// benchmark rows. settings are the bench field rows: when one changed,
// the benchmark rows give no verdict. exps and keys are for the A/A noise
// of a row with fewer than MinLaunches launches a side.
func resultRows(d *Diff, exps []ledger.Experiment, keys keyCache, ga, gb [][]*ledger.Experiment, settings []FieldRow) []ResultRow {
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
		if m.accept && row.A.N == 0 && row.B.N == 0 {
			continue
		}
		la, lb := m.launchValues(ga, d.A), m.launchValues(gb, d.B)
		row.Launches = Samples(la, lb)
		row.Noise, row.HasNoise = Spread(la)
		if m.bench && len(differ) > 0 {
			row.Verdict = Verdict{Word: WordNone, Why: "benchmark settings differ (" + strings.Join(differ, ", ") + ")", P: 1, N1: len(la), N2: len(lb)}
		} else {
			row.Verdict = verdict(m, d, &row, la, lb, func() *NoiseEstimate {
				return estimateNoise(m, exps, keys, keys.class(d.A), keys.class(d.B))
			})
		}
		if row.Verdict.Method != MethodMannWhitney {
			// The Mann–Whitney p stays for the record, but it decided
			// nothing: it can reach p <= 0.05 with 3 launches against
			// 6, below the rule of MinLaunches a side.
			row.Launches.Significant = false
		}
		row.WithinNoise = row.Launches.Significant && row.HasNoise && math.Abs(row.Launches.DeltaPct) <= row.Noise
		rows = append(rows, row)
	}
	return rows
}

// verdict is the row's across-launch verdict over launch values la and
// lb: Mann–Whitney U with MinLaunches a side; else Student's t against
// the class's A/A noise (noise is called only then) when it is known;
// else none, saying what is missing.
func verdict(m *metric, d *Diff, row *ResultRow, la, lb []float64, noise func() *NoiseEstimate) Verdict {
	na, nb := len(la), len(lb)
	none := func(why string) Verdict { return Verdict{Word: WordNone, Why: why, P: 1, N1: na, N2: nb} }
	for _, x := range []*ledger.Experiment{d.A, d.B} {
		if _, ok := m.launch(x); ok {
			continue
		}
		id := sanitize.OneLine(x.ID)
		switch {
		case m.accept && !(x.Result.AcceptLength > 0):
			return none("no accept length for " + id)
		case !m.bench && x.Result.N > 0:
			return none(fmt.Sprintf("%s has %s (a launch needs %d)", id, plural(x.Result.N, "steady sample"), ledger.MinLaunchSamples))
		case m.bench && len(x.Bench) > 0:
			return none(id + "'s benchmark runs had failures or were stopped")
		case m.bench:
			return none("no benchmark of " + id + " (b runs one)")
		}
		return none("no value for " + id)
	}
	if d.SameConfig {
		return none("the same configuration (an A/A comparison: its launch-to-launch spread is the A/A noise)")
	}
	if na < MinLaunches || nb < MinLaunches {
		return noiseVerdict(m, d, la, lb, noise)
	}
	c := row.Launches
	v := Verdict{Method: MethodMannWhitney, P: c.P, N1: na, N2: nb, DeltaPct: c.DeltaPct, HasDelta: c.HasDelta}
	switch {
	case !c.Significant:
		// Checked first, as benchstat does: no difference was found,
		// whatever the medians are.
		v.Word = WordSame
	case !c.HasDelta:
		return none("zero median")
	default:
		v.Word = m.directionWord(c.DeltaPct)
	}
	return v
}

// noiseVerdict is the verdict of fewer than MinLaunches launches a side:
// Student's t against the known A/A noise of the sides' class, or none.
func noiseVerdict(m *metric, d *Diff, la, lb []float64, noise func() *NoiseEstimate) Verdict {
	na, nb := len(la), len(lb)
	none := func(why string) Verdict { return Verdict{Word: WordNone, Why: why, P: 1, N1: na, N2: nb} }
	launches := fmt.Sprintf("%d+%d launches", na, nb)
	n := noise()
	switch {
	case n == nil:
		return none(launches + "; A/A noise unknown — R repeats a launch")
	case !(n.SD > 0):
		return none(launches + "; A/A noise measured as 0 over " + FormatLaunches(n.Launches) + " (identical values: too few to trust) — R repeats a launch")
	}
	delta, p, ok := noiseTest(la, lb, n)
	if !ok {
		return none(launches + "; a launch value is not positive")
	}
	v := Verdict{Word: WordSame, Method: MethodKnownNoise, DeltaPct: delta, HasDelta: true, P: p, N1: na, N2: nb, Noise: n,
		NoiseAge: d.B.Started.Sub(n.Latest), AcrossSessions: sessionOf(d.A.ID) != sessionOf(d.B.ID)}
	if p <= Alpha {
		v.Word = m.directionWord(delta)
	}
	return v
}

// sessionOf is the journal an experiment id qualifies ("2026-12-01-
// 101500-demo" of "2026-12-01-101500-demo:e3"), "" for one of the
// session's own journal (a plain id).
func sessionOf(id string) string {
	if i := strings.LastIndexByte(id, ':'); i > 0 {
		return id[:i]
	}
	return ""
}

// DeltaPct is the change of x's median over base's, in percent; ok is false
// when either has no result.
func DeltaPct(x, base *ledger.Experiment) (pct float64, ok bool) {
	if x == nil || base == nil || x.Result.N == 0 || base.Result.N == 0 || base.Result.Median == 0 {
		return 0, false
	}
	return (x.Result.Median/base.Result.Median - 1) * 100, true
}
