package compare

import (
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// Diff is experiment B (new) compared with A (old): the results with
// their verdicts, then every fingerprint variable, changed rows first. It
// is the model behind the cockpit's compare view and `flightdeck journal
// diff`; build it with Compare.
type Diff struct {
	A, B *ledger.Experiment
	// LaunchesA and LaunchesB hold one experiment per server launch of A's
	// and B's configuration (same ConfigKey) that has a result, in order
	// of each launch's first experiment: one launch is one sample of the
	// across-launch verdict. A stands for its own launch (B likewise);
	// another launch is its experiment with the most steady samples (the
	// most benchmarked requests when none has any), though a row takes
	// each launch's value from the experiment with the most samples of
	// its metric. An experiment whose launch (or configuration) is not
	// known is alone on its side and in no other's; an A/A comparison
	// (same configuration) has A and B alone.
	LaunchesA, LaunchesB []*ledger.Experiment
	// SameConfig says A and B have the same known configuration (an A/A
	// comparison): no verdict, each side is its own experiment, and the
	// A/A noise rows say how much launches of it differ.
	SameConfig bool
	Results    []ResultRow
	// Fields lists every fingerprint variable: the changed rows first (in
	// group order: commit, patch, env, flags, bench, versions, gpu, host;
	// bench is the settings of the benchmark runs each side pools), then
	// the unchanged ones (a view folds them).
	Fields []FieldRow
	// Range is what lies between A's and B's commits; nil when they are
	// the same, unknown, or the range was not recorded (RangeNote says
	// which).
	Range     *event.CommitRange
	RangeNote string // "recorded at e6's start", "from git on the host", "not recorded: …"
	// Measured is the server-log tok/s each commit was measured at by the
	// experiments of A's and B's configuration class (ClassKey), in order
	// of first measurement: what Culprit places the change by.
	Measured []CommitMeasure
	// Noise is the launch-to-launch (A/A) noise measured in the session:
	// one row per configuration with at least 2 launches with a result.
	Noise []NoiseRow
}

// ResultRow is one measured quantity of both experiments.
type ResultRow struct {
	Metric string // MetricLogTokS, MetricAccept, MetricBenchTokS, MetricTTFT, MetricITL, MetricTPOT, MetricE2E
	Unit   string // UnitTokS, UnitMs or UnitTokens
	// LowerIsBetter is true for latencies: a negative delta is better.
	LowerIsBetter bool
	// A and B are the chosen experiments' own values: median and 95 %
	// interval over the run's samples (per-window tok/s from the log,
	// per-request values from the benchmark).
	A, B ledger.Summary
	// Launches is the verdict across launches: one value per launch of
	// each configuration (Diff.LaunchesA/B), Mann–Whitney U at α = 0.05.
	Launches Comparison
	// Verdict is the row's across-launch verdict: Mann–Whitney U with
	// MinLaunches a side, Student's t against the known A/A noise of the
	// sides' class with fewer, else none with what is missing
	// (Verdict.Why: "1+1 launches; A/A noise unknown — R repeats a
	// launch", "benchmark settings differ (concurrency)").
	Verdict Verdict
	// Noise is the A/A spread of this metric over A's configuration's
	// launches, percent; valid when HasNoise. WithinNoise says the delta
	// is significant but no larger than that spread.
	Noise       float64
	HasNoise    bool
	WithinNoise bool
}

// FieldRow is one fingerprint variable of both experiments, as text.
type FieldRow struct {
	Group string // "commit", "patch", "env", "flags", "bench", "versions", "gpu", "host"
	Name  string // "HEAD", "NCCL_PROTO", "--tp-size", "torch", "GPU 0 SM clock"
	A, B  string // "" when absent on that side
	// Changed says A and B differ and both are known.
	Changed bool
	// Unknown says the value is known on one side only (a failed capture):
	// never counted as a change.
	Unknown bool
}

// NoiseRow is the launch-to-launch noise of one configuration: one value
// per server launch (several experiments on one launch count once).
type NoiseRow struct {
	Config   string  // the configuration, as experiments name it: "nccl-ll-ring @ a6d51c0"
	Launches int     // distinct launches with a value of Metric
	Metric   string  // MetricLogTokS or MetricBenchTokS
	Spread   float64 // compare.Spread of the launch values, percent of their median
	// Lo and Hi are the smallest and largest launch value, in the
	// metric's unit: tok/s for both noise metrics.
	Lo, Hi float64
}

// Row is d's result row of metric (MetricLogTokS, MetricAccept, …); nil
// when d has none.
func (d *Diff) Row(metric string) *ResultRow {
	for i := range d.Results {
		if d.Results[i].Metric == metric {
			return &d.Results[i]
		}
	}
	return nil
}

// VerdictText is the row's verdict as every view writes it
// (Verdict.Text), followed by the A/A spread of A's launches when the
// verdict did not state its noise already: "slower -8.5% across launches
// (p=0.008 n=5+5), A/A noise ±0.3%"; ", within A/A noise ±0.3%" when the
// difference found is no larger than that spread.
func (r *ResultRow) VerdictText() string {
	s := r.Verdict.Text()
	switch {
	case r.Verdict.Method == MethodKnownNoise:
	case r.WithinNoise:
		s += ", within A/A noise " + FormatNoise(r.Noise)
	case r.HasNoise:
		s += ", A/A noise " + FormatNoise(r.Noise)
	}
	return s
}

// DeltaPct is the change of B's own median over A's, percent; ok is false
// when a side has no value or A's median is 0.
func (r *ResultRow) DeltaPct() (pct float64, ok bool) {
	if r.A.N == 0 || r.B.N == 0 || r.A.Median == 0 {
		return 0, false
	}
	return (r.B.Median - r.A.Median) / r.A.Median * 100, true
}
