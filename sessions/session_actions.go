package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The actions of a session: what the cockpit's keys and the CLI's commands
// call. Each returns ErrNotYet before Attach; the server and git actions
// are guarded by the driver lock (DriverOptions) and published on the
// stream, the experiment actions need a journal (ErrNoJournal).

// Server: the K, L and p keys; flightdeck server kill and launch.

// Request is the launch form's starting point (Control.Request); the zero
// request before Attach.
func (s *Session) Request() LaunchRequest {
	if a := s.att.Load(); a != nil && a.control != nil {
		return a.control.Request()
	}
	return LaunchRequest{}
}

// Presets lists the preset names, sorted.
func (s *Session) Presets() []string { return s.opts.Config.PresetNames() }

// Profiles lists the env profile names, sorted.
func (s *Session) Profiles() []string { return s.opts.Config.ProfileNames() }

// Plan resolves a launch request (Control.Plan).
func (s *Session) Plan(r LaunchRequest) (Plan, error) {
	c, err := s.control()
	if err != nil {
		return Plan{Request: r}, err
	}
	return c.Plan(r)
}

// Launch launches (or relaunches) the server as planned (Control.Launch).
func (s *Session) Launch(ctx context.Context, p Plan) (event.LaunchRecord, error) {
	c, err := s.control()
	if err != nil {
		return event.LaunchRecord{}, err
	}
	return c.Launch(ctx, p)
}

// Kill kills the server and waits for its GPU memory (Control.Kill).
func (s *Session) Kill(ctx context.Context) error {
	c, err := s.control()
	if err != nil {
		return err
	}
	return c.Kill(ctx)
}

// SetProfile chooses the env profile of the next launch
// (Control.SetProfile).
func (s *Session) SetProfile(name string) error {
	c, err := s.control()
	if err != nil {
		return err
	}
	return c.SetProfile(name)
}

func (s *Session) control() (*Control, error) {
	a, err := s.attachedOr()
	if err != nil {
		return nil, err
	}
	if a.control == nil {
		return nil, errors.New("no host: the server cannot be driven from here")
	}
	return a.control, nil
}

// Git: the git panel's keys; flightdeck git.

func (s *Session) git() (*Git, error) {
	a, err := s.attachedOr()
	if err != nil {
		return nil, err
	}
	if a.git == nil {
		return nil, ErrNoRepo
	}
	return a.git, nil
}

// HasRepo reports whether the attached host has a checkout configured
// (the git panel acts on it).
func (s *Session) HasRepo() bool {
	a := s.att.Load()
	return a != nil && a.git != nil
}

// Refresh reads the checkout's status and publishes it (Git.Refresh).
func (s *Session) Refresh(ctx context.Context) error {
	g, err := s.git()
	if err != nil {
		return err
	}
	return g.Refresh(ctx)
}

// Log lists recent commits (Git.Log).
func (s *Session) Log(ctx context.Context, n int) ([]event.Commit, error) {
	g, err := s.git()
	if err != nil {
		return nil, err
	}
	return g.Log(ctx, n)
}

// Preview says what a checkout of ref would do (Git.Preview).
func (s *Session) Preview(ctx context.Context, ref string) (git.Preview, error) {
	g, err := s.git()
	if err != nil {
		return git.Preview{}, err
	}
	return g.Preview(ctx, ref)
}

// Snapshots lists the checkout's snapshots on the host (Git.Snapshots).
func (s *Session) Snapshots(ctx context.Context) ([]git.Snapshot, error) {
	g, err := s.git()
	if err != nil {
		return nil, err
	}
	return g.Snapshots(ctx)
}

// LastSnapshot is the snapshot Undo would restore (Git.LastSnapshot); it
// does no I/O.
func (s *Session) LastSnapshot() (id, reason string) {
	if a := s.att.Load(); a != nil && a.git != nil {
		return a.git.LastSnapshot()
	}
	return "", ""
}

// gitAct runs one git action once the session is attached.
func (s *Session) gitAct(act func(*Git) (event.GitAction, error)) (event.GitAction, error) {
	g, err := s.git()
	if err != nil {
		return event.GitAction{}, err
	}
	return act(g)
}

