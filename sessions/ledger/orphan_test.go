package ledger

import (
	"slices"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Records of an experiment whose exp-start was lost are kept apart: they
// neither vanish nor touch the experiment that is open.
func TestLedgerKeepsOrphanedRecords(t *testing.T) {
	l := fold(seq(
		ev(0, event.ExperimentStart{ID: "e1", Trigger: event.TriggerKey}),
		// e2's exp-start is missing (a garbled line).
		ev(1, event.ExperimentFingerprint{Exp: "e2", Fingerprint: event.Fingerprint{Git: &event.GitState{Head: "9f8e7d6c5b4a"}}}),
		ev(2, event.ExperimentUpdate{Exp: "e2", Name: "after the pull"}),
		ev(3, event.Note{Exp: "e2", Text: "slower"}),
		ev(4, event.ExperimentEnd{Exp: "e2", Trigger: event.TriggerRelaunch, Result: event.ExperimentResult{N: 3, Median: 81.9}}),
		ev(5, event.Note{Text: "no experiment named"}),
		ev(6, event.Baseline{Exp: "e9"}), // may name another journal's experiment
	))
	if x := l.Current(); x == nil || x.ID != "e1" {
		t.Fatalf("open experiment %+v, want e1 still open: an orphaned exp-end ends nothing else", x)
	}
	got := l.Orphans()
	if len(got) != 1 {
		t.Fatalf("orphans %+v, want e2 alone", got)
	}
	o := got[0]
	if o.ID != "e2" || !o.First.Equal(sec(1)) || o.Commit() != "9f8e7d6c5b4a" || o.Name != "after the pull" ||
		len(o.Notes) != 1 || o.Open() || !o.Ended.Equal(sec(4)) || o.EndedBy != event.TriggerRelaunch || o.Result.Median != 81.9 {
		t.Errorf("orphan %+v", o)
	}
	if want := []string{"exp-fingerprint", "exp-update", "note", "exp-end"}; !slices.Equal(o.Records, want) {
		t.Errorf("records %q, want %q", o.Records, want)
	}
	if n := len(l.Experiments()); n != 1 {
		t.Errorf("%d experiments, want e1 alone", n)
	}
}
