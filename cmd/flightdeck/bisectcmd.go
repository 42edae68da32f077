package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// bisectFlags are the options of `flightdeck bisect`.
type bisectFlags struct {
	server   serverFlags
	journal  journalFlags
	lock     lockFlags
	gpu      gpuFlags
	repo     string
	interval time.Duration
	req      sessions.LaunchRequest
	cfg      sessions.BisectConfig
	resume   bool
	noisePct float64 // --noise, percent
	bench    bool
	benchCfg event.BenchConfig
}

// bisectFirstStatus bounds the wait for the probes' first look at the
// server before the bisect begins.
const bisectFirstStatus = 2 * time.Minute

func newBisectCmd() *cobra.Command {
	var f bisectFlags
	cmd := &cobra.Command{
		Use:   "bisect HOST --good REF --bad REF",
		Short: "Find the commit that cost tok/s: launch and measure the server at the commits between good and bad",
		Long: `bisect finds the first bad commit between --good (fast) and --bad (slow) of
the server's checkout on HOST, unattended: at each commit it checks out (the
dirty work stashed first, in a never-lose-work snapshot), launches the
server with the same preset, profile, model and flags (as server launch),
and measures the launch: its steady tok/s median from the server's log, or
with --metric bench-tok/s, ttft, itl or tpot a benchmark's (the --bench-*
settings). Each launch is one sample and an experiment of the journal; the
endpoints are measured until they differ, then each commit is launched
until it is like good or like bad (or the --max-launches cap). A commit
that fails to launch is recorded with its failure class and a neighbour
tried.

Progress goes to stderr, one line a step. At the end the result: the first
bad commit (id, subject, author date, files touched) and the evidence
table (commit, launches, median [95 %], verdict, p), then the journal's path.
The original checkout and dirty work are restored (--stay leaves the
culprit checked out); the server is left running the last commit launched.

Ctrl-C cancels: the launch in progress finishes, the checkout is restored,
the journal says cancelled. --resume continues the last unfinished bisect
of --journal FILE (or of the host's latest journal holding one), also after
the process was killed; the bisect's own settings win.

Exit statuses: 0 a culprit found; 3 the endpoints do not differ; 4 the change
is not a single step (in-between or flip-flopping results, untestable
commits around it); 1 failed or an error; 2 bad flags; 130 Ctrl-C.`,
		Example: `  flightdeck bisect gpu-box --good v0.5.2 --bad main --profile nccl-ll-ring
  flightdeck bisect gpu-box --good a6d51c0 --bad HEAD --metric ttft --bench-requests 50
  flightdeck bisect gpu-box --resume`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError(cmd, err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runBisect(cmd, args[0], f) },
	}
	cmd.SetFlagErrorFunc(usageError)
	f.server.add(cmd)
	fl := cmd.Flags()
	addLaunchFlags(fl, &f.req)
	fl.StringVar(&f.cfg.Good, "good", "", "the good (fast) commit: a ref of the host's checkout")
	fl.StringVar(&f.cfg.Bad, "bad", "", "the bad (slow) commit")
	fl.StringVar(&f.cfg.Metric, "metric", "tok/s", "what a launch measures: tok/s (the server log's), bench-tok/s, ttft, itl or tpot (a benchmark's)")
	fl.IntVar(&f.cfg.Method.Launches, "launches", 0, "launches per commit to start with (default: derived from the endpoints' gap and noise; the endpoints at least 3)")
	fl.IntVar(&f.cfg.Method.MaxLaunches, "max-launches", 0, "the cap of launches per commit (default 10)")
	fl.Float64Var(&f.noisePct, "noise", 0, "the launch-to-launch (A/A) noise, SD of a launch's value in percent (default: the host's known one, from earlier repeats of the same launch)")
	fl.BoolVar(&f.cfg.NoKnownNoise, "no-known-noise", false, "do not take the host's known A/A noise from earlier launches (the endpoints' Mann–Whitney test instead)")
	fl.IntVar(&f.cfg.Method.MaxFailures, "max-failures", 0, "failed commits after which the bisect gives up (default 3)")
	fl.IntVar(&f.cfg.MinSamples, "samples", 10, "steady tok/s samples a launch must have to count")
	fl.DurationVar(&f.cfg.MaxWait, "max-wait", 10*time.Minute, "time limit of one launch, from its checkout to its sample")
	fl.BoolVar(&f.resume, "resume", false, "continue the last unfinished bisect (of --journal FILE, else the host's latest journal holding one)")
	fl.BoolVar(&f.cfg.Stay, "stay", false, "leave the culprit checked out at the end (default: restore the checkout and dirty work)")
	fl.BoolVar(&f.bench, "bench", false, "benchmark every launch (implied by a benchmark --metric)")
	fl.IntVar(&f.benchCfg.Requests, "bench-requests", event.BenchDefaultRequests, "the benchmark's measured requests")
	fl.IntVar(&f.benchCfg.InputLen, "bench-input-len", event.BenchDefaultInputLen, "the benchmark's prompt length, tokens")
	fl.IntVar(&f.benchCfg.OutputLen, "bench-output-len", event.BenchDefaultOutputLen, "the benchmark's tokens to generate per request")
	fl.IntVar(&f.benchCfg.Concurrency, "bench-concurrency", 1, "the benchmark's requests in flight at most")
	fl.StringVar(&f.repo, "repo", "", "the server's git checkout on the host (default: the host's repo in the config)")
	fl.DurationVar(&f.interval, "interval", time.Second, "GPU sampling interval")
	f.gpu.add(fl)
	fl.DurationVar(&f.server.grace, "grace", server.DefaultGrace, "time between SIGTERM and SIGKILL at each relaunch")
	fl.DurationVar(&f.server.gpuTimeout, "gpu-timeout", 2*time.Minute, "how long each relaunch waits for the GPU memory to be freed")
	addJournalFlags(fl, &f.journal)
	_ = fl.MarkHidden("no-journal") // refused: a bisect's launches are experiments
	addLockFlags(fl, &f.lock)
	return cmd
}

