package driver

// The lock file as the host has it: garbled or hostile content, quoted and
// home-relative directories, Read, concurrent acquires and their mutex, a
// file removed under the driver, a mutex left behind.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

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
