package hostwatch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// Trigger is the cockpit's side of the watch stream: it tells a poller
// (repo.Watcher, sessions.Git, the server monitor) when to read, so that
// it reads once per change instead of once per poll interval. It keeps one
// long-lived command on the host:
//
//  1. `flightdeck agent watch` through Agent (nothing spawned at steady
//     state);
//  2. without an agent (Agent nil, or its AgentCommand fails with
//     remote.ErrNoAgent or does not answer within AgentWait), the shell
//     watcher (ShellCommand: bash builtins at steady state); Agent is asked
//     again every AgentRecheck, and a stream from it replaces the shell's;
//  3. while neither runs (no bash, the connection down, the stream broken),
//     a timed poll every Poll — the old behaviour — until the next try
//     (after 1 s, doubling to 2 min).
//
// C fires (coalesced: one pending signal at most) on each change line, on
// each stream start (what changed while none ran is unknown), when a
// stream ends, and on each timed poll. A stream silent for three
// keepalives and an interval (a host that hangs) is closed and restarted.
type Trigger struct {
	Host  remote.Host
	Agent remote.Agent // nil: no agent
	// Watch is what the host side watches (Repo, Server, Interval,
	// Keepalive, MaxDirs).
	Watch Options
	// Poll is the timed poll's interval while no stream runs; default 3 s.
	Poll time.Duration
	// AgentWait bounds the wait for the agent's install at each try;
	// default 5 s. AgentRecheck is how often the shell watcher gives way
	// to an agent that came since; default 1 min.
	AgentWait, AgentRecheck time.Duration

	mu       sync.Mutex
	via      string // "agent", "shell", "poll" or "" before the first try
	lastErr  string
	starts   int
	agentBad time.Time // an agent stream failed before its watch line (an agent without `watch`)
}

// Via says what drives C now: "agent", "shell" or "poll" ("" before the
// first try).
func (t *Trigger) Via() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.via
}

// Err is why the last stream ended or could not start ("" when none did).
func (t *Trigger) Err() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastErr
}

// Starts counts the streams started.
func (t *Trigger) Starts() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.starts
}

func (t *Trigger) set(via, err string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.via = via
	if err != "" {
		t.lastErr = err
	}
}

// Start runs the trigger until ctx ends and returns its channel C (closed
// at the end).
func (t *Trigger) Start(ctx context.Context) <-chan struct{} {
	c := make(chan struct{}, 1)
	fire := func() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(c)
		t.run(ctx, fire)
	}()
	return c
}

func (t *Trigger) defaults() (poll, wait, recheck time.Duration) {
	poll, wait, recheck = t.Poll, t.AgentWait, t.AgentRecheck
	if poll <= 0 {
		poll = 3 * time.Second
	}
	if wait <= 0 {
		wait = 5 * time.Second
	}
	if recheck <= 0 {
		recheck = time.Minute
	}
	return
}

