package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// ErrNotYet is returned by a Session's actions before Attach: the host
// is still being set up (the demo builds its simulated host behind the
// cockpit's first frame).
var ErrNotYet = errors.New("the host is still starting")

// Session is one session of flightdeck on a host: a cockpit's (connect,
// demo), a headless command's (server repeat, experiment start) or one CLI
// action's (server kill, git checkout). It owns the event stream, the
// journal and the recorder writing it, the host once attached, the driver
// lock and the journal's mirror on the host, and the parts that act
// (Control, Git, Lab, Bencher, Repeater). Every action of the cockpit's
// keys and of the CLI is one of its methods (session_actions.go), with the
// lock's guard and the journaling built in, so a key and its CLI command
// run the same code.
//
// Its life: Open (the journal: refused before anything is shown), Attach
// (the host: the driver lock, the parts; a cockpit may attach after its
// screen opened, and until then the actions return ErrNotYet), Run (the
// probes, publishing into the stream until ctx ends) with fronts
// subscribed (Subscribe, OnEvent), and Close (the open experiment ended,
// the probes stopped, the stream drained into the journal, the lock
// released, the mirror finished).
type Session struct {
	opts   Options
	stream *Stream
	rec    *recording // nil without a journal

	att atomic.Pointer[attached] // set once by Attach

	// What the defaults read from the stream: the running server's HTTP
	// port (the benchmark's target), its state (the benchmark waits for it
	// to be ready), the GPUs of the last sample (the launch form's {tp}),
	// the connection's last state.
	port     atomic.Int64
	server   ServerWatch
	gpus     atomic.Int64
	lastConn atomic.Pointer[event.ConnState]

	onEvent []func(event.Event)

	inflight sync.WaitGroup // Repeat calls not returned yet (WaitRepeat)

	opened  time.Time      // when Open began: what the own journal held before is earlier sessions'
	bgMu    sync.Mutex     // guards closing and bg.Add
	closing bool           // Close began: RecordSinceLast and LoadHistory start no more
	bg      sync.WaitGroup // RecordSinceLast calls not returned yet

	lv atomic.Pointer[Live] // the probes while Run runs: what the actions publish through

	hist     atomic.Pointer[loadedHistory] // the host's earlier journals, once LoadHistory loaded them
	histOnce sync.Once

	live     chan error // Run's result, once it returned
	runStart sync.Once
	cancel   context.CancelFunc // ends Run
}

// attached is what Attach sets up: the host and the parts acting on it.
type attached struct {
	host    remote.Host
	target  config.Host
	control *Control
	git     *Git // nil without a checkout
	lab     *Lab // nil without a journal
	bench   *Bencher
	repeat  *Repeater
	bisect  *bisecter // nil without a journal
	drv     *driving
}

// Options configure a Session.
type Options struct {
	// Name is the host as the user named it ("gpu-box", "local", "demo"):
	// the journal's directory and default file name.
	Name string
	// Config is flightdeck's configuration (presets, profiles, hosts).
	Config *config.Config
	// Journal says where the session is recorded (none with Off).
	Journal JournalOptions
	// Header is a new journal's header (Host, Label, LogPath, NoLog); Open
	// fills in who records: the version, user, machine, pid and time.
	Header event.SessionHeader
	// Version is flightdeck's version, in the journal's header and its
	// sessions.
	Version string
	// Driver says how the session treats the host's driver lock.
	Driver DriverOptions
	// ErrOut receives what goes wrong after the screen closed (a journal
	// that failed, a lock that could not be released); default os.Stderr.
	ErrOut io.Writer
}

// Open starts a session: it opens the journal (see JournalOptions) and
// starts recording the stream into it. Errors: a *journal.LockedError when
// another cockpit writes the file, a file that is not a journal, the I/O
// error of a directory that cannot be made (see JournalError).
func Open(opts Options) (*Session, error) {
	if opts.ErrOut == nil {
		opts.ErrOut = os.Stderr
	}
	if opts.Config == nil {
		opts.Config = &config.Config{}
	}
	s := &Session{opts: opts, stream: NewStream(), opened: time.Now()}
	rec, err := openRecording(opts)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		s.rec = rec
		rec.start(s.stream)
	}
	return s, nil
}

