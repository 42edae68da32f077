package sessions

import "time"

// RepeatConfig is one repeat (R): relaunch the current configuration N
// more times, measuring each launch, to see the launch-to-launch (A/A)
// noise of this host. Zero fields take the defaults in their comments.
type RepeatConfig struct {
	// N is how many more launches to make (default 4: with the current
	// one, 5 launches, enough for a Mann–Whitney verdict at α = 0.05).
	N int `json:"n"`
	// MinSamples is how many steady-state tok/s samples a launch must
	// have before the next relaunch (default 10).
	MinSamples int `json:"min_samples"`
	// MaxWait bounds one launch: from the relaunch to MinSamples (default
	// 10 min). A launch that fails, or does not get there in time, stops
	// the repeat with an error.
	MaxWait time.Duration `json:"max_wait"`
	// Bench runs a benchmark on each launch once it is measured (the
	// bench's defaults: the last one run), before the next relaunch.
	Bench bool `json:"bench,omitempty"`
}

// RepeatProgress is a repeat's state, published on the stream at each
// step. It is an event payload (kind "repeat-progress").
type RepeatProgress struct {
	Series string `json:"series"` // the experiment the repeat began from
	I      int    `json:"i"`      // the launch in progress, 1-based (the series' own launch is 1)
	N      int    `json:"n"`      // launches in all (RepeatConfig.N + 1)
	Exp    string `json:"exp,omitempty"`
	// Phase is "measuring" (the current launch until MinSamples),
	// "relaunching", "warming up", "benchmarking", "done", "stopped" or
	// "failed".
	Phase   string `json:"phase"`
	Samples int    `json:"samples,omitempty"` // steady samples of the current launch so far
	Need    int    `json:"need,omitempty"`    // RepeatConfig.MinSamples
	Err     string `json:"err,omitempty"`     // why it failed or stopped
}

// Kind implements event.Payload.
func (RepeatProgress) Kind() string { return "repeat-progress" }

// Repeat phases.
const (
	RepeatMeasuring   = "measuring"
	RepeatRelaunching = "relaunching"
	RepeatWarmingUp   = "warming up"
	RepeatBenchmark   = "benchmarking"
	RepeatDone        = "done"
	RepeatStopped     = "stopped"
	RepeatFailed      = "failed"
)
