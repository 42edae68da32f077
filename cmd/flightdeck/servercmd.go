package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Exit statuses of the server commands, for scripts.
const (
	exitNoServer = 3   // status/kill: no server running
	exitTimeout  = 124 // launch: not ready in --timeout (like timeout(1))
)

// serverFlags are the options shared by the server subcommands.
type serverFlags struct {
	ssh        sshFlags
	nvidiaSMI  string
	logDir     string
	yes        bool
	grace      time.Duration
	gpuTimeout time.Duration
	force      bool
}

func (f *serverFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	addSSHFlags(fl, &f.ssh, true)
	fl.StringVar(&f.nvidiaSMI, "nvidia-smi", "nvidia-smi", "nvidia-smi command on the host")
	fl.StringVar(&f.logDir, "log-dir", "", "directory on the host for per-launch logs and the pidfile (default: the host's log_dir in the config, else ~/.flightdeck/logs)")
}

func (f *serverFlags) addKill(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	fl.DurationVar(&f.grace, "grace", server.DefaultGrace, "time between SIGTERM and SIGKILL")
	fl.DurationVar(&f.gpuTimeout, "gpu-timeout", 2*time.Minute, "how long to wait for the GPU memory to be freed")
	fl.BoolVar(&f.force, "force", false, "act even while a cockpit drives the host (its driver lock is held)")
}

// serverHost is a host the server commands reach: the configuration, the
// host's effective settings and the connection.
type serverHost struct {
	cfg    *config.Config
	target config.Host
	host   remote.Host
}

// dial loads the config and connects to alias.
func (f *serverFlags) dial(ctx context.Context, alias string) (*serverHost, error) {
	if f.grace < 0 || f.gpuTimeout < 0 {
		return nil, errors.New("--grace and --gpu-timeout must not be negative")
	}
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	target := cfg.Host(alias)
	if f.logDir != "" {
		target.LogDir = f.logDir
	}
	host, err := openHost(ctx, target.Target, f.ssh)
	if err != nil {
		return nil, err
	}
	return &serverHost{cfg: cfg, target: target, host: host}, nil
}

// attach is what a session of these commands acts on: the host with the
// flags' nvidia-smi, grace and GPU timeout, and as the default {tp} every
// GPU of the host, as nvidia-smi counts them (asked once, when needed).
func (f *serverFlags) attach(ctx context.Context, h *serverHost) sessions.AttachOptions {
	var gpus int
	var once sync.Once
	count := func() int {
		once.Do(func() {
			qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if g, err := gpu.QueryGPUMemory(qctx, h.host, f.nvidiaSMI); err == nil {
				gpus = len(g)
			}
		})
		return gpus
	}
	return sessions.AttachOptions{Host: h.host, Target: h.target, GPUProgram: f.nvidiaSMI, Grace: f.grace, GPUTimeout: f.gpuTimeout, GPUCount: count}
}

// openSession connects to alias and attaches a session for one action of
// the CLI: no journal, and it acts only while no cockpit drives the host
// (its driver lock, next to the pidfile, is held and fresh: a kill or
// launch from here would pull the server from under its user), unless
// --force. The returned function closes it.
func (f *serverFlags) openSession(ctx context.Context, alias string) (*sessions.Session, func(), error) {
	h, err := f.dial(ctx, alias)
	if err != nil {
		return nil, nil, err
	}
	s, err := sessions.Open(sessions.Options{Name: alias, Config: h.cfg, Journal: sessions.JournalOptions{Off: true},
		Driver: sessions.DriverOptions{Mode: sessions.DriverCheck, Force: f.force}})
	if err == nil {
		err = s.Attach(ctx, f.attach(ctx, h))
	}
	if err != nil {
		h.host.Close()
		return nil, nil, err
	}
	return s, func() {
		s.Close(context.WithoutCancel(ctx), nil)
		h.host.Close()
	}, nil
}

// openFound is openSession plus a first look for the server.
func (f *serverFlags) openFound(ctx context.Context, alias string) (*sessions.Session, event.ServerFound, func(), error) {
	s, done, err := f.openSession(ctx, alias)
	if err != nil {
		return nil, event.ServerFound{}, nil, err
	}
	found, err := s.Control().Find(ctx)
	if err != nil {
		done()
		return nil, found, nil, err
	}
	return s, found, done, nil
}

func newServerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		RunE:  runGroup,
		Short: "Launch, kill, inspect the inference server on a host (what the cockpit's K and L keys do)",
		Long: `server drives the inference server on HOST (an SSH target, an alias from
~/.ssh/config or the flightdeck config, or "local"): launches are detached
(setsid, a per-launch log, a pidfile) so they survive the SSH connection;
kills take the whole process tree and wait for the GPU memory.

Exit statuses: 0 success; 1 failure; 3 no server running (status, kill);
124 launch not ready within --timeout.`,
	}
	cmd.AddCommand(newServerStatusCmd(), newServerLaunchCmd(), newServerKillCmd(), newServerLogsCmd())
	cmd.AddCommand(newServerRepeatCmd())
	return cmd
}

