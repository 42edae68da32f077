package sessions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// outside runs git in dir as the engineer in another pane would.
func outside(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// movedEvents returns the event.GitMoved payloads among es.
func movedEvents(es []event.Event) []event.GitMoved {
	var out []event.GitMoved
	for _, e := range es {
		if m, ok := e.Data.(event.GitMoved); ok {
			out = append(out, m)
		}
	}
	return out
}

// startGit builds the simulated SGLang checkout (at the baseline, two
// commits behind origin/main) and polls it every 50 ms through host.
func startGit(t *testing.T, host remote.Host) (*Git, *recorder, string, sim.RepoCommits) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "sglang")
	rc, err := sim.BuildRepo(context.Background(), filepath.Join(root, "upstream.git"), dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	g, rec := startGitAt(t, host, dir)
	return g, rec, dir, rc
}

func TestGitReportsMovesMadeOutside(t *testing.T) {
	hosts := map[string]func(t *testing.T) remote.Host{
		"local": func(*testing.T) remote.Host { return remote.NewLocal() },
		"sshd":  dialTestSSHD,
	}
	for name, host := range hosts {
		t.Run(name, func(t *testing.T) {
			_, rec, dir, rc := startGit(t, host(t))
			if m := movedEvents(rec.snapshot()); len(m) != 0 {
				t.Fatalf("moved at start: %+v", m)
			}
			ahead := slices.Index(rc.All, rc.Latest) - slices.Index(rc.All, rc.Baseline) // what the pull brings in
			steps := []struct {
				name  string
				do    func()
				check func(event.GitMoved) bool
			}{
				{"pull", func() { outside(t, dir, "pull", "-q", "--ff-only") }, func(m event.GitMoved) bool {
					return m.Action == "pull" && m.From == rc.Baseline && m.To == rc.Latest && m.Forward == ahead && m.Back == 0 &&
						slices.Contains(m.Files, sim.PyncclPath) && slices.Contains(m.Files, "python/sglang/srt/distributed/parallel_state.py")
				}},
				{"reset", func() { outside(t, dir, "reset", "-q", "--hard", rc.Baseline) }, func(m event.GitMoved) bool {
					return m.Action == "reset" && m.To == rc.Baseline && m.Back == ahead && m.Forward == 0
				}},
				{"edit", func() {
					if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("local\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}, func(m event.GitMoved) bool {
					return m.From == m.To && m.DirtyBefore == 0 && m.DirtyAfter == 1 && slices.Equal(m.DirtyChanged, []string{"README.md"})
				}},
				{"commit", func() { outside(t, dir, "commit", "-q", "-am", "local notes") }, func(m event.GitMoved) bool {
					return m.Action == "commit" && m.Forward == 1 && slices.Equal(m.Files, []string{"README.md"}) && m.DirtyAfter == 0
				}},
			}
			for _, s := range steps {
				n := len(movedEvents(rec.snapshot()))
				s.do()
				// One poll is 50 ms; allow for a loaded CI machine.
				rec.waitFor(t, s.name+" reported as moved", 10*time.Second, func(es []event.Event) bool {
					m := movedEvents(es)
					return len(m) > n && s.check(m[len(m)-1])
				})
				if m := movedEvents(rec.snapshot()); len(m) != n+1 {
					t.Errorf("%s: %d moves reported, want 1: %+v", s.name, len(m)-n, m[n:])
				}
			}
		})
	}
}

func TestGitActionsAreNotMovesAndCanBeUndone(t *testing.T) {
	g, rec, dir, rc := startGit(t, remote.NewLocal())
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "edit seen", 10*time.Second, func(es []event.Event) bool { return len(movedEvents(es)) == 1 })

	a, err := g.Checkout(ctx, rc.Regressing)
	if err != nil || !a.OK() || a.To != rc.Regressing {
		t.Fatalf("checkout: %v %+v", err, a)
	}
	if id, why := g.LastSnapshot(); id != a.Snapshot || !strings.HasPrefix(why, "checkout ") {
		t.Errorf("LastSnapshot %q %q", id, why)
	}
	time.Sleep(300 * time.Millisecond) // several polls
	es := rec.snapshot()
	if m := movedEvents(es); len(m) != 1 {
		t.Errorf("the cockpit's own checkout was reported as moved: %+v", m[1:])
	}
	var sawAction, sawHead bool
	for _, e := range es {
		switch p := e.Data.(type) {
		case event.GitAction:
			sawAction = p.Op == "checkout" && p.Snapshot == a.Snapshot
		case event.RepoHead:
			sawHead = sawHead || p.Commit == rc.Regressing
		}
	}
	if !sawAction || !sawHead {
		t.Errorf("published action %v head %v", sawAction, sawHead)
	}

	u, err := g.Undo(ctx)
	if err != nil || !u.OK() || u.To != rc.Baseline || u.Branch != "main" {
		t.Fatalf("undo: %v %+v", err, u)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(b) != "mine\n" {
		t.Errorf("README.md after undo %q", b)
	}
	// Undo of the undo redoes.
	if id, _ := g.LastSnapshot(); id != u.Snapshot {
		t.Errorf("after undo LastSnapshot %q, want %q", id, u.Snapshot)
	}

	// A new cockpit on the same checkout can still undo the last action.
	g2, _ := startGitAt(t, remote.NewLocal(), dir)
	if id, _ := g2.LastSnapshot(); id != u.Snapshot {
		t.Errorf("restarted cockpit's undo %q, want %q", id, u.Snapshot)
	}
}

// startGitAt polls the checkout at dir every 50 ms and waits for its first
// status.
func startGitAt(t *testing.T, host remote.Host, dir string) (*Git, *recorder) {
	t.Helper()
	rec := newRecorder()
	g := &Git{Host: host, Path: dir, Publish: rec.sink, Interval: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	rec.waitFor(t, "first status", 10*time.Second, func(es []event.Event) bool {
		return slices.ContainsFunc(es, func(e event.Event) bool { _, ok := e.Data.(event.GitStatus); return ok })
	})
	return g, rec
}

func TestGitUnreadableRepository(t *testing.T) {
	rec := newRecorder()
	g := &Git{Host: remote.NewLocal(), Path: t.TempDir(), Publish: rec.sink, Interval: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	rec.waitFor(t, "unreadable", 10*time.Second, func(es []event.Event) bool {
		return slices.ContainsFunc(es, func(e event.Event) bool {
			u, ok := e.Data.(event.RepoUnreadable)
			return ok && strings.Contains(u.Err, "not a git")
		})
	})
	time.Sleep(100 * time.Millisecond)
	n := 0
	for _, e := range rec.snapshot() {
		if _, ok := e.Data.(event.RepoUnreadable); ok {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d Unreadable events, want 1 (once per distinct error)", n)
	}
	if _, err := g.Undo(ctx); err == nil {
		t.Error("undo without a repository succeeded")
	}
}

// dialTestSSHD starts a real sshd on loopback and connects to it.
func dialTestSSHD(t *testing.T) remote.Host {
	t.Helper()
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile: os.DevNull, IdentityFiles: []string{srv.ClientKeyPath()}, KnownHostsFiles: []string{known}, NoAgent: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func TestGitIdleWaitsForTheActionInFlight(t *testing.T) {
	g := &Git{}
	if !g.Idle(context.Background(), func() { t.Error("busy called while idle") }) {
		t.Fatal("not idle")
	}
	g.mu.Lock() // an action in flight
	busy := make(chan struct{})
	idle := make(chan bool)
	go func() { idle <- g.Idle(context.Background(), func() { close(busy) }) }()
	<-busy
	select {
	case <-idle:
		t.Fatal("Idle returned while the action ran")
	case <-time.After(50 * time.Millisecond):
	}
	g.mu.Unlock()
	if !<-idle {
		t.Error("Idle reported busy after the action ended")
	}
	g.mu.Lock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if g.Idle(ctx, nil) {
		t.Error("Idle reported idle when its context ended first")
	}
	g.mu.Unlock()
}
