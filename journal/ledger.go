package journal

import "github.com/flightdeck-dev/flightdeck/event"

// ledgerFold is the Ledger's working state (helper B implements it).
type ledgerFold struct{}

func (l *Ledger) apply(e event.Event) bool {
	_ = e
	return false // TODO(helper B): fold experiments, notes and tok-rate samples
}

func (l *Ledger) provisional() Result { return Result{} } // TODO(helper B)
