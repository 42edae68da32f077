package ledger

import (
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Experiment is one experiment folded from the event stream (live) or a
// journal (replay, ls, show, export).
type Experiment struct {
	ID         string
	Name       string
	Hypothesis string
	Conclusion string
	Started    time.Time
	Ended      time.Time // zero while open
	StartedBy  event.Trigger
	EndedBy    event.Trigger // "" while open
	Launch     *event.LaunchInfo
	// Fingerprint is nil until the exp-fingerprint event arrives.
	Fingerprint *event.Fingerprint
	// Result is the final result once ended (the exp-end's, or computed by
	// Ledger.Close); zero while open: Ledger.Provisional computes the
	// open one's over the samples seen so far.
	Result  event.ExperimentResult
	EndGPUs []event.GPU
	Notes   []TimedNote // notes written while it was open, in time order
	// Bench holds the benchmark runs recorded for it (bench-done events
	// with its id), in time order; failed runs included (Err set).
	Bench []event.BenchDone
	// Repeat is set when the experiment is one launch of a repeat (R).
	Repeat *event.Repeat
}

// Open reports whether the experiment has not ended.
func (e *Experiment) Open() bool { return e.Ended.IsZero() }

// Commit returns the experiment's commit id from its fingerprint, or "".
func (x *Experiment) Commit() string {
	if x.Fingerprint != nil && x.Fingerprint.Git != nil {
		return x.Fingerprint.Git.Head
	}
	return ""
}

// Git returns the checkout's state from the experiment's fingerprint, or
// nil when no fingerprint was captured or no repository was configured.
func (x *Experiment) Git() *event.GitState {
	if x.Fingerprint == nil {
		return nil
	}
	return x.Fingerprint.Git
}

// LaunchInfo returns the launch the experiment measured: the
// fingerprint's (the running server's, captured), else the one that
// started it (Launch); nil when neither is known.
func (x *Experiment) LaunchInfo() *event.LaunchInfo {
	if x.Fingerprint != nil && x.Fingerprint.Launch != nil {
		return x.Fingerprint.Launch
	}
	return x.Launch
}

// CommitUnknown says why the experiment's commit is not known, or "" when
// it is (or when no repository was configured: Fingerprint.Git nil without
// a git error). The reasons: "no fingerprint captured", the capture's git
// error ("git: timed out after 30s"), or "not captured".
func (x *Experiment) CommitUnknown() string {
	fp := x.Fingerprint
	switch {
	case fp == nil:
		return "no fingerprint captured"
	case fp.Git != nil && fp.Git.Head != "":
		return ""
	}
	if e := fpError(fp, "git:"); e != "" {
		return e
	}
	if fp.Git == nil {
		return ""
	}
	return "not captured"
}

// PatchUnknown says why the experiment's dirty state (its patch against
// HEAD) is not known, or "" when it is or no repository was configured:
// no fingerprint, the patch's error ("git patch: ..."), or the commit's
// reason when the checkout could not be read at all.
func (x *Experiment) PatchUnknown() string {
	fp := x.Fingerprint
	if fp == nil {
		return "no fingerprint captured"
	}
	if e := fpError(fp, "git patch:"); e != "" {
		return e
	}
	if fp.Git != nil && fp.Git.PatchSHA256 != "" {
		return ""
	}
	return x.CommitUnknown()
}

// fpError returns the first of the fingerprint's errors that starts with
// prefix, sanitised; "" when none does.
func fpError(fp *event.Fingerprint, prefix string) string {
	for _, e := range fp.Errors {
		if strings.HasPrefix(e, prefix) {
			return sanitize.OneLine(e)
		}
	}
	return ""
}

// Profile returns the env profile of the experiment's launch ("none" when
// the launch used none), or "" when no launch is known.
func (x *Experiment) Profile() string {
	l := x.Launch
	if l == nil && x.Fingerprint != nil {
		l = x.Fingerprint.Launch
	}
	if l == nil {
		return ""
	}
	if l.Profile == "" {
		return "none"
	}
	return l.Profile
}

// LastBench returns x's last clean benchmark run — it ran to its end and
// every request succeeded — or nil. A run with failures or stopped early
// measured something else (a server dying under it, a cut-short window):
// comparisons leave it out.
func LastBench(x *Experiment) *event.BenchResult {
	for i := len(x.Bench) - 1; i >= 0; i-- {
		if r := x.Bench[i].Result; r != nil && r.Completed > 0 && r.Failed == 0 && !r.Cancelled {
			return r
		}
	}
	return nil
}

// TimedNote is a note with its time.
type TimedNote struct {
	At time.Time
	event.Note
}

// MaxRangeItems is the most commits, and the most files, a CommitRange
// lists: 50.
const MaxRangeItems = 50

// MaxPatch is the most of a dirty patch stored in a fingerprint: 4 MiB.
const MaxPatch = 4 << 20
