package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/gpu/agent"
	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// fakeSampler stands in for NVML: Run publishes events, then (with block)
// waits for its context.
type fakeSampler struct {
	events  []event.Event
	block   bool
	forever bool // publish a sample every millisecond until ctx ends
	opts    nvml.Options
	runs    atomic.Int32
	closed  atomic.Bool
	ranOut  chan struct{}
	// simulated: the fake stands for the simulated host's fake NVML.
	simulated bool
}

func (f *fakeSampler) Info() nvml.Info {
	return nvml.Info{Driver: "550.54.15", NVML: "12.550.54.15", CUDA: 12040, GPUs: 2}
}

func (f *fakeSampler) Sample() (event.GPUSample, error) { return agentTestSample(7), nil }

func (f *fakeSampler) Run(ctx context.Context, sink event.Sink) error {
	f.runs.Add(1)
	defer func() {
		if f.ranOut != nil {
			close(f.ranOut)
		}
	}()
	for _, e := range f.events {
		sink(e)
	}
	for f.forever && ctx.Err() == nil {
		sink(event.Event{At: time.Now(), Data: agentTestSample(1)})
		time.Sleep(time.Millisecond)
	}
	if f.block {
		<-ctx.Done()
	}
	return nil
}

func (f *fakeSampler) Close() error { f.closed.Store(true); return nil }

func agentTestSample(sec int64) event.GPUSample {
	at := time.Unix(1764400000+sec, 0)
	g := event.GPU{Index: 0, Name: event.Text{S: "NVIDIA H200"}, TempC: event.Reading{Value: 61},
		FanPct: event.Reading{Status: event.CellNA, Raw: "[N/A]"}}
	return event.GPUSample{At: at, GPUs: []event.GPU{g, {Index: 1, Lost: true}}, Apps: []event.ComputeApp{}}
}

// useFakeNVML makes openNVML return f (or err) for the test.
func useFakeNVML(t *testing.T, f *fakeSampler, err error) {
	t.Helper()
	old := openNVML
	t.Cleanup(func() { openNVML = old })
	openNVML = func(o nvml.Options) (agentSampler, bool, error) {
		if err != nil {
			return nil, false, err
		}
		f.opts = o
		return f, f.simulated, nil
	}
}

func readAll(t *testing.T, out string) []agent.Message {
	t.Helper()
	r := agent.NewReader(strings.NewReader(out))
	var ms []agent.Message
	for {
		m, err := r.Next()
		if err == io.EOF {
			return ms
		}
		if err != nil {
			t.Fatalf("agent output: %v\n%s", err, out)
		}
		ms = append(ms, m)
	}
}

func TestAgentStreamsHelloThenEvents(t *testing.T) {
	at := time.Unix(1764400001, 0)
	f := &fakeSampler{events: []event.Event{
		{At: at, Data: agentTestSample(1)},
		{At: at, Data: event.GPUSource{Mode: event.SourceNVML}}, // not carried
		{At: at, Data: event.Xid{Index: 1, Code: 79}},
		{At: at, Data: agentTestSample(2)},
	}}
	useFakeNVML(t, f, nil)
	out, stderr, err := runCLI(t, nil, "agent", "--interval", "250ms", "--pcie", "--no-apps")
	if err != nil {
		t.Fatalf("agent: %v (stderr %q)", err, stderr)
	}
	if f.opts.Interval != 250*time.Millisecond || !f.opts.PCIe || !f.opts.NoApps {
		t.Errorf("NVML opened with %+v", f.opts)
	}
	var ms []agent.Message
	for _, m := range readAll(t, out) {
		if m.Kind != agent.KindAlive { // a heartbeat, if this machine is slow
			ms = append(ms, m)
		}
	}
	kinds := make([]agent.Kind, len(ms))
	for i, m := range ms {
		kinds[i] = m.Kind
	}
	want := []agent.Kind{agent.KindHello, agent.KindSample, agent.KindXid, agent.KindSample}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %v, want %v\n%s", kinds, want, out)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kinds %v, want %v", kinds, want)
		}
	}
	h := ms[0].Hello
	if h.V != agent.ProtocolVersion || h.Driver != "550.54.15" || h.NVML != "12.550.54.15" || h.CUDA != 12040 ||
		h.GPUs != 2 || h.Interval != 250*time.Millisecond || h.Version != versionString() || h.Simulated {
		t.Errorf("hello %+v", h)
	}
	s := ms[1].Payload.(event.GPUSample)
	if !s.At.Equal(at) || len(s.GPUs) != 2 || s.GPUs[0].TempC.Value != 61 || s.GPUs[0].FanPct.Status != event.CellNA ||
		!s.GPUs[1].Lost || s.Apps == nil {
		t.Errorf("sample %+v", s)
	}
	if !f.closed.Load() {
		t.Error("the sampler was not closed")
	}
}

