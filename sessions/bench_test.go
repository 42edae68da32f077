package sessions

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// benchHost starts a simulated host with its server running and ready,
// and connects to it over SSH.
func benchHost(t *testing.T) (*sim.Host, remote.Dialer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := sim.Start(ctx, sim.Options{GPUs: 2, Seed: 5, TimeScale: 4, StartupDelay: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if err := h.StartServer(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.StopServer(c)
	})
	if err := h.WaitServerReady(ctx); err != nil {
		t.Fatal(err)
	}
	host, err := remote.DialSSH(ctx, h.Target(), remote.SSHOptions{ConfigFile: os.DevNull,
		IdentityFiles: []string{h.IdentityPath}, KnownHostsFiles: []string{h.KnownHostsPath}, NoAgent: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	return h, host
}

type eventLog struct {
	mu sync.Mutex
	ev []event.Event
	on func(event.Event)
}

func (l *eventLog) sink(e event.Event) {
	l.mu.Lock()
	l.ev = append(l.ev, e)
	on := l.on
	l.mu.Unlock()
	if on != nil {
		on(e)
	}
}

func (l *eventLog) kinds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var k []string
	for _, e := range l.ev {
		if len(k) == 0 || k[len(k)-1] != e.Data.Kind().String() {
			k = append(k, e.Data.Kind().String())
		}
	}
	return k
}

// TestBencherOverSSH: the benchmark reaches the server through the SSH
// connection, numbers its runs, publishes start, progress and result with
// the open experiment, refuses a second run while one goes, and
// remembers the last config.
func TestBencherOverSSH(t *testing.T) {
	h, dialer := benchHost(t)
	var log eventLog
	b := &Bencher{Dialer: dialer, Port: func() int { return h.ServerPort }, Target: "sim",
		Experiment: func() string { return "e3" }, Publish: log.sink}
	if d := b.Defaults(); d != (event.BenchConfig{}).Defaults() {
		t.Errorf("defaults before any run: %+v", d)
	}
	var busy error
	log.on = func(e event.Event) {
		if _, ok := e.Data.(event.BenchStarted); ok && busy == nil {
			_, busy = b.Run(context.Background(), event.BenchConfig{})
		}
	}
	cfg := event.BenchConfig{InputLen: 16, OutputLen: 40, Requests: 3, Concurrency: 3}
	res, err := b.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(busy, ErrBenchBusy) {
		t.Errorf("a second run during the first: %v, want ErrBenchBusy", busy)
	}
	want := "http://127.0.0.1:" + strconv.Itoa(h.ServerPort) + " via sim"
	if res.Completed != 3 || res.Failed != 0 || res.Target != want || res.OutputTokens != 120 {
		t.Fatalf("result %+v", res)
	}
	if k := strings.Join(log.kinds(), " "); k != "bench-start bench-progress bench-done" {
		t.Errorf("events %s", k)
	}
	log.mu.Lock()
	st := log.ev[0].Data.(event.BenchStarted)
	done := log.ev[len(log.ev)-1].Data.(event.BenchDone)
	for _, e := range log.ev[1 : len(log.ev)-1] {
		if p := e.Data.(event.BenchProgress); p.ID != "b1" {
			t.Errorf("progress %+v", p)
		}
	}
	log.ev = nil
	log.mu.Unlock()
	if st.ID != "b1" || st.Exp != "e3" || st.Target != want || st.Config != cfg.Defaults() {
		t.Errorf("started %+v", st)
	}
	if done.ID != "b1" || done.Exp != "e3" || done.Result != res || done.Err != "" {
		t.Errorf("done %+v", done)
	}
	if d := b.Defaults(); d != cfg.Defaults() {
		t.Errorf("defaults after a run %+v, want the run's config", d)
	}

	log.on = nil
	res, err = b.Run(context.Background(), event.BenchConfig{InputLen: 8, OutputLen: 8, Requests: 1, Warmup: -1})
	if err != nil || res.Completed != 1 {
		t.Fatalf("second run: %v %+v", err, res)
	}
	if st := log.ev[0].Data.(event.BenchStarted); st.ID != "b2" {
		t.Errorf("second run is %s, want b2", st.ID)
	}
}

func TestBencherRefuses(t *testing.T) {
	var log eventLog
	var d remote.Dialer = remote.NewLocal()
	for _, tc := range []struct {
		name string
		b    *Bencher
		cfg  event.BenchConfig
		want error
		msg  string
	}{
		{"no port", &Bencher{Dialer: d, Port: func() int { return 0 }, Publish: log.sink}, event.BenchConfig{}, ErrNoServerPort, ""},
		{"nil port func", &Bencher{Dialer: d, Publish: log.sink}, event.BenchConfig{}, ErrNoServerPort, ""},
		{"no dialer", &Bencher{Port: func() int { return 30000 }, Publish: log.sink}, event.BenchConfig{}, ErrNoDialer, ""},
		{"bad config", &Bencher{Dialer: d, Port: func() int { return 30000 }, Publish: log.sink}, event.BenchConfig{Concurrency: -2}, nil, "concurrency -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.b.Run(context.Background(), tc.cfg)
			if tc.want != nil && !errors.Is(err, tc.want) || tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("error %v", err)
			}
		})
	}
	if len(log.ev) != 0 {
		t.Errorf("refused runs published %d events", len(log.ev))
	}
}