// JournalPath is the journal's path as it was opened, "" without one.
func (s *Session) JournalPath() string {
	if s.rec == nil {
		return ""
	}
	return s.rec.w.Path()
}

// Journaled reports whether the session is recorded: experiments and notes
// need a journal.
func (s *Session) Journaled() bool { return s.rec != nil }

// Host is the attached host, nil before Attach.
func (s *Session) Host() remote.Host {
	if a := s.att.Load(); a != nil {
		return a.host
	}
	return nil
}

// Target is the attached host's effective settings (zero before Attach).
func (s *Session) Target() config.Host {
	if a := s.att.Load(); a != nil {
		return a.target
	}
	return config.Host{}
}

// Control is the attached host's server control, nil before Attach.
func (s *Session) Control() *Control {
	if a := s.att.Load(); a != nil {
		return a.control
	}
	return nil
}

// Subscribe returns a channel receiving every event published from now on
// (see Stream.Subscribe): a front, such as the screen.
func (s *Session) Subscribe(ctx context.Context, buf int) <-chan event.Event {
	return s.stream.Subscribe(ctx, buf)
}

// OnEvent adds f to what sees every event after it is published and the
// Lab has observed it: a headless front. Call it before Run; f is called
// from the publishers' goroutines and must not block.
func (s *Session) OnEvent(f func(event.Event)) { s.onEvent = append(s.onEvent, f) }

// Publish is the session's sink: it notes what the defaults read (the
// server's port and state, the GPU count, the connection), publishes e to
// the stream, then lets the Lab and the OnEvent functions observe it.
func (s *Session) Publish(e event.Event) {
	switch p := e.Data.(type) {
	case event.ConnState:
		s.lastConn.Store(&p)
	case event.GPUSample:
		s.gpus.Store(int64(p.Count()))
	case event.ServerStatus:
		port := 0
		if p.Phase.Up() {
			port = p.Port
		}
		s.port.Store(int64(port))
		s.server.Observe(p)
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.DriverState, event.HostChanges, event.HostState,
		event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart, event.ExperimentUpdate,
		event.GPUFailure, event.GPUSource, event.GPUStale, event.GitAction, event.GitMoved,
		event.GitStatus, event.JournalStatus, event.Key, event.KillStep, event.LogBench,
		event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset, event.Note,
		event.Prefill, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
		event.ServerFailure, event.ServerHealthy, event.ServerLaunched, event.ServerObserved,
		event.ServerReady, event.Session, event.SpecDecode, event.Throughput, event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// the defaults do not read them
	}
	s.stream.Publish(e)
	if a := s.att.Load(); a != nil && a.lab != nil {
		a.lab.Observe(e)
	}
	for _, f := range s.onEvent {
		f(e)
	}
}

// GPUCount is how many GPUs the last sample had (0 before any), those
// whose handle fails (event.GPUSample.Missing) too: the launch form's
// default {tp}. It never blocks.
func (s *Session) GPUCount() int { return int(s.gpus.Load()) }

// ServerPort is the running server's HTTP port as the stream last said, 0
// when no server is up: the benchmark's target.
func (s *Session) ServerPort() int { return int(s.port.Load()) }

