package driver

// A Lock whose host drops, stops answering or hangs, and Confirm, which
// asks the host before an action.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// flaky is a Host that fails every call with ErrDisconnected while down.
type flaky struct {
	remote.Host
	down atomic.Bool
	runs atomic.Int32
}

func (f *flaky) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	f.runs.Add(1)
	if f.down.Load() {
		return remote.Result{}, fmt.Errorf("remote: gpu-box: %w: EOF", remote.ErrDisconnected)
	}
	return f.Host.Run(ctx, cmd, stdin)
}

// A release the host does not answer says so in one sentence: the lock is
// still there, and when it goes stale (StaleAfter after the last
// heartbeat) another cockpit can take over; the lock file stays.
func TestReleaseWhileUnreachable(t *testing.T) {
	local := remote.NewLocal()
	defer local.Close()
	h := &flaky{Host: local}
	dir := t.TempDir()
	l := newLock(h, dir, bob, nil)
	before := time.Now()
	mustAcquire(t, l, false, event.RoleDriving)
	h.down.Store(true)
	err := l.Release(context.Background())
	var nr *NotReleasedError
	if !errors.As(err, &nr) || !errors.Is(err, remote.ErrDisconnected) {
		t.Fatalf("Release: %v (%T), want a *NotReleasedError wrapping ErrDisconnected", err, err)
	}
	stale := l.StaleAfter
	if stale == 0 {
		stale = DefaultStaleAfter
	}
	if nr.StaleAt.Before(before.Add(stale)) || nr.StaleAt.After(time.Now().Add(stale)) {
		t.Errorf("StaleAt %v, want %v after the acquire (%v)", nr.StaleAt, stale, before)
	}
	want := "driver lock on " + h.Name() + " not released: the host is unreachable; it goes stale at " + nr.StaleAt.Local().Format("15:04:05") + ", and another cockpit can take over then"
	if err.Error() != want {
		t.Errorf("Release: %q\nwant      %q", err, want)
	}
	if _, serr := os.Stat(lockFile(dir)); serr != nil {
		t.Errorf("the lock file: %v, want it still there", serr)
	}
	if !l.Driving() && l.State().Role == event.RoleNone {
		t.Errorf("state %+v after a failed release, want the role kept", l.State())
	}
}

// A lost connection keeps the role, is published once, and clears when the
// host is back.
func TestDisconnectKeepsRole(t *testing.T) {
	local := remote.NewLocal()
	defer local.Close()
	h := &flaky{Host: local}
	for _, start := range []event.DriverRole{event.RoleDriving, event.RoleWatching} {
		t.Run(start.String(), func(t *testing.T) {
			dir := t.TempDir()
			if start == event.RoleWatching {
				mustAcquire(t, newLock(local, dir, alice, nil), false, event.RoleDriving)
			}
			pub := newStates()
			l := newLock(h, dir, bob, pub)
			mustAcquire(t, l, false, start)
			h.down.Store(true)
			runLock(t, l)
			st := pub.next(t, "error", func(s event.DriverState) bool { return s.Err != "" })
			if st.Role != start || !strings.Contains(st.Err, "connection to host lost") {
				t.Errorf("state %+v", st)
			}
			// Several more failed beats publish nothing new.
			for n := h.runs.Load() + 3; h.runs.Load() < n; {
				time.Sleep(10 * time.Millisecond)
			}
			h.down.Store(false)
			st = pub.next(t, "recovered", func(s event.DriverState) bool { return s.Err == "" })
			if st.Role != start {
				t.Errorf("recovered as %+v", st)
			}
			errs := 0
			for _, s := range pub.list() {
				if s.Err != "" {
					errs++
				}
			}
			if errs != 1 {
				t.Errorf("%d states with an error, want 1: %+v", errs, pub.list())
			}
		})
	}
}

