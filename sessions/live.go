package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/probes/repo"
	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/probes/serverlog/follow"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// LiveConfig says what to observe on a host.
type LiveConfig struct {
	Host     remote.Host
	LogPath  string // server log to follow; "" follows none
	RepoPath string // server checkout whose HEAD to watch; "" watches none
	// Git, when set, watches the checkout instead (HEAD, dirty set, moves
	// made outside, the full status for the git panel) and runs the git
	// panel's actions; its Publish is wired to Sink when nil.
	Git        *Git
	Interval   time.Duration // GPU sampling interval; default 1 s
	Server     string        // serverlog.ServerSGLang / ServerVLLM when known; "" infers it from the log
	GPUProgram string        // nvidia-smi on the host; default "nvidia-smi"
	// Control, when set, watches the inference server (adopting a running
	// one), tracks its readiness (event.ServerStatus events) and follows the log
	// of its launch when LogPath is "" (and each new launch's log).
	Control *Control
	// NoGPU runs no GPU sampler (the CLI's launch waits only for the server).
	NoGPU bool
	// GPU says how GPUs are sampled; "" is GPUAuto: NVML in this process
	// when the host is this machine, `flightdeck agent` over SSH, each
	// falling back to the nvidia-smi stream.
	GPU GPUMode
	// GPULocal says the host's GPUs are this machine's even though Host is
	// not a *remote.Local (a wrapped local host); NVML is then sampled in
	// this process.
	GPULocal bool
	// GPUPCIe samples PCIe rx/tx throughput with NVML (about 20 ms per GPU
	// per read, on its own cadence); off by default.
	GPUPCIe bool
	// OpenNVML opens NVML for a local host; default nvml.Open (tests pass
	// a mock library).
	OpenNVML func(nvml.Options) (*nvml.Sampler, error)
	// AgentBinary is the local flightdeck executable uploaded as
	// `flightdeck agent` when the host has no matching one. Empty: no
	// agent (the nvidia-smi stream, saying so). Never a test binary.
	AgentBinary string
	// AgentVersion is this build's version, the agent cache's key on the
	// host.
	AgentVersion string
	// AgentCacheDir is where the agent is kept on the host; default
	// "${XDG_CACHE_HOME:-$HOME/.cache}/flightdeck".
	AgentCacheDir string
	// Now is the clock of the events Live itself publishes; default
	// time.Now.
	Now func() time.Time
	// LogBacklog is how much of an existing log is read at start, in bytes
	// (from the first line that starts in the last LogBacklog bytes);
	// default DefaultLogBacklog. A multi-GB log is not replayed over SSH.
	LogBacklog int64
}

// DefaultLogBacklog is the default LiveConfig.LogBacklog: 2 MiB, about
// 10,000 SGLang lines, as many as the screen keeps.
const DefaultLogBacklog = 2 << 20

// RunLive runs every probe against cfg.Host and publishes what they observe
// to sink until ctx ends: connection states, GPU samples and failures, log
// lines with the throughput, readiness and failures parsed from them, the
// aggregate tok/s series, the checkout's HEAD, and — with cfg.Control —
// the server's status. It returns nil when ctx ends, or the first
// configuration error a probe reports at start. It is NewLive(cfg,
// sink).Run(ctx).
//
// sink is called from several goroutines; events of one probe arrive in
// order.
func RunLive(ctx context.Context, cfg LiveConfig, sink event.Sink) error {
	return NewLive(cfg, sink).Run(ctx)
}

// Live is a running observation of one host (see RunLive). Its Sink is the
// stream every source publishes to, including a Control's actions; with a
// Control it tracks the server (ServerTracker) and publishes event.ServerStatus
// whenever the status changes.
type Live struct {
	cfg     LiveConfig
	out     event.Sink
	mu      sync.Mutex // serialises the tracker
	tracker ServerTracker
	follow  chan followReq
	cur     string // log path followed (guarded by mu)
	health  chan struct{}
	// agent starts the host-side watchers (remote.Agent): the GPU agent's
	// Runner when the GPUs are sampled through it, else one that has none.
	agent remote.Agent
}

// NewLive prepares a Live; call Run. When cfg.Control is set, its Publish
// and Follow are wired to this Live (Publish to Sink, Follow to FollowLog)
// unless already set.
func NewLive(cfg LiveConfig, sink event.Sink) *Live {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.LogBacklog <= 0 {
		cfg.LogBacklog = DefaultLogBacklog
	}
	l := &Live{cfg: cfg, out: sink, follow: make(chan followReq, 1), cur: cfg.LogPath, health: make(chan struct{}, 1)}
	l.agent = l.newAgent()
	if c := cfg.Control; c != nil {
		if c.Publish == nil {
			c.Publish = l.Sink
		}
		if c.Follow == nil {
			c.Follow = l.FollowLog
		}
	}
	if g := cfg.Git; g != nil && g.Publish == nil {
		g.Publish = l.Sink
	}
	if g := cfg.Git; g != nil && g.Agent == nil {
		g.Agent = l.agent // HEAD and the dirty set read on the watch stream's signals
	}
	return l
}

