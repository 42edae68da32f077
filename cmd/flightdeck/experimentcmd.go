package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// experimentFlags are the options of `flightdeck experiment start`.
type experimentFlags struct {
	server     serverFlags
	journal    string
	log        string
	repo       string
	interval   time.Duration
	gpu        gpuFlags
	name       string
	hypothesis string
	conclusion string
	samples    int
	limit      time.Duration
}

// experimentFirstStatus bounds the wait for the first look at the server
// before the experiment starts.
const experimentFirstStatus = 2 * time.Minute

func newExperimentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment",
		RunE:  runGroup,
		Short: "Measure an experiment from a script (the cockpit's e): start, measure, end",
	}
	cmd.AddCommand(newExperimentStartCmd())
	return cmd
}

func newExperimentStartCmd() *cobra.Command {
	var f experimentFlags
	cmd := &cobra.Command{
		Use:   "start HOST",
		Short: "Start an experiment on HOST's running server, measure its tok/s, and end it",
		Long: `start records an experiment of HOST's running server, as the cockpit's e key
does twice: it runs the probes the cockpit runs (the server's log and its
tok/s, the server's status, the GPUs, the checkout's HEAD) into a journal,
starts an experiment with its fingerprint (commit, dirty patch, launch
command and environment, versions, GPU clocks and links), measures it until
it has --samples steady tok/s samples or --for has passed, and ends it with
--conclusion. The result — the tok/s median [within-launch 95 %] — is printed with the
journal's path: flightdeck journal diff FILE A B compares two experiments,
journal conclude writes a conclusion afterwards.

It only reads the host: it takes no driver lock and may run while a cockpit
drives. The experiment also ends, as in the cockpit, when the server is
killed, exits or fails. Ctrl-C ends it early.

Exit statuses: 0 measured; 1 failed or stopped (no server, not measured in
--for, ended by the server, a signal: 128 + its number); 2 bad flags.`,
		Example: `  flightdeck experiment start gpu-box --name ll-ring --hypothesis "LL+Ring beats the default" --samples 30
  flightdeck experiment start gpu-box --for 2m --journal ab.jsonl --conclusion "flat: not the profile"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError(cmd, err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runExperimentStart(cmd, args[0], f) },
	}
	cmd.SetFlagErrorFunc(usageError)
	f.server.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", `the experiment's name (default "<profile> @ <short commit>")`)
	fl.StringVar(&f.hypothesis, "hypothesis", "", "what the experiment is to show")
	fl.StringVar(&f.conclusion, "conclusion", "", "what it showed, written when it ends")
	fl.IntVar(&f.samples, "samples", 10, "end once the experiment has this many steady tok/s samples")
	fl.DurationVar(&f.limit, "for", 10*time.Minute, "end after this long, measured or not")
	fl.StringVar(&f.journal, "journal", "", "record in this journal (appended to when it exists; default a new file under $XDG_STATE_HOME/flightdeck/journals/<host>/)")
	fl.StringVar(&f.log, "log", "", "server log to follow (default: the log of the server flightdeck launched)")
	fl.StringVar(&f.repo, "repo", "", "the server's git checkout on the host, for the fingerprint (default: the host's repo in the config)")
	fl.DurationVar(&f.interval, "interval", time.Second, "GPU sampling interval")
	f.gpu.add(fl)
	return cmd
}

// check refuses bad flags, naming the first in a fixed order.
func (f experimentFlags) check() error {
	switch {
	case f.samples < ledger.MinLaunchSamples:
		return fmt.Errorf("--samples %d: want at least %d (a comparison counts a launch from %d steady samples)", f.samples, ledger.MinLaunchSamples, ledger.MinLaunchSamples)
	case f.limit <= 0:
		return fmt.Errorf("--for %v: want a positive duration", f.limit)
	case f.interval < 10*time.Millisecond:
		return fmt.Errorf("--interval %v is too short (at least 10ms)", f.interval)
	}
	return f.gpu.check()
}

func runExperimentStart(cmd *cobra.Command, alias string, f experimentFlags) error {
	if err := f.check(); err != nil {
		return usageError(cmd, err)
	}
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	h, err := f.server.dial(ctx, alias)
	if err != nil {
		return err
	}
	defer h.host.Close()
	lc := sessions.LiveConfig{LogPath: f.log, Interval: f.interval, GPUProgram: f.server.nvidiaSMI}
	if err := f.gpu.apply(&lc); err != nil {
		return err
	}
	at := f.server.attach(ctx, h)
	at.Repo = f.repo
	_, at.OnHost = h.host.(*remote.Local)
	s, err := sessions.Open(sessions.Options{Name: alias, Config: h.cfg, Journal: sessions.JournalOptions{File: f.journal}, Version: versionString(),
		Header: event.SessionHeader{Host: h.host.Name(), Label: "experiment", LogPath: f.log, NoLog: f.log == ""}, ErrOut: stderr})
	if err != nil {
		return err
	}
	if err := s.Attach(ctx, at); err != nil {
		s.Abandon()
		return err
	}
	first := make(chan event.ServerStatus, 1)
	ended := make(chan event.ExperimentEnd, 1)
	s.OnEvent(func(e event.Event) {
		switch p := e.Data.(type) {
		case event.ServerStatus:
			select {
			case first <- p:
			default:
			}
		case event.ExperimentEnd:
			select {
			case ended <- p:
			default:
			}
		case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState,
			event.DriverState, event.HostChanges, event.HostState, event.ExperimentFingerprint, event.ExperimentStart, event.ExperimentUpdate,
			event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale, event.GitAction, event.GitMoved,
			event.GitStatus, event.JournalStatus, event.Key, event.KillStep, event.LogBench,
			event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset, event.Note, event.Prefill,
			event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable, event.ServerFailure,
			event.ServerHealthy, event.ServerLaunched, event.ServerObserved, event.ServerReady, event.Session,
			event.SpecDecode, event.Throughput, event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
			// not the experiment's course
		}
	})
	sctx := s.Start(ctx, func(ctx context.Context) error { return s.Run(ctx, lc) })
	x, runErr := measureExperiment(sctx, s, f, first, ended, stderr)
	return endMeasuring(ctx, sctx, s, runErr, "experiment", stdout, stderr, func(string) {
		if x.Exp != "" {
			fmt.Fprintf(stdout, "%s: tok/s %s, ended: %s\n", sanitize.OneLine(x.Exp), report.FormatResult(x.Result), endedText(x))
		}
	})
}

// endMeasuring closes the session of a command that measures (experiment
// start, server repeat) and says how it went on stdout: result(path) prints
// the result, then the journal's path. It returns nil when runErr and the
// close were clean, exitCode(1) when the run was stopped (Ctrl-C, a take-over:
// "flightdeck: WHAT stopped" on stderr), else the error.
func endMeasuring(ctx, sctx context.Context, s *sessions.Session, runErr error, what string, stdout, stderr io.Writer, result func(path string)) error {
	err := s.Close(sctx, runErr)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err() // stopped (Ctrl-C): the session's own error is none
	}
	path := s.JournalPath()
	result(path)
	fmt.Fprintf(stdout, "journal: %s (flightdeck journal diff %s A B compares two experiments)\n", sanitize.String(path), shellQuote(path))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "flightdeck: %s stopped\n", what)
		return exitCode(1)
	}
	return cleanError{err}
}

