package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui"
)

// connectFlags are the options of `flightdeck connect`.
type connectFlags struct {
	ssh       sshFlags
	log       string
	repo      string
	interval  time.Duration
	nvidiaSMI string
	gpu       gpuFlags
	server    string
	color     colorFlags
	journal   journalFlags
	lock      lockFlags
}

// sshFlags are the SSH options of every command that reaches a host.
type sshFlags struct {
	acceptNew  bool
	sshConfig  string
	identities []string
	knownHosts []string
	user       string
	port       int
}

// addSSHFlags registers f's flags; the SSH port is -p/--port for connect
// (like ssh -p) and --ssh-port where --port is the server's HTTP port.
func addSSHFlags(fl *pflag.FlagSet, f *sshFlags, serverPort bool) {
	fl.BoolVar(&f.acceptNew, "accept-new-host-key", false, "record the key of a host not yet in known_hosts (never a changed key)")
	fl.StringVarP(&f.sshConfig, "ssh-config", "F", "", "ssh config file to read instead of ~/.ssh/config")
	fl.StringArrayVarP(&f.identities, "identity", "i", nil, "identity file (repeatable; replaces IdentityFile from the config)")
	fl.StringArrayVar(&f.knownHosts, "known-hosts", nil, "known_hosts file (repeatable; replaces the configured ones)")
	fl.StringVarP(&f.user, "user", "l", "", "user to log in as, unless the target names one")
	if serverPort {
		fl.IntVar(&f.port, "ssh-port", 0, "SSH port, unless the target names one")
	} else {
		fl.IntVarP(&f.port, "port", "p", 0, "SSH port, unless the target names one")
	}
}

