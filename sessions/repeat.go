package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// RepeatConfig is one repeat (R): relaunch the current configuration N
// more times, measuring each launch, to see the launch-to-launch (A/A)
// noise of this host. Zero fields take the defaults in their comments.
type RepeatConfig struct {
	// N is how many more launches to make (default 4: with the current
	// one, 5 launches, enough for a Mann–Whitney verdict at α = 0.05).
	N int `json:"n"`
	// MinSamples (at least ledger.MinLaunchSamples) is how many
	// steady-state tok/s samples a launch must
	// have before the next relaunch (default 10).
	MinSamples int `json:"min_samples"`
	// MaxWait bounds one launch: from the relaunch to MinSamples (default
	// 10 min); ns in JSON (a Go time.Duration). A launch that fails, or
	// does not get there in time, stops the repeat with an error.
	MaxWait time.Duration `json:"max_wait"`
	// Bench runs a benchmark on each launch once it is measured (the
	// bench's defaults: the last one run), before the next relaunch.
	Bench bool `json:"bench,omitempty"`
}

// Repeat phases.
const (
	RepeatMeasuring   = "measuring"
	RepeatRelaunching = "relaunching"
	RepeatWarmingUp   = "warming up"
	RepeatBenchmark   = "benchmarking"
	RepeatDone        = "done"
	RepeatStopped     = "stopped"
	RepeatFailed      = "failed"
)

// Repeat errors.
var (
	// ErrRepeatBusy is returned by Repeater.Run while another repeat runs.
	ErrRepeatBusy = errors.New("a repeat is already running")
	// ErrNoLab is returned by Repeater.Run without experiments (the
	// cockpit runs with --no-journal): a repeat's launches are experiments.
	ErrNoLab = errors.New("repeat needs experiments, and this session records none (--no-journal)")
	// ErrNotLaunched is returned by Repeater.Run for a server flightdeck
	// did not launch (adopted by its port or command line): there is no
	// launch to repeat.
	ErrNotLaunched = errors.New("the server was not launched by flightdeck: its launch is not known")
)

// repeatPoll is how often a repeat looks at the open experiment's samples
// and the server's state.
const repeatPoll = 200 * time.Millisecond

// Repeater runs repeats (R): it relaunches the running server's launch N
// more times, each launch an experiment (the Lab starts one per launch)
// tagged launch I of N+1 of the series, so that the session measures its
// launch-to-launch (A/A) noise. Set the fields before the first Run; Run
// is safe for concurrent use (a second one is refused while one runs).
type Repeater struct {
	Control *Control
	Lab     *Lab
	// Bencher runs RepeatConfig.Bench's benchmark; nil refuses Bench.
	Bencher *Bencher
	// Publish receives RepeatProgress events (the stream); nil: none.
	Publish event.Sink

	running atomic.Bool
}

func (c RepeatConfig) withDefaults() (RepeatConfig, error) {
	switch {
	case c.N < 0:
		return c, fmt.Errorf("repeat: N %d: want how many more launches, at least 1", c.N)
	case c.MinSamples < 0 || c.MinSamples > 0 && c.MinSamples < ledger.MinLaunchSamples:
		// A launch with fewer steady samples does not count in a
		// comparison: the repeat would measure nothing.
		return c, fmt.Errorf("repeat: %d samples a launch: want at least %d (a comparison counts a launch from %d)", c.MinSamples, ledger.MinLaunchSamples, ledger.MinLaunchSamples)
	case c.MaxWait < 0:
		return c, fmt.Errorf("repeat: max wait %v must not be negative", c.MaxWait)
	}
	if c.N == 0 {
		c.N = 4
	}
	if c.MinSamples == 0 {
		c.MinSamples = 10
	}
	if c.MaxWait == 0 {
		c.MaxWait = 10 * time.Minute
	}
	return c, nil
}

// Run runs one repeat: the open experiment is the series (launch 1 of
// cfg.N+1); once it has cfg.MinSamples steady tok/s samples (and, with
// cfg.Bench, a benchmark has run on it), the same launch is relaunched
// (Control.Plan of Control.Request, which must still describe the running
// server's launch), and so on until cfg.N more launches are measured. It
// publishes RepeatProgress at every step and a last one whose phase is
// done, stopped or failed, and returns when the repeat ends.
//
// Errors, before anything is relaunched: ErrRepeatBusy, ErrNoLab,
// server.ErrNoServer ("no server running"), ErrNotLaunched,
// ErrNoExperiment ("no experiment is open"), a launch request that no
// longer matches the running server's, an invalid cfg. Later: a relaunch
// that fails, the server dying or its experiment ending under the repeat,
// MaxWait passing before MinSamples, a benchmark that fails (each naming
// the launch, "launch 3/5 (e7): …"). When ctx ends it stops between steps
// and returns ctx's error; a relaunch in progress is let finish first (a
// cancelled repeat never leaves the server killed and not relaunched).
func (r *Repeater) Run(ctx context.Context, cfg RepeatConfig) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	switch {
	case r.Lab == nil:
		return ErrNoLab
	case r.Control == nil:
		return errors.New("repeat: no server control for this host")
	case cfg.Bench && r.Bencher == nil:
		return errors.New("repeat: the benchmark is not available in this session")
	}
	if !r.running.CompareAndSwap(false, true) {
		return ErrRepeatBusy
	}
	defer r.running.Store(false)
	defer r.Lab.disarmRepeat()
	plan, err := r.check()
	if err != nil {
		return err
	}
	total := cfg.N + 1
	series, undo, err := r.Lab.beginRepeat(ctx, total)
	if err != nil {
		return err
	}
	run := repeatRun{r: r, cfg: cfg, series: series, n: total, undo: undo}
	return run.loop(ctx, plan)
}

