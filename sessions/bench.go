package sessions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/bench"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Bencher errors.
var (
	// ErrBenchBusy is returned by Bencher.Run while another run is going.
	ErrBenchBusy = errors.New("a benchmark is already running: stop it first")
	// ErrNoServerPort is returned by Bencher.Run when no server port is
	// known (no server launched or found).
	ErrNoServerPort = errors.New("no inference server to benchmark: launch one (L) or start flightdeck where one runs")
	// ErrNoDialer is returned by Bencher.Run without a way to reach the
	// host's ports.
	ErrNoDialer = errors.New("cannot reach the server's port on this host (no port-forward)")
	// ErrServerLoading is wrapped by Bencher.Run's error while the server
	// is launching or loading: "the server is still loading (ready in
	// about 40s, as its last launch took 1m20s): wait for ready".
	ErrServerLoading = errors.New("the server is still loading")
)

// Bencher runs the serving benchmark behind the cockpit's b and
// `flightdeck bench HOST`: bench.Run against the server's
// OpenAI-compatible API on the host's loopback, reached through Dialer
// (an SSH direct-tcpip channel: a port-forward with no local listener).
// It numbers runs b1, b2, … and publishes event.BenchStarted, event.BenchProgress
// (at most 4 a second) and event.BenchDone on Publish. Its methods are safe for
// concurrent use; one run goes at a time.
type Bencher struct {
	// Dialer opens connections from the host's side ("127.0.0.1:PORT" is
	// the GPU host's loopback); nil makes Run fail with ErrNoDialer.
	Dialer remote.Dialer
	// Port returns the running server's HTTP port, 0 when none (Run then
	// fails with ErrNoServerPort). Called once per run.
	Port func() int
	// Target names the host in Result.Target ("… via gpu-box"); "" for
	// none.
	Target string
	// Experiment returns the open experiment's id, "" when none; it is
	// recorded in Started and Done. Nil: none.
	Experiment func() string
	// Publish receives the run's events; nil publishes nothing.
	Publish event.Sink
	// Server, when set, is the server's state as the stream says: Run
	// refuses, before sending anything, while it is launching or loading
	// (ErrServerLoading) or when none is up (server.ErrNoServer). Nil,
	// or before any status was observed: only Port is checked.
	Server *ServerWatch

	mu      sync.Mutex
	last    *event.BenchConfig
	runs    int
	running bool
}

// Defaults returns the config of the last run started (its defaults
// filled in), else event.BenchConfig{}.Defaults(). It does no I/O.
func (b *Bencher) Defaults() event.BenchConfig {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last != nil {
		return *b.last
	}
	return event.BenchConfig{}.Defaults()
}

func (b *Bencher) publish(p event.Payload) {
	if b.Publish != nil {
		b.Publish(event.Event{At: time.Now(), Data: p})
	}
}

// Run benchmarks the server with cfg (zero fields take the defaults) and
// returns its result; a cancelled ctx stops it and returns the partial
// result (Result.Cancelled). Before anything is published it fails with
// ErrBenchBusy, a config error (event.BenchConfig.Validate), ErrNoDialer, an
// error wrapping ErrServerLoading or server.ErrNoServer (with Server), or
// ErrNoServerPort; after event.BenchStarted, an error (the model cannot be
// listed, a warm-up request failed) is also published in event.BenchDone.
func (b *Bencher) Run(ctx context.Context, cfg event.BenchConfig) (*event.BenchResult, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if b.Dialer == nil {
		return nil, ErrNoDialer
	}
	if b.Server != nil {
		if err := b.Server.Check(time.Now()); err != nil {
			return nil, err
		}
	}
	port := 0
	if b.Port != nil {
		port = b.Port()
	}
	if port <= 0 || port > 65535 {
		return nil, ErrNoServerPort
	}
	b.mu.Lock()
	if b.running {
		b.mu.Unlock()
		return nil, ErrBenchBusy
	}
	b.running = true
	b.runs++
	id := "b" + strconv.Itoa(b.runs)
	last := cfg
	b.last = &last
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.running = false
		b.mu.Unlock()
	}()

	exp := ""
	if b.Experiment != nil {
		exp = b.Experiment()
	}
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	target := url
	if b.Target != "" {
		target += " via " + b.Target
	}
	b.publish(event.BenchStarted{ID: id, Exp: exp, Target: target, Config: cfg})
	tr := bench.NewTransport(b.Dialer.DialContext, cfg.Concurrency)
	defer tr.CloseIdleConnections()
	res, err := bench.Run(ctx, &http.Client{Transport: tr}, url, cfg, func(p event.BenchProgress) {
		p.ID = id
		b.publish(p)
	})
	if err != nil {
		err = fmt.Errorf("benchmark %s: %w", id, err)
		b.publish(event.BenchDone{ID: id, Exp: exp, Err: err.Error()})
		return nil, err
	}
	res.Target = target
	b.publish(event.BenchDone{ID: id, Exp: exp, Result: res})
	return res, nil
}

