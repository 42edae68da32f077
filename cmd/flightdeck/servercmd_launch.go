package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The launch verb: flightdeck server launch, which kills a running server
// first and then follows the new one until it is ready.

func newServerLaunchCmd() *cobra.Command {
	var f serverFlags
	var req sessions.LaunchRequest
	var noWait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "launch HOST",
		Short: "Launch (or relaunch) the server with a preset and an env profile; wait until ready",
		Long: `launch starts the inference server on HOST from a launch preset (a command
template: sglang, sglang-eagle3, vllm, sim, or your own) with an env profile
(none, nccl-ll-ring, nccl-debug, or your own), detached under setsid with
its own log. A running server is killed first (asks unless --yes), and its
GPU memory awaited. Then launch follows the new log until the server is
ready (the ready line, then an HTTP health check), failed, or exited.

Exit status: 0 ready; 1 failed, exited or could not launch; 124 not ready
within --timeout. With --no-wait it returns once the process runs.`,
		Example: `  flightdeck server launch gpu-box --preset sglang --profile nccl-ll-ring --model /models/Kimi-K2.5 --tp 8
  flightdeck server launch local --preset sim --model /shared/kimi-k2.5-int4 --tp 8 --port 31000 --profile nccl-ll-ring
  flightdeck server launch gpu-box --extra '--mem-fraction-static 0.85 --enable-metrics'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ss, done, err := f.openSession(ctx, args[0])
			if err != nil {
				return err
			}
			defer done()
			if err := ss.MayAct(ctx); err != nil {
				return err
			}
			return runServerLaunch(ctx, cmd, ss, f, req, noWait, timeout)
		},
	}
	f.add(cmd)
	f.addKill(cmd)
	fl := cmd.Flags()
	addLaunchFlags(fl, &req)
	fl.BoolVar(&noWait, "no-wait", false, "return once the server process runs, without waiting for ready")
	fl.DurationVar(&timeout, "timeout", 30*time.Minute, "how long to wait for ready")
	return cmd
}

// addLaunchFlags adds the launch request's flags (server launch's, and
// bisect's: every commit is launched with them).
func addLaunchFlags(fl *pflag.FlagSet, req *sessions.LaunchRequest) {
	fl.StringVar(&req.Preset, "preset", "", "launch preset (default: the host's, else sglang)")
	fl.StringVar(&req.Profile, "profile", "", "env profile (default: the host's, else none)")
	fl.StringVar(&req.Model, "model", "", "{model} of the preset (default: the host's)")
	fl.StringVar(&req.Draft, "draft-model", "", "{draft_model}: the EAGLE draft model of the sglang-eagle3 preset (default: the host's)")
	fl.IntVar(&req.TP, "tp", 0, "{tp}: tensor-parallel size (default: the host's, else every GPU nvidia-smi lists)")
	fl.IntVar(&req.Port, "port", 0, "{port}: the server's HTTP port (default: the host's, else 30000 for SGLang, 8000 for vLLM)")
	fl.StringVar(&req.Extra, "extra", "", "extra flags appended to the command, quoted like a shell command line")
}

func runServerLaunch(ctx context.Context, cmd *cobra.Command, ss *sessions.Session, f serverFlags, req sessions.LaunchRequest, noWait bool, timeout time.Duration) error {
	c := ss.Control()
	errw := cmd.ErrOrStderr()
	if timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration", timeout)
	}
	req = c.Fill(req)
	found, err := c.Find(ctx) // also remembers the last launch for the env diff
	if err != nil {
		return err
	}
	plan, err := ss.Plan(req)
	if err != nil {
		return err
	}
	fmt.Fprintln(errw, "command:", sanitize.String(plan.CommandLine))
	for _, d := range plan.EnvDiff {
		fmt.Fprintln(errw, "env:    ", sanitize.String(envChangeText(d)))
	}
	if found.Running {
		if !f.yes {
			if err := confirm(ctx, fmt.Sprintf("Relaunch: kill pid %d on %s (%s), wait for its GPU memory, then launch?", found.ServerPID, c.Host.Name(), foundHow(found))); err != nil {
				return err
			}
		}
	}
	ss.OnEvent(printKillSteps(errw))
	rec, err := ss.Launch(ctx, plan)
	if err != nil {
		return err
	}
	fmt.Fprintf(errw, "launched: log %s\n", sanitize.String(rec.Launch.LogPath))
	for _, w := range rec.Warnings {
		fmt.Fprintf(errw, "warning: %s\n", sanitize.String(w))
	}
	if noWait {
		return nil
	}
	return waitReady(ctx, c, rec, timeout, errw)
}

func envChangeText(d sessions.EnvChange) string {
	switch {
	case d.Added:
		return "+ " + d.Name + "=" + d.New
	case d.Removed:
		return "- " + d.Name + "=" + d.Old
	}
	return "~ " + d.Name + " " + d.Old + " -> " + d.New
}

// waitReady follows the launch's log and the server until it is ready,
// failed or gone, printing each change of phase.
func waitReady(ctx context.Context, c *sessions.Control, rec event.LaunchRecord, timeout time.Duration, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	final := make(chan event.ServerStatus, 1)
	var (
		mu   sync.Mutex
		last event.ServerStatus
	)
	sink := func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch p := e.Data.(type) {
		case event.ServerStatus:
			if p.Phase != last.Phase || p.Stage != last.Stage {
				line := string(p.Phase)
				if p.Stage != "" {
					line += ": " + p.Stage
				}
				if !rec.Launch.At.IsZero() {
					line = fmt.Sprintf("%6.1fs  %s", time.Since(rec.Launch.At).Seconds(), line)
				}
				fmt.Fprintln(w, sanitize.String(line))
			}
			last = p
			switch p.Phase {
			case event.PhaseReady, event.PhaseFailed, event.PhaseExited, event.PhaseKilled:
				select {
				case final <- p:
				default:
				}
			}
		case event.ServerFailure:
			fmt.Fprintln(w, "log:", sanitize.String(p.Text))
		case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
			event.ConnState, event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint,
			event.ExperimentStart, event.ExperimentUpdate, event.GPUFailure, event.GPUSample,
			event.GPUSource, event.GPUStale, event.GitAction, event.GitMoved, event.GitStatus,
			event.JournalStatus, event.Key, event.KillStep, event.LogBench, event.LogFollowError,
			event.LogLines, event.LogNotice, event.LogReset, event.Note, event.Prefill, event.Repeat,
			event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable, event.ServerHealthy,
			event.ServerLaunched, event.ServerObserved, event.ServerReady, event.Session,
			event.SpecDecode, event.Throughput, event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
			// not the launch's progress
		}
	}
	live := sessions.NewLive(sessions.LiveConfig{Host: c.Host, Control: c, NoGPU: true, Server: rec.Launch.Server}, sink)
	// The launch already happened: tell the tracker, follow its log.
	live.Sink(event.Event{At: rec.Launch.At, Data: event.ServerLaunched{Record: rec}})
	live.FollowLog(rec.Launch.LogPath)
	runErr := make(chan error, 1)
	go func() { runErr <- live.Run(ctx) }()
	select {
	case st := <-final:
		if st.Phase == event.PhaseFailed {
			// A traceback's cause follows its first line: let the rest of
			// it arrive, and report the primary class.
			settle := time.NewTimer(1500 * time.Millisecond)
		wait:
			for {
				select {
				case st = <-final:
				case <-settle.C:
					break wait
				case <-ctx.Done():
					break wait
				}
			}
			mu.Lock()
			st = last
			mu.Unlock()
		}
		cancel()
		<-runErr
		switch st.Phase {
		case event.PhaseReady:
			fmt.Fprintf(w, "ready in %.1fs (health %s)\n", st.ReadyAfter.Seconds(), st.Health)
			return nil
		case event.PhaseFailed:
			fmt.Fprintf(w, "failed: %s: %s\n", st.Class, sanitize.String(st.Text))
			fmt.Fprintf(w, "(the process may still hold the GPUs: flightdeck server kill %s)\n", c.Target.Name)
		case event.PhaseExited:
			if st.Exit >= 0 {
				fmt.Fprintf(w, "exited with status %d before it was ready; see %s\n", st.Exit, sanitize.String(rec.Launch.LogPath))
			} else {
				fmt.Fprintf(w, "the server process is gone before it was ready; see %s\n", sanitize.String(rec.Launch.LogPath))
			}
		}
		return exitCode(1)
	case err := <-runErr:
		if ctx.Err() == context.DeadlineExceeded {
			mu.Lock()
			what := string(last.Phase)
			if last.Stage != "" {
				what += ": " + sanitize.String(last.Stage)
			}
			fmt.Fprintf(w, "not ready after %v (last seen: %s); the server keeps starting: flightdeck server status %s\n", timeout, what, c.Target.Name)
			mu.Unlock()
			return exitCode(exitTimeout)
		}
		if err != nil {
			return err
		}
		return ctx.Err()
	}
}