func TestAgentOnce(t *testing.T) {
	f := &fakeSampler{}
	useFakeNVML(t, f, nil)
	out, _, err := runCLI(t, nil, "agent", "--once")
	if err != nil {
		t.Fatal(err)
	}
	ms := readAll(t, out)
	if len(ms) != 2 || ms[0].Kind != agent.KindHello || ms[1].Kind != agent.KindSample {
		t.Fatalf("output %q", out)
	}
	if f.runs.Load() != 0 {
		t.Error("--once ran the sampling loop")
	}
	if !ms[1].At.Equal(time.Unix(1764400007, 0)) {
		t.Errorf("sample at %v", ms[1].At)
	}
}

func TestAgentUnavailable(t *testing.T) {
	useFakeNVML(t, nil, &nvml.UnavailableError{Reason: "NVML init failed: ERROR_LIBRARY_NOT_FOUND", Code: 12})
	out, stderr, err := runCLI(t, nil, "agent")
	var ec exitCode
	if !errors.As(err, &ec) || ec != agent.ExitUnavailable {
		t.Fatalf("error %v, want exit status 3", err)
	}
	want := `{"t":"unavailable","v":1,"reason":"NVML init failed: ERROR_LIBRARY_NOT_FOUND","code":12}` + "\n"
	if out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if !strings.Contains(stderr, "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("stderr %q does not say why", stderr)
	}

	// Another error still says why, with code 0.
	useFakeNVML(t, nil, errors.New("boom"))
	out, _, _ = runCLI(t, nil, "agent", "--once")
	if ms := readAll(t, out); len(ms) != 1 || ms[0].Unavailable.Reason != "boom" || ms[0].Unavailable.Code != 0 {
		t.Errorf("output %q", out)
	}
}

// Built without cgo, the real agent reports why at once.
func TestAgentNoCgoBuild(t *testing.T) {
	if nvml.Compiled() {
		t.Skip("this build has NVML")
	}
	t.Setenv("FLIGHTDECK_SIM_NVML", "")
	out, _, err := runCLI(t, nil, "agent")
	var ec exitCode
	if !errors.As(err, &ec) || ec != agent.ExitUnavailable {
		t.Fatalf("error %v, want exit status 3", err)
	}
	ms := readAll(t, out)
	if len(ms) != 1 || ms[0].Kind != agent.KindUnavailable || ms[0].Unavailable.Reason == "" {
		t.Fatalf("output %q", out)
	}
}

// failWriter accepts n writes, then fails like a closed pipe.
type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, errors.New("write |1: broken pipe")
	}
	w.n--
	return len(p), nil
}

func TestAgentStopsWhenStdoutBreaks(t *testing.T) {
	f := &fakeSampler{forever: true, ranOut: make(chan struct{})}
	useFakeNVML(t, f, nil)
	err := runAgent(context.Background(), nil, &failWriter{n: 3}, io.Discard, agentFlags{interval: time.Second})
	if err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("error %v, want the broken pipe", err)
	}
	<-f.ranOut // Run returned: the agent does not linger
	if !f.closed.Load() {
		t.Error("the sampler was not closed")
	}
}

// While NVML is blocked (Run publishes nothing), the agent still writes:
// alive lines from a goroutine that does not call NVML.
func TestAgentHeartbeatWhileBlocked(t *testing.T) {
	f := &fakeSampler{block: true}
	useFakeNVML(t, f, nil)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runAgent(ctx, nil, pw, io.Discard, agentFlags{interval: 20 * time.Millisecond})
		pw.Close()
	}()
	r := agent.NewReader(pr)
	if m, err := r.Next(); err != nil || m.Kind != agent.KindHello {
		t.Fatalf("first line %+v, %v; want the hello", m, err)
	}
	var prev time.Time
	for i := range 3 {
		m, err := r.Next()
		if err != nil || m.Kind != agent.KindAlive || m.At.IsZero() || !m.At.After(prev) {
			t.Fatalf("line %d: %+v, %v; want an alive line later than %v", i+2, m, err, prev)
		}
		prev = m.At
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil {
		t.Fatalf("runAgent: %v", err)
	}
}

