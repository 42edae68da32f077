package journal

import (
	"time"

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

// Ledger folds experiment and note events (exp-start, exp-fingerprint,
// exp-update, exp-end, exp-baseline, exp-repeat, bench-done, note) and the throughput and server events an open
// experiment's provisional result needs (tok-rate, server-status,
// server-ready, log-reset) into the session's experiments. The cockpit's
// experiments panel, the live Lab and the journal commands all use it, so
// they agree. The zero Ledger is empty and ready; it is not safe for
// concurrent use.
type Ledger struct {
	exps     []Experiment
	notes    []TimedNote
	baseline string // the marked experiment's id, "" when none
	fold     ledgerFold
}

// Apply folds one event; it reports whether the ledger changed. Unknown
// payloads are ignored.
func (l *Ledger) Apply(e event.Event) bool { return l.apply(e) }

// Experiments returns the experiments in start order. The slice and its
// elements must not be modified.
func (l *Ledger) Experiments() []Experiment { return l.exps }

// Current returns the open experiment, or nil.
func (l *Ledger) Current() *Experiment {
	if n := len(l.exps); n > 0 && l.exps[n-1].Open() {
		return &l.exps[n-1]
	}
	return nil
}

// Find returns the experiment with id or name, or nil.
func (l *Ledger) Find(idOrName string) *Experiment {
	for i := range l.exps {
		if l.exps[i].ID == idOrName {
			return &l.exps[i]
		}
	}
	for i := range l.exps {
		if l.exps[i].Name == idOrName {
			return &l.exps[i]
		}
	}
	return nil
}

// Baseline returns the experiment marked as the baseline (the latest
// exp-baseline event), or nil when none is marked, the mark was cleared,
// or it names an experiment this ledger has not seen.
func (l *Ledger) Baseline() *Experiment { return l.find(l.baseline) }

// Notes returns every note of the session in time order, inside an
// experiment or not.
func (l *Ledger) Notes() []TimedNote { return l.notes }

// Provisional returns the open experiment's result over the tok/s samples
// seen so far (same rules as the final result), or a zero Result when none
// is open. It costs O(n log n) in the samples: call it when drawing, not
// per event.
func (l *Ledger) Provisional() event.ExperimentResult { return l.provisional() }

// TimedNote is a note with its time.
type TimedNote struct {
	At time.Time
	event.Note
}