// ServerWatch follows the server's status for a Bencher: the cockpit
// feeds it every event.ServerStatus of the stream (Observe), and Bencher.Run
// asks it whether the server can be benchmarked (Check). It also
// remembers how long the last launch took to get ready, to say when a
// loading one should be. Its methods are safe for concurrent use; the
// zero value is ready to use and has seen nothing.
type ServerWatch struct {
	mu        sync.Mutex
	st        event.ServerStatus
	seen      bool
	lastReady time.Duration // ReadyAfter of the last launch that got ready; 0 when none
}

// Observe records st, the server's latest status.
func (w *ServerWatch) Observe(st event.ServerStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.st, w.seen = st, true
	if st.ReadyAfter > 0 {
		w.lastReady = st.ReadyAfter
	}
}

// Check says whether the server can be benchmarked now: nil when it is
// ready or running, or when no status was observed yet (nothing is
// known: the port check decides); an error wrapping ErrServerLoading
// while it launches or loads ("… (ready in about 40s, as its last launch
// took 1m20s): wait for ready", or the stage and time so far when no
// launch got ready before); one wrapping server.ErrNoServer otherwise
// ("no server running (it failed: oom): launch one (L)").
func (w *ServerWatch) Check(now time.Time) error {
	w.mu.Lock()
	st, seen, last := w.st, w.seen, w.lastReady
	w.mu.Unlock()
	if !seen {
		return nil
	}
	switch st.Phase {
	case event.PhaseReady, event.PhaseRunning:
		return nil
	case event.PhaseLaunching, event.PhaseLoading:
		return fmt.Errorf("%w (%s): wait for ready", ErrServerLoading, loadingWords(st, last, now))
	}
	why := ""
	switch st.Phase {
	case event.PhaseFailed:
		why = " (it failed"
		if st.Class != "" {
			why += ": " + st.Class
		}
		why += ")"
	case event.PhaseExited:
		why = " (it exited)"
	case event.PhaseStopping:
		why = " (it is being killed)"
	case event.PhaseKilled:
		why = " (it was killed)"
	}
	return fmt.Errorf("%w%s: launch one (L)", server.ErrNoServer, why)
}

// loadingWords says how far a loading server is: "ready in about 40s, as
// its last launch took 1m20s", else its stage and the time so far.
func loadingWords(st event.ServerStatus, last time.Duration, now time.Time) string {
	since := st.LaunchedAt
	if since.IsZero() {
		since = st.Since
	}
	var so time.Duration
	if !since.IsZero() && now.After(since) {
		so = now.Sub(since).Round(time.Second)
	}
	if last > 0 && !st.LaunchedAt.IsZero() {
		last = last.Round(time.Second)
		if left := last - so; left > 0 {
			return fmt.Sprintf("ready in about %v, as its last launch took %v", left, last)
		}
		return fmt.Sprintf("%v so far; its last launch took %v", so, last)
	}
	words := string(st.Phase)
	if st.Stage != "" {
		words = sanitize.String(st.Stage)
	}
	if so > 0 {
		words += fmt.Sprintf(", %v so far", so)
	}
	return words
}
