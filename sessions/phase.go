package sessions

import "time"

// phaseTimer fires on the multiples of its period on the clock (every
// 250 ms at .000, .250, .500 and .750 of each second), re-armed with Next
// after each tick. The recorder's flushes and the journal mirror's polls
// use it, so that their periodic work wakes the process at the same
// instants rather than at phases of their own: each wake-up of an idle
// cockpit costs context switches that cost more than the work (issue 20).
type phaseTimer struct {
	t *time.Timer
	d time.Duration
}

// newPhaseTimer's first tick is at least d away, as a ticker's would be.
func newPhaseTimer(d time.Duration) *phaseTimer {
	return &phaseTimer{t: time.NewTimer(d + untilPhase(time.Now().Add(d), d)), d: d}
}

// C is the channel the ticks arrive on.
func (p *phaseTimer) C() <-chan time.Time { return p.t.C }

// Next arms the timer for the next multiple of the period after now.
func (p *phaseTimer) Next() { p.t.Reset(untilPhase(time.Now(), p.d)) }

// Stop stops the timer.
func (p *phaseTimer) Stop() { p.t.Stop() }

// untilPhase is the time from now to the next multiple of d (d itself
// when now is on one).
func untilPhase(now time.Time, d time.Duration) time.Duration {
	return now.Truncate(d).Add(d).Sub(now)
}
