package ledger

import (
	"slices"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Orphan is what a journal holds of an experiment whose exp-start it
// lacks (that line garbled or lost): the records that name it, kept apart
// so that the loss is reported, never silent. Its samples are not known
// (they belong to the experiment the start would have opened), so it has
// no result of its own but the one its exp-end recorded.
type Orphan struct {
	// Experiment holds what the orphaned records say: ID, Fingerprint,
	// Name, Hypothesis and Conclusion (exp-update), Ended, EndedBy and
	// Result (exp-end), and Notes. Started is zero; bench-done and
	// exp-repeat records naming no experiment here are not kept (a
	// repeat may name an earlier journal's).
	Experiment
	// First is the time of the first record naming it.
	First time.Time
	// Records lists the kinds of those records in order of first
	// appearance ("exp-fingerprint", "exp-end", ...).
	Records []string
}

// Orphans returns the experiments seen only through records that follow
// an exp-start this ledger never got, in order of first appearance. The
// slice and its elements must not be modified.
func (l *Ledger) Orphans() []Orphan { return l.orphans }

// orphan returns the orphan with this id, adding it (first seen at at)
// when new, and notes a record of kind k; nil when id is "".
func (l *Ledger) orphan(at time.Time, id string, k event.Kind) *Orphan {
	if id == "" {
		return nil
	}
	var o *Orphan
	for i := range l.orphans {
		if l.orphans[i].ID == id {
			o = &l.orphans[i]
			break
		}
	}
	if o == nil {
		l.orphans = append(l.orphans, Orphan{Experiment: Experiment{ID: id}, First: at})
		o = &l.orphans[len(l.orphans)-1]
	}
	if name := k.Info().Name; !slices.Contains(o.Records, name) {
		o.Records = append(o.Records, name)
	}
	return o
}
