package gpu

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// fakeHost is a scripted remote.Host: Run answers the --help-query-gpu
// probe, Start hands each started stream to the test through starts.
type fakeHost struct {
	mu       sync.Mutex
	help     remote.Result
	helpErr  error
	helpNext []fakeHelp // answers for the next probes, then help/helpErr
	probes   int
	cmds     []string
	starts   chan *fakeProc
}

type fakeHelp struct {
	res remote.Result
	err error
}

func newFakeHost(t *testing.T) *fakeHost {
	capture, err := os.ReadFile("testdata/nvidia-smi/captures/linux-x86_64__nvidia-h200__590.48.01.txt")
	if err != nil {
		t.Fatal(err)
	}
	return &fakeHost{
		help:   remote.Result{Stdout: captureSection(t, capture, "capabilities :: help-query-gpu")},
		starts: make(chan *fakeProc, 16),
	}
}

func (h *fakeHost) Name() string { return "fake" }

func (h *fakeHost) Run(ctx context.Context, cmd string, _ io.Reader) (remote.Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.probes++
	h.cmds = append(h.cmds, cmd)
	if len(h.helpNext) > 0 {
		a := h.helpNext[0]
		h.helpNext = h.helpNext[1:]
		return a.res, a.err
	}
	return h.help, h.helpErr
}

func (h *fakeHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	h.mu.Lock()
	h.cmds = append(h.cmds, cmd)
	h.mu.Unlock()
	p := newFakeProc()
	go func() { // the process ends with its context, as Host.Start promises
		select {
		case <-ctx.Done():
			p.Close()
		case <-p.closed:
		}
	}()
	h.starts <- p
	return p, nil
}

func (h *fakeHost) Watch(ctx context.Context) <-chan event.ConnState {
	ch := make(chan event.ConnState)
	go func() { <-ctx.Done(); close(ch) }()
	return ch
}

func (h *fakeHost) Close() error { return nil }

func (h *fakeHost) probeCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.probes
}

// fakeProc is a scripted nvidia-smi loop.
type fakeProc struct {
	outR, errR *io.PipeReader
	outW, errW *io.PipeWriter
	exitCh     chan error
	closed     chan struct{}
	once       sync.Once
}

func newFakeProc() *fakeProc {
	p := &fakeProc{exitCh: make(chan error, 1), closed: make(chan struct{})}
	p.outR, p.outW = io.Pipe()
	p.errR, p.errW = io.Pipe()
	return p
}

func (p *fakeProc) Stdout() io.Reader { return p.outR }
func (p *fakeProc) Stderr() io.Reader { return p.errR }

func (p *fakeProc) Wait() error {
	select {
	case err := <-p.exitCh:
		return err
	case <-p.closed:
		return &remote.ExitError{Code: -1, Signal: "KILL"}
	}
}

func (p *fakeProc) Close() error {
	p.once.Do(func() {
		close(p.closed)
		p.outR.CloseWithError(io.ErrClosedPipe)
		p.errR.CloseWithError(io.ErrClosedPipe)
	})
	return nil
}

// out writes stdout lines in one write; it returns false once the sampler
// closed the process.
func (p *fakeProc) out(lines ...string) bool {
	_, err := io.WriteString(p.outW, strings.Join(lines, "\n")+"\n")
	return err == nil
}

func (p *fakeProc) errOut(lines ...string) {
	for _, l := range lines {
		io.WriteString(p.errW, l+"\n")
	}
}

// exit ends the process with err after its output is read.
func (p *fakeProc) exit(err error) {
	p.outW.Close()
	p.errW.Close()
	p.exitCh <- err
}

func (p *fakeProc) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// harness runs a Sampler against a fakeHost and collects its events.
type harness struct {
	t      *testing.T
	host   *fakeHost
	s      *Sampler
	events chan event.Event
	cancel context.CancelFunc
	done   chan error
}

const waitLimit = 10 * time.Second