func (t *Trigger) run(ctx context.Context, fire func()) {
	poll, _, _ := t.defaults()
	backoff := time.Second
	for ctx.Err() == nil {
		cmd, via, err := t.command(ctx)
		if cmd != "" {
			began := time.Now()
			err = t.stream(ctx, cmd, via, fire)
			fire() // a change may have come while it ended
			if time.Since(began) > time.Minute {
				backoff = time.Second
			}
			if errors.Is(err, errAgentCame) {
				continue
			}
		}
		if ctx.Err() != nil {
			return
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		t.set("poll", msg)
		// The timed poll until the next try.
		next := time.After(backoff)
		tk := time.NewTicker(poll)
	wait:
		for {
			select {
			case <-ctx.Done():
				tk.Stop()
				return
			case <-tk.C:
				fire()
			case <-next:
				break wait
			}
		}
		tk.Stop()
		backoff = min(2*backoff, 2*time.Minute)
	}
}

// command returns the agent's command line, else the shell watcher's.
func (t *Trigger) command(ctx context.Context) (cmd, via string, err error) {
	if cmd, err = t.agentCommand(ctx, false); cmd != "" {
		return cmd, "agent", nil
	}
	shell, serr := ShellCommand(t.Watch)
	if serr != nil {
		return "", "", serr
	}
	return shell, "shell", nil
}

// agentCommand asks Agent for `agent watch`'s command line: "" when there
// is no agent (yet). quick asks without waiting for an install.
func (t *Trigger) agentCommand(ctx context.Context, quick bool) (string, error) {
	_, wait, recheck := t.defaults()
	t.mu.Lock()
	bad := !t.agentBad.IsZero() && time.Since(t.agentBad) < recheck
	t.mu.Unlock()
	if t.Agent == nil || bad {
		return "", nil
	}
	if quick {
		wait = 10 * time.Millisecond
	}
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cmd, err := t.Agent.AgentCommand(actx, t.agentArgs()...)
	if err != nil {
		if errors.Is(err, remote.ErrNoAgent) || errors.Is(err, context.DeadlineExceeded) {
			return "", nil
		}
		return "", err
	}
	return cmd, nil
}

// agentArgs are `agent watch`'s arguments for t.Watch.
func (t *Trigger) agentArgs() []string {
	o := t.Watch
	args := []string{"agent", "watch"}
	if o.Interval > 0 {
		args = append(args, "--interval", o.Interval.String())
	}
	if o.Keepalive > 0 {
		args = append(args, "--keepalive", o.Keepalive.String())
	}
	if o.MaxDirs > 0 {
		args = append(args, "--max-dirs", strconv.Itoa(o.MaxDirs))
	}
	if o.Repo != "" {
		args = append(args, "--repo="+o.Repo)
	}
	if s := o.Server; s != nil {
		args = append(args, "--pidfile="+s.Pidfile, "--exit-file="+s.ExitFile, "--port", strconv.Itoa(s.Port), "--match="+s.Match)
	}
	return args
}

// errAgentCame ends a shell stream when an agent can take over.
var errAgentCame = errors.New("the agent came: it replaces the shell watcher")

// stream runs one watch command until it ends, ctx ends, it goes silent,
// or (for the shell) an agent can replace it.
func (t *Trigger) stream(ctx context.Context, cmd, via string, fire func()) error {
	_, _, recheck := t.defaults()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p, err := t.Host.Start(sctx, cmd)
	if err != nil {
		return fmt.Errorf("start the %s watcher: %w", via, err)
	}
	defer p.Close()
	t.mu.Lock()
	t.starts++
	t.mu.Unlock()
	var stderr tail
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		_, _ = io.Copy(&stderr, p.Stderr())
	}()
	lines := make(chan Line)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(p.Stdout())
		sc.Buffer(make([]byte, 0, 4096), 64<<10)
		for sc.Scan() {
			l, err := ParseLine(sc.Bytes())
			if err != nil {
				continue // not a line of this protocol: skipped, as the agent's readers do
			}
			select {
			case lines <- l:
			case <-sctx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	keep := t.Watch.Keepalive
	if keep <= 0 {
		keep = DefaultKeepalive
	}
	iv := t.Watch.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	if via == "shell" {
		keep = max(keep.Truncate(time.Second), time.Second) // bash's keepalive is whole seconds
	}
	silence := 3*keep + iv
	dog := time.NewTimer(silence)
	defer dog.Stop()
	var recheckC <-chan time.Time
	if via == "shell" && t.Agent != nil {
		tk := time.NewTicker(recheck)
		defer tk.Stop()
		recheckC = tk.C
	}
	gotWatch := false
	end := func(err error) error {
		if via == "agent" && !gotWatch {
			t.mu.Lock()
			t.agentBad = time.Now()
			t.mu.Unlock()
		}
		cancel()
		p.Close()
		werr := p.Wait()
		<-errDone
		if err == nil && werr != nil {
			err = werr
		}
		if err != nil {
			if s := strings.TrimSpace(stderr.String()); s != "" {
				err = fmt.Errorf("%w: %s", err, s)
			}
			return fmt.Errorf("the %s watcher: %w", via, err)
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return end(nil)
		case l := <-lines:
			dog.Reset(silence)
			switch l.T {
			case TypeWatch:
				gotWatch = true
				t.set(via, "")
				fire()
			case TypeGit, TypeServer:
				if l.Why != "start" { // the watch line fired for the start
					fire()
				}
			case TypeError:
				return end(errors.New(l.Err))
			}
		case err := <-readErr:
			if err == nil {
				err = errors.New("its stream ended")
			}
			return end(err)
		case <-dog.C:
			return end(fmt.Errorf("silent for %v", silence))
		case <-recheckC:
			if c, _ := t.agentCommand(ctx, true); c != "" {
				return end(errAgentCame)
			}
		}
	}
}

// tail keeps the last 4 KiB written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