// Checkout checks out ref (Git.Checkout).
func (s *Session) Checkout(ctx context.Context, ref string) (event.GitAction, error) {
	return s.gitAct(func(g *Git) (event.GitAction, error) { return g.Checkout(ctx, ref) })
}

// Stash stashes the dirty tree under name (Git.Stash).
func (s *Session) Stash(ctx context.Context, name string, untracked bool) (event.GitAction, error) {
	return s.gitAct(func(g *Git) (event.GitAction, error) { return g.Stash(ctx, name, untracked) })
}

// StashApply applies (pop: and drops) a stash (Git.StashApply).
func (s *Session) StashApply(ctx context.Context, id string, pop bool) (event.GitAction, error) {
	return s.gitAct(func(g *Git) (event.GitAction, error) { return g.StashApply(ctx, id, pop) })
}

// StashDrop drops a stash (Git.StashDrop).
func (s *Session) StashDrop(ctx context.Context, id string) (event.GitAction, error) {
	return s.gitAct(func(g *Git) (event.GitAction, error) { return g.StashDrop(ctx, id) })
}

// Revert restores paths to HEAD (Git.Revert).
func (s *Session) Revert(ctx context.Context, paths []string) (event.GitAction, error) {
	return s.gitAct(func(g *Git) (event.GitAction, error) { return g.Revert(ctx, paths) })
}

// Undo restores the snapshot taken before the last action (Git.Undo).
func (s *Session) Undo(ctx context.Context) (event.GitAction, error) {
	return s.gitAct(func(g *Git) (event.GitAction, error) { return g.Undo(ctx) })
}

// Restore restores snapshot id (Git.Restore).
func (s *Session) Restore(ctx context.Context, id string) (event.GitAction, error) {
	return s.gitAct(func(g *Git) (event.GitAction, error) { return g.Restore(ctx, id) })
}

// WaitGit waits (bounded by ctx) until no git action is in flight, calling
// busy once first when one is: an action the screen was quit under
// finishes before the connection closes. It reports whether none is.
func (s *Session) WaitGit(ctx context.Context, busy func()) bool {
	if a := s.att.Load(); a != nil && a.git != nil {
		return a.git.Idle(ctx, busy)
	}
	return true
}

// Experiments and notes: the e, n, w and B keys; flightdeck experiment and
// journal baseline.

// ErrNoHost is returned by StartExperiment on a session that only changes
// its journal afterwards.
var ErrNoHost = errors.New("no host: an experiment is measured on one")

// StartExperiment starts an experiment (Lab.Start: ending the open one).
func (s *Session) StartExperiment(ctx context.Context, name, hypothesis string) (event.ExperimentStart, error) {
	l, err := s.lab()
	if err != nil {
		return event.ExperimentStart{}, err
	}
	if l.Host == nil {
		return event.ExperimentStart{}, ErrNoHost
	}
	return l.Start(ctx, name, hypothesis)
}

// EndExperiment ends the open experiment with a conclusion (Lab.End).
func (s *Session) EndExperiment(ctx context.Context, conclusion string) (event.ExperimentEnd, error) {
	l, err := s.lab()
	if err != nil {
		return event.ExperimentEnd{}, err
	}
	return l.End(ctx, conclusion)
}

// UpdateExperiment renames an experiment or writes its hypothesis or
// conclusion (Lab.Update); one of an appended journal's earlier sessions
// too.
func (s *Session) UpdateExperiment(ctx context.Context, u event.ExperimentUpdate) error {
	l, err := s.lab()
	if err != nil {
		return err
	}
	return l.Update(ctx, u)
}

// Note writes a note (Lab.Note).
func (s *Session) Note(ctx context.Context, text string) (event.Note, error) {
	l, err := s.lab()
	if err != nil {
		return event.Note{}, err
	}
	return l.Note(ctx, text)
}

