package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// errBisectFailed carries a launch's failure class to launch's caller.
type errBisectFailed struct{ class, why string }

func (e *errBisectFailed) Error() string { return e.class + ": " + e.why }

// launch checks out commit, launches the bisect's plan there and measures
// it: the bisect-launch record, with a sample or a failure class. The
// returned error is one that is no launch's fault (ctx ended, the driver
// lock lost): the bisect stops there. The launch itself runs to its end
// even when ctx ends meanwhile (a server killed and not relaunched would
// be left half way).
func (run *bisectRun) launch(ctx context.Context, commit string) (event.BisectLaunch, error) {
	run.tries[commit]++
	i := run.tries[commit]
	l := event.BisectLaunch{ID: run.start.ID, Commit: commit}
	began := time.Now()
	deadline := began.Add(run.cfg.MaxWait)
	prog := event.BisectProgress{Commit: commit, Launch: i, Need: run.cfg.MinSamples}
	failed := func(class, why string) (event.BisectLaunch, error) {
		l.Failed, l.Why, l.Took = class, why, time.Since(began)
		return l, nil
	}
	prog.Phase = BisectCheckingOut
	run.progress(prog)
	if err := run.b.Control.guard(ctx); err != nil {
		return l, err
	}
	if err := run.b.Git.checkoutFor(ctx, commit); err != nil {
		if ctx.Err() != nil {
			return l, ctx.Err()
		}
		return failed("checkout", err.Error())
	}
	prog.Phase = BisectLaunching
	run.progress(prog)
	exp, err := run.relaunch(ctx, deadline)
	if err != nil {
		var f *errBisectFailed
		if errors.As(err, &f) {
			return failed(f.class, f.why)
		}
		return l, err
	}
	l.Exp = exp
	if uerr := run.b.Lab.Update(context.WithoutCancel(ctx), event.ExperimentUpdate{Exp: exp, Name: run.expName(commit, i)}); uerr != nil && !errors.Is(uerr, ErrNoExperiment) {
		_ = uerr // a name is a nicety: the launch counts without it
	}
	v, err := run.measure(ctx, exp, prog, began, deadline)
	if err != nil {
		var f *errBisectFailed
		if errors.As(err, &f) {
			return failed(f.class, f.why)
		}
		return l, err
	}
	l.Value, l.Took = v, time.Since(began)
	return l, nil
}

// relaunch launches the plan and returns the experiment the Lab started
// for it. The launch is not cut by ctx (only by deadline).
func (run *bisectRun) relaunch(ctx context.Context, deadline time.Time) (string, error) {
	lab := run.b.Lab
	before := lab.currentID()
	lctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	if _, err := run.b.Control.Launch(lctx, run.plan); err != nil {
		if gerr := run.b.Control.guard(lctx); gerr != nil {
			return "", gerr // the lock, not the commit
		}
		return "", &errBisectFailed{"launch", err.Error()}
	}
	wait := time.NewTimer(10 * time.Second)
	defer wait.Stop()
	tick := time.NewTicker(repeatPoll / 4)
	defer tick.Stop()
	for {
		if id := lab.currentID(); id != "" && id != before {
			return id, nil
		}
		select {
		case <-wait.C:
			return "", errors.New("bisect: launched, but no experiment started for it")
		case <-tick.C:
		}
	}
}

// failureOf classifies why a launch's experiment ended: the server's
// failure class, else "crash" (exited) or "killed".
func failureOf(st event.ServerStatus) *errBisectFailed {
	switch st.Phase {
	case event.PhaseFailed:
		if st.Class != "" {
			return &errBisectFailed{st.Class, st.Text}
		}
		return &errBisectFailed{"crash", "the server failed"}
	case event.PhaseExited:
		return &errBisectFailed{"crash", fmt.Sprintf("the server exited with status %d", st.Exit)}
	case event.PhaseKilled, event.PhaseStopping, event.PhaseNone:
		return &errBisectFailed{"killed", "the server was killed or is gone"}
	}
	return &errBisectFailed{"ended", "its experiment was ended (another launch, or e)"}
}

// failureSettle is how long a failed or exited server's status is given
// to settle: a traceback's cause (its class) follows its first line, and
// the log's last lines can arrive after the exit (the exit comes on the
// host's watch stream, the lines on the log's follower).
const failureSettle = 1500 * time.Millisecond

// settled is the server's status once a failure or an exit has had
// failureSettle to name its cause (not cut by ctx: it is short). An exit
// that the log's last lines explain is that failure (the tracker turns
// Exited into Failed, the exit status kept).
func (run *bisectRun) settled(st event.ServerStatus) event.ServerStatus {
	if st.Phase != event.PhaseFailed && st.Phase != event.PhaseExited {
		return st
	}
	time.Sleep(failureSettle)
	if now, _ := run.b.Lab.serverState(); now.Phase == event.PhaseFailed || now.Phase == st.Phase {
		return now
	}
	return st
}

// measure waits for the launch's sample: MinSamples steady tok/s samples
// (their median), or with a benchmark metric the server launched at or
// after began ready, then the benchmark's value.
func (run *bisectRun) measure(ctx context.Context, exp string, prog event.BisectProgress, began, deadline time.Time) (float64, error) {
	bench := run.cfg.Bench != nil && run.start.Metric != MetricLogTokS
	tick := time.NewTicker(repeatPoll)
	defer tick.Stop()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	prog.Phase = BisectMeasuring
	for {
		res, open := run.b.Lab.provisionalOf(exp)
		st, _ := run.b.Lab.serverState()
		if !open {
			return 0, failureOf(run.settled(st))
		}
		prog.Samples = res.N
		run.progress(prog)
		if bench && st.Phase == event.PhaseReady && !st.LaunchedAt.Before(began) { // this launch's server, not the one it replaced
			return run.bench(ctx, prog)
		}
		if !bench && res.N >= run.cfg.MinSamples {
			return res.Median, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-timer.C:
			if bench {
				return 0, &errBisectFailed{"timeout", fmt.Sprintf("the server was not ready after %v (max wait)", run.cfg.MaxWait)}
			}
			return 0, &errBisectFailed{"timeout", fmt.Sprintf("%d of %d steady samples after %v (max wait)", res.N, run.cfg.MinSamples, run.cfg.MaxWait)}
		case <-tick.C:
		}
	}
}

// bench runs the bisect's benchmark on the launch and returns the
// metric's value. A run cut short by ctx returns ctx's error (no sample).
func (run *bisectRun) bench(ctx context.Context, prog event.BisectProgress) (float64, error) {
	prog.Phase = BisectBenchmarking
	run.progress(prog)
	res, err := run.b.Bencher.Run(ctx, *run.cfg.Bench)
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if err == nil && res.Cancelled {
		err = errors.New("the benchmark was stopped")
	}
	if err != nil {
		return 0, &errBisectFailed{"bench", err.Error()}
	}
	v, err := benchValue(run.start.Metric, res)
	if err != nil {
		return 0, &errBisectFailed{"bench", err.Error()}
	}
	return v, nil
}
