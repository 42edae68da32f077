package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/hostwatch"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestMain lets the test agent run this binary as `flightdeck agent
// watch` (hostwatch.Run with the Options in the last argument).
func TestMain(m *testing.M) {
	if os.Getenv("FLIGHTDECK_HOSTWATCH_CHILD") == "1" {
		var o hostwatch.Options
		if err := json.Unmarshal([]byte(os.Args[len(os.Args)-1]), &o); err != nil {
			os.Exit(2)
		}
		if err := hostwatch.Run(context.Background(), os.Stdout, o); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// watchAgent is a remote.Agent whose `agent watch` is this test binary
// (none with noAgent: the shell watcher then).
type watchAgent struct {
	opts    hostwatch.Options
	noAgent bool
}

func (a *watchAgent) AgentCommand(ctx context.Context, args ...string) (string, error) {
	if a.noAgent {
		return "", fmt.Errorf("%w: test", remote.ErrNoAgent)
	}
	js, _ := json.Marshal(a.opts)
	cmd, err := remote.Command("env", "FLIGHTDECK_HOSTWATCH_CHILD=1", os.Args[0], string(js))
	return `printf '{"t":"launch","pid":%s}\n' "$$"; exec ` + cmd, err
}

// countingHost counts the commands run (one SSH session each).
type countingHost struct {
	remote.Host
	runs atomic.Int32
}

func (h *countingHost) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	h.runs.Add(1)
	return h.Host.Run(ctx, cmd, stdin)
}

// TestWatcherOnTheWatchStream watches a real checkout over a real sshd
// through the agent, then through the shell watcher: each change of HEAD,
// the branch or the dirty set gives exactly one RepoHead, as expected,
// within one interval of the host side (a round of the shell's tree check
// for edits; this tree fits in one); a quiet checkout costs no command.
func TestWatcherOnTheWatchStream(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	ssh, err := remote.DialSSH(dctx, srv.Target(), remote.SSHOptions{
		ConfigFile: os.DevNull, IdentityFiles: []string{srv.ClientKeyPath()}, KnownHostsFiles: []string{known}, NoAgent: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ssh.Close()
	const iv = 200 * time.Millisecond
	for _, noAgent := range []bool{false, true} {
		name := map[bool]string{false: "agent", true: "shell"}[noAgent]
		t.Run(name, func(t *testing.T) {
			dir := newRepo(t)
			h := &countingHost{Host: ssh}
			ag := &watchAgent{opts: hostwatch.Options{Repo: dir, Interval: iv}, noAgent: noAgent}
			got := make(chan event.RepoHead, 16)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &Watcher{Host: h, Path: dir, Agent: ag, WatchInterval: iv, Interval: time.Minute}
			done := make(chan struct{})
			go func() {
				defer close(done)
				w.Run(ctx, func(e event.Event) {
					if hd, ok := e.Data.(event.RepoHead); ok {
						got <- hd
					}
				})
			}()
			defer func() { cancel(); <-done }()
			next := func(what string) event.RepoHead {
				t.Helper()
				select {
				case hd := <-got:
					return hd
				case <-time.After(5 * time.Second):
					t.Fatalf("%s: no RepoHead", what)
				}
				panic("unreachable")
			}
			first := next("start")
			if first.Branch != "main" || first.Dirty != 0 {
				t.Fatalf("start: %+v", first)
			}
			// Steady state: no RepoHead and no command over 2 s (10 intervals).
			time.Sleep(time.Second) // the stream's start read
			runs := h.runs.Load()
			select {
			case hd := <-got:
				t.Fatalf("a RepoHead while nothing changed: %+v", hd)
			case <-time.After(2 * time.Second):
			}
			if n := h.runs.Load() - runs; n != 0 {
				t.Errorf("%d commands in 2 s of steady state, want 0", n)
			}

			steps := []struct {
				what  string
				do    func()
				check func(event.RepoHead) bool
			}{
				{"edit a tracked file", func() {
					os.WriteFile(filepath.Join(dir, "pynccl.py"), []byte("edited\n"), 0o644)
				}, func(hd event.RepoHead) bool { return hd.Dirty == 1 }},
				{"add an untracked file", func() {
					os.WriteFile(filepath.Join(dir, "new file.py"), []byte("x\n"), 0o644)
				}, func(hd event.RepoHead) bool { return hd.Dirty == 2 }},
				{"git stash -u", func() { git(t, dir, "stash", "-u", "-q") }, func(hd event.RepoHead) bool { return hd.Dirty == 0 }},
				{"commit", func() { git(t, dir, "commit", "-q", "--allow-empty", "-m", "second") },
					func(hd event.RepoHead) bool { return hd.Subject == "second" && hd.Commit != first.Commit }},
				{"switch to a new branch", func() { git(t, dir, "checkout", "-q", "-b", "fix") }, func(hd event.RepoHead) bool { return hd.Branch == "fix" }},
				{"checkout the first commit", func() { git(t, dir, "checkout", "-q", first.Commit) },
					func(hd event.RepoHead) bool { return hd.Branch == "" && hd.Commit == first.Commit }},
			}
			for _, s := range steps {
				at := time.Now()
				s.do()
				hd := next(s.what)
				if !s.check(hd) {
					t.Fatalf("%s: got %+v", s.what, hd)
				}
				// One interval on the host, the stream, and one Read over SSH.
				if d := time.Since(at); d > iv+time.Second {
					t.Errorf("%s: seen after %v", s.what, d)
				}
				select {
				case again := <-got:
					t.Fatalf("%s: a second RepoHead %+v", s.what, again)
				case <-time.After(3 * iv):
				}
			}
		})
	}
}