// check refuses bad flags, naming the first in a fixed order, and fills
// in the benchmark.
func (f *bisectFlags) check() error {
	switch {
	case f.journal.off:
		return errors.New("--no-journal: a bisect needs a journal (its launches are experiments, its state is resumed from it)")
	case !f.resume && (strings.TrimSpace(f.cfg.Good) == "" || strings.TrimSpace(f.cfg.Bad) == ""):
		return errors.New("--good and --bad: both are needed (or --resume)")
	case f.cfg.Method.Launches < 0 || f.cfg.Method.MaxLaunches < 0 || f.cfg.Method.MaxFailures < 0:
		return errors.New("--launches, --max-launches and --max-failures must not be negative")
	case f.cfg.Method.Launches > 0 && f.cfg.Method.MaxLaunches > 0 && f.cfg.Method.Launches > f.cfg.Method.MaxLaunches:
		return fmt.Errorf("--launches %d is above --max-launches %d", f.cfg.Method.Launches, f.cfg.Method.MaxLaunches)
	case !(f.noisePct >= 0 && f.noisePct < 100):
		return fmt.Errorf("--noise %v: want a percent in [0, 100)", f.noisePct)
	case f.noisePct > 0 && f.cfg.NoKnownNoise:
		return errors.New("--noise and --no-known-noise: give one")
	case f.cfg.MinSamples < ledger.MinLaunchSamples:
		return fmt.Errorf("--samples %d: want at least %d", f.cfg.MinSamples, ledger.MinLaunchSamples)
	case f.cfg.MaxWait <= 0:
		return fmt.Errorf("--max-wait %v: want a positive duration", f.cfg.MaxWait)
	case f.interval < 10*time.Millisecond:
		return fmt.Errorf("--interval %v is too short (at least 10ms)", f.interval)
	}
	f.cfg.Method.Noise = f.noisePct / 100
	m := strings.ReplaceAll(strings.ToLower(f.cfg.Metric), "-", " ")
	switch m {
	case sessions.MetricLogTokS:
		if f.bench {
			return errors.New("--bench with --metric tok/s: the benchmark's metrics are bench-tok/s, ttft, itl and tpot")
		}
	case sessions.MetricBenchTokS, sessions.MetricTTFT, sessions.MetricITL, sessions.MetricTPOT:
		c := f.benchCfg.Defaults()
		if err := c.Validate(); err != nil {
			return fmt.Errorf("--bench-*: %w", err)
		}
		f.cfg.Bench = &c
	default:
		return fmt.Errorf("--metric %q: want tok/s, bench-tok/s, ttft, itl or tpot", f.cfg.Metric)
	}
	if err := f.gpu.check(); err != nil {
		return err
	}
	return f.journal.check()
}

