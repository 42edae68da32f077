package journal

import "github.com/flightdeck-dev/flightdeck/stats"

// Diff is experiment B (new) compared with A (old): the results with
// their verdicts, then every fingerprint variable, changed rows first. It
// is the model behind the cockpit's compare view and `flightdeck journal
// diff`; build it with Compare.
type Diff struct {
	A, B *Experiment
	// LaunchesA and LaunchesB are the experiments of A's and B's
	// configuration (same ConfigKey) that ended with a result, A and B
	// included, in start order: one launch is one sample of the
	// across-launch verdict.
	LaunchesA, LaunchesB []*Experiment
	Results              []ResultRow
	// Fields lists every fingerprint variable: the changed rows first (in
	// group order: commit, patch, env, flags, versions, gpu, host), then
	// the unchanged ones (a view folds them).
	Fields []FieldRow
	// Range is what lies between A's and B's commits; nil when they are
	// the same, unknown, or the range was not recorded (RangeNote says
	// which).
	Range     *CommitRange
	RangeNote string // "recorded at e6's start", "from git on the host", "not recorded: …"
	// Noise is the launch-to-launch (A/A) noise measured in the session:
	// one row per configuration with at least 2 launches with a result.
	Noise []NoiseRow
}

// ResultRow is one measured quantity of both experiments.
type ResultRow struct {
	Metric string // "tok/s (server log)", "output tok/s (bench)", "TTFT median", "ITL median", "TPOT median", "E2E median"
	Unit   string // "tok/s" or "ms"
	// LowerIsBetter is true for latencies: a negative delta is better.
	LowerIsBetter bool
	// A and B are the chosen experiments' own values: median and 95 %
	// interval over the run's samples (per-window tok/s from the log,
	// per-request values from the benchmark).
	A, B stats.Summary
	// Launches is the verdict across launches: one value per launch of
	// each configuration (Diff.LaunchesA/B), Mann–Whitney U at α = 0.05.
	Launches stats.Comparison
	// Verdict says it in words: "faster", "slower", "better", "worse",
	// "no significant difference", "no verdict: 1+1 launches (need ≥ 4
	// each; R repeats a launch)".
	Verdict string
	// Noise is the A/A spread of this metric over A's configuration's
	// launches, percent; valid when HasNoise. WithinNoise says the delta
	// is significant but no larger than that spread.
	Noise       float64
	HasNoise    bool
	WithinNoise bool
}

// FieldRow is one fingerprint variable of both experiments, as text.
type FieldRow struct {
	Group string // "commit", "patch", "env", "flags", "versions", "gpu", "host"
	Name  string // "HEAD", "NCCL_PROTO", "--tp-size", "torch", "GPU 0 SM clock"
	A, B  string // "" when absent on that side
	// Changed says A and B differ and both are known.
	Changed bool
	// Unknown says the value is known on one side only (a failed capture):
	// never counted as a change.
	Unknown bool
}

// NoiseRow is the launch-to-launch noise of one configuration.
type NoiseRow struct {
	Config   string  // the configuration, as experiments name it: "nccl-ll-ring @ a6d51c0"
	Launches int     // launches with a result
	Metric   string  // "tok/s (server log)"
	Spread   float64 // stats.Spread of the launches' medians, percent
	Lo, Hi   float64 // the smallest and largest launch median
}
