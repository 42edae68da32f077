package driver

// The driver's lease: how long a write of the lock lets this cockpit act,
// on its own monotonic clock, and the watchdog that stops it in time.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
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

// NotReleasedError is Release's error when the lock file stays on the
// host: the host did not answer, or the removal failed. The lock then
// ends by itself: a watcher takes it as stale once its file is StaleAfter
// old (host clock).
type NotReleasedError struct {
	Host string
	// StaleAt is when the lock goes stale by this cockpit's clock:
	// StaleAfter after its last heartbeat started (zero: none written).
	StaleAt time.Time
	Err     error // why: the exchange's error (remote.ErrDisconnected: the host is unreachable)
}

func (e *NotReleasedError) Error() string {
	why := strings.TrimPrefix(e.Err.Error(), "driver lock on "+e.Host+": ")
	if errors.Is(e.Err, remote.ErrDisconnected) {
		why = "the host is unreachable"
	}
	msg := "driver lock on " + e.Host + " not released: " + why
	if !e.StaleAt.IsZero() {
		msg += "; it goes stale at " + e.StaleAt.Local().Format("15:04:05") + ", and another cockpit can take over then"
	}
	return msg
}

func (e *NotReleasedError) Unwrap() error { return e.Err }

// notReleased is Release's error for err. l.op is held.
func (l *Lock) notReleased(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	e := &NotReleasedError{Host: l.Host.Name(), Err: err}
	if w := l.wrote.Load(); w != 0 {
		if _, stale, perr := l.periods(); perr == nil {
			e.StaleAt = monoBase.Add(time.Duration(w) + stale)
		}
	}
	return e
}
