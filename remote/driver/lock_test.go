package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
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

func TestGarbledLockFile(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	for _, tc := range []struct{ name, content string }{
		{"not json", "hello \x1b[31m world"},
		{"no token", `{"user":"x","machine":"y","pid":1}`},
		{"bad token", `{"user":"x","token":"ZZ; rm -rf /"}`},
		{"too big", `{"token":"ab","journal":"` + strings.Repeat("x", MaxFileBytes) + `"}`},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(lockFile(dir), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			b := newLock(h, dir, bob, nil)
			st := mustAcquire(t, b, false, event.RoleWatching)
			if !strings.HasPrefix(st.Err, "garbled lock file "+lockFile(dir)) || st.Holder.Token != "" || st.Holder.Heartbeat.IsZero() {
				t.Errorf("state %+v", st)
			}
			if strings.ContainsRune(st.Err, 0x1b) {
				t.Errorf("escape in Err %q", st.Err)
			}
			if _, held, err := Read(context.Background(), h, dir); !held || !errors.Is(err, ErrGarbled) {
				t.Errorf("Read: held %v, err %v", held, err)
			}
			age(t, dir, 40*time.Second)
			st = mustAcquire(t, b, false, event.RoleDriving)
			if !strings.HasPrefix(st.Note, "took the stale lock (a garbled lock file): no heartbeat for 4") || st.Err != "" {
				t.Errorf("state %+v", st)
			}
		})
	}
	t.Run("take over", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(lockFile(dir), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
		st := mustAcquire(t, newLock(h, dir, bob, nil), true, event.RoleDriving)
		if st.Note != "took over from an unknown cockpit (a garbled lock file)" {
			t.Errorf("note %q", st.Note)
		}
	})
}

// Remote text in a valid lock file is sanitised and cut before it can
// reach a screen.
func TestHostileHolder(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	content := `{"user":"\u001b]52;c;aGk=\u0007eve","machine":"` + strings.Repeat("m", 200) + `","pid":5,"token":"e0e0","journal":"/j\u202e.jsonl"}`
	if err := os.WriteFile(lockFile(dir), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	st := mustAcquire(t, newLock(h, dir, bob, nil), false, event.RoleWatching)
	for _, s := range []string{st.Holder.User, st.Holder.Machine, st.Holder.Journal} {
		if strings.ContainsAny(s, "\x1b\x07\u202e") || len(s) > MaxNameBytes && s != st.Holder.Journal {
			t.Errorf("unsafe holder text %q", s)
		}
	}
	if len(st.Holder.Machine) != MaxNameBytes || st.Holder.Token != "e0e0" {
		t.Errorf("holder %+v", st.Holder)
	}
}

func TestConcurrentAcquire(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	for _, mutex := range []string{mutexFlock, mutexMkdir} {
		t.Run(mutex, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new")
			const n = 8
			var driving atomic.Int32
			var wg sync.WaitGroup
			locks := make([]*Lock, n)
			for i := range n {
				locks[i] = newLock(h, dir, event.DriverInfo{User: "u", Machine: "m", PID: i + 1, Token: fmt.Sprintf("%x", 0x100+i)}, nil)
				locks[i].mutex = mutex
				wg.Go(func() {
					st, err := locks[i].Acquire(context.Background(), false)
					if err != nil {
						t.Error(err)
						return
					}
					if st.Role == event.RoleDriving {
						driving.Add(1)
					}
				})
			}
			wg.Wait()
			if driving.Load() != 1 {
				t.Fatalf("%d cockpits drive, want 1", driving.Load())
			}
			tok := fileToken(t, dir)
			for _, l := range locks {
				if l.Driving() != (l.Me.Token == tok) {
					t.Errorf("lock %s driving %v, file holds %s", l.Me.Token, l.Driving(), tok)
				}
				if st := l.State(); st.Holder.Token != tok {
					t.Errorf("lock %s sees holder %s, file holds %s", l.Me.Token, st.Holder.Token, tok)
				}
			}
			if _, err := os.Stat(lockFile(dir) + ".mutex.d"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("mkdir mutex left behind: %v", err)
			}
		})
	}
}

