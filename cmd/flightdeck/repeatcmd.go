package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// repeatFlags are the options of `flightdeck server repeat`.
type repeatFlags struct {
	server   serverFlags
	journal  journalFlags
	repo     string
	interval time.Duration
	gpu      gpuFlags
	cfg      sessions.RepeatConfig
	lock     lockFlags
}

// repeatFirstStatus bounds the wait for the first look at the server (the
// live probes' first event.ServerStatus) before the repeat begins.
const repeatFirstStatus = 2 * time.Minute

func newServerRepeatCmd() *cobra.Command {
	var f repeatFlags
	cmd := &cobra.Command{
		Use:   "repeat HOST",
		Short: "Relaunch the running server N more times, measuring each launch: the host's A/A noise (the cockpit's R)",
		Long: `repeat measures the launch-to-launch (A/A) noise of HOST: it runs the probes
the cockpit runs (the server's log and its tok/s, the server's status, the
GPU sampler) and records them in a journal, takes the running server — one
flightdeck launched (flightdeck server launch) — as launch 1, measures it
until it has --samples steady tok/s samples, then relaunches the same
launch -n more times, measuring each. Every launch is an experiment of the
journal, tagged as launch I of the repeat; an experiment is started for
the running launch when none is open. With --bench each launch is also
benchmarked (flightdeck bench's defaults) before the next relaunch.

Progress goes to stderr, one line a step; at the end the launches are
listed with their tok/s median [within-launch 95 %] and the spread of their medians
(the A/A noise), then the journal's path: flightdeck journal diff FILE A B
compares two experiments with this noise beside the verdict.

Ctrl-C stops the repeat: a relaunch in progress is let finish (the server
is never left killed), the open experiment is ended and the journal
written.

Exit statuses: 0 done; 1 failed or stopped (no server, a server
flightdeck did not launch, a launch that failed or was not measured in
--max-wait; stopped by a signal, 128 + its number as for every command:
130 for Ctrl-C); 2 bad flags.`,
		Example: `  flightdeck server launch gpu-box --profile nccl-ll-ring && flightdeck server repeat gpu-box
  flightdeck server repeat gpu-box -n 2 --samples 20 --bench --journal ll-ring.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError(cmd, err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runServerRepeat(cmd, args[0], f) },
	}
	cmd.SetFlagErrorFunc(usageError)
	f.server.add(cmd)
	fl := cmd.Flags()
	fl.IntVarP(&f.cfg.N, "launches", "n", 4, "launches after the running one (with it, n+1 launches: the A/A noise; the Mann–Whitney verdict needs 4 a side)")
	fl.IntVar(&f.cfg.MinSamples, "samples", 10, "steady tok/s samples each launch must have before the next relaunch")
	fl.DurationVar(&f.cfg.MaxWait, "max-wait", 10*time.Minute, "time limit of one launch, from its relaunch to --samples (and its benchmark)")
	fl.BoolVar(&f.cfg.Bench, "bench", false, "benchmark each launch once measured (flightdeck bench's defaults)")
	fl.StringVar(&f.repo, "repo", "", "the server's git checkout on the host, for the fingerprints (default: the host's repo in the config)")
	fl.DurationVar(&f.interval, "interval", time.Second, "GPU sampling interval")
	f.gpu.add(fl)
	fl.DurationVar(&f.server.grace, "grace", server.DefaultGrace, "time between SIGTERM and SIGKILL at each relaunch")
	fl.DurationVar(&f.server.gpuTimeout, "gpu-timeout", 2*time.Minute, "how long each relaunch waits for the GPU memory to be freed")
	addJournalFlags(fl, &f.journal)
	_ = fl.MarkHidden("no-journal") // refused: a repeat needs a journal
	addLockFlags(fl, &f.lock)
	return cmd
}

// check refuses bad flags, naming the first in a fixed order.
func (f *repeatFlags) check() error {
	switch {
	case f.journal.off:
		return errors.New("--no-journal: a repeat needs a journal (its launches are experiments of it); give --journal FILE, or leave both out for a new one")
	case f.journal.file != "" && strings.TrimSpace(f.journal.file) == "":
		return errors.New("--journal: empty file name")
	case f.cfg.N < 1:
		return fmt.Errorf("-n/--launches %d: want how many more launches, at least 1", f.cfg.N)
	case f.cfg.MinSamples < ledger.MinLaunchSamples:
		return fmt.Errorf("--samples %d: want at least %d (a comparison counts a launch from %d steady samples)", f.cfg.MinSamples, ledger.MinLaunchSamples, ledger.MinLaunchSamples)
	case f.cfg.MaxWait <= 0:
		return fmt.Errorf("--max-wait %v: want a positive duration", f.cfg.MaxWait)
	case f.interval < 10*time.Millisecond:
		return fmt.Errorf("--interval %v is too short (at least 10ms)", f.interval)
	case f.server.grace < 0 || f.server.gpuTimeout < 0:
		return errors.New("--grace and --gpu-timeout must not be negative")
	}
	if err := f.gpu.check(); err != nil {
		return err
	}
	return f.journal.check()
}

func runServerRepeat(cmd *cobra.Command, alias string, f repeatFlags) error {
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
	at := f.server.attach(ctx, h)
	// A first look before the journal is made: no server, or one
	// flightdeck did not launch, leaves no file behind.
	look, err := sessions.Open(sessions.Options{Name: alias, Config: h.cfg, Journal: sessions.JournalOptions{Off: true}})
	if err == nil {
		err = look.Attach(ctx, at)
	}
	if err != nil {
		return err
	}
	found, err := look.Control().Find(ctx)
	look.Close(ctx, nil)
	if err != nil {
		return cleanError{err}
	}
	if err := repeatable(found, h.host.Name(), alias); err != nil {
		return err
	}
	at.Repo = f.repo
	// The RepoPath (set once attached) asks for the HEAD watcher alone:
	// the repeat has no git panel to feed.
	lc := sessions.LiveConfig{Interval: f.interval, GPUProgram: f.server.nvidiaSMI}
	if err := f.gpu.apply(&lc); err != nil {
		return err
	}
	// The repeat drives the host as a cockpit does: it holds the driver
	// lock, refuses to start while a cockpit drives (unless --take-over),
	// and stops when one takes over.
	s, err := sessions.Open(sessions.Options{Name: alias, Config: h.cfg, Journal: f.journal.options(), Version: versionString(),
		Header: event.SessionHeader{Host: h.host.Name(), Label: "repeat", NoLog: true}, Driver: f.lock.driving(), ErrOut: stderr})
	if err != nil {
		return err
	}
	_, at.OnHost = h.host.(*remote.Local)
	err = s.Attach(ctx, at)
	if st, ok := s.LockState(); err == nil && ok && st.Role != event.RoleDriving {
		err = fmt.Errorf("%s (pid %d) drives %s (a cockpit, a bisect or a repeat): a repeat would relaunch its server; --take-over takes over", sanitize.String(st.Holder.Who()), st.Holder.PID, h.host.Name())
	}
	if err != nil {
		s.Abandon()
		return err
	}
	lc.RepoPath = s.Target().Repo
	if at.Repo != "" {
		lc.RepoPath = at.Repo
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	w := &repeatWatch{out: stderr, first: make(chan event.ServerStatus, 1)}
	s.OnEvent(w.observe)
	s.OnEvent(func(e event.Event) {
		if st, ok := e.Data.(event.DriverState); ok && (st.Role == event.RoleWatching || st.Role == event.RoleUnsure) {
			fmt.Fprintf(stderr, "flightdeck: %s: stopping the repeat\n", sanitize.String(st.Note))
			stop()
		}
	})
	sctx := s.Start(rctx, func(ctx context.Context) error { return s.Run(ctx, lc) })

	repErr := runRepeat(sctx, h.host.Name(), alias, s, w, f.cfg)
	return endMeasuring(ctx, sctx, s, repErr, "repeat", stdout, stderr, func(path string) {
		if series := w.series(); series != "" {
			if perr := printRepeatResult(stdout, path, series); perr != nil {
				fmt.Fprintf(stderr, "flightdeck: %s\n", sanitize.String(perr.Error()))
			}
		}
	})
}

// runRepeat waits for the first look at the server, refuses one that is not
// running or not launched by flightdeck, starts an experiment for the
// running launch when none is open, and runs the repeat.
func runRepeat(ctx context.Context, hostName, alias string, s *sessions.Session, w *repeatWatch, cfg sessions.RepeatConfig) error {
	wait := time.NewTimer(repeatFirstStatus)
	defer wait.Stop()
	var st event.ServerStatus
	select {
	case st = <-w.first:
	case <-ctx.Done():
		return ctx.Err()
	case <-wait.C:
		return fmt.Errorf("no word on the server of %s after %v", hostName, repeatFirstStatus)
	}
	if !st.Phase.Up() {
		return repeatable(event.ServerFound{}, hostName, alias) // gone since the first look
	}
	if st.How != "" && st.How != server.ByPidfile {
		return repeatable(event.ServerFound{Running: true, How: st.How, Port: st.Port}, hostName, alias)
	}
	if s.CurrentExperiment() == "" {
		x, err := s.StartExperiment(ctx, "", "")
		if err != nil {
			return fmt.Errorf("start an experiment for the running launch: %w", err)
		}
		w.println(fmt.Sprintf("experiment %s %q started for the running launch", sanitize.OneLine(x.ID), sanitize.OneLine(x.Name)))
	}
	return s.Repeat(ctx, cfg)
}

// repeatable says why the server found cannot be repeated: none runs
// (server.ErrNoServer), or flightdeck did not launch it
// (sessions.ErrNotLaunched: its launch is not known); nil when it can.
func repeatable(found event.ServerFound, hostName, alias string) error {
	switch {
	case !found.Running:
		return fmt.Errorf("%w on %s: launch one first (flightdeck server launch %s)", server.ErrNoServer, hostName, alias)
	case found.How != server.ByPidfile:
		return fmt.Errorf("%w (%s): relaunch it with flightdeck server launch %s, then repeat", sessions.ErrNotLaunched, foundHow(found), alias)
	}
	return nil
}

// repeatWatch follows the stream for `server repeat`: the first server
// status, and the repeat's progress and benchmark runs, printed one line
// each.
type repeatWatch struct {
	out       io.Writer
	outMu     sync.Mutex
	first     chan event.ServerStatus // the first event.ServerStatus, once
	mu        sync.Mutex
	sawStatus bool
	last      event.RepeatProgress
}

// observe is the session's onEvent: it runs after the Lab has seen e.
func (w *repeatWatch) observe(e event.Event) {
	switch p := e.Data.(type) {
	case event.ServerStatus:
		w.mu.Lock()
		first := !w.sawStatus
		w.sawStatus = true
		w.mu.Unlock()
		if first {
			w.first <- p
		}
	case event.RepeatProgress:
		w.mu.Lock()
		w.last = p
		w.mu.Unlock()
		w.println(repeatLine(p))
	case event.BenchDone:
		w.println("  benchmark " + report.BenchRunText(p))
	case event.Baseline, event.BenchProgress, event.BenchStarted, event.ConnState, event.DriverState, event.HostChanges, event.HostState,
		event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale,
		event.GitAction, event.GitMoved, event.GitStatus, event.JournalStatus, event.Key,
		event.KillStep, event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice,
		event.History, event.LogReset, event.Note, event.Prefill, event.Repeat, event.RepoHead,
		event.RepoUnreadable, event.ServerFailure, event.ServerHealthy, event.ServerLaunched,
		event.ServerObserved, event.ServerReady, event.Session, event.SpecDecode, event.Throughput,
		event.TokRate, event.Xid, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// not the repeat's progress
	}
}

// println writes one line to out, whole: the repeat, the benchmark and
// the command write from different goroutines.
func (w *repeatWatch) println(line string) {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	fmt.Fprintln(w.out, line)
}

// series is the repeat's series (its first experiment), "" when the
// repeat never began.
func (w *repeatWatch) series() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last.Series
}

// repeatLine is one progress step as the cockpit's banner says it:
// "repeat 2/5 of e1: measuring 3/10 (e2)", with the reason of a stop.
func repeatLine(p event.RepeatProgress) string {
	s := sanitize.String
	line := "repeat " + strconv.Itoa(p.I) + "/" + strconv.Itoa(p.N) + " of " + s(p.Series) + ": " + s(p.Phase)
	if p.Need > 0 && (p.Phase == sessions.RepeatMeasuring || p.Phase == sessions.RepeatWarmingUp) {
		line += " " + strconv.Itoa(p.Samples) + "/" + strconv.Itoa(p.Need)
	}
	if p.Exp != "" {
		line += " (" + s(p.Exp) + ")"
	}
	if p.Err != "" {
		line += ": " + s(p.Err)
	}
	return line
}

// printRepeatResult reads the journal at path and lists the launches of
// the repeat series: each with its tok/s median [within-launch 95 %] n (and the last
// benchmark's output tok/s), then the spread of their medians.
func printRepeatResult(out io.Writer, path, series string) error {
	lj, err := loadJournal(path)
	if err != nil {
		return err
	}
	defer lj.Close()
	_, launches := ledger.RepeatSeries(lj.report.Ledger.Experiments())
	xs := launches[series]
	if len(xs) == 0 {
		return fmt.Errorf("%s: the repeat of %s recorded no launch", path, series)
	}
	benched := slices.ContainsFunc(xs, func(x *ledger.Experiment) bool { return ledger.LastBench(x) != nil })
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := "LAUNCH\tID\tNAME\tTOK/S MEDIAN [WITHIN-LAUNCH 95%]"
	if benched {
		head += "\tBENCH OUT TOK/S"
	}
	fmt.Fprintln(tw, head+"\tENDED")
	var meds, benchTok []float64
	for _, x := range xs {
		launch := "-"
		if x.Repeat != nil {
			launch = strconv.Itoa(x.Repeat.I) + "/" + strconv.Itoa(x.Repeat.N)
		}
		r := x.Result
		sum := ledger.Summary{N: r.N, Median: r.Median, Lo: r.Lo, Hi: r.Hi}
		if r.N >= ledger.MinLaunchSamples { // as comparisons count a launch
			meds = append(meds, r.Median)
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s", launch, sanitize.OneLine(x.ID), sanitize.OneLine(x.Name), compare.FormatSummary(sum, compare.UnitTokS))
		if benched {
			cell := "-"
			if b := ledger.LastBench(x); b != nil {
				cell = compare.FormatValue(b.OutputTokPerSec, compare.UnitTokS)
				benchTok = append(benchTok, b.OutputTokPerSec)
			}
			row += "\t" + cell
		}
		fmt.Fprintln(tw, row+"\t"+report.EndedWords(x))
	}
	tw.Flush()
	fmt.Fprintln(out)
	fmt.Fprintln(out, "A/A noise (spread of the launch medians): "+spreadText("tok/s (server log)", meds))
	if benched {
		fmt.Fprintln(out, "A/A noise (spread of the launch medians): "+spreadText("output tok/s (benchmark)", benchTok))
	}
	return nil
}

// spreadText is "tok/s 61.9–63.1 over 5 launches, ±1.0%" (the launch
// values' range and compare.Spread), or why there is no spread.
func spreadText(metric string, values []float64) string {
	p, ok := compare.Spread(values)
	if !ok {
		return fmt.Sprintf("%s not measured: a spread needs 2 launches with a value, and %d had one", metric, len(values))
	}
	return fmt.Sprintf("%s %s–%s over %s, %s", metric, compare.FormatValue(slices.Min(values), compare.UnitTokS), compare.FormatValue(slices.Max(values), compare.UnitTokS),
		compare.FormatLaunches(len(values)), compare.FormatNoise(p))
}