// TestBencherWaitsForReady: with the stream's server state, a benchmark
// is refused before anything is sent or published while the server
// launches or loads (saying when it should be ready, from the last
// launch's time to ready), and when none is up; a ready one goes ahead to
// the port.
func TestBencherWaitsForReady(t *testing.T) {
	t0 := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	var w ServerWatch
	if err := w.Check(t0); err != nil {
		t.Errorf("nothing observed: %v (the port check decides)", err)
	}
	w.Observe(event.ServerStatus{Phase: event.PhaseReady, LaunchedAt: t0.Add(-5 * time.Minute), ReadyAfter: 80 * time.Second, Port: 30000})
	if err := w.Check(t0); err != nil {
		t.Errorf("ready: %v", err)
	}
	for _, tc := range []struct {
		st   event.ServerStatus
		want string
		is   error
	}{
		{event.ServerStatus{Phase: event.PhaseLoading, Stage: "loading weights", LaunchedAt: t0.Add(-40 * time.Second), Port: 30000},
			"the server is still loading (ready in about 40s, as its last launch took 1m20s): wait for ready", ErrServerLoading},
		{event.ServerStatus{Phase: event.PhaseLaunching, LaunchedAt: t0.Add(-100 * time.Second)},
			"the server is still loading (1m40s so far; its last launch took 1m20s): wait for ready", ErrServerLoading},
		{event.ServerStatus{Phase: event.PhaseFailed, Class: "oom"}, "no server running (it failed: oom): launch one (L)", server.ErrNoServer},
		{event.ServerStatus{Phase: event.PhaseNone}, "no server running: launch one (L)", server.ErrNoServer},
		{event.ServerStatus{Phase: event.PhaseKilled}, "no server running (it was killed): launch one (L)", server.ErrNoServer},
	} {
		w.Observe(tc.st)
		if err := w.Check(t0); !errors.Is(err, tc.is) || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.st.Phase, err, tc.want)
		}
	}
	// No launch got ready before: the stage and the time so far.
	var fresh ServerWatch
	fresh.Observe(event.ServerStatus{Phase: event.PhaseLoading, Stage: "capturing CUDA graphs\x1b[2J", LaunchedAt: t0.Add(-12 * time.Second)})
	if err := fresh.Check(t0); err == nil || err.Error() != "the server is still loading (capturing CUDA graphs, 12s so far): wait for ready" {
		t.Errorf("first launch loading: %v", err)
	}

	var log eventLog
	b := &Bencher{Dialer: remote.NewLocal(), Port: func() int { return 30000 }, Publish: log.sink, Server: &fresh}
	if _, err := b.Run(context.Background(), event.BenchConfig{}); !errors.Is(err, ErrServerLoading) {
		t.Errorf("run while loading: %v", err)
	}
	if len(log.ev) != 0 {
		t.Errorf("a refused run published %d events", len(log.ev))
	}
}

// TestBencherServerDown: a run that starts but cannot reach the server
// says why in event.BenchDone.
func TestBencherServerDown(t *testing.T) {
	var log eventLog
	var d remote.Dialer = remote.NewLocal()
	b := &Bencher{Dialer: d, Port: func() int { return freePort(t) }, Publish: log.sink}
	_, err := b.Run(context.Background(), event.BenchConfig{})
	if err == nil || !strings.Contains(err.Error(), "benchmark b1: list models:") {
		t.Fatalf("error %v", err)
	}
	if k := strings.Join(log.kinds(), " "); k != "bench-start bench-done" {
		t.Fatalf("events %s", k)
	}
	if done := log.ev[1].Data.(event.BenchDone); done.Err != err.Error() || done.Result != nil {
		t.Errorf("done %+v", done)
	}
}

// freePort returns a port on 127.0.0.1 where nothing listens.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}
