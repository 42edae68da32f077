package sessions

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/repo"
	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote"
)

// LiveConfig says what to observe on a host.
type LiveConfig struct {
	Host       remote.Host
	LogPath    string        // server log to follow; "" follows none
	RepoPath   string        // server checkout whose HEAD to watch; "" watches none
	Interval   time.Duration // GPU sampling interval; default 1 s
	Server     string        // serverlog.ServerSGLang / ServerVLLM when known; "" infers it from the log
	GPUProgram string        // nvidia-smi on the host; default "nvidia-smi"
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
// aggregate tok/s series, and the checkout's HEAD. It returns nil when ctx
// ends, or the first configuration error a probe reports at start.
//
// sink is called from several goroutines; events of one probe arrive in
// order.
func RunLive(ctx context.Context, cfg LiveConfig, sink event.Sink) error {
	if cfg.Host == nil {
		return errors.New("live: no host")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.LogBacklog <= 0 {
		cfg.LogBacklog = DefaultLogBacklog
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
			sink(event.Event{At: at, Data: st})
		}
		return nil
	})
	run(func() error {
		s := &gpu.Sampler{Host: cfg.Host, Interval: cfg.Interval, Program: cfg.GPUProgram}
		return s.Run(ctx, sink)
	})
	if cfg.LogPath != "" {
		lp := &LogPipeline{Server: cfg.Server, Sink: sink}
		run(func() error {
			return serverlog.NewFollower(cfg.Host, cfg.LogPath, lp.Publish, serverlog.FollowOptions{Backlog: cfg.LogBacklog}).Run(ctx)
		})
	}
	if cfg.RepoPath != "" {
		run(func() error {
			w := &repo.Watcher{Host: cfg.Host, Path: cfg.RepoPath}
			return w.Run(ctx, sink)
		})
	}
	wg.Wait()
	return firstErr
}

// LogPipeline turns the follower's raw log events into the parsed stream:
// it passes every event on, and after each batch of lines publishes what the
// serverlog.Scanner finds in them and the aggregate tok/s points
// (serverlog.Rate) of the serverlog.Aggregator. Replaying a journal's raw
// lines through a LogPipeline yields the same parsed events as live. Not
// safe for concurrent use: one follower feeds it.
type LogPipeline struct {
	Server string     // passed to the Scanner; "" infers
	Sink   event.Sink // receives everything
	scan   *serverlog.Scanner
	agg    serverlog.Aggregator
	rates  []serverlog.Rate
	found  []event.Payload
}

// Publish is the event.Sink the follower writes to.
func (p *LogPipeline) Publish(e event.Event) {
	if p.scan == nil {
		p.scan = &serverlog.Scanner{Server: p.Server}
	}
	p.Sink(e)
	switch d := e.Data.(type) {
	case serverlog.Reset:
		// A truncated or replaced log is a new server run: state spanning
		// lines (tracebacks, idle detection) must not leak across it.
		p.scan = &serverlog.Scanner{Server: p.Server}
		p.agg.Reset()
	case serverlog.Lines:
		p.found = p.found[:0]
		for _, l := range d.Lines {
			p.scan.Feed(l.Text, 0, p.collect)
		}
		for _, f := range p.found {
			p.Sink(event.Event{At: e.At, Data: f})
			switch f := f.(type) {
			case serverlog.SpecDecode:
				p.agg.AddSpec(f)
			case serverlog.Throughput:
				p.rates = p.agg.Add(p.rates[:0], f)
				for _, r := range p.rates {
					p.Sink(event.Event{At: e.At, Data: r})
				}
			}
		}
	}
}

func (p *LogPipeline) collect(f event.Payload) { p.found = append(p.found, f) }