func startSampler(t *testing.T, h *fakeHost, configure func(*Sampler)) *harness {
	t.Helper()
	s := &Sampler{
		Host:         h,
		Interval:     time.Second, // stall tests lower it; others must not go stale on a busy machine
		StaleAfter:   3,
		StartTimeout: time.Minute, // a test that wants a stall before the first sample lowers it
		PartialFlush: time.Minute, // ticks end by index repeat / all known, unless a test lowers it
		MinBackoff:   time.Millisecond,
		MaxBackoff:   4 * time.Millisecond,
	}
	if configure != nil {
		configure(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hs := &harness{t: t, host: h, s: s, events: make(chan event.Event, 4096), cancel: cancel, done: make(chan error, 1)}
	go func() { hs.done <- s.Run(ctx, func(e event.Event) { hs.events <- e }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-hs.done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after cancel")
		}
	})
	return hs
}

// proc waits for the next started stream.
func (hs *harness) proc() *fakeProc {
	hs.t.Helper()
	select {
	case p := <-hs.host.starts:
		return p
	case <-time.After(waitLimit):
		hs.t.Fatal("no stream started")
		return nil
	}
}

// next waits for the next event whose payload has type T, failing on any
// event of another kind in between unless it is in allow.
func next[T event.Payload](hs *harness, allow ...string) (T, event.Event) {
	hs.t.Helper()
	deadline := time.After(waitLimit)
	var zero T
	for {
		select {
		case e := <-hs.events:
			if p, ok := e.Data.(T); ok {
				return p, e
			}
			allowed := false
			for _, k := range allow {
				allowed = allowed || e.Data.Kind().String() == k
			}
			if !allowed {
				hs.t.Fatalf("unexpected %s event %+v while waiting for %s", e.Data.Kind(), e.Data, zero.Kind())
			}
		case <-deadline:
			hs.t.Fatalf("no %s event", zero.Kind())
			return zero, event.Event{}
		}
	}
}

func row(idx int, util string) string {
	return fmt.Sprintf("%d, NVIDIA H200, 00000000:%02X:00.0, GPU-%d, %s, 41, 121315, 143771, 612.48, 700.00, 61, 1980, 3201, 1980, [N/A], P0, 5, 5, 16, 16, 0x0000000000000000, Enabled, Enabled, Disabled",
		idx, 0x18+idx*0x10, idx, util)
}

func indices(gs []event.GPU) []int {
	out := make([]int, len(gs))
	for i, g := range gs {
		out[i] = g.Index
	}
	return out
}

func TestSamplerTicksAndCommand(t *testing.T) {
	h := newFakeHost(t)
	hs := startSampler(t, h, nil)
	p := hs.proc()
	h.mu.Lock()
	cmds := append([]string(nil), h.cmds...)
	h.mu.Unlock()
	wantStream := "nvidia-smi '--query-gpu=" + strings.Join(DefaultFields(), ",") + "' '--format=csv,noheader,nounits' -lms 1000"
	if len(cmds) != 2 || cmds[0] != "nvidia-smi --help-query-gpu" || cmds[1] != wantStream {
		t.Fatalf("commands %q\nwant [nvidia-smi --help-query-gpu %q]", cmds, wantStream)
	}

	// Tick 1 ends when index 0 repeats; later ticks end as soon as every
	// known GPU has reported.
	p.out(row(0, "10"), row(1, "11"), row(0, "20"))
	s1, e1 := next[event.GPUSample](hs)
	if got := indices(s1.GPUs); len(got) != 2 || got[0] != 0 || got[1] != 1 || s1.Missing != nil {
		t.Fatalf("tick 1: %v missing %v", got, s1.Missing)
	}
	if s1.GPUs[0].UtilGPUPct.Value != 10 || s1.GPUs[1].UtilGPUPct.Value != 11 {
		t.Errorf("tick 1 values: %+v", s1.GPUs)
	}
	if e1.At.IsZero() || !e1.At.Equal(s1.At) {
		t.Errorf("event time %v, sample time %v", e1.At, s1.At)
	}
	p.out(row(1, "21"))
	s2, _ := next[event.GPUSample](hs)
	if s2.GPUs[0].UtilGPUPct.Value != 20 || s2.GPUs[1].UtilGPUPct.Value != 21 || s2.At.Before(s1.At) {
		t.Errorf("tick 2: %+v", s2)
	}
	// Rows out of order within a tick come out sorted.
	p.out(row(1, "31"), row(0, "30"))
	s3, _ := next[event.GPUSample](hs)
	if got := indices(s3.GPUs); got[0] != 0 || s3.GPUs[0].UtilGPUPct.Value != 30 {
		t.Errorf("tick 3: %v", s3.GPUs)
	}
	if n := h.probeCount(); n != 1 {
		t.Errorf("%d probes", n)
	}
}

func TestSamplerFewerRowsAndLostGPU(t *testing.T) {
	h := newFakeHost(t)
	hs := startSampler(t, h, func(s *Sampler) { s.PartialFlush = 200 * time.Millisecond })
	p := hs.proc()
	p.out(row(0, "1"), row(1, "1"), row(2, "1"), row(0, "2"))
	if s, _ := next[event.GPUSample](hs); len(s.GPUs) != 3 {
		t.Fatalf("tick 1: %v", indices(s.GPUs))
	}
	// GPU 1 stops reporting: the partial tick is flushed by the timer and
	// says which GPU is missing.
	p.out(row(2, "2"))
	s, _ := next[event.GPUSample](hs)
	if got := indices(s.GPUs); len(got) != 2 || got[0] != 0 || got[1] != 2 || len(s.Missing) != 1 || s.Missing[0] != 1 {
		t.Fatalf("partial tick: %v missing %v", got, s.Missing)
	}
	// A garbled row counts as missing too; a "[GPU is lost]" cell marks the GPU.
	lost := strings.Replace(row(2, "[GPU is lost]"), "612.48", "[GPU is lost]", 1)
	p.out(row(0, "3"), "1, garbled", lost)
	s, _ = next[event.GPUSample](hs)
	if got := indices(s.GPUs); len(got) != 2 || len(s.Missing) != 1 || s.Missing[0] != 1 {
		t.Fatalf("tick 3: %v missing %v", got, s.Missing)
	}
	g := s.GPUs[1]
	if !g.Lost || g.UtilGPUPct.Status != event.CellLost || g.PowerDrawW.Status != event.CellLost || g.PowerDrawW.Value != 0 || s.GPUs[0].Lost {
		t.Errorf("lost GPU: %+v", g)
	}
	// All three back: nothing missing.
	p.out(row(0, "4"), row(1, "4"), row(2, "4"))
	s, _ = next[event.GPUSample](hs)
	if len(s.GPUs) != 3 || s.Missing != nil {
		t.Errorf("tick 4: %v missing %v", indices(s.GPUs), s.Missing)
	}
}

func TestSamplerStallRestarts(t *testing.T) {
	h := newFakeHost(t)
	hs := startSampler(t, h, func(s *Sampler) {
		s.Interval = 20 * time.Millisecond
		s.PartialFlush = 10 * time.Millisecond
	})
	p1 := hs.proc()
	p1.out(row(0, "1"), row(1, "1"))
	s, _ := next[event.GPUSample](hs)
	// Then nothing: after 3 intervals the sampler reports stale and
	// restarts the stream. (On a loaded machine the first tick may have
	// been split in two by the short partial-tick timer: allow a sample.)
	st, e := next[event.GPUStale](hs, "gpu-sample")
	if st.Missed < 3 || st.LastSample.Before(s.At) || !strings.Contains(st.Reason, "no sample for 3 intervals") || e.At.Before(s.At) {
		t.Errorf("stale: %+v", st)
	}
	p2 := hs.proc()
	if !p1.isClosed() {
		t.Error("stalled stream was not closed")
	}
	p2.out(row(0, "5"), row(1, "5"))
	s, _ = next[event.GPUSample](hs)
	if len(s.GPUs) != 2 || s.GPUs[0].UtilGPUPct.Value != 5 {
		t.Errorf("after restart: %+v", s)
	}
	if n := h.probeCount(); n != 1 {
		t.Errorf("the probe ran %d times; its result must survive restarts", n)
	}
}

func TestSamplerStallBeforeFirstSample(t *testing.T) {
	h := newFakeHost(t)
	hs := startSampler(t, h, func(s *Sampler) {
		s.Interval = 10 * time.Millisecond
		s.StartTimeout = 30 * time.Millisecond
	})
	p1 := hs.proc()
	st, _ := next[event.GPUStale](hs)
	if !st.LastSample.IsZero() || !strings.Contains(st.Reason, "no sample") {
		t.Errorf("stale: %+v", st)
	}
	hs.proc()
	if !p1.isClosed() {
		t.Error("hung stream was not closed")
	}
}

func TestSamplerFailureLines(t *testing.T) {
	h := newFakeHost(t)
	hs := startSampler(t, h, nil)
	p := hs.proc()
	p.out("Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error")
	f, e := next[event.GPUFailure](hs)
	if f.Class != "unknown-error" || f.BusID != "0000:0B:00.0" || f.Reason != "Unknown Error" || e.At.IsZero() {
		t.Errorf("failure: %+v", f)
	}
	p.exit(&remote.ExitError{Code: 255})
	st, _ := next[event.GPUStale](hs)
	if !strings.Contains(st.Reason, "exit status 255") {
		t.Errorf("stale: %+v", st)
	}
	// The next stream fails on stderr with a version mismatch; its version
	// line is attached.
	p = hs.proc()
	p.errOut("Failed to initialize NVML: Driver/library version mismatch", "NVML library version: 570.124")
	f, _ = next[event.GPUFailure](hs)
	if f.Class != event.GPUFailDriverLibraryMismatch || f.NVMLVersion != "570.124" {
		t.Errorf("failure: %+v", f)
	}
	p.exit(&remote.ExitError{Code: 18})
	next[event.GPUStale](hs)
	// Failures are not a sign of a bad field list: no new probe.
	hs.proc()
	if n := h.probeCount(); n != 1 {
		t.Errorf("%d probes", n)
	}
}

func TestSamplerExitAndDisconnect(t *testing.T) {
	h := newFakeHost(t)
	hs := startSampler(t, h, nil)
	p := hs.proc()
	// Output written just before the exit is still read: the last rows are
	// flushed as a sample before the Stale.
	p.out(row(0, "1"), row(1, "1"))
	p.exit(nil)
	s, _ := next[event.GPUSample](hs)
	if len(s.GPUs) != 2 {
		t.Errorf("last tick: %v", indices(s.GPUs))
	}
	st, _ := next[event.GPUStale](hs)
	if st.Reason != "nvidia-smi exited" || !st.LastSample.Equal(s.At) {
		t.Errorf("stale: %+v", st)
	}
	p = hs.proc()
	p.exit(fmt.Errorf("wait: %w", remote.ErrDisconnected))
	st, _ = next[event.GPUStale](hs)
	if st.Reason != "connection to host lost" {
		t.Errorf("stale: %+v", st)
	}
	p = hs.proc()
	p.out(row(0, "2"), row(1, "2"))
	if s, _ := next[event.GPUSample](hs); s.GPUs[1].UtilGPUPct.Value != 2 {
		t.Errorf("after reconnect: %+v", s)
	}
}

func TestSamplerBadFieldReprobes(t *testing.T) {
	h := newFakeHost(t)
	hs := startSampler(t, h, nil)
	p := hs.proc()
	p.errOut(`Field "mig.mode.current" is not a valid field to query.`)
	p.exit(&remote.ExitError{Code: 2})
	st, _ := next[event.GPUStale](hs)
	if !strings.Contains(st.Reason, "exit status 2") || !strings.Contains(st.Reason, "not a valid field") {
		t.Errorf("stale: %+v", st)
	}
	hs.proc()
	if n := h.probeCount(); n != 2 {
		t.Errorf("%d probes, want a second one after a stream that printed no row", n)
	}
}

func TestSamplerProbeFailures(t *testing.T) {
	h := newFakeHost(t)
	h.helpNext = []fakeHelp{
		{remote.Result{Stderr: []byte("sh: 1: nvidia-smi: not found\n"), ExitCode: 127}, &remote.ExitError{Code: 127}},
		{remote.Result{Stdout: []byte("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"), ExitCode: 9}, &remote.ExitError{Code: 9}},
		{remote.Result{}, fmt.Errorf("run: %w", remote.ErrDisconnected)},
	}
	hs := startSampler(t, h, nil)
	f, _ := next[event.GPUFailure](hs)
	if f.Class != event.GPUFailNoNVIDIASMI || !strings.Contains(f.Reason, "not found") {
		t.Errorf("failure: %+v", f)
	}
	st, _ := next[event.GPUStale](hs)
	if !strings.Contains(st.Reason, "--help-query-gpu") || !strings.Contains(st.Reason, "exit status 127") {
		t.Errorf("stale: %+v", st)
	}
	f, _ = next[event.GPUFailure](hs)
	if f.Class != event.GPUFailDriverNotLoaded {
		t.Errorf("failure: %+v", f)
	}
	next[event.GPUStale](hs)
	st, _ = next[event.GPUStale](hs)
	if !strings.Contains(st.Reason, "connection to host lost") {
		t.Errorf("stale: %+v", st)
	}
	// Then the probe succeeds and the stream starts.
	p := hs.proc()
	p.out(row(0, "1"), row(0, "2"))
	next[event.GPUSample](hs)
}

func TestSamplerConfigErrors(t *testing.T) {
	ctx := context.Background()
	if err := (&Sampler{}).Run(ctx, func(event.Event) {}); err == nil {
		t.Error("nil Host: want error")
	}
	if err := (&Sampler{Host: newFakeHost(t)}).Run(ctx, nil); err == nil {
		t.Error("nil sink: want error")
	}
	if err := (&Sampler{Host: newFakeHost(t), Program: "nvidia\x00smi"}).Run(ctx, func(event.Event) {}); err == nil {
		t.Error("unquotable program: want error")
	}
}
