package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// wait is how long a test waits for an event before it fails: a safety
// net, never a measured time.
const wait = 20 * time.Second

var (
	alice = event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123, Token: "a11ce0"}
	bob   = event.DriverInfo{User: "bob", Machine: "desk", PID: 77, Token: "b0b0"}
)

// states collects the States a Lock publishes.
type states struct {
	ch  chan event.DriverState
	mu  sync.Mutex
	all []event.DriverState
}

func newStates() *states { return &states{ch: make(chan event.DriverState, 1024)} }

func (s *states) sink(e event.Event) {
	st := e.Data.(event.DriverState)
	if e.At.IsZero() {
		panic("event without a time")
	}
	s.mu.Lock()
	s.all = append(s.all, st)
	s.mu.Unlock()
	s.ch <- st
}

// next waits for a published State that ok accepts, skipping others.
func (s *states) next(t *testing.T, what string, ok func(event.DriverState) bool) event.DriverState {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case st := <-s.ch:
			if ok(st) {
				return st
			}
		case <-timeout:
			t.Fatalf("no %s state published; got %+v", what, s.list())
		}
	}
}

func (s *states) list() []event.DriverState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event.DriverState(nil), s.all...)
}

func newLock(h remote.Host, dir string, me event.DriverInfo, pub *states) *Lock {
	l := &Lock{Host: h, Dir: dir, Me: me, Heartbeat: 50 * time.Millisecond}
	if pub != nil {
		l.Publish = pub.sink
	}
	return l
}

func mustAcquire(t *testing.T, l *Lock, takeOver bool, want event.DriverRole) event.DriverState {
	t.Helper()
	st, err := l.Acquire(context.Background(), takeOver)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if st.Role != want {
		t.Fatalf("Acquire: role %s, want %s (%+v)", st.Role, want, st)
	}
	return st
}

// runLock runs l until the test ends and returns the error Run returned
// (once it has).
func runLock(t *testing.T, l *Lock) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

func lockFile(dir string) string { return filepath.Join(dir, FileName) }

func fileToken(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(lockFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"token":"([0-9a-f]*)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no token in %s", b)
	}
	return string(m[1])
}

func age(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(lockFile(dir), old, old); err != nil {
		t.Fatal(err)
	}
}