// Run runs the probes against the attached host (a Live with the
// session's Control and, unless cfg.RepoPath asks for the HEAD watcher
// alone, its Git: they publish through the same stream) and, when the
// session drives the host, keeps its driver lock, until ctx ends or Close;
// the lock is released before Run returns. It returns nil when ctx ends,
// or the first configuration error a probe reports at start. Each then
// function runs in a goroutine of its own once the probes are wired: an
// action whose events must pass through them (the demo's first launch).
func (s *Session) Run(ctx context.Context, cfg LiveConfig, then ...func()) error {
	a := s.att.Load()
	if a == nil {
		return ErrNotYet
	}
	cfg.Host, cfg.Control = a.host, a.control
	if cfg.RepoPath == "" {
		cfg.Git = a.git
	}
	lv := NewLive(cfg, s.Publish)
	a.drv.useAgent(lv.agent)            // the lock's heartbeat rides the host's agent when it has one
	defer a.drv.start(ctx, s.Publish)() // the lock is released before the host closes
	s.lv.Store(lv)
	defer s.lv.Store(nil)
	for _, f := range then {
		go f()
	}
	return lv.Run(ctx)
}

// actionSink is where the Control's and the Git's events go: through the
// probes while Run runs (the server tracker sees the launches and kills),
// else straight to Publish (a CLI action).
func (s *Session) actionSink(e event.Event) {
	if lv := s.lv.Load(); lv != nil {
		lv.Sink(e)
		return
	}
	s.Publish(e)
}

// follow makes the probes follow the log at path (a new launch's), while
// Run runs.
func (s *Session) follow(path string) {
	if lv := s.lv.Load(); lv != nil {
		lv.FollowLog(path)
	}
}

// Start runs run (Run after any set-up it needs: the demo builds its host
// first) in a goroutine under the returned context, which ends when ctx
// does, when run fails (Close then returns its error) or at Close.
func (s *Session) Start(ctx context.Context, run func(ctx context.Context) error) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	s.runStart.Do(func() {
		s.cancel = cancel
		s.live = make(chan error, 1)
		go func() {
			err := run(ctx)
			if err != nil {
				cancel() // the front stops, so that the error can be printed
			}
			s.live <- err
		}()
	})
	return ctx
}

// labCloseTimeout bounds how long Close waits for the open experiment's
// end and the fingerprints being captured to reach the journal.
const labCloseTimeout = 10 * time.Second

// Close ends the session once its front has returned frontErr: it ends the
// open experiment (even when ctx ended, e.g. a signal: the experiment's end
// and its result belong in the journal), stops Start's run, closes the
// stream, lets the recorder drain it and closes the journal (reporting a
// journal error on Options.ErrOut), finishes the journal's mirror and
// reports what went wrong with the lock. It returns the run's error, else
// frontErr (context.Canceled is none), else a failed connection's.
func (s *Session) Close(ctx context.Context, frontErr error) error {
	a := s.att.Load()
	if a != nil && a.lab != nil {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), labCloseTimeout)
		a.lab.Close(lctx)
		cancel()
	}
	var runErr error
	if s.cancel != nil {
		s.cancel()
		runErr = <-s.live
	}
	s.waitSince() // its capture ends with the run's context
	s.stream.Close()
	if s.rec != nil {
		if err := s.rec.finish(); err != nil {
			fmt.Fprintf(s.opts.ErrOut, "flightdeck: journal %s: %s\n", s.rec.w.Path(), sanitize.String(err.Error()))
		}
	}
	if a != nil {
		a.drv.finishMirror() // after the journal closed: its last lines reach the host
		a.drv.report(s.opts.ErrOut)
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	if frontErr != nil && !errors.Is(frontErr, context.Canceled) {
		return frontErr
	}
	if st := s.lastConn.Load(); st != nil && st.Conn == event.ConnFailed && st.Err != nil {
		return fmt.Errorf("connection to %s failed: %w", st.Host, st.Err)
	}
	return nil
}

// Abandon closes the journal of a session that does not start (its host
// could not be attached): what the file holds stays, a header and nothing
// else.
func (s *Session) Abandon() {
	s.stream.Close()
	if s.rec != nil {
		_ = s.rec.finish()
	}
	if a := s.att.Load(); a != nil {
		a.drv.finishMirror()
	}
}

// Quiet forgets what went wrong with the lock (and what will, at its
// release): the host is gone, which the caller says once.
func (s *Session) Quiet() {
	if a := s.att.Load(); a != nil {
		a.drv.quiet()
	}
}
