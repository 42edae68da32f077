package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// lazyControl is the cockpit's server control for a host that is still
// being set up when the screen opens (the demo builds its simulated host
// behind the first frame): until set, the keys say so.
type lazyControl struct {
	cfg *config.Config
	c   atomic.Pointer[sessions.Control]
}

var errNotYet = errors.New("the host is still starting")

func (l *lazyControl) set(c *sessions.Control) { l.c.Store(c) }

func (l *lazyControl) Request() sessions.LaunchRequest {
	if c := l.c.Load(); c != nil {
		return c.Request()
	}
	return sessions.LaunchRequest{}
}

func (l *lazyControl) Presets() []string { return l.cfg.PresetNames() }

func (l *lazyControl) Profiles() []string { return l.cfg.ProfileNames() }

func (l *lazyControl) Plan(r sessions.LaunchRequest) (sessions.Plan, error) {
	if c := l.c.Load(); c != nil {
		return c.Plan(r)
	}
	return sessions.Plan{Request: r}, errNotYet
}

func (l *lazyControl) Launch(ctx context.Context, p sessions.Plan) (event.LaunchRecord, error) {
	if c := l.c.Load(); c != nil {
		return c.Launch(ctx, p)
	}
	return event.LaunchRecord{}, errNotYet
}

func (l *lazyControl) Kill(ctx context.Context) error {
	if c := l.c.Load(); c != nil {
		return c.Kill(ctx)
	}
	return errNotYet
}

func (l *lazyControl) SetProfile(name string) error {
	if c := l.c.Load(); c != nil {
		return c.SetProfile(name)
	}
	return errNotYet
}

// lazyGit is the git panel's control for a host still being set up (the
// demo's): until set, every action says the host is still starting.
type lazyGit struct {
	g atomic.Pointer[sessions.Git]
}

func (l *lazyGit) set(g *sessions.Git) { l.g.Store(g) }

func (l *lazyGit) get() (*sessions.Git, error) {
	if g := l.g.Load(); g != nil {
		return g, nil
	}
	return nil, errNotYet
}

func (l *lazyGit) Refresh(ctx context.Context) error {
	g, err := l.get()
	if err != nil {
		return err
	}
	return g.Refresh(ctx)
}

func (l *lazyGit) Log(ctx context.Context, n int) ([]event.Commit, error) {
	g, err := l.get()
	if err != nil {
		return nil, err
	}
	return g.Log(ctx, n)
}

func (l *lazyGit) Preview(ctx context.Context, ref string) (git.Preview, error) {
	g, err := l.get()
	if err != nil {
		return git.Preview{}, err
	}
	return g.Preview(ctx, ref)
}

func (l *lazyGit) Snapshots(ctx context.Context) ([]git.Snapshot, error) {
	g, err := l.get()
	if err != nil {
		return nil, err
	}
	return g.Snapshots(ctx)
}

func (l *lazyGit) LastSnapshot() (string, string) {
	if g := l.g.Load(); g != nil {
		return g.LastSnapshot()
	}
	return "", ""
}

// act runs one action once the Git is set.
func (l *lazyGit) act(f func(*sessions.Git) (event.GitAction, error)) (event.GitAction, error) {
	g, err := l.get()
	if err != nil {
		return event.GitAction{}, err
	}
	return f(g)
}

func (l *lazyGit) Checkout(ctx context.Context, ref string) (event.GitAction, error) {
	return l.act(func(g *sessions.Git) (event.GitAction, error) { return g.Checkout(ctx, ref) })
}

func (l *lazyGit) Stash(ctx context.Context, name string, untracked bool) (event.GitAction, error) {
	return l.act(func(g *sessions.Git) (event.GitAction, error) { return g.Stash(ctx, name, untracked) })
}

func (l *lazyGit) StashApply(ctx context.Context, id string, pop bool) (event.GitAction, error) {
	return l.act(func(g *sessions.Git) (event.GitAction, error) { return g.StashApply(ctx, id, pop) })
}

func (l *lazyGit) StashDrop(ctx context.Context, id string) (event.GitAction, error) {
	return l.act(func(g *sessions.Git) (event.GitAction, error) { return g.StashDrop(ctx, id) })
}

func (l *lazyGit) Revert(ctx context.Context, paths []string) (event.GitAction, error) {
	return l.act(func(g *sessions.Git) (event.GitAction, error) { return g.Revert(ctx, paths) })
}

func (l *lazyGit) Undo(ctx context.Context) (event.GitAction, error) {
	return l.act(func(g *sessions.Git) (event.GitAction, error) { return g.Undo(ctx) })
}

func (l *lazyGit) Restore(ctx context.Context, id string) (event.GitAction, error) {
	return l.act(func(g *sessions.Git) (event.GitAction, error) { return g.Restore(ctx, id) })
}

// lazyBench is the benchmark behind b for a host set up after the screen
// opens: until set, Run says the host is still starting.
type lazyBench struct {
	b atomic.Pointer[sessions.Bencher]
}

func (l *lazyBench) set(b *sessions.Bencher) { l.b.Store(b) }

func (l *lazyBench) Defaults() event.BenchConfig {
	if b := l.b.Load(); b != nil {
		return b.Defaults()
	}
	return event.BenchConfig{}.Defaults()
}

func (l *lazyBench) Run(ctx context.Context, cfg event.BenchConfig) (*event.BenchResult, error) {
	if b := l.b.Load(); b != nil {
		return b.Run(ctx, cfg)
	}
	return nil, errNotYet
}

// lazyRepeat is the repeat behind R for a host set up after the screen
// opens: until set, Run says the host is still starting.
type lazyRepeat struct {
	r        atomic.Pointer[sessions.Repeater]
	inflight sync.WaitGroup // Runs not returned yet
}

func (l *lazyRepeat) set(r *sessions.Repeater) { l.r.Store(r) }

func (l *lazyRepeat) Run(ctx context.Context, cfg sessions.RepeatConfig) error {
	if r := l.r.Load(); r != nil {
		l.inflight.Add(1)
		defer l.inflight.Done()
		return r.Run(ctx, cfg)
	}
	return errNotYet
}

// wait waits until no Run is in flight, or d has passed; it reports
// whether none is. The screen cancels a repeat's context when it ends, but
// a relaunch in progress finishes first (a kill without its launch would
// leave the server down): the cockpit must not close the host under it.
func (l *lazyRepeat) wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		l.inflight.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// serverPort is the running server's HTTP port as the cockpit's stream
// last said (event.ServerStatus), 0 when no server is up: the benchmark's
// target, read when a run starts.
type serverPort struct{ n atomic.Int64 }

// observe follows the server's status.
func (s *serverPort) observe(st event.ServerStatus) {
	switch st.Phase {
	case event.PhaseLaunching, event.PhaseLoading, event.PhaseReady, event.PhaseRunning:
		s.n.Store(int64(st.Port))
	default:
		s.n.Store(0)
	}
}

func (s *serverPort) port() int { return int(s.n.Load()) }
