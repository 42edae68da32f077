package driver

// The driver's lease: how long a write of the lock lets this cockpit act,
// on its own monotonic clock, and the watchdog that stops it in time.

import (
	"context"
	"fmt"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// mono is a monotonic clock reading in ns (wall-clock jumps do not move it).
func mono() int64 { return int64(time.Since(monoBase)) }

var monoBase = time.Now()

// expired reports whether the last write of the lock is too old to drive
// on: StaleAfter less one heartbeat has passed since it started.
func (l *Lock) expired() bool {
	w := l.wrote.Load()
	if w == 0 {
		return false
	}
	every, stale, err := l.periods()
	if err != nil {
		return false
	}
	return time.Duration(mono()-w) > stale-every
}

// watchdog publishes RoleUnsure as soon as the lock expires while a beat
// still waits on the host (a call to a host that is reconnecting returns
// only at its timeout): the screen stops the keys that act in time.
func (l *Lock) watchdog(ctx context.Context, every time.Duration) {
	t := time.NewTicker(max(every/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !l.driving.Load() || !l.expired() {
			continue
		}
		st := l.State()
		if st.Role != event.RoleDriving {
			continue
		}
		quiet := time.Duration(mono() - l.wrote.Load())
		st.Role = event.RoleUnsure
		st.Note = unsureNote(quiet)
		l.set(st)
	}
}

// unsureNote says why a driver turned read-only by itself.
func unsureNote(quiet time.Duration) string {
	return fmt.Sprintf("could not refresh the driver lock for %s: another cockpit may take it; keys that act wait until the host answers", quiet.Round(time.Second))
}