func TestAcquireFreeThenWatch(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := filepath.Join(t.TempDir(), "logs") // created by the first Acquire
	pa, pb := newStates(), newStates()
	a, b := newLock(h, dir, alice, pa), newLock(h, dir, bob, pb)

	st := mustAcquire(t, a, false, event.RoleDriving)
	if st.Holder.Token != alice.Token || st.Holder.User != "alice" || st.Holder.Since.IsZero() || st.Note != "" || st.Err != "" || st.Host != "local" {
		t.Errorf("driving state %+v", st)
	}
	if !a.Driving() || fileToken(t, dir) != alice.Token || a.Path() != lockFile(dir) {
		t.Errorf("driving %v, file token %s, path %s", a.Driving(), fileToken(t, dir), a.Path())
	}
	// What flightdeck writes on a host is its user's alone.
	for p, want := range map[string]os.FileMode{dir: 0o700, lockFile(dir): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if got := pa.list(); len(got) != 1 || got[0] != st {
		t.Errorf("published %+v, want the one state", got)
	}

	st = mustAcquire(t, b, false, event.RoleWatching)
	h0 := st.Holder
	if h0.Token != alice.Token || h0.User != "alice" || h0.Machine != "laptop" || h0.PID != 4123 || h0.Heartbeat.IsZero() || st.Err != "" {
		t.Errorf("watching state %+v", st)
	}
	if !h0.Since.Equal(a.State().Holder.Since) {
		t.Errorf("holder since %s, want %s", h0.Since, a.State().Holder.Since)
	}
	if b.Driving() || fileToken(t, dir) != alice.Token {
		t.Errorf("watcher drives or wrote the file")
	}
	// Acquiring again while holding it: still ours, same start.
	st2 := mustAcquire(t, a, false, event.RoleDriving)
	if !st2.Holder.Since.Equal(st.Holder.Since) {
		t.Errorf("re-acquire moved since from %s to %s", st.Holder.Since, st2.Holder.Since)
	}
}

func TestTakeOver(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	pa := newStates()
	a, b := newLock(h, dir, alice, pa), newLock(h, dir, bob, nil)
	mustAcquire(t, a, false, event.RoleDriving)
	runLock(t, a)

	st := mustAcquire(t, b, true, event.RoleDriving)
	want := fmt.Sprintf("took over from alice@laptop (pid 4123, driving since %s)", a.State().Holder.Since.Local().Format("15:04:05"))
	if st.Note != want {
		t.Errorf("note %q, want %q", st.Note, want)
	}
	lost := pa.next(t, "watching", func(s event.DriverState) bool { return s.Role == event.RoleWatching })
	if lost.Holder.Token != bob.Token || lost.Note != "bob@desk (pid 77) took over at "+st.Holder.Since.Local().Format("15:04:05") {
		t.Errorf("lost state %+v", lost)
	}
	if a.Driving() || fileToken(t, dir) != bob.Token {
		t.Errorf("a still drives, or the file is not b's")
	}
}

func TestStaleLockTaken(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	a, b := newLock(h, dir, alice, nil), newLock(h, dir, bob, nil)
	mustAcquire(t, a, false, event.RoleDriving)
	age(t, dir, 47*time.Second)
	st := mustAcquire(t, b, false, event.RoleDriving)
	// The host's clock may tick between the Chtimes and the script.
	if ok, _ := regexp.MatchString(`^took the stale lock of alice@laptop \(pid 4123\): no heartbeat for 4[78]s$`, st.Note); !ok {
		t.Errorf("note %q", st.Note)
	}
	if fileToken(t, dir) != bob.Token {
		t.Errorf("file not bob's")
	}
}

func TestHeartbeatRefreshes(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	a := newLock(h, dir, alice, nil)
	mustAcquire(t, a, false, event.RoleDriving)
	age(t, dir, 20*time.Second)
	runLock(t, a)
	deadline := time.Now().Add(wait)
	for {
		fi, err := os.Stat(lockFile(dir))
		if err == nil && time.Since(fi.ModTime()) < 10*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat never refreshed the mtime (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, held, err := Read(context.Background(), h, dir); !held || err != nil {
		t.Errorf("Read: held %v, %v", held, err)
	}
}

func TestRelease(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := context.Background()
	t.Run("ours", func(t *testing.T) {
		dir := t.TempDir()
		pa := newStates()
		a := newLock(h, dir, alice, pa)
		mustAcquire(t, a, false, event.RoleDriving)
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(lockFile(dir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("lock file still there: %v", err)
		}
		if st := a.State(); st.Role != event.RoleNone || st.Note != "released the lock" || a.Driving() {
			t.Errorf("after release %+v", st)
		}
		if err := a.Release(ctx); err != nil { // twice: nothing to do
			t.Fatal(err)
		}
	})
	t.Run("taken over", func(t *testing.T) {
		dir := t.TempDir()
		a, b := newLock(h, dir, alice, nil), newLock(h, dir, bob, nil)
		mustAcquire(t, a, false, event.RoleDriving)
		mustAcquire(t, b, true, event.RoleDriving)
		if err := a.Release(ctx); err != nil { // a has not noticed yet
			t.Fatal(err)
		}
		if fileToken(t, dir) != bob.Token {
			t.Errorf("a released b's lock")
		}
	})
	t.Run("run ends", func(t *testing.T) {
		dir := t.TempDir()
		a := newLock(h, dir, alice, nil)
		stop := runLock(t, a) // Run acquires by itself
		deadline := time.Now().Add(wait)
		for !a.Driving() {
			if time.Now().After(deadline) {
				t.Fatalf("Run never acquired: %+v", a.State())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := stop(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if _, err := os.Stat(lockFile(dir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("lock file left after Run: %v", err)
		}
	})
}

func TestWatcherTakesReleasedLock(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	pb := newStates()
	a, b := newLock(h, dir, alice, nil), newLock(h, dir, bob, pb)
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, b, false, event.RoleWatching)
	runLock(t, b)
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := pb.next(t, "driving", func(s event.DriverState) bool { return s.Role == event.RoleDriving })
	if st.Note != "alice@laptop (pid 4123) quit: you drive now" || st.Holder.Token != bob.Token {
		t.Errorf("state %+v", st)
	}
	if fileToken(t, dir) != bob.Token {
		t.Errorf("file not bob's")
	}
}

func TestWatcherFollowsNewHolderAndStale(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	pb := newStates()
	a, b, c := newLock(h, dir, alice, nil), newLock(h, dir, bob, pb), newLock(h, dir, event.DriverInfo{User: "carol", Machine: "gpu-box", PID: 9, Token: "c0c0"}, nil)
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, b, false, event.RoleWatching)
	runLock(t, b)
	st := mustAcquire(t, c, true, event.RoleDriving)
	got := pb.next(t, "new holder", func(s event.DriverState) bool { return s.Holder.Token == "c0c0" })
	if got.Role != event.RoleWatching || got.Note != "carol@gpu-box (pid 9) took over from alice@laptop (pid 4123) at "+st.Holder.Since.Local().Format("15:04:05") {
		t.Errorf("state %+v", got)
	}
	age(t, dir, time.Minute) // carol's cockpit died
	got = pb.next(t, "driving", func(s event.DriverState) bool { return s.Role == event.RoleDriving })
	if ok, _ := regexp.MatchString(`^took the stale lock of carol@gpu-box \(pid 9\): no heartbeat for 6[01]s$`, got.Note); !ok {
		t.Errorf("note %q", got.Note)
	}
}

func TestBadSettings(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		l    *Lock
		want string
	}{
		{"no host", &Lock{Dir: dir}, "no host"},
		{"stale too short", &Lock{Host: h, Dir: dir, StaleAfter: time.Second}, "at least 2s"},
		{"stale under 2 beats", &Lock{Host: h, Dir: dir, Heartbeat: 20 * time.Second}, "twice the heartbeat"},
		{"token", &Lock{Host: h, Dir: dir, Me: event.DriverInfo{Token: "XY"}}, "hex"},
		{"user", &Lock{Host: h, Dir: dir, Me: event.DriverInfo{User: "a\x1b[2Jb"}}, "printable"},
		{"machine", &Lock{Host: h, Dir: dir, Me: event.DriverInfo{Machine: strings.Repeat("m", 65)}}, "at most 64 bytes"},
		{"dir", &Lock{Host: h, Dir: dir + "/a\nb"}, "cannot quote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := tc.l.Acquire(context.Background(), false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if st.Role != event.RoleNone || st.Err == "" || tc.l.Driving() {
				t.Errorf("state %+v", st)
			}
		})
	}
	if _, err := os.Stat(lockFile(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused lock wrote the file")
	}
}

// TestConfirmDuringReleaseDoesNotRetake: an action's Confirm racing the
// release at the end (a cancelled bisect restoring the checkout while
// its session stops) must not take the lock again: nothing would release
// it, and the next cockpit of the same user would find the host driven.
func TestConfirmDuringReleaseDoesNotRetake(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := context.Background()
	for i := range 40 {
		dir := t.TempDir()
		a := newLock(h, dir, alice, nil)
		mustAcquire(t, a, false, event.RoleDriving)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := a.Release(ctx); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			_ = a.Confirm(ctx) // may pass (still ours) or refuse: either is fine
		}()
		wg.Wait()
		if _, err := os.Stat(lockFile(dir)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("try %d: the lock file is back after Release and a concurrent Confirm (%v): %+v", i, err, a.State())
		}
		if a.Driving() {
			t.Fatalf("try %d: driving after Release", i)
		}
	}
}