// Sink publishes e to the stream (and to the server tracker).
func (l *Live) Sink(e event.Event) {
	if l.cfg.Control == nil {
		l.out(e)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out(e)
	if st, changed := l.tracker.Apply(e); changed {
		l.out(event.Event{At: e.At, Data: st})
		if l.tracker.NeedsHealth() {
			select {
			case l.health <- struct{}{}:
			default:
			}
		}
	}
}

// followReq asks followLogs to switch files.
type followReq struct {
	path      string
	fromStart bool // a new launch's log: read it all; else the last LogBacklog bytes
}

// FollowLog switches the followed server log to path (a new launch's log),
// read from its start. A path already followed is left alone.
func (l *Live) FollowLog(path string) { l.switchLog(followReq{path: path, fromStart: true}) }

func (l *Live) switchLog(r followReq) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.path == "" || r.path == l.cur {
		return
	}
	l.cur = r.path
	select {
	case <-l.follow:
	default:
	}
	l.follow <- r
}

// Run runs the probes until ctx ends.
func (l *Live) Run(ctx context.Context) error {
	cfg := l.cfg
	if cfg.Host == nil {
		return errors.New("live: no host")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && ctx.Err() == nil {
				errOnce.Do(func() { firstErr = err; cancel() })
			}
		}()
	}

	run(func() error {
		for st := range cfg.Host.Watch(ctx) {
			at := st.Since
			if at.IsZero() {
				at = time.Now()
			}
			l.Sink(event.Event{At: at, Data: st})
		}
		return nil
	})
	if !cfg.NoGPU {
		run(func() error { return l.runGPU(ctx) })
	}
	if cfg.LogPath != "" || cfg.Control != nil {
		run(func() error { return l.followLogs(ctx) })
	}
	if cfg.Git != nil {
		run(func() error { return cfg.Git.Run(ctx) })
	} else if cfg.RepoPath != "" {
		run(func() error {
			w := &repo.Watcher{Host: cfg.Host, Path: cfg.RepoPath, Agent: l.agent}
			return w.Run(ctx, l.Sink)
		})
	}
	if cfg.Control != nil {
		run(func() error { l.monitor(ctx); return nil })
	}
	wg.Wait()
	return firstErr
}

// followLogs follows the current log, switching when FollowLog names a new
// one. The first log is read from its last LogBacklog bytes; a switched-to
// log (a new launch's) from its start.
func (l *Live) followLogs(ctx context.Context) error {
	l.mu.Lock()
	path := l.cur
	l.mu.Unlock()
	backlog := l.cfg.LogBacklog
	switched := false // a file was followed before this one
	for {
		if path == "" {
			select {
			case <-ctx.Done():
				return nil
			case r := <-l.follow:
				path, backlog = r.path, l.cfg.LogBacklog
				if r.fromStart {
					backlog = 0
				}
			}
			continue
		}
		fctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		lp := &LogPipeline{Server: l.cfg.Server, Sink: l.Sink}
		if switched {
			// Another launch's file: the screen's log starts over.
			lp.Publish(event.Event{At: time.Now(), Data: event.LogReset{Path: path, Reason: "switched", Offset: 0}})
		}
		switched = true
		// The agent follows on the host with no process at steady state (on
		// this machine StreamFile, in-process); without it, tail with lazy
		// checks (at most 2 a minute).
		_, local := l.cfg.Host.(*remote.Local)
		opt := follow.Options{Backlog: backlog, Agent: l.agent, Check: follow.CheckLazy, InProcess: local}
		go func() { done <- follow.New(l.cfg.Host, path, lp.Publish, opt).Run(fctx) }()
		select {
		case <-ctx.Done():
			stop()
			<-done
			return nil
		case err := <-done:
			stop()
			if err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		case r := <-l.follow:
			stop()
			<-done
			path, backlog = r.path, l.cfg.LogBacklog
			if r.fromStart {
				backlog = 0
			}
		}
	}
}

// LogPipeline turns the follower's raw log events into the parsed stream:
// it passes every event on, and after each batch of lines publishes what the
// serverlog.Scanner finds in them and the aggregate tok/s points
// (event.TokRate) of the serverlog.Aggregator. Replaying a journal's raw
// lines through a LogPipeline yields the same parsed events as live. Not
// safe for concurrent use: one follower feeds it.
type LogPipeline struct {
	Server string     // passed to the Scanner; "" infers
	Sink   event.Sink // receives everything
	scan   *serverlog.Scanner
	agg    serverlog.Aggregator
	rates  []event.TokRate
	found  []event.Payload
}