// A directory with spaces, quotes and shell syntax in its name: every word
// is quoted.
func TestQuotedDir(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := filepath.Join(t.TempDir(), "it's a $HOME `dir`; x")
	a, b := newLock(h, dir, alice, nil), newLock(h, dir, bob, nil)
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, b, false, event.RoleWatching)
	if fileToken(t, dir) != alice.Token {
		t.Fatal("file not alice's")
	}
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, b, false, event.RoleDriving)
}

// "~/x" and "" resolve against the host's $HOME.
func TestHomeDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	h := remote.NewLocal()
	defer h.Close()
	mustAcquire(t, newLock(h, "~/locks", alice, nil), false, event.RoleDriving)
	if fileToken(t, filepath.Join(home, "locks")) != alice.Token {
		t.Error("not in ~/locks")
	}
	l := newLock(h, "", bob, nil)
	mustAcquire(t, l, false, event.RoleDriving)
	if want := filepath.Join(home, ".flightdeck/logs", FileName); l.Path() != want {
		t.Errorf("path %s, want %s", l.Path(), want)
	}
	info, held, err := Read(context.Background(), h, "")
	if err != nil || !held || info.Token != bob.Token || info.Heartbeat.IsZero() {
		t.Errorf("Read: %+v %v %v", info, held, err)
	}
}

func TestRead(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "none")
	if info, held, err := Read(ctx, h, dir); err != nil || held || info != (event.DriverInfo{}) {
		t.Errorf("no lock: %+v %v %v", info, held, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read created the directory")
	}
	mustAcquire(t, newLock(h, dir, alice, nil), false, event.RoleDriving)
	info, held, err := Read(ctx, h, dir)
	if err != nil || !held || info.Token != alice.Token || info.PID != 4123 {
		t.Errorf("held: %+v %v %v", info, held, err)
	}
	age(t, dir, time.Minute)
	if info, held, err = Read(ctx, h, dir); err != nil || held || info.Token != alice.Token || time.Since(info.Heartbeat) < 50*time.Second {
		t.Errorf("stale: %+v %v %v", info, held, err)
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

// A lock file removed under the driver (by hand, a cleanup job) is written
// again at the next heartbeat, with a note.
func TestVanishedLockRetaken(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	pa := newStates()
	a := newLock(h, dir, alice, pa)
	first := mustAcquire(t, a, false, event.RoleDriving)
	runLock(t, a)
	if err := os.Remove(lockFile(dir)); err != nil {
		t.Fatal(err)
	}
	st := pa.next(t, "retaken", func(s event.DriverState) bool { return s.Note != "" })
	if st.Role != event.RoleDriving || st.Note != "the lock file vanished: took it again" || fileToken(t, dir) != alice.Token {
		t.Errorf("state %+v", st)
	}
	if !st.Holder.Since.After(first.Holder.Since) {
		t.Errorf("since %s not after %s", st.Holder.Since, first.Holder.Since)
	}
}

// A mkdir mutex left by a killed script is removed once it is older than
// 30 s (after the 5 s the script waits for it).
func TestLeftMkdirMutex(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	m := lockFile(dir) + ".mutex.d"
	if err := os.Mkdir(m, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(m, old, old); err != nil {
		t.Fatal(err)
	}
	l := newLock(h, dir, alice, nil)
	l.mutex = mutexMkdir
	mustAcquire(t, l, false, event.RoleDriving)
	if _, err := os.Stat(m); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mutex directory left: %v", err)
	}
	// A fresh one is respected: the script gives up with a clear error.
	if err := os.Mkdir(m, 0o755); err != nil {
		t.Fatal(err)
	}
	b := newLock(h, dir, bob, nil)
	b.mutex = mutexMkdir
	st, err := b.Acquire(context.Background(), true)
	if err == nil || !strings.Contains(err.Error(), "busy") || !strings.Contains(st.Err, "busy") {
		t.Errorf("busy mutex: %+v %v", st, err)
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