// check says whether a repeat can begin: a running server launched by
// flightdeck, an open experiment, and a launch request that gives the
// running server's launch again.
func (r *Repeater) check() (Plan, error) {
	st, launch := r.Lab.serverState()
	if !st.Phase.Up() {
		return Plan{}, server.ErrNoServer
	}
	if launch == nil || len(launch.Argv) == 0 || (st.How != "" && st.How != server.ByPidfile) {
		return Plan{}, ErrNotLaunched
	}
	if _, ok := r.Lab.Current(); !ok {
		return Plan{}, ErrNoExperiment
	}
	plan, err := r.Control.Plan(r.Control.Request())
	if err == nil && launchDiff(plan, launch) == "" {
		return plan, nil
	}
	// The form's request does not give the running launch (its model came
	// from the command line, or the profile chosen since differs): plan
	// that launch again as it was recorded.
	again, err2 := r.Control.PlanAgain()
	if err2 == nil && launchDiff(again, launch) == "" {
		return again, nil
	}
	if err != nil {
		return plan, fmt.Errorf("repeat: the launch to repeat: %w", err)
	}
	d := launchDiff(plan, launch)
	return plan, fmt.Errorf("repeat: the next launch would differ from the running server's (%s): relaunch with it first (L, or flightdeck server launch), then repeat", d)
}

// launchDiff names the first way plan differs from launch (redacted, as
// the Lab records it); "" when it would launch the same thing.
func launchDiff(plan Plan, launch *event.LaunchInfo) string {
	switch {
	case plan.Spec.Preset != launch.Preset:
		return fmt.Sprintf("preset %s, running %s", plan.Spec.Preset, launch.Preset)
	case plan.Spec.Profile != launch.Profile:
		return fmt.Sprintf("profile %s, running %s", plan.Spec.Profile, launch.Profile)
	case !slices.Equal(server.RedactArgv(plan.Spec.Argv), launch.Argv):
		return "command line " + server.CommandLine(event.LaunchInfo{Argv: server.RedactArgv(plan.Spec.Argv)}) + ", running " + server.CommandLine(*launch)
	}
	if d := DiffEnv(launch.Env, server.Redact(plan.Spec.Env)); len(d) > 0 {
		return "environment variable " + d[0].Name
	}
	return ""
}

// repeatRun is one repeat in progress.
type repeatRun struct {
	r      *Repeater
	cfg    RepeatConfig
	series string
	n      int // launches in all
	undo   repeatUndo
	last   event.RepeatProgress
}

func (run *repeatRun) publish(p event.RepeatProgress) {
	p.Series, p.N = run.series, run.n
	if p == run.last {
		return
	}
	run.last = p
	if run.r.Publish != nil {
		run.r.Publish(event.Event{At: time.Now(), Data: p})
	}
}

// loop measures launch i, benchmarks it, relaunches, until all n are
// measured; then publishes the final phase.
func (run *repeatRun) loop(ctx context.Context, plan Plan) error {
	i, exp := 1, run.series
	deadline := time.Now().Add(run.cfg.MaxWait)
	for {
		err := run.measure(ctx, i, exp, deadline)
		if err == nil && run.cfg.Bench {
			err = run.bench(ctx, i, exp)
		}
		if err == nil && i == run.n {
			run.publish(event.RepeatProgress{I: i, Exp: exp, Phase: RepeatDone})
			return nil
		}
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			i++
			deadline = time.Now().Add(run.cfg.MaxWait)
			exp, err = run.relaunch(ctx, plan, i, deadline)
			if err == nil {
				err = ctx.Err() // stopped once the launch finished
			}
			if err == nil {
				continue
			}
		}
		run.untag(ctx)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			run.publish(event.RepeatProgress{I: i, Exp: exp, Phase: RepeatStopped, Err: "cancelled"})
			return ctx.Err()
		}
		run.publish(event.RepeatProgress{I: i, Exp: exp, Phase: RepeatFailed, Err: err.Error()})
		return err
	}
}

// untag takes the series' tag and name back when the repeat ends before
// its second launch started (Lab.abandonRepeat): a repeat of one launch
// is no series. It runs even when ctx ended (the stopped repeat's
// journal must say so), bounded by a few seconds; a Lab that is closing
// keeps the tag.
func (run *repeatRun) untag(ctx context.Context) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	run.r.Lab.abandonRepeat(uctx, run.undo)
}