func runBisect(cmd *cobra.Command, alias string, f bisectFlags) error {
	if err := f.check(); err != nil {
		return usageError(cmd, err)
	}
	// `bisect … 2>&1 | tee log` is how an unattended bisect is run: a
	// Ctrl-C kills tee too, and the next progress line would kill this
	// process by SIGPIPE before the checkout and dirty work are restored.
	// Ignored, a write to the closed pipe fails and the restore runs.
	signal.Ignore(syscall.SIGPIPE)
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	h, err := f.server.dial(ctx, alias)
	if err != nil {
		return err
	}
	defer h.host.Close()
	if f.resume {
		f.cfg.Resume = sessions.ResumeLast
		if f.journal.file == "" {
			path, err := bisectJournal(h.host.Name())
			if err != nil {
				return err
			}
			f.journal.file = path // appended to: the whole bisect stays in one journal
		}
		fmt.Fprintf(stderr, "resuming the last unfinished bisect of %s\n", sanitize.Name(f.journal.file))
	}
	at := f.server.attach(ctx, h)
	at.Repo = f.repo
	lc := sessions.LiveConfig{Interval: f.interval, GPUProgram: f.server.nvidiaSMI}
	if err := f.gpu.apply(&lc); err != nil {
		return err
	}
	s, err := sessions.Open(sessions.Options{Name: alias, Config: h.cfg, Journal: f.journal.options(), Version: versionString(),
		Header: event.SessionHeader{Host: h.host.Name(), Label: "bisect", NoLog: true}, Driver: f.lock.driving(), ErrOut: stderr})
	if err != nil {
		return err
	}
	_, at.OnHost = h.host.(*remote.Local)
	err = s.Attach(ctx, at)
	if st, ok := s.LockState(); err == nil && ok && st.Role != event.RoleDriving {
		err = fmt.Errorf("%s (pid %d) drives %s (a cockpit, a bisect or a repeat): a bisect would relaunch its server; --take-over takes over (a bisect running there stops, its checkout not restored)", sanitize.Name(st.Holder.Who()), st.Holder.PID, h.host.Name())
	}
	if err == nil && !s.HasRepo() {
		err = fmt.Errorf("%s has no checkout to bisect: give --repo DIR, or repo in the host's config", h.host.Name())
	}
	if err != nil {
		s.Abandon()
		return err
	}
	lc.RepoPath = s.Target().Repo
	if at.Repo != "" {
		lc.RepoPath = at.Repo
	}
	req := s.Control().Fill(f.req)
	f.cfg.Request = &req
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	w := &bisectWatch{out: stderr, first: make(chan struct{})}
	s.OnEvent(w.observe)
	s.OnEvent(func(e event.Event) {
		if st, ok := e.Data.(event.DriverState); ok && (st.Role == event.RoleWatching || st.Role == event.RoleUnsure) {
			w.println("flightdeck: " + sanitize.Name(st.Note) + ": stopping the bisect")
			stop()
		}
	})
	sctx := s.Start(rctx, func(ctx context.Context) error { return s.Run(ctx, lc) })
	var o = struct {
		kind string
		code int
	}{}
	bisErr := func() error {
		select { // the probes watch the server before the first launch
		case <-w.first:
		case <-sctx.Done():
			return sctx.Err()
		case <-time.After(bisectFirstStatus):
			return fmt.Errorf("no word on the server of %s after %v", h.host.Name(), bisectFirstStatus)
		}
		out, err := s.Bisect(sctx, f.cfg)
		o.kind, o.code = out.Kind, out.ExitCode()
		return err
	}()
	err = endMeasuring(ctx, sctx, s, bisErr, "bisect", stdout, stderr, func(path string) {
		if id := w.id(); id != "" {
			if perr := printBisectResult(stdout, path, id); perr != nil {
				fmt.Fprintf(stderr, "flightdeck: %s\n", sanitize.Name(perr.Error()))
			}
		}
	})
	if err == nil && o.code != 0 {
		return exitCode(o.code)
	}
	return err
}

// bisectJournal is the host's latest journal holding an unfinished
// bisect: --resume's without --journal.
func bisectJournal(host string) (string, error) {
	dir, err := journal.DefaultDir()
	if err != nil {
		return "", err
	}
	js, err := history.Find(dir, host)
	if err != nil {
		return "", err
	}
	for _, j := range js { // newest first
		r, err := sessions.ReadBisects(j.Path)
		if err != nil {
			continue
		}
		if _, _, ok := r.Unfinished(sessions.ResumeLast); ok {
			return j.Path, nil
		}
	}
	return "", fmt.Errorf("--resume: no journal of %s under %s holds an unfinished bisect (give --journal FILE): %w", host, dir, sessions.ErrNoBisectToResume)
}

// printBisectResult reads the journal at path and prints bisect id's
// result: the outcome and the evidence table.
func printBisectResult(out io.Writer, path, id string) error {
	lj, err := loadJournal(path)
	if err != nil {
		return err
	}
	defer lj.Close()
	for _, b := range lj.report.Bisects {
		if b.Start.ID == id {
			fmt.Fprintln(out)
			return report.WriteBisectText(out, b)
		}
	}
	return fmt.Errorf("%s: no bisect %s", path, id)
}