// measureExperiment waits for a running server, starts the experiment,
// waits until it is measured (f.samples steady samples), f.limit has
// passed, it ended by itself, or ctx ends, and ends it. It returns its
// end, zero when none was started, and why it was not measured.
func measureExperiment(ctx context.Context, s *sessions.Session, f experimentFlags, first <-chan event.ServerStatus, ended <-chan event.ExperimentEnd, w io.Writer) (event.ExperimentEnd, error) {
	wait := time.NewTimer(experimentFirstStatus)
	defer wait.Stop()
	select {
	case st := <-first:
		if !st.Phase.Up() {
			return event.ExperimentEnd{}, fmt.Errorf("no server running on %s (%s): launch one first (flightdeck server launch)", s.Host().Name(), st.Phase)
		}
	case <-ctx.Done():
		return event.ExperimentEnd{}, ctx.Err()
	case <-wait.C:
		return event.ExperimentEnd{}, fmt.Errorf("no word on the server of %s after %v", s.Host().Name(), experimentFirstStatus)
	}
	x, err := s.StartExperiment(ctx, f.name, f.hypothesis)
	if err != nil {
		return event.ExperimentEnd{}, fmt.Errorf("start the experiment: %w", err)
	}
	fmt.Fprintf(w, "experiment %s %q started: measuring until %d steady tok/s samples (at most %v)\n", sanitize.OneLine(x.ID), sanitize.OneLine(x.Name), f.samples, f.limit)
	limit := time.NewTimer(f.limit)
	defer limit.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var why error
	for why == nil && s.Provisional().N < f.samples {
		select {
		case end := <-ended:
			return end, fmt.Errorf("%s ended (%s) before it was measured", sanitize.OneLine(end.Exp), endedText(end))
		case <-limit.C:
			why = fmt.Errorf("%s: %d steady tok/s samples in %v, not %d", sanitize.OneLine(x.ID), s.Provisional().N, f.limit, f.samples)
		case <-ctx.Done():
			why = ctx.Err()
		case <-tick.C:
		}
	}
	end, err := s.EndExperiment(context.WithoutCancel(ctx), f.conclusion)
	if err != nil {
		select {
		case end = <-ended: // it ended by itself meanwhile
		default:
			return end, errors.Join(why, fmt.Errorf("end the experiment: %w", err))
		}
	}
	return end, why
}

// endedText says how an experiment ended, in journal show's words
// (report.EndedWords): "by hand", "kill", "exit", "relaunch", "quit".
func endedText(x event.ExperimentEnd) string {
	if x.Trigger == event.TriggerKey {
		return "by hand"
	}
	return string(x.Trigger)
}