// Its session closed while NVML is blocked, the agent's next heartbeat
// fails and it ends, instead of living on until the driver answers.
func TestAgentStopsWhenStdoutBreaksWhileBlocked(t *testing.T) {
	f := &fakeSampler{block: true, ranOut: make(chan struct{})}
	useFakeNVML(t, f, nil)
	err := runAgent(context.Background(), nil, &failWriter{n: 1}, io.Discard, agentFlags{interval: 20 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("error %v, want the broken pipe", err)
	}
	<-f.ranOut
	if !f.closed.Load() {
		t.Error("the sampler was not closed")
	}
}

// On the simulated host (sim.EnvNVML) the hello says the NVML is fake.
func TestAgentHelloSimulated(t *testing.T) {
	useFakeNVML(t, &fakeSampler{simulated: true}, nil)
	out, _, err := runCLI(t, nil, "agent", "--once")
	if err != nil {
		t.Fatal(err)
	}
	if ms := readAll(t, out); len(ms) != 2 || !ms[0].Hello.Simulated || !strings.Contains(out, `"simulated":true`) {
		t.Errorf("output %q, want a simulated hello", out)
	}
}

func TestAgentStopsAtStdinEOF(t *testing.T) {
	f := &fakeSampler{block: true}
	useFakeNVML(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := runAgent(ctx, strings.NewReader(""), io.Discard, io.Discard, agentFlags{interval: time.Second, watchStdin: true})
	if err != nil {
		t.Fatalf("runAgent: %v", err)
	}
}

func TestAgentStopsWithContext(t *testing.T) {
	f := &fakeSampler{block: true}
	useFakeNVML(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// Without --watch-stdin an empty stdin does not stop it (remote
	// Host.Start gives commands a closed stdin).
	go func() {
		done <- runAgent(ctx, strings.NewReader(""), io.Discard, io.Discard, agentFlags{interval: time.Second})
	}()
	for f.runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("agent ended before its context: %v", err)
	default:
	}
	cancel() // what SIGTERM/SIGHUP do in main
	if err := <-done; err != nil {
		t.Fatalf("runAgent: %v", err)
	}
}

func TestAgentFlags(t *testing.T) {
	useFakeNVML(t, &fakeSampler{}, nil)
	if _, _, err := runCLI(t, nil, "agent", "--interval", "1ms"); err == nil || !strings.Contains(err.Error(), "at least 10ms") {
		t.Errorf("--interval 1ms: %v", err)
	}
	if _, _, err := runCLI(t, nil, "agent", "extra"); err == nil {
		t.Error("agent accepted an argument")
	}
	out, _, err := runCLI(t, nil, "--help")
	if err != nil || !strings.Contains(out, "agent") {
		t.Errorf("help does not list agent: %v\n%s", err, out)
	}
}

// TestAgentRunnerEndToEnd uploads this very command as the agent to a
// local "host" and runs it: on a machine without an NVIDIA driver (or in a
// build without cgo) the Runner falls back saying why (no
// libnvidia-ml.so.1: before any upload; NVML init failed: the agent's
// report); on a GPU machine it streams samples.
func TestAgentRunnerEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := flightdeckBinary(t)
	t.Setenv("FLIGHTDECK_SIM_NVML", "")
	cache := t.TempDir()
	host := remote.NewLocal()
	defer host.Close()
	events := make(chan event.Event, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	r := &agent.Runner{Host: host, Binary: bin, Version: "e2e", CacheDir: cache, Interval: 200 * time.Millisecond,
		Fallback: &gpu.Sampler{Program: "flightdeck-test-no-such-nvidia-smi"}}
	go func() { done <- r.Run(ctx, func(e event.Event) { events <- e }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Runner.Run: %v", err)
		}
	}()
	var src event.GPUSource
	deadline := time.After(30 * time.Second)
	for src.Mode == "" {
		select {
		case e := <-events:
			if s, ok := e.Data.(event.GPUSource); ok {
				src = s
			}
		case <-deadline:
			t.Fatal("no gpu.Source within 30 s")
		}
	}
	switch {
	case !nvml.Compiled():
		if src.Mode != event.SourceNvidiaSMI || src.Fallback != "this build has no cgo" {
			t.Errorf("source %+v", src)
		}
	case src.Mode == event.SourceAgent:
		if !strings.HasPrefix(src.Detail, "agent "+versionString()) || !strings.HasSuffix(src.Detail, "(uploaded)") {
			t.Errorf("source %+v", src)
		}
	case src.Fallback == "no NVIDIA driver on the host (libnvidia-ml.so.1 not found)":
		// No libnvidia-ml.so.1 on this machine: the install check says so
		// and nothing is uploaded.
		if _, err := os.Stat(filepath.Join(cache, "agent")); err == nil {
			t.Error("an agent was uploaded to a host without a driver")
		}
	default:
		if src.Mode != event.SourceNvidiaSMI || !strings.HasPrefix(src.Fallback, "NVML unavailable on the host: ") {
			t.Errorf("source %+v", src)
		}
		if _, err := os.Stat(filepath.Join(cache, "agent", "e2e", "flightdeck")); err != nil {
			t.Errorf("the agent was not uploaded: %v", err)
		}
	}
	t.Logf("source: %+v", src)
}

// failingRun is a sampler whose Run fails at once.
type failingRun struct{ fakeSampler }

func (f *failingRun) Run(context.Context, event.Sink) error {
	return errors.New("nvml: Run: already running")
}

// TestAgentRunErrorIsReturned: a Run that fails by itself (not asked to
// stop) makes the agent exit with its error, which the cockpit shows as the
// reason it fell back.
func TestAgentRunErrorIsReturned(t *testing.T) {
	old := openNVML
	t.Cleanup(func() { openNVML = old })
	openNVML = func(nvml.Options) (agentSampler, bool, error) { return &failingRun{}, false, nil }
	var out, errb bytes.Buffer
	err := runAgent(context.Background(), strings.NewReader(""), &out, &errb, agentFlags{interval: time.Second})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("runAgent: %v, want Run's error", err)
	}
}