// Key records the key that caused an action (Lab.Key); nothing without a
// journal.
func (s *Session) Key(key, action string) {
	if l, err := s.lab(); err == nil {
		l.Key(key, action)
	}
}

// Baseline marks experiment id as the baseline, "" clears the mark
// (Lab.Baseline).
func (s *Session) Baseline(ctx context.Context, id string) error {
	l, err := s.lab()
	if err != nil {
		return err
	}
	return l.Baseline(ctx, id)
}

// Range reads what lies between two commits of the checkout (Lab.Range).
func (s *Session) Range(ctx context.Context, from, to string) (*event.CommitRange, error) {
	l, err := s.lab()
	if err != nil {
		return nil, err
	}
	return l.Range(ctx, from, to)
}

// Provisional is the open experiment's result so far (Lab.Provisional);
// zero without a journal.
func (s *Session) Provisional() event.ExperimentResult {
	if l, err := s.lab(); err == nil {
		return l.Provisional()
	}
	return event.ExperimentResult{}
}

// CurrentExperiment is the open experiment's id, "" when none.
func (s *Session) CurrentExperiment() string {
	if l, err := s.lab(); err == nil {
		return l.currentID()
	}
	return ""
}

// Benchmark and repeat: the b and R keys; flightdeck bench and server
// repeat.

// BenchDefaults is the config of the last benchmark run (Bencher.Defaults),
// else the defaults.
func (s *Session) BenchDefaults() event.BenchConfig {
	if a := s.att.Load(); a != nil && a.bench != nil {
		return a.bench.Defaults()
	}
	return event.BenchConfig{}.Defaults()
}

// Bench benchmarks the running server (Bencher.Run).
func (s *Session) Bench(ctx context.Context, cfg event.BenchConfig) (*event.BenchResult, error) {
	a, err := s.attachedOr()
	if err != nil {
		return nil, err
	}
	if a.bench == nil {
		return nil, ErrNoDialer
	}
	return a.bench.Run(ctx, cfg)
}

// Repeat relaunches the current configuration cfg.N more times, measuring
// each launch (Repeater.Run).
func (s *Session) Repeat(ctx context.Context, cfg RepeatConfig) error {
	a, err := s.attachedOr()
	if err != nil {
		return err
	}
	if a.repeat == nil {
		return ErrNoLab
	}
	s.inflight.Add(1)
	defer s.inflight.Done()
	return a.repeat.Run(ctx, cfg)
}

// WaitRepeat waits until no Repeat is in flight, or d has passed; it
// reports whether none is. The screen cancels a repeat's context when it
// ends, but a relaunch in progress finishes first (a kill without its
// launch would leave the server down): the session must not close the
// host under it.
func (s *Session) WaitRepeat(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		select { // a Wait that ended as the timer fired still counts
		case <-done:
			return true
		default:
			return false
		}
	}
}

// Driver: the T key.

// TakeOver takes the driver lock whoever holds it, within 15 s.
func (s *Session) TakeOver(ctx context.Context) error {
	a := s.att.Load()
	if a == nil {
		return ErrNotYet
	}
	if a.drv.lock() == nil {
		return errors.New("this session holds no driver lock: there is nothing to take over")
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := a.drv.lock().Acquire(ctx, true)
	return err
}

// Connection: the C key.

// ErrNothingToRedial is RetryNow's answer while the connection is up and
// answering.
var ErrNothingToRedial = errors.New("the connection is up and answering: nothing to redial")

// RetryNow redials the host without waiting (remote.Redialer): while its
// connection is down the next dial starts at once; while it is not
// answering it is given up and redialed. It does not wait for the dial:
// the event.ConnState events tell how it went. Errors: ErrNotYet before
// Attach, ErrNothingToRedial, or one saying the host has no connection to
// redial (local).
func (s *Session) RetryNow() error {
	a := s.att.Load()
	if a == nil {
		return ErrNotYet
	}
	r, ok := a.host.(remote.Redialer)
	if !ok {
		return errors.New("this host has no connection to redial")
	}
	if !r.RetryNow() {
		return ErrNothingToRedial
	}
	return nil
}