// statusJSON is `server status --json`.
type statusJSON struct {
	Running    bool              `json:"running"`
	How        string            `json:"found_by,omitempty"`
	PID        int               `json:"pid,omitempty"`
	Healthy    bool              `json:"healthy"`
	Health     string            `json:"health_endpoint,omitempty"`
	Preset     string            `json:"preset,omitempty"`
	Profile    string            `json:"profile,omitempty"`
	Server     string            `json:"server,omitempty"`
	Port       int               `json:"port,omitempty"`
	Log        string            `json:"log,omitempty"`
	Argv       []string          `json:"argv,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	LaunchedAt *time.Time        `json:"launched_at,omitempty"`
	Exit       *int              `json:"exit_status,omitempty"`
	Processes  []event.Process   `json:"processes,omitempty"`
	// Candidates: several processes claim the port; none was adopted.
	Candidates []event.Process `json:"candidates,omitempty"`
	// Driver is the cockpit holding the host's driver lock, when one does.
	Driver *event.DriverInfo `json:"driver,omitempty"`
}

func newServerStatusCmd() *cobra.Command {
	var f serverFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status HOST",
		Short: "Show the server on HOST: found how, pid, health, launch (exit 3 when none runs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ss, found, done, err := f.openFound(ctx, args[0])
			if err != nil {
				return err
			}
			defer done()
			c := ss.Control()
			st := statusJSON{Running: found.Running, How: found.How, PID: found.ServerPID, Processes: found.Tree}
			port := 0
			if r := found.Record; r != nil {
				l := r.Launch
				st.Preset, st.Profile, st.Server, st.Port, st.Log, st.Argv, st.Env = l.Preset, l.Profile, l.Server, l.Port, l.LogPath, l.Argv, l.Env
				at := l.At
				st.LaunchedAt = &at
				port = l.Port
				if found.Exit >= 0 {
					code := found.Exit
					st.Exit = &code
				}
			}
			if found.Running && found.How != server.ByPidfile {
				// Adopted: the pidfile, if any, is an older launch's.
				st.Preset, st.Profile, st.Server, st.Log, st.Argv, st.Env, st.LaunchedAt, st.Exit = "", "", "", "", nil, nil, nil, nil
				port = c.DefaultPort()
				if p := found.Port; p > 0 {
					port = p
				}
				st.Port = port
			}
			if !found.Running && len(found.Others) > 0 {
				st.Port, st.Candidates = c.DefaultPort(), found.Others
			}
			if found.Running && port > 0 {
				if d, ok := c.Host.(remote.Dialer); ok {
					hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					st.Health, err = server.Health(hctx, d, port)
					cancel()
					st.Healthy = err == nil
				}
			}
			if info, held, err := driver.Read(ctx, c.Host, c.Target.LogDir); err == nil && held {
				st.Driver = &info
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(st); err != nil {
					return err
				}
			} else {
				printStatus(out, st, found)
			}
			if !found.Running {
				return exitCode(exitNoServer)
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printStatus(w io.Writer, st statusJSON, f event.ServerFound) {
	s := sanitize.String
	switch {
	case st.Running:
		fmt.Fprintf(w, "running: %s pid %d (found by %s)", s(orDash(st.Server)), st.PID, st.How)
		if st.Healthy {
			fmt.Fprintf(w, ", healthy (%s)", st.Health)
		} else {
			fmt.Fprint(w, ", not answering HTTP health checks")
		}
		fmt.Fprintln(w)
	case st.Exit != nil:
		fmt.Fprintf(w, "not running: the last launch exited with status %d\n", *st.Exit)
	case len(f.Others) > 0:
		fmt.Fprintf(w, "not adopted: %d processes listen on or claim port %d (pids%s); stop the wrong ones by hand\n", len(f.Others), st.Port, pidList(f.Others))
	default:
		fmt.Fprintln(w, "not running")
	}
	if f.PidfileErr != nil {
		fmt.Fprintln(w, "pidfile unreadable:", s(f.PidfileErr.Error()))
	}
	if st.LaunchedAt != nil {
		fmt.Fprintf(w, "launch:  %s, preset %s, profile %s, port %d\n", st.LaunchedAt.Format(time.DateTime), s(orDash(st.Preset)), s(orDash(st.Profile)), st.Port)
		if len(st.Env) > 0 {
			fmt.Fprintln(w, "env:    ", s(server.EnvLine(st.Env)))
		}
		fmt.Fprintln(w, "command:", s(server.CommandLine(event.LaunchInfo{Argv: st.Argv})))
		fmt.Fprintln(w, "log:    ", s(st.Log))
	}
	for _, p := range st.Processes {
		fmt.Fprintf(w, "  pid %d ppid %d pgid %d sid %d %s %s\n", p.PID, p.PPID, p.PGID, p.SID, p.State, s(p.Comm))
	}
	if d := st.Driver; d != nil {
		fmt.Fprintf(w, "driver:  %s pid %d, since %s, last heartbeat %s (host clock)\n", s(d.Who()), d.PID,
			d.Since.Local().Format(time.DateTime), d.Heartbeat.Local().Format(time.TimeOnly))
	}
}

// foundHow says how a server was found, for confirmations: whose it is
// matters before killing it.
func foundHow(f event.ServerFound) string {
	switch f.How {
	case server.ByPidfile:
		return "launched by flightdeck"
	case server.ByPort:
		return fmt.Sprintf("listening on port %d, not launched by flightdeck", f.Port)
	case server.ByProcess:
		return fmt.Sprintf("command line with --port %d, not launched by flightdeck", f.Port)
	}
	return f.How
}

func pidList(ps []event.Process) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, " %d", p.PID)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// confirm asks a yes/no question on the terminal; without a terminal it
// refuses, naming the flag that skips it.
func confirm(ctx context.Context, question string) error {
	if !term.IsTerminal(os.Stdin.Fd()) {
		return fmt.Errorf("%s — no terminal to confirm on: pass --yes", question)
	}
	fmt.Fprintf(os.Stderr, "%s [y/N] ", question)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done(): // Ctrl-C: no need to press Enter too
		fmt.Fprintln(os.Stderr)
		return ctx.Err()
	case line := <-answer:
		if !strings.HasSuffix(line, "\n") {
			fmt.Fprintln(os.Stderr) // end of input (Ctrl-D): end the prompt's line
		}
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return errors.New("not confirmed")
		}
	}
	return nil
}

func newServerKillCmd() *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "kill HOST",
		Short: "Kill the server's whole process tree and wait for its GPU memory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ss, found, done, err := f.openFound(ctx, args[0])
			if err != nil {
				return err
			}
			defer done()
			c := ss.Control()
			if err := ss.MayAct(ctx); err != nil {
				return err
			}
			if !found.Running && len(found.Others) > 0 {
				return fmt.Errorf("%d processes on %s serve or claim port %d (pids%s): not guessing which to kill", len(found.Others), c.Host.Name(), c.DefaultPort(), pidList(found.Others))
			}
			if !found.Running {
				fmt.Fprintln(cmd.ErrOrStderr(), "no server running on", c.Host.Name())
				return exitCode(exitNoServer)
			}
			if !f.yes {
				if err := confirm(ctx, fmt.Sprintf("Kill pid %d on %s (%s; SIGTERM, SIGKILL after %v)?", found.ServerPID, c.Host.Name(), foundHow(found), f.grace)); err != nil {
					return err
				}
			}
			ss.OnEvent(printKillSteps(cmd.ErrOrStderr()))
			if err := ss.Kill(ctx); err != nil {
				if errors.Is(err, server.ErrNoServer) {
					return exitCode(exitNoServer)
				}
				return err
			}
			return nil
		},
	}
	f.add(cmd)
	f.addKill(cmd)
	return cmd
}

func printKillSteps(w io.Writer) event.Sink {
	return func(e event.Event) {
		if k, ok := e.Data.(event.KillStep); ok {
			switch {
			case k.Err != nil:
				fmt.Fprintf(w, "kill: %s: %s\n", k.Step, sanitize.String(k.Err.Error()))
			case k.Detail != "":
				fmt.Fprintf(w, "kill: %s: %s\n", k.Step, sanitize.String(k.Detail))
			default:
				fmt.Fprintf(w, "kill: %s\n", k.Step)
			}
		}
	}
}

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
	fl.StringVar(&req.Preset, "preset", "", "launch preset (default: the host's, else sglang)")
	fl.StringVar(&req.Profile, "profile", "", "env profile (default: the host's, else none)")
	fl.StringVar(&req.Model, "model", "", "{model} of the preset (default: the host's)")
	fl.StringVar(&req.Draft, "draft-model", "", "{draft_model}: the EAGLE draft model of the sglang-eagle3 preset (default: the host's)")
	fl.IntVar(&req.TP, "tp", 0, "{tp}: tensor-parallel size (default: the host's, else every GPU nvidia-smi lists)")
	fl.IntVar(&req.Port, "port", 0, "{port}: the server's HTTP port (default: the host's, else 30000 for SGLang, 8000 for vLLM)")
	fl.StringVar(&req.Extra, "extra", "", "extra flags appended to the command, quoted like a shell command line")
	fl.BoolVar(&noWait, "no-wait", false, "return once the server process runs, without waiting for ready")
	fl.DurationVar(&timeout, "timeout", 30*time.Minute, "how long to wait for ready")
	return cmd
}

func runServerLaunch(ctx context.Context, cmd *cobra.Command, ss *sessions.Session, f serverFlags, req sessions.LaunchRequest, noWait bool, timeout time.Duration) error {
	c := ss.Control()
	errw := cmd.ErrOrStderr()
	if timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration", timeout)
	}
	def := c.Defaults()
	if req.Preset == "" {
		req.Preset = def.Preset
	}
	if req.Profile == "" {
		req.Profile = def.Profile
	}
	if req.Model == "" {
		req.Model = def.Model
	}
	if req.Draft == "" {
		req.Draft = def.Draft
	}
	if req.TP == 0 {
		req.TP = def.TP
	}
	if req.Port == 0 {
		req.Port = def.Port
	}
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
			event.ConnState, event.DriverState, event.ExperimentEnd, event.ExperimentFingerprint,
			event.ExperimentStart, event.ExperimentUpdate, event.GPUFailure, event.GPUSample,
			event.GPUSource, event.GPUStale, event.GitAction, event.GitMoved, event.GitStatus,
			event.JournalStatus, event.Key, event.KillStep, event.LogBench, event.LogFollowError,
			event.LogLines, event.LogNotice, event.LogReset, event.Note, event.Prefill, event.Repeat,
			event.RepeatProgress, event.RepoHead, event.RepoUnreadable, event.ServerHealthy,
			event.ServerLaunched, event.ServerObserved, event.ServerReady, event.Session,
			event.SpecDecode, event.Throughput, event.TokRate, event.Xid:
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

func newServerLogsCmd() *cobra.Command {
	var f serverFlags
	var follow bool
	var lines int
	cmd := &cobra.Command{
		Use:   "logs HOST",
		Short: "Print the current server's log (from its pidfile), sanitised; -f follows it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if lines < 0 {
				return fmt.Errorf("-n %d: want 0 or more lines", lines)
			}
			ss, found, done, err := f.openFound(ctx, args[0])
			if err != nil {
				return err
			}
			defer done()
			c := ss.Control()
			if found.Record == nil {
				return fmt.Errorf("no launch recorded on %s (no pidfile in %s): flightdeck only knows the logs of servers it launched", c.Host.Name(), c.Target.LogDir)
			}
			path := found.Record.Launch.LogPath
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			tailCmd, err := remote.Command("tail", "-n", strconv.Itoa(lines), "--", path)
			if err != nil {
				return err
			}
			if !follow {
				res, err := c.Host.Run(ctx, tailCmd, nil)
				if err != nil {
					return fmt.Errorf("read %s: %w", path, err)
				}
				for _, l := range strings.SplitAfter(string(res.Stdout), "\n") {
					if l != "" {
						out.WriteString(sanitize.String(strings.TrimSuffix(l, "\n")) + "\n")
					}
				}
				return nil
			}
			// The same following as the cockpit's: from the pidfile's log,
			// on to the next launch's when the server is relaunched.
			var mu sync.Mutex
			sink := func(e event.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch p := e.Data.(type) {
				case event.LogLines:
					for _, l := range p.Lines {
						out.WriteString(sanitize.Line(l.Text) + "\n")
					}
				case event.LogReset:
					fmt.Fprintf(out, "--- %s: %s ---\n", p.Reason, sanitize.String(p.Path))
				case nil,
					event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
					event.ConnState, event.DriverState, event.ExperimentEnd,
					event.ExperimentFingerprint, event.ExperimentStart, event.ExperimentUpdate,
					event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale,
					event.GitAction, event.GitMoved, event.GitStatus, event.JournalStatus, event.Key,
					event.KillStep, event.LogBench, event.LogFollowError, event.LogNotice,
					event.Note, event.Prefill, event.Repeat, event.RepeatProgress, event.RepoHead,
					event.RepoUnreadable, event.ServerFailure, event.ServerHealthy,
					event.ServerLaunched, event.ServerObserved, event.ServerReady,
					event.ServerStatus, event.Session, event.SpecDecode, event.Throughput,
					event.TokRate, event.Xid:
					return
				}
				out.Flush()
			}
			live := sessions.NewLive(sessions.LiveConfig{Host: c.Host, Control: c, NoGPU: true,
				LogPath: "", LogBacklog: max(int64(lines)*200, 1)}, sink)
			err = live.Run(ctx)
			if errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return nil
			}
			return err
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
	cmd.Flags().IntVarP(&lines, "lines", "n", 50, "lines of the end of the log to print")
	return cmd
}