// A driver that cannot refresh the lock for StaleAfter less one heartbeat
// stops driving (RoleUnsure) before a watcher could take its lock as
// stale: two cockpits never both drive. When the host answers again it
// drives on if the lock is still its own, and watches if it was taken.
func TestUnreachableDriverStopsDriving(t *testing.T) {
	local := remote.NewLocal()
	defer local.Close()
	for _, taken := range []bool{false, true} {
		t.Run(fmt.Sprintf("taken=%v", taken), func(t *testing.T) {
			dir := t.TempDir()
			h := &flaky{Host: local}
			pub := newStates()
			a := newLock(h, dir, alice, pub)
			a.StaleAfter = 2 * time.Second
			mustAcquire(t, a, false, event.RoleDriving)
			runLock(t, a)
			h.down.Store(true)
			downAt := time.Now()
			st := pub.next(t, "unsure", func(s event.DriverState) bool { return s.Role == event.RoleUnsure })
			if a.Driving() || !strings.Contains(st.Note, "keys that act wait") || st.Err == "" {
				t.Errorf("driving %v, state %+v", a.Driving(), st)
			}
			// Before the lock could be stale for a watcher (its mtime is at
			// least as old as the last write's start).
			if d := time.Since(downAt); d >= 2*time.Second {
				t.Errorf("unsure only after %v, when a watcher may already have taken the lock", d)
			}
			if taken {
				b := newLock(local, dir, bob, nil)
				b.StaleAfter = 2 * time.Second
				deadline := time.Now().Add(10 * time.Second)
				for {
					if st, _ := b.Acquire(context.Background(), false); st.Role == event.RoleDriving {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("bob never took the stale lock")
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			h.down.Store(false)
			want, note := event.RoleDriving, "the host answers again: still driving"
			if taken {
				want, note = event.RoleWatching, ""
			}
			st = pub.next(t, "after the host answers", func(s event.DriverState) bool { return s.Role == want && s.Err == "" })
			if note != "" && st.Note != note {
				t.Errorf("note %q, want %q", st.Note, note)
			}
			if taken && (st.Holder.User != bob.User || a.Driving()) {
				t.Errorf("after bob took it: %+v, driving %v", st, a.Driving())
			}
			if !taken && (!a.Driving() || fileToken(t, dir) != alice.Token) {
				t.Errorf("alice does not drive again: %+v", st)
			}
		})
	}
}

// hanging is a host whose calls, while down, wait until their context
// ends, as calls to an SSH host that is reconnecting do.
type hanging struct {
	remote.Host
	down atomic.Bool
}

func (h *hanging) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	if h.down.Load() {
		<-ctx.Done()
		return remote.Result{}, fmt.Errorf("remote: gpu-box: %w: %w", remote.ErrDisconnected, ctx.Err())
	}
	return h.Host.Run(ctx, cmd, stdin)
}

// A driver whose heartbeat hangs (the host keeps the call waiting for its
// whole timeout) stops driving on time all the same: Driving turns false
// and RoleUnsure is published before a watcher could take the lock.
func TestHangingHostStopsDrivingOnTime(t *testing.T) {
	local := remote.NewLocal()
	defer local.Close()
	dir := t.TempDir()
	h := &hanging{Host: local}
	pub := newStates()
	a := newLock(h, dir, alice, pub)
	a.StaleAfter = 2 * time.Second
	mustAcquire(t, a, false, event.RoleDriving)
	runLock(t, a)
	h.down.Store(true)
	b := newLock(local, dir, bob, nil)
	b.StaleAfter = 2 * time.Second
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, _ := b.Acquire(context.Background(), false)
		if st.Role == event.RoleDriving {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bob never took the stale lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Bob drives: alice must have stopped already.
	if a.Driving() {
		t.Fatal("alice still drives while bob took her stale lock")
	}
	if st := a.State(); st.Role != event.RoleUnsure {
		t.Errorf("alice's published state %+v, want unsure", st)
	}
}

// TestConfirmSeesATakeOverAtOnce: right after another cockpit took over,
// before the old driver's next heartbeat, Driving still says yes (it is
// as old as the last heartbeat) but Confirm asks the host and refuses,
// naming the new driver; the state turns watching.
func TestConfirmSeesATakeOverAtOnce(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	a, b := newLock(h, dir, alice, nil), newLock(h, dir, bob, nil)
	a.Heartbeat, a.StaleAfter = time.Hour, 3*time.Hour // no heartbeat during the test (a is not Run)
	mustAcquire(t, a, false, event.RoleDriving)
	ctx := context.Background()
	if err := a.Confirm(ctx); err != nil {
		t.Fatalf("Confirm while driving: %v", err)
	}
	mustAcquire(t, b, true, event.RoleDriving)
	if !a.Driving() {
		t.Fatal("a stopped driving without a heartbeat: the test proves nothing")
	}
	err := a.Confirm(ctx)
	if err == nil || !strings.Contains(err.Error(), "bob@desk (pid 77) drives this host now") {
		t.Fatalf("Confirm after a take-over: %v", err)
	}
	if a.Driving() || a.State().Role != event.RoleWatching {
		t.Errorf("after Confirm: driving %v, state %+v", a.Driving(), a.State())
	}
	if err := b.Confirm(ctx); err != nil {
		t.Errorf("the new driver's Confirm: %v", err)
	}
}

// TestConfirmFailsClosed: Confirm lets an action through only when it has
// confirmed it: a host that does not answer, or a context already done,
// refuse it (a failed heartbeat inside the stale window keeps Driving
// true, and must not count as confirmed). After this cockpit released the
// lock (stopping), an action it began may finish unless another cockpit
// holds the lock now.
func TestConfirmFailsClosed(t *testing.T) {
	local := remote.NewLocal()
	defer local.Close()
	h := &flaky{Host: local}
	dir := t.TempDir()
	a := newLock(h, dir, alice, nil)
	a.Heartbeat, a.StaleAfter = time.Hour, 3*time.Hour
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, newLock(local, dir, bob, nil), true, event.RoleDriving)
	h.down.Store(true)
	if err := a.Confirm(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot be confirmed") {
		t.Errorf("Confirm with the host down after a take-over: %v", err)
	}
	if !a.Driving() {
		t.Fatal("the failed heartbeat ended driving: the case above proves nothing")
	}
	h.down.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Confirm(ctx); err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Confirm with a cancelled context: %v", err)
	}

	// Released by this cockpit: free, the action may finish; taken by
	// another since, it may not.
	dir2 := t.TempDir()
	c := newLock(local, dir2, alice, nil)
	mustAcquire(t, c, false, event.RoleDriving)
	if err := c.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Confirm(context.Background()); err != nil {
		t.Errorf("Confirm after our own release, the lock free: %v", err)
	}
	mustAcquire(t, newLock(local, dir2, bob, nil), false, event.RoleDriving)
	if err := c.Confirm(context.Background()); err == nil || !strings.Contains(err.Error(), "bob@desk (pid 77) drives this host now") {
		t.Errorf("Confirm after our release, bob driving: %v", err)
	}
}
