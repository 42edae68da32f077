package hostwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
)

// countingHost counts the commands the cockpit runs (Run: one SSH session
// each) and starts (Start: a long-lived one).
type countingHost struct {
	remote.Host
	runs, starts atomic.Int32
	failStart    bool
}

func (h *countingHost) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	h.runs.Add(1)
	return h.Host.Run(ctx, cmd, stdin)
}

func (h *countingHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	h.starts.Add(1)
	if h.failStart {
		return nil, fmt.Errorf("remote: %w: test", remote.ErrDisconnected)
	}
	return h.Host.Start(ctx, cmd)
}

// testAgent is a remote.Agent whose `agent watch` is this test binary
// running Run with opts (see TestMain), after the launcher's line; or,
// with noAgent, none; with broken, an agent that has no watch subcommand.
type testAgent struct {
	opts    Options
	noAgent bool
	broken  bool
	asked   atomic.Int32
}

func (a *testAgent) AgentCommand(ctx context.Context, args ...string) (string, error) {
	a.asked.Add(1)
	if a.noAgent {
		return "", fmt.Errorf("%w: test", remote.ErrNoAgent)
	}
	if len(args) < 2 || args[0] != "agent" || args[1] != "watch" {
		return "", fmt.Errorf("test agent: args %q", args)
	}
	if a.broken {
		return `printf '{"t":"launch","pid":%s}\n' "$$"; echo 'Error: unknown command "watch" for "flightdeck agent"' >&2; exit 1`, nil
	}
	js, _ := json.Marshal(a.opts)
	cmd, err := remote.Command("env", "FLIGHTDECK_HOSTWATCH_CHILD=1", os.Args[0], string(js))
	return `printf '{"t":"launch","pid":%s}\n' "$$"; exec ` + cmd, err
}

func dialSSHD(t *testing.T) remote.Host {
	t.Helper()
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile: os.DevNull, IdentityFiles: []string{srv.ClientKeyPath()}, KnownHostsFiles: []string{known}, NoAgent: true,
	})
	must(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

// fires counts C's signals over d.
func fires(c <-chan struct{}, d time.Duration) int {
	n := 0
	deadline := time.After(d)
	for {
		select {
		case <-c:
			n++
		case <-deadline:
			return n
		}
	}
}

// waitFire waits for one signal.
func waitFire(t *testing.T, c <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(d):
		t.Fatalf("%s: no signal within %v", what, d)
	}
}

// TestTriggerOverSSH drives the trigger over a real sshd with the agent,
// then with the shell watcher: after the start, a quiet checkout gives no
// signal and no command (no Run, one Start) over 3 s of 50 ms intervals;
// a commit gives a signal within a second.
func TestTriggerOverSSH(t *testing.T) {
	host := dialSSHD(t)
	for _, c := range []struct {
		via   string
		agent *testAgent
	}{
		{"agent", &testAgent{}},
		{"shell", &testAgent{noAgent: true}},
		{"shell", &testAgent{broken: true}}, // an agent of an older release
	} {
		dir := newRepo(t)
		w := Options{Repo: dir, Interval: 50 * time.Millisecond, Keepalive: 200 * time.Millisecond}
		c.agent.opts = w
		h := &countingHost{Host: host}
		tr := &Trigger{Host: h, Agent: c.agent, Watch: w, Poll: 20 * time.Millisecond}
		ctx, cancel := context.WithCancel(context.Background())
		ch := tr.Start(ctx)
		deadline := time.Now().Add(10 * time.Second)
		for tr.Via() != c.via && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if tr.Via() != c.via {
			t.Fatalf("via %q (%s), want %s", tr.Via(), tr.Err(), c.via)
		}
		fires(ch, 500*time.Millisecond) // the start's
		runs, starts := h.runs.Load(), h.starts.Load()
		if n := fires(ch, 3*time.Second); n != 0 {
			t.Errorf("%s: %d signals while nothing changed (%s)", c.via, n, tr.Err())
		}
		if r, s := h.runs.Load()-runs, h.starts.Load()-starts; r != 0 || s != 0 {
			t.Errorf("%s: %d commands run and %d started in 3 s of steady state, want none", c.via, r, s)
		}
		git(t, dir, "commit", "-q", "--allow-empty", "-m", "moved")
		waitFire(t, ch, time.Second, c.via+": a commit")
		if c.agent.broken && tr.Err() == "" {
			t.Errorf("the broken agent's failure is not reported")
		}
		cancel()
		for range ch {
		}
	}
}

// TestTriggerPollsWhenNoStream: while no stream can start, C fires every
// Poll, as the old timed poll did, and the stream is tried again.
func TestTriggerPollsWhenNoStream(t *testing.T) {
	h := &countingHost{Host: remote.NewLocal(), failStart: true}
	defer h.Host.Close()
	tr := &Trigger{Host: h, Watch: Options{Repo: t.TempDir()}, Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := tr.Start(ctx)
	n := fires(ch, 1500*time.Millisecond)
	if n < 20 {
		t.Errorf("%d timed signals in 1.5 s at 20 ms, want about 75", n)
	}
	if tr.Via() != "poll" || !strings.Contains(tr.Err(), "connection to host lost") {
		t.Errorf("via %q err %q, want poll with the start's error", tr.Via(), tr.Err())
	}
	if s := h.starts.Load(); s < 2 {
		t.Errorf("%d starts in 1.5 s, want a retry after 1 s", s)
	}
}