// measure waits until experiment exp (launch i) has MinSamples steady
// samples, publishing its progress. Errors: the experiment ended (the
// server died, or another launch or e ended it), deadline passed, ctx's.
func (run *repeatRun) measure(ctx context.Context, i int, exp string, deadline time.Time) error {
	need := run.cfg.MinSamples
	tick := time.NewTicker(repeatPoll)
	defer tick.Stop()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		res, open := run.r.Lab.provisionalOf(exp)
		if !open {
			return fmt.Errorf("launch %d/%d (%s): %s", i, run.n, exp, run.whyEnded())
		}
		phase := RepeatMeasuring
		if st, _ := run.r.Lab.serverState(); st.Phase == event.PhaseLaunching || st.Phase == event.PhaseLoading {
			phase = RepeatWarmingUp
		}
		run.publish(event.RepeatProgress{I: i, Exp: exp, Phase: phase, Samples: res.N, Need: need})
		if res.N >= need {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("launch %d/%d (%s): %d of %d steady samples after %v (max wait)", i, run.n, exp, res.N, need, run.cfg.MaxWait)
		case <-tick.C:
		}
	}
}

// whyEnded says why the experiment being measured is not open any more.
func (run *repeatRun) whyEnded() string {
	st, _ := run.r.Lab.serverState()
	switch st.Phase {
	case event.PhaseFailed:
		if st.Class != "" {
			return fmt.Sprintf("the server failed (%s): %s", st.Class, st.Text)
		}
		return "the server failed"
	case event.PhaseExited:
		if st.Exit >= 0 {
			return fmt.Sprintf("the server exited with status %d", st.Exit)
		}
		return "the server exited"
	case event.PhaseKilled, event.PhaseStopping:
		return "the server was killed"
	case event.PhaseNone:
		return "the server is gone"
	}
	return "its experiment was ended (another launch, or e)"
}

// bench runs the benchmark on launch i with the bench's defaults. A run
// cut short (Bencher.Run returns the partial result of a cancelled run
// with a nil error) returns ctx's error, so that the repeat stops rather
// than counting the launch as benchmarked; a run in which no request
// succeeded, or some failed, is an error naming how many, since the
// comparisons leave such a run out and the launch would go unmeasured.
func (run *repeatRun) bench(ctx context.Context, i int, exp string) error {
	run.publish(event.RepeatProgress{I: i, Exp: exp, Phase: RepeatBenchmark, Samples: run.last.Samples, Need: run.cfg.MinSamples})
	b := run.r.Bencher
	res, err := b.Run(ctx, b.Defaults())
	if err == nil && res.Cancelled {
		err = ctx.Err()
		if err == nil { // Run cancels only with ctx; never a silent success
			err = errors.New("the benchmark was stopped")
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("launch %d/%d (%s): benchmark: %w", i, run.n, exp, err)
	}
	if res.Failed > 0 || res.Completed == 0 {
		msg := fmt.Sprintf("%d of %d requests failed", res.Failed, res.Completed+res.Failed)
		if res.Completed == 0 {
			msg = fmt.Sprintf("no request succeeded (%d failed)", res.Failed)
		}
		if len(res.Errors) > 0 {
			msg += ": " + res.Errors[0].Err
			if len(res.Errors) > 1 {
				msg += fmt.Sprintf(" (and %d other error messages)", len(res.Errors)-1)
			}
		}
		return fmt.Errorf("launch %d/%d (%s): benchmark: %s", i, run.n, exp, msg)
	}
	return nil
}

// relaunch launches plan again as launch i of the series and returns the
// experiment the Lab started for it. The launch runs to its end even when
// ctx ends meanwhile (a kill without the launch would leave no server);
// deadline bounds it.
func (run *repeatRun) relaunch(ctx context.Context, plan Plan, i int, deadline time.Time) (string, error) {
	run.publish(event.RepeatProgress{I: i, Phase: RepeatRelaunching, Need: run.cfg.MinSamples})
	lab := run.r.Lab
	lab.armRepeat(run.series, i, run.n)
	lctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	if _, err := run.r.Control.Launch(lctx, plan); err != nil {
		lab.disarmRepeat()
		return "", fmt.Errorf("launch %d/%d: relaunch: %w", i, run.n, err)
	}
	// The Lab observes event.ServerLaunched as Control.Launch publishes it; a
	// stream that delivers it later is waited for, briefly.
	wait := time.NewTimer(10 * time.Second)
	defer wait.Stop()
	tick := time.NewTicker(repeatPoll / 4)
	defer tick.Stop()
	for {
		if id := lab.repeatExp(run.series, i); id != "" {
			return id, nil
		}
		select {
		case <-wait.C:
			lab.disarmRepeat()
			return "", fmt.Errorf("launch %d/%d: relaunched, but no experiment started for it", i, run.n)
		case <-tick.C:
		}
	}
}
