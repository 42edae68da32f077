// Package ledger is the ledger of a session's experiments: it folds the
// event stream (live, or read back from a journal) into the experiments,
// notes and baseline mark (Ledger, Experiment, and the triggers that start
// and end an experiment), and computes each experiment's result: its
// steady-state tok/s samples (warm-up and idle values left out:
// SteadyState) and their median with a 95 % confidence interval computed
// the way benchstat does (Summarize: golang.org/x/perf/benchmath,
// AssumeNothing, order statistics, no distributional assumption). It also
// has what a launch needs to count as a sample of a verdict
// (MinLaunchSamples) and the series of a repeat (RepeatSeries).
//
// The cockpit's experiments panel, the live Lab, the comparisons (package
// compare) and the reports (package report) all read the experiments
// through it, so they agree.
package ledger

import (
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

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
	orphans  []Orphan // experiments whose exp-start is missing
	baseline string   // the marked experiment's id, "" when none
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

// BaselineID is the latest exp-baseline's experiment id as marked, ""
// when none or cleared: also a mark naming an experiment this ledger has
// not seen (an earlier journal's, "2026-12-01-101500-demo:e3"), which
// Baseline does not return.
func (l *Ledger) BaselineID() string { return l.baseline }

// Notes returns every note of the session in time order, inside an
// experiment or not.
func (l *Ledger) Notes() []TimedNote { return l.notes }

// Provisional returns the open experiment's result over the tok/s samples
// seen so far (same rules as the final result), or a zero Result when none
// is open. It costs O(n log n) in the samples: call it when drawing, not
// per event.
func (l *Ledger) Provisional() event.ExperimentResult { return l.provisional() }
