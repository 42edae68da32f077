package sessions

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// TestLazyRepeatWaitsForARunInFlight: the cockpit waits, after its screen
// ends, for a repeat still relaunching (Session.WaitRepeat), and not
// longer than it is told.
func TestLazyRepeatWaitsForARunInFlight(t *testing.T) {
	var l Session
	if !l.WaitRepeat(time.Second) {
		t.Fatal("nothing in flight, yet wait timed out")
	}
	release := make(chan struct{})
	l.inflight.Add(1) // a Run in flight, as Run counts it
	go func() {
		<-release
		l.inflight.Done()
	}()
	if l.WaitRepeat(20 * time.Millisecond) {
		t.Fatal("wait returned while a Run was in flight")
	}
	close(release)
	if !l.WaitRepeat(10 * time.Second) {
		t.Fatal("wait did not see the Run end")
	}
}

// TestSessionActsOnlyOnceAttached: before Attach every action says the
// host is still starting (the demo's screen opens first); a session
// without a journal refuses experiments and notes.
func TestSessionActsOnlyOnceAttached(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{Name: "box", Journal: JournalOptions{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx, nil)
	if err := s.Kill(ctx); !errors.Is(err, ErrNotYet) {
		t.Errorf("kill before attach: %v", err)
	}
	if _, err := s.Launch(ctx, Plan{}); !errors.Is(err, ErrNotYet) {
		t.Errorf("launch before attach: %v", err)
	}
	if _, err := s.Checkout(ctx, "HEAD"); !errors.Is(err, ErrNotYet) {
		t.Errorf("checkout before attach: %v", err)
	}
	if _, err := s.Note(ctx, "x"); !errors.Is(err, ErrNotYet) {
		t.Errorf("note before attach: %v", err)
	}
	if _, err := s.Bench(ctx, event.BenchConfig{}); !errors.Is(err, ErrNotYet) {
		t.Errorf("bench before attach: %v", err)
	}
	if err := s.Repeat(ctx, RepeatConfig{}); !errors.Is(err, ErrNotYet) {
		t.Errorf("repeat before attach: %v", err)
	}
	if err := s.Run(ctx, LiveConfig{}); !errors.Is(err, ErrNotYet) {
		t.Errorf("run before attach: %v", err)
	}
	if err := s.Attach(ctx, AttachOptions{Host: remote.NewLocal(), Target: config.Host{LogDir: t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Note(ctx, "x"); !errors.Is(err, ErrNoJournal) {
		t.Errorf("note without a journal: %v", err)
	}
	if _, err := s.Checkout(ctx, "HEAD"); !errors.Is(err, ErrNoRepo) {
		t.Errorf("checkout without a checkout: %v", err)
	}
	if err := s.Attach(ctx, AttachOptions{}); err == nil {
		t.Error("a second Attach was taken")
	}
}

// TestSessionCheckRefusesWhileACockpitDrives: a CLI session (DriverCheck)
// refuses to change the checkout or kill while a cockpit holds the
// driver lock, naming it, and acts with Force or once it is released.
func TestSessionCheckRefusesWhileACockpitDrives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	host := remote.NewLocal()
	logs := t.TempDir()
	root := t.TempDir()
	repo := filepath.Join(root, "sglang")
	if _, err := sim.BuildRepo(ctx, filepath.Join(root, "upstream.git"), repo, 0); err != nil {
		t.Fatal(err)
	}
	l := &driver.Lock{Host: host, Dir: logs, Me: event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123}}
	if st, err := l.Acquire(ctx, false); err != nil || st.Role != event.RoleDriving {
		t.Fatalf("acquire: %+v %v", st, err)
	}
	open := func(force bool) *Session {
		s, err := Open(Options{Name: "local", Journal: JournalOptions{Off: true}, Driver: DriverOptions{Mode: DriverCheck, Force: force}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Attach(ctx, AttachOptions{Host: host, Target: config.Host{LogDir: logs}, Repo: repo}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background(), nil) })
		return s
	}
	s := open(false)
	var driven *DrivenError
	if err := s.MayAct(ctx); !errors.As(err, &driven) || !strings.Contains(err.Error(), "alice@laptop (pid 4123) drives") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("may act while alice drives: %v", err)
	}
	if _, err := s.Stash(ctx, "mine", true); !errors.As(err, &driven) {
		t.Errorf("stash while alice drives: %v", err)
	}
	if err := s.Kill(ctx); !errors.As(err, &driven) {
		t.Errorf("kill while alice drives: %v", err)
	}
	if err := open(true).MayAct(ctx); err != nil {
		t.Errorf("forced: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.MayAct(ctx); err != nil {
		t.Errorf("after the release: %v", err)
	}
}

// TestSessionAmendsAJournal: a session without a host appended to a
// closed journal writes what the n, w and B keys write, naming the
// journal's earlier experiments, and refuses what needs a host.
func TestSessionAmendsAJournal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	w, err := journal.Create(path, event.SessionHeader{Host: "gpu-box", Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	for _, p := range []event.Payload{
		event.ExperimentStart{ID: "e1", Name: "none @ a6d51c0", Trigger: event.TriggerKey},
		event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerKey},
	} {
		if err := w.Write(event.Event{At: at, Data: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Journal: JournalOptions{File: path + ".missing", MustExist: true}}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing journal that must exist: %v", err)
	}
	s, err := Open(Options{Name: "gpu-box", Version: "test", Journal: JournalOptions{File: path, MustExist: true},
		Header: event.SessionHeader{Host: "gpu-box", Label: "journal conclude"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Attach(ctx, AttachOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateExperiment(ctx, event.ExperimentUpdate{Exp: "e1", Conclusion: "the pull did it"}); err != nil {
		t.Errorf("conclude e1: %v", err)
	}
	if err := s.Baseline(ctx, "e1"); err != nil {
		t.Errorf("baseline e1: %v", err)
	}
	if err := s.Baseline(ctx, "e9"); err == nil || !strings.Contains(err.Error(), `no experiment "e9"`) {
		t.Errorf("baseline e9: %v", err)
	}
	if _, err := s.Note(ctx, "found later"); err != nil {
		t.Errorf("note: %v", err)
	}
	if _, err := s.StartExperiment(ctx, "x", ""); !errors.Is(err, ErrNoHost) {
		t.Errorf("start without a host: %v", err)
	}
	if err := s.Close(ctx, nil); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var kinds []string
	if err := j.Scan(func(e event.Event) error {
		kinds = append(kinds, e.Data.Kind().String())
		switch p := e.Data.(type) {
		case event.ExperimentUpdate:
			if p.Exp != "e1" || p.Conclusion != "the pull did it" {
				t.Errorf("update %+v", p)
			}
		case event.Session:
			if p.Label != "journal conclude" || p.Flightdeck != "test" {
				t.Errorf("session %+v", p)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := "exp-start exp-end session exp-update exp-baseline note"; strings.Join(kinds, " ") != want {
		t.Errorf("journal holds %q, want %q", strings.Join(kinds, " "), want)
	}
}