// Publish is the event.Sink the follower writes to.
func (p *LogPipeline) Publish(e event.Event) {
	if p.scan == nil {
		p.scan = &serverlog.Scanner{Server: p.Server}
	}
	p.Sink(e)
	switch d := e.Data.(type) {
	case event.LogReset:
		// A truncated or replaced log is a new server run: state spanning
		// lines (tracebacks, idle detection) must not leak across it.
		p.scan = &serverlog.Scanner{Server: p.Server}
		p.agg.Reset()
	case event.LogLines:
		p.found = p.found[:0]
		for _, l := range d.Lines {
			p.scan.Feed(l.Text, 0, p.collect)
		}
		for _, f := range p.found {
			p.Sink(event.Event{At: e.At, Data: f})
			switch f := f.(type) {
			case event.SpecDecode:
				p.agg.AddSpec(f)
			case event.Throughput:
				p.rates = p.agg.Add(p.rates[:0], f)
				for _, r := range p.rates {
					p.Sink(event.Event{At: e.At, Data: r})
				}
			case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
				event.ConnState, event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint,
				event.ExperimentStart, event.ExperimentUpdate, event.GPUFailure, event.GPUSample,
				event.GPUSource, event.GPUStale, event.GitAction, event.GitMoved, event.GitStatus,
				event.JournalStatus, event.Key, event.KillStep, event.LogBench, event.LogFollowError,
				event.LogLines, event.LogNotice, event.LogReset, event.Note, event.Prefill,
				event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
				event.ServerFailure, event.ServerHealthy, event.ServerLaunched, event.ServerObserved,
				event.ServerReady, event.ServerStatus, event.Session, event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
				// passed on as they are
			}
		}
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState,
		event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale,
		event.GitAction, event.GitMoved, event.GitStatus, event.JournalStatus, event.Key,
		event.KillStep, event.LogBench, event.LogFollowError, event.LogNotice, event.Note,
		event.Prefill, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
		event.ServerFailure, event.ServerHealthy, event.ServerLaunched, event.ServerObserved,
		event.ServerReady, event.ServerStatus, event.Session, event.SpecDecode, event.Throughput,
		event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// passed on as they are
	}
}

func (p *LogPipeline) collect(f event.Payload) { p.found = append(p.found, f) }

// monitor looks for the server (Find) when the host's watch stream says
// what Find reads changed (watchServer: the agent's, else the shell
// watcher's; while neither runs, every 3 s), or every few seconds (every
// second while it starts) until the stream is set up; publishes
// event.ServerObserved, follows the log of the server it finds when none
// was given, and checks HTTP health when the tracker wants it (after the
// ready line, or for an adopted server), every second then.
func (l *Live) monitor(ctx context.Context) {
	c := l.cfg.Control
	d := c.dialer()
	var lastKey, lastRecord string
	var wake <-chan struct{} // the watch stream's signals; nil until it runs
	find := true
	for {
		if wake == nil {
			wake = l.watchServer(ctx)
		}
		if find {
			fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			f, err := c.Find(fctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				// Only changes go on the stream: a quiet server is not news.
				if key := observedKey(f); key != lastKey {
					lastKey = key
					l.Sink(event.Event{At: time.Now(), Data: event.ServerObserved{Found: f}})
				}
				// Without --log, the screen follows the log of the server the
				// pidfile names: the one found at start, and any launched later
				// from elsewhere (a teammate's pane, the CLI). Our own launches
				// have switched already (FollowLog).
				if r := f.Record; r != nil && l.cfg.LogPath == "" {
					rk := fmt.Sprintf("%d %d", r.PID, r.StartTime)
					if rk != lastRecord {
						// The first server found: its recent lines. A later
						// launch: its log from the start.
						l.switchLog(followReq{path: r.Launch.LogPath, fromStart: lastRecord != ""})
						lastRecord = rk
					}
				}
			}
		}
		l.mu.Lock()
		need, starting, port := l.tracker.NeedsHealth(), l.tracker.Starting(), l.tracker.Status().Port
		l.mu.Unlock()
		if port == 0 {
			port = c.DefaultPort()
		}
		if need && d != nil && port > 0 {
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			path, herr := server.Health(hctx, d, port)
			cancel()
			if herr == nil {
				l.Sink(event.Event{At: time.Now(), Data: event.ServerHealthy{Port: port, Path: path}})
			}
		}
		// With the stream, Find waits for its signal and the timer is only
		// the health check's (over direct-tcpip: nothing spawned).
		var timer <-chan time.Time
		stop := func() bool { return false }
		if wake == nil || need {
			wait := 3 * time.Second
			if starting || need {
				wait = time.Second
			}
			t := time.NewTimer(wait)
			stop = t.Stop
			timer = t.C
		}
		find = wake == nil
		select {
		case <-ctx.Done():
		case <-timer:
		case <-wake:
			find = true
		case <-l.health:
		}
		stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// observedKey summarises what of a Found the tracker reacts to.
func observedKey(f event.ServerFound) string {
	k := fmt.Sprintf("%t %d %s %d", f.Running, f.ServerPID, f.How, f.Exit)
	if f.Record != nil {
		k += fmt.Sprintf(" %d %d", f.Record.PID, f.Record.StartTime)
	}
	return k
}