func newConnectCmd() *cobra.Command {
	var f connectFlags
	cmd := &cobra.Command{
		Use:   "connect HOST",
		Short: "Open the cockpit on a GPU host over SSH (or \"local\" on this machine)",
		Long: `connect opens the cockpit on HOST: an SSH target (user@host[:port]) or an alias
from ~/.ssh/config (HostName, User, Port, IdentityFile and ProxyJump are
honoured; ssh-agent and identity files authenticate; known_hosts is checked
strictly), or "local" to watch this machine without SSH (e.g. inside tmux on
the GPU host).

An unknown host key is refused with its SHA256 fingerprint: check it, then
pass --accept-new-host-key to record it (like StrictHostKeyChecking=
accept-new). A changed host key is always refused.

HOST may also name a [hosts.NAME] table of the configuration (flightdeck
config init): its target, log directory, repository and launch defaults.
Without --log the cockpit follows the log of the server flightdeck last
launched on the host (its pidfile), and each new launch's log.

Keys K (kill) and L (launch/relaunch with a preset and env profile) drive
the server; quitting the cockpit never stops it.

The session is recorded in a journal (every launch an experiment with its
fingerprint and tok/s; e and n for experiments and notes), by default a new
file under $XDG_STATE_HOME/flightdeck/journals/<host>/; its path is printed
at exit. See flightdeck journal --help and flightdeck replay --help.`,
		Example: `  flightdeck connect gpu-box --log /data/logs/sglang.log
  flightdeck connect root@10.1.230.174:22 --log /data/logs/sglang.log --repo /root/sglang
  flightdeck connect local --log ./server.log --interval 500ms
  flightdeck connect gpu-box --name eagle-bisect`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New(`connect needs one HOST: user@host[:port], an alias from ~/.ssh/config, or "local"`)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConnect(cmd.Context(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.log, "log", "", "server log file on the host to follow")
	fl.StringVar(&f.repo, "repo", "", "the server's git checkout on the host: HEAD in the header, the git panel (g)")
	fl.DurationVar(&f.interval, "interval", time.Second, "GPU sampling interval")
	addSSHFlags(fl, &f.ssh, false)
	fl.StringVar(&f.nvidiaSMI, "nvidia-smi", "nvidia-smi", "nvidia-smi command on the host")
	f.gpu.add(fl)
	fl.StringVar(&f.server, "server", "", `server writing the log: "sglang" or "vllm" (default: inferred)`)
	addColorFlags(fl, &f.color)
	addJournalFlags(fl, &f.journal)
	addLockFlags(fl, &f.lock)
	return cmd
}

func runConnect(ctx context.Context, target string, f connectFlags) error {
	if f.interval < 10*time.Millisecond {
		return fmt.Errorf("--interval %v is too short (at least 10ms)", f.interval)
	}
	if err := f.gpu.check(); err != nil {
		return err
	}
	switch f.server {
	case "", "sglang", "vllm":
	default:
		return fmt.Errorf(`--server %q: want "sglang" or "vllm"`, f.server)
	}
	if err := f.journal.check(); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	// HOST may name a [hosts.NAME] table of the config: its SSH target,
	// log directory, repository and launch defaults.
	hc := cfg.Host(target)
	if f.repo == "" {
		f.repo = hc.Repo
	}
	host, err := openHost(ctx, hc.Target, f.ssh)
	if err != nil {
		return err
	}
	defer host.Close()
	// After the dial, so that host-key and authentication errors come first.
	if err := needTerminal(); err != nil {
		return err
	}
	ctl := &sessions.Control{Host: host, Config: cfg, Target: hc, GPUProgram: f.nvidiaSMI, GPUCount: gpusSeen.count}
	var gc tui.GitControl
	var g *sessions.Git
	if f.repo != "" {
		g = &sessions.Git{Host: host, Path: f.repo}
		gc = g
	}
	lc := sessions.LiveConfig{
		Host:       host,
		LogPath:    f.log,
		Git:        g,
		Interval:   f.interval,
		Server:     f.server,
		GPUProgram: f.nvidiaSMI,
		Control:    ctl,
	}
	if err := f.gpu.apply(&lc); err != nil {
		return err
	}
	// The journal is opened last before the screen: a refused one (another
	// cockpit writes it) is said plainly, and a failed dial leaves no file.
	rec, err := newRecording(f.journal, target, event.SessionHeader{Host: host.Name(), LogPath: f.log, NoLog: f.log == ""})
	if err != nil {
		return err
	}
	// One cockpit drives the host: the lock sits next to the server's
	// pidfile. A second cockpit opens read-only and says who drives.
	_, onHost := host.(*remote.Local)
	drv, err := takeLock(ctx, host, hc.LogDir, rec.path(), onHost, f.lock)
	if err != nil {
		rec.abandon()
		return err
	}
	ctl.Guard, ctl.Fence = drv.guard, drv.fence
	if g != nil {
		g.Guard = drv.guard
	}
	// The benchmark reaches the server's port through the host (an SSH
	// channel, or this machine for local); it runs with or without a
	// journal (without, its result is tied to no experiment).
	bn := &lazyBench{}
	dialer, _ := host.(remote.Dialer)
	err = runCockpit(ctx, tui.Options{Host: host.Name(), LogPath: f.log, NoLog: f.log == "", Color: f.color.Mode(), Control: ctl, Git: gc, Bench: bn,
		Driver: drv}, rec,
		func(ctx context.Context, sink event.Sink) error {
			defer drv.start(ctx, sink)() // the lock is released before the host closes
			b := &sessions.Bencher{Dialer: dialer, Port: serverSeen.port, Server: &benchServer, Target: host.Name(), Experiment: rec.currentExp(), Publish: sink}
			bn.set(b)
			rec.setLab(&sessions.Lab{Host: host, RepoPath: f.repo, Config: cfg, Preset: hc.Preset}, ctl, b, sink)
			return sessions.RunLive(ctx, lc, sink)
		})
	drv.finishMirror() // after the journal closed: its last lines reach the host
	drv.report(os.Stderr)
	if g != nil {
		// A git action the screen was quit under finishes before the
		// connection closes (it would be cut off in the middle).
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		g.Idle(wctx, func() { fmt.Fprintln(os.Stderr, "flightdeck: waiting for the git action in flight to finish ...") })
	}
	return err
}

// openHost returns the local host for "local", else dials target over SSH.
// The first dial happens before the screen opens so that host-key and
// authentication errors are printed plainly; later drops reconnect inside
// the cockpit.
func openHost(ctx context.Context, target string, f sshFlags) (remote.Host, error) {
	if target == "local" {
		return remote.NewLocal(), nil
	}
	opts := remote.SSHOptions{
		ConfigFile:       f.sshConfig,
		IdentityFiles:    f.identities,
		KnownHostsFiles:  f.knownHosts,
		AcceptNewHostKey: f.acceptNew,
		User:             f.user,
		Port:             f.port,
	}
	if term.IsTerminal(os.Stdin.Fd()) {
		opts.Passphrase = promptPassphrase
	}
	fmt.Fprintf(os.Stderr, "flightdeck: connecting to %s ...\n", target)
	h, err := remote.DialSSH(ctx, target, opts)
	if err != nil {
		// The remote errors say what to do next (--accept-new-host-key,
		// ssh-add) themselves.
		return nil, fmt.Errorf("connect %s: %w", target, err)
	}
	return h, nil
}

// needTerminal reports early, in plain words, that the cockpit cannot
// run without a terminal (bubbletea would fail opening /dev/tty).
func needTerminal() error {
	if !term.IsTerminal(os.Stdout.Fd()) {
		return errors.New("the cockpit needs a terminal: run it in a terminal or tmux (for scripts, see flightdeck parse)")
	}
	if !term.IsTerminal(os.Stdin.Fd()) {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			return fmt.Errorf("the cockpit needs a terminal for keys: %w", err)
		}
		tty.Close()
	}
	return nil
}

// screenOpen is set while the cockpit owns the terminal: a passphrase
// asked for then (a reconnect needing a key not asked for before) cannot be
// typed, so it is refused with a way out instead.
var screenOpen atomic.Bool

func promptPassphrase(file string) ([]byte, error) {
	if screenOpen.Load() {
		return nil, fmt.Errorf("key %s needs a passphrase while the cockpit is open: add it to ssh-agent (ssh-add %s)", file, file)
	}
	fmt.Fprintf(os.Stderr, "Enter passphrase for key %s: ", file)
	defer fmt.Fprintln(os.Stderr)
	return term.ReadPassword(os.Stdin.Fd())
}

// runCockpit runs the screen and, beside it, live: the function that
// publishes the host's events to the stream (sessions.RunLive, after any
// set-up it needs). The screen opens at once; it closes when the user quits,
// when ctx ends, or when live fails, whose error is then returned. Quitting
// stops the probes, never the inference server.
//
// With a journal (rec.w), a recorder writes every event of the same stream
// to it, the Lab (rec.lab, set by live once the host is up) observes every
// event after it is published and drives the e and n keys, and quitting
// first ends the open experiment (lab.Close: trigger quit, fingerprints in
// flight finished), then stops the probes, then lets the recorder drain the
// stream and closes the journal, so that the exp-end is in the file (see
// liveSession). The journal's path is printed on stderr at the end.
func runCockpit(ctx context.Context, opts tui.Options, rec recording, live func(ctx context.Context, sink event.Sink) error) error {
	s, ctx := startSession(ctx, rec, os.Stderr)
	defer s.cancel()
	// The screen's subscription ends with the screen, so that events
	// published while the journal is finished never wait for it.
	uiCtx, uiCancel := context.WithCancel(ctx)
	defer uiCancel()
	events := s.stream.Subscribe(uiCtx, 4096)
	if rec.lab != nil {
		opts.Experiments = rec.lab
		opts.Measure = rec.lab
		opts.Repeat = rec.rep // nil with --no-journal: R says it needs a journal
	}
	s.startLive(ctx, live)

	screenOpen.Store(true)
	uiErr := tui.Run(ctx, tui.New(opts), events)
	screenOpen.Store(false)
	uiCancel()
	if rec.rep != nil && !rec.rep.wait(100*time.Millisecond) {
		// The screen ended (a signal, or q pressed again) while a repeat
		// was relaunching: let that launch finish, or the server stays
		// killed. Its kill waits for GPU memory (2 min at most).
		fmt.Fprintln(os.Stderr, "flightdeck: waiting for the repeat's relaunch in flight to finish (at most 3 min) ...")
		if !rec.rep.wait(3 * time.Minute) {
			fmt.Fprintln(os.Stderr, "flightdeck: the relaunch did not finish in 3 min: check the server (flightdeck server status)")
		}
	}
	err := s.finish(ctx, uiErr)
	if rec.w != nil {
		fmt.Fprintf(os.Stderr, "journal: %s (replay: flightdeck replay %s)\n", rec.w.Path(), shellQuote(rec.w.Path()))
	}
	return err
}

// liveSession is what runs below the cockpit's screen, and below the
// headless commands that act as the cockpit does (server repeat): one
// stream that live (the probes) and the actions publish to; with a journal
// (rec.w) a recorder writing every event of it, and the Lab (rec.lab)
// observing every event after it is published. Use: startSession, set
// onEvent, subscribe a front (the screen) to stream, startLive, run the
// front, then finish.
type liveSession struct {
	stream *sessions.Stream
	rec    recording
	errw   io.Writer // where a journal error is reported
	// onEvent, when set before startLive, sees every event after the Lab
	// has observed it (a headless front watching the stream); it is
	// called from the publishers' goroutines.
	onEvent   func(event.Event)
	cancel    context.CancelFunc // ends the session's context: the front and live
	recCancel context.CancelFunc
	recDone   chan error
	liveDone  chan error
	lastConn  atomic.Pointer[event.ConnState]
}

// startSession creates the session's stream and, with a journal, starts
// its recorder (which reads until the stream closes, after the front and
// the probes have stopped). The returned context ends with ctx, when live
// fails, or at finish.
func startSession(ctx context.Context, rec recording, errw io.Writer) (*liveSession, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	s := &liveSession{stream: sessions.NewStream(), rec: rec, errw: errw, cancel: cancel, recCancel: func() {}}
	if rec.w != nil {
		recCtx, recCancel := context.WithCancel(context.WithoutCancel(ctx))
		recEvents := s.stream.Subscribe(recCtx, 4096)
		s.recCancel = recCancel
		s.recDone = make(chan error, 1)
		go func() { s.recDone <- runRecorder(recCtx, rec.w, s.stream.Publish, recEvents) }()
	}
	return s, ctx
}

// publish is the session's sink: it notes what the cockpit's defaults
// read (the server's port and state, the GPU count, the connection),
// publishes e to the stream, then lets the Lab and onEvent observe it.
func (s *liveSession) publish(e event.Event) {
	switch p := e.Data.(type) {
	case event.ConnState:
		// A failed connection is shown in a few words; the full reason
		// (fingerprints, the known_hosts line) is returned at the end.
		s.lastConn.Store(&p)
	case event.GPUSample:
		gpusSeen.n.Store(int64(len(p.GPUs)))
	case event.ServerStatus:
		serverSeen.observe(p)
		benchServer.Observe(p)
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.DriverState,
		event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSource, event.GPUStale, event.GitAction,
		event.GitMoved, event.GitStatus, event.JournalStatus, event.Key, event.KillStep,
		event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset,
		event.Note, event.Prefill, event.Repeat, event.RepeatProgress, event.RepoHead,
		event.RepoUnreadable, event.ServerFailure, event.ServerHealthy, event.ServerLaunched,
		event.ServerObserved, event.ServerReady, event.Session, event.SpecDecode, event.Throughput,
		event.TokRate, event.Xid:
		// the cockpit's defaults do not read them
	}
	s.stream.Publish(e)
	if s.rec.lab != nil {
		s.rec.lab.Observe(e)
	}
	if s.onEvent != nil {
		s.onEvent(e)
	}
}

// startLive runs live with the session's sink; its failure ends ctx (the
// front then stops, and finish returns the error).
func (s *liveSession) startLive(ctx context.Context, live func(ctx context.Context, sink event.Sink) error) {
	s.liveDone = make(chan error, 1)
	go func() {
		err := live(ctx, s.publish)
		if err != nil {
			s.cancel() // stop the front so the error can be printed
		}
		s.liveDone <- err
	}()
}

// finish ends the session once its front has returned frontErr: it ends
// the open experiment (even when ctx ended, e.g. a signal: the
// experiment's end and its result belong in the journal), stops live,
// closes the stream, lets the recorder drain it and closes the journal
// (reporting a journal error on errw). It returns live's error, else
// frontErr (context.Canceled is none), else a failed connection's.
func (s *liveSession) finish(ctx context.Context, frontErr error) error {
	if s.rec.lab != nil {
		lctx, lcancel := context.WithTimeout(context.WithoutCancel(ctx), labCloseTimeout)
		s.rec.lab.Close(lctx)
		lcancel()
	}
	s.cancel()
	var liveErr error
	if s.liveDone != nil {
		liveErr = <-s.liveDone
	}
	s.stream.Close()
	if s.recDone != nil {
		recErr := <-s.recDone
		if err := s.rec.w.Close(); err != nil && recErr == nil {
			recErr = err
		}
		if recErr != nil {
			fmt.Fprintf(s.errw, "flightdeck: journal %s: %s\n", s.rec.w.Path(), sanitize.String(recErr.Error()))
		}
	}
	s.recCancel()
	if liveErr != nil && !errors.Is(liveErr, context.Canceled) {
		return liveErr
	}
	if frontErr != nil && !errors.Is(frontErr, context.Canceled) {
		return frontErr
	}
	if st := s.lastConn.Load(); st != nil && st.Conn == event.ConnFailed && st.Err != nil {
		return fmt.Errorf("connection to %s failed: %w", st.Host, st.Err)
	}
	return nil
}

// serverSeen is the running server's port as the stream last said: the
// benchmark's target.
var serverSeen serverPort

// benchServer is the server's state as the stream last said: the
// benchmark waits for it to be ready.
var benchServer sessions.ServerWatch

// gpusSeen is how many GPUs the last sample had: the launch form's default
// {tp} (every GPU of the host), read from Update, so never blocking.
var gpusSeen gpuCounter

type gpuCounter struct{ n atomic.Int64 }

func (g *gpuCounter) count() int { return int(g.n.Load()) }