// bisectWatch follows the stream for `flightdeck bisect`: the first
// server status, and the bisect's steps, printed one line each.
type bisectWatch struct {
	out   io.Writer
	outMu sync.Mutex
	first chan struct{} // closed at the first event.ServerStatus
	mu    sync.Mutex
	seen  bool
	bid   string
	last  event.BisectProgress
}

func (w *bisectWatch) id() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bid
}

func (w *bisectWatch) println(line string) {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	fmt.Fprintln(w.out, line)
}

// observe is the session's onEvent.
func (w *bisectWatch) observe(e event.Event) {
	switch p := e.Data.(type) {
	case event.ServerStatus:
		w.mu.Lock()
		if !w.seen {
			w.seen = true
			close(w.first)
		}
		w.mu.Unlock()
	case event.BisectStart:
		w.mu.Lock()
		w.bid = p.ID
		w.mu.Unlock()
		w.println(fmt.Sprintf("bisect %s: %d commits from %s to %s, metric %s", sanitize.OneLine(p.ID), len(p.Commits),
			sanitize.OneLine(p.Good), sanitize.OneLine(p.Bad), sanitize.OneLine(p.Metric)))
		w.println(noiseLine(p))
	case event.BisectProgress:
		w.mu.Lock()
		same := p.Phase == w.last.Phase && p.Commit == w.last.Commit && p.Launch == w.last.Launch
		w.last = p
		w.mu.Unlock()
		if !same { // one line a step, not one a sample
			w.println(bisectLine(p))
		}
	case event.BisectLaunch:
		line := "  " + git.ShortID(p.Commit) + ": "
		if p.Failed != "" {
			line += "failed (" + p.Failed + "): " + p.Why
		} else {
			line += fmt.Sprintf("%.4g (%s, %s)", p.Value, p.Exp, p.Took.Round(time.Second))
		}
		w.println(sanitize.OneLine(line))
	case event.BisectEnd:
		w.mu.Lock()
		w.bid = p.ID // a resumed bisect journals no start again
		w.mu.Unlock()
		w.println(sanitize.OneLine("bisect " + p.ID + " " + p.Outcome + ": " + p.Why))
		if p.Restored != "" { // where the checkout was left: the user's next question
			w.println(sanitize.OneLine("  checkout: " + p.Restored))
		}
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState, event.DriverState, event.HostChanges, event.HostState,
		event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale,
		event.GitAction, event.GitMoved, event.GitStatus, event.JournalStatus, event.Key,
		event.KillStep, event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice,
		event.History, event.LogReset, event.Note, event.Prefill, event.Repeat, event.RepeatProgress, event.RepoHead,
		event.RepoUnreadable, event.ServerFailure, event.ServerHealthy, event.ServerLaunched,
		event.ServerObserved, event.ServerReady, event.Session, event.SpecDecode, event.Throughput,
		event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// not the bisect's progress
	}
}

// noiseLine says the noise the bisect's method assumes and what it sets:
// "A/A noise sd 0.41% from 5 earlier launches: the endpoints 3 launches
// each (Student's t), each commit's start from their gap".
func noiseLine(p event.BisectStart) string {
	per := "each commit's start from their gap"
	if p.Launches > 0 {
		per = fmt.Sprintf("%d a commit to start", p.Launches)
	}
	switch {
	case p.Noise > 0 && p.NoiseLaunches > 0:
		return fmt.Sprintf("  A/A noise %s from %d earlier launches of this configuration: the endpoints %d launches each (Student's t), %s",
			compare.FormatSD(p.Noise*100), p.NoiseLaunches, max(p.Launches, 3), per)
	case p.Noise > 0:
		return fmt.Sprintf("  A/A noise %s (--noise): the endpoints %d launches each (Student's t), %s", compare.FormatSD(p.Noise*100), max(p.Launches, 3), per)
	}
	return fmt.Sprintf("  A/A noise unknown (it takes %d earlier launches of this configuration whose values differ: flightdeck server repeat): the endpoints %d launches or more each (Mann–Whitney), %s",
		sessions.BisectNoiseMinLaunches, max(p.Launches, 3), per)
}

// bisectLine is one step: "b1 65b09bf #2: measuring 3/10, ETA 12m".
func bisectLine(p event.BisectProgress) string {
	line := p.ID
	if p.Commit != "" {
		line += " " + git.ShortID(p.Commit)
	}
	if p.Launch > 0 {
		line += fmt.Sprintf(" #%d", p.Launch)
	}
	line += ": " + p.Phase
	if p.Phase == sessions.BisectMeasuring && p.Need > 0 {
		line += fmt.Sprintf(" (%d steady samples needed)", p.Need)
	}
	if p.ETA > 0 {
		line += ", ETA " + p.ETA.Round(time.Second).String()
	}
	return sanitize.OneLine(line)
}
