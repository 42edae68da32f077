//go:build linux && cgo

package nvml

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// runner runs a Sampler and hands its events to the test.
type runner struct {
	events chan event.Event
	cancel context.CancelFunc
	done   chan error
}

// patience bounds every wait for an event: long enough for a loaded CI
// machine, and never reached when the code works.
const patience = 20 * time.Second

func startRun(t *testing.T, s *Sampler) *runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{events: make(chan event.Event, 1024), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- s.Run(ctx, func(e event.Event) {
			select {
			case r.events <- e:
			default: // the test stopped reading
			}
		})
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *runner) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		r.done <- nil // stop is idempotent
	case <-time.After(patience):
		t.Fatal("Run did not return after its context ended")
	}
}

// next returns the next event whose payload match accepts.
func (r *runner) next(t *testing.T, what string, match func(event.Payload) bool) event.Event {
	t.Helper()
	deadline := time.After(patience)
	for {
		select {
		case e := <-r.events:
			if match(e.Data) {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event", what)
		}
	}
}

func isSample(p event.Payload) bool { _, ok := p.(event.GPUSample); return ok }

func TestRunPublishesSamplesAndStops(t *testing.T) {
	x := newDGX(t)
	s := x.open(t, Options{Interval: 10 * time.Millisecond, NoXid: true})
	r := startRun(t, s)
	var prev time.Time
	for i := 0; i < 3; i++ {
		e := r.next(t, "sample", isSample)
		smp := e.Data.(event.GPUSample)
		if len(smp.GPUs) != 8 || !e.At.Equal(smp.At) || smp.At.Before(prev) {
			t.Fatalf("sample %d: %d GPUs, event at %v, sample at %v (previous %v)", i, len(smp.GPUs), e.At, smp.At, prev)
		}
		for j, g := range smp.GPUs {
			if g.Index != j {
				t.Fatalf("GPUs not sorted by index: %d at %d", g.Index, j)
			}
		}
		prev = smp.At
	}
	r.stop(t)
	if err := s.Run(context.Background(), nil); err == nil {
		t.Error("Run with a nil sink: no error")
	}
}

// The sink gets a fresh sample each time: a later read does not change
// what an earlier one published.
func TestSamplesAreNotReused(t *testing.T) {
	x := newDGX(t)
	x.vals[0].procs = []gonvml.ProcessInfo{{Pid: 1, UsedGpuMemory: mib}}
	s := x.open(t, Options{NoXid: true})
	a := sample(t, s)
	x.vals[0].mu.Lock()
	x.vals[0].util = 99
	x.vals[0].procs[0].UsedGpuMemory = 5 * mib
	x.vals[0].mu.Unlock()
	b := sample(t, s)
	if a.GPUs[0].UtilGPUPct.Value != 10 || a.Apps[0].UsedMiB.Value != 1 {
		t.Errorf("first sample changed: util %v, app %v", a.GPUs[0].UtilGPUPct, a.Apps[0].UsedMiB)
	}
	if b.GPUs[0].UtilGPUPct.Value != 99 || b.Apps[0].UsedMiB.Value != 5 {
		t.Errorf("second sample: util %v, app %v", b.GPUs[0].UtilGPUPct, b.Apps[0].UsedMiB)
	}
}

func TestRunBlockedCallPublishesStale(t *testing.T) {
	x := newDGX(t)
	release := make(chan struct{})
	var once sync.Once
	blocking := make(chan struct{})
	orig := x.devs[4].GetUtilizationRatesFunc
	var mu sync.Mutex
	block := false
	x.devs[4].GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
		mu.Lock()
		b := block
		mu.Unlock()
		if b {
			once.Do(func() { close(blocking) })
			<-release
		}
		return orig()
	}
	s := x.open(t, Options{Interval: 10 * time.Millisecond, NoXid: true})
	r := startRun(t, s)
	r.next(t, "first sample", isSample)
	mu.Lock()
	block = true
	mu.Unlock()
	<-blocking
	// Reported, then reported again every interval while it stays
	// blocked, so that the agent keeps telling the cockpit.
	isStale := func(p event.Payload) bool { _, ok := p.(event.GPUStale); return ok }
	var prev event.GPUStale
	for i := range 3 {
		st := r.next(t, "stale", isStale).Data.(event.GPUStale)
		if st.LastSample.IsZero() || !strings.HasPrefix(st.Reason, "NVML call blocked for ") {
			t.Errorf("stale %d: %+v", i, st)
		}
		if i > 0 && (st.Missed < prev.Missed || !st.LastSample.Equal(prev.LastSample)) {
			t.Errorf("stale %d: %+v after %+v", i, st, prev)
		}
		prev = st
	}
	mu.Lock()
	block = false
	mu.Unlock()
	close(release)
	// The blocked read's sample still arrives, and sampling goes on.
	r.next(t, "sample after the block", isSample)
	r.next(t, "next sample", isSample)
}

func TestRunAllLostPublishesFailures(t *testing.T) {
	x := newDGX(t)
	s := x.open(t, Options{Interval: 10 * time.Millisecond, NoXid: true})
	sample(t, s) // bus ids known
	for _, v := range x.vals {
		v.setFail("*", gonvml.ERROR_GPU_IS_LOST)
	}
	r := startRun(t, s)
	buses := map[string]bool{}
	samples := 0
	for len(buses) < 8 {
		e := r.next(t, "failure", func(p event.Payload) bool {
			if _, ok := p.(event.GPUSample); ok {
				samples++
			}
			_, ok := p.(event.GPUFailure)
			return ok
		})
		f := e.Data.(event.GPUFailure)
		if f.Class != event.GPUFailLost || !f.NeedsReboot || f.BusID == "" {
			t.Fatalf("failure %+v", f)
		}
		buses[f.BusID] = true
	}
	if samples < deadAfter-1 {
		t.Errorf("%d samples before the failures, want lost rows published (≥ %d)", samples, deadAfter-1)
	}
	// Lost rows keep coming.
	smp := r.next(t, "lost sample", isSample).Data.(event.GPUSample)
	if len(smp.GPUs) != 8 || !smp.GPUs[0].ShowsLost() {
		t.Errorf("lost sample: %+v", smp.GPUs[0])
	}
}

func TestRunDriverGoneFailureAndNoSamples(t *testing.T) {
	x := newDGX(t)
	s := x.open(t, Options{Interval: 10 * time.Millisecond, NoXid: true})
	for _, v := range x.vals {
		v.setFail("*", gonvml.ERROR_DRIVER_NOT_LOADED)
	}
	r := startRun(t, s)
	e := r.next(t, "failure", func(p event.Payload) bool {
		if _, ok := p.(event.GPUSample); ok {
			t.Errorf("a sample while the driver is gone")
		}
		_, ok := p.(event.GPUFailure)
		return ok
	})
	f := e.Data.(event.GPUFailure)
	if f.Class != event.GPUFailDriverNotLoaded || f.BusID != "" || f.NVMLVersion != "12.550.54.15" {
		t.Errorf("failure %+v", f)
	}
	// The driver comes back: samples again.
	for _, v := range x.vals {
		v.setFail("*", gonvml.SUCCESS)
	}
	smp := r.next(t, "sample after recovery", isSample).Data.(event.GPUSample)
	if !smp.GPUs[0].UtilGPUPct.Valid() {
		t.Errorf("after recovery: %+v", smp.GPUs[0].UtilGPUPct)
	}
}

// waitStep is one scripted answer of the mock event set's Wait.
type waitStep struct {
	data gonvml.EventData
	ret  gonvml.Return
}

func TestXidEvents(t *testing.T) {
	x := newDGX(t)
	x.vals[6].setFail("register", gonvml.ERROR_NOT_SUPPORTED) // skipped
	steps := make(chan waitStep, 16)
	var mu sync.Mutex
	created, freed := 0, 0
	x.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) {
		mu.Lock()
		created++
		mu.Unlock()
		return &mock.EventSet{
			WaitFunc: func(ms uint32) (gonvml.EventData, gonvml.Return) {
				select {
				case st := <-steps:
					return st.data, st.ret
				case <-time.After(time.Duration(ms) * time.Millisecond):
					return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
				}
			},
			FreeFunc: func() gonvml.Return { mu.Lock(); freed++; mu.Unlock(); return gonvml.SUCCESS },
		}, gonvml.SUCCESS
	}
	xid := func(dev gonvml.Device, code uint64) waitStep {
		return waitStep{data: gonvml.EventData{Device: dev, EventType: gonvml.EventTypeXidCriticalError, EventData: code}}
	}
	steps <- xid(x.srv.Devices[3], 79)
	steps <- waitStep{ret: gonvml.ERROR_TIMEOUT}
	steps <- waitStep{data: gonvml.EventData{Device: x.srv.Devices[1], EventType: gonvml.EventTypePState}} // not an Xid
	steps <- waitStep{ret: gonvml.ERROR_UNKNOWN}                                                           // the set is dead: rebuild
	steps <- xid(x.srv.Devices[5], 48)
	steps <- xid(nil, 13)

	s := x.open(t, Options{Interval: 10 * time.Millisecond})
	s.xidBackoff = time.Millisecond
	sample(t, s) // identities known
	r := startRun(t, s)
	want := []event.Xid{
		{Index: 3, UUID: "GPU-a100-3", BusID: "00000000:37:00.0", Code: 79},
		{Index: 5, UUID: "GPU-a100-5", BusID: "00000000:57:00.0", Code: 48},
		{Index: -1, Code: 13},
	}
	for i, w := range want {
		e := r.next(t, "xid", func(p event.Payload) bool { _, ok := p.(event.Xid); return ok })
		if got := e.Data.(event.Xid); got != w {
			t.Errorf("xid %d: %+v, want %+v", i, got, w)
		}
		if e.At.IsZero() {
			t.Errorf("xid %d has no time", i)
		}
	}
	r.stop(t)
	mu.Lock()
	defer mu.Unlock()
	if created != 2 || freed != 2 {
		t.Errorf("event sets created %d, freed %d; want 2, 2 (one rebuild, each freed)", created, freed)
	}
	if n := len(x.devs[6].RegisterEventsCalls()); n != 2 {
		t.Errorf("GPU 6 asked to register %d times, want 2", n)
	}
	// Sample publishes nothing and reads no event.
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
}

func TestXidOffOrUnavailable(t *testing.T) {
	x := newDGX(t)
	s := x.open(t, Options{Interval: 10 * time.Millisecond, NoXid: true})
	r := startRun(t, s)
	r.next(t, "sample", isSample)
	r.stop(t)
	if n := len(x.srv.EventSetCreateCalls()); n != 0 {
		t.Errorf("NoXid: %d event sets created", n)
	}
	x = newDGX(t)
	x.missing["nvmlEventSetCreate"] = true
	s = x.open(t, Options{Interval: 10 * time.Millisecond})
	r = startRun(t, s)
	r.next(t, "sample", isSample)
	r.stop(t)
	if n := len(x.srv.EventSetCreateCalls()); n != 0 {
		t.Errorf("without nvmlEventSetCreate: %d event sets created", n)
	}
}

func TestRunPCIePoller(t *testing.T) {
	x := newDGX(t)
	s := x.open(t, Options{Interval: 10 * time.Millisecond, NoXid: true, PCIe: true})
	r := startRun(t, s)
	for {
		smp := r.next(t, "sample with PCIe", isSample).Data.(event.GPUSample)
		g := smp.GPUs[1]
		if g.PCIeRxKBs.Status == event.CellNA {
			continue // before the poller's first read
		}
		if g.PCIeRxKBs != (event.Reading{Value: 2000}) || g.PCIeTxKBs != (event.Reading{Value: 4000}) {
			t.Fatalf("PCIe rx %+v tx %+v", g.PCIeRxKBs, g.PCIeTxKBs)
		}
		break
	}
}

// A GPU lost after the PCIe poller read it shows its PCIe cells lost, as
// its other cells, never the poller's last value as a live one.
func TestRunPCIeOfALostGPU(t *testing.T) {
	x := newDGX(t)
	s := x.open(t, Options{Interval: 10 * time.Millisecond, NoXid: true, PCIe: true})
	r := startRun(t, s)
	for r.next(t, "sample with PCIe", isSample).Data.(event.GPUSample).GPUs[1].PCIeRxKBs.Status != event.CellOK {
	}
	x.vals[1].setFail("*", gonvml.ERROR_GPU_IS_LOST)
	for {
		g := r.next(t, "sample with GPU 1 lost", isSample).Data.(event.GPUSample).GPUs[1]
		if !g.Lost {
			continue
		}
		if g.PCIeRxKBs.Status != event.CellLost || g.PCIeTxKBs.Status != event.CellLost {
			t.Fatalf("lost GPU's PCIe rx %+v tx %+v, want lost", g.PCIeRxKBs, g.PCIeTxKBs)
		}
		break
	}
}

// A PCIe poller blocked in the driver: once its reading is older than 3
// poll periods (1 s each here), the samples show rx/tx "[N/A]", not the
// old reading as current.
func TestRunPCIeStaleReading(t *testing.T) {
	x := newDGX(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	var reads atomic.Int32
	orig := x.devs[1].GetPcieThroughputFunc
	x.devs[1].GetPcieThroughputFunc = func(c gonvml.PcieUtilCounter) (uint32, gonvml.Return) {
		if reads.Add(1) > 2 { // rx and tx once, then the driver hangs
			<-block
		}
		return orig(c)
	}
	s := x.open(t, Options{Interval: 10 * time.Millisecond, NoXid: true, PCIe: true, Now: clock})
	r := startRun(t, s)
	for r.next(t, "sample with PCIe", isSample).Data.(event.GPUSample).GPUs[1].PCIeRxKBs.Status != event.CellOK {
	}
	mu.Lock()
	now = now.Add(2 * time.Second) // within 3 periods: still shown
	mu.Unlock()
	if g := r.next(t, "sample", isSample).Data.(event.GPUSample).GPUs[1]; g.PCIeRxKBs != (event.Reading{Value: 2000}) {
		t.Fatalf("a 2 s old reading: rx %+v, want 2000 KB/s", g.PCIeRxKBs)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	na := event.Reading{Status: event.CellNA, Raw: "[N/A]"}
	if g := r.next(t, "sample", isSample).Data.(event.GPUSample).GPUs[1]; g.PCIeRxKBs != na || g.PCIeTxKBs != na {
		t.Fatalf("a 4 s old reading: rx %+v tx %+v, want [N/A]", g.PCIeRxKBs, g.PCIeTxKBs)
	}
}

// A GPU whose handle NVML refused at Open is registered for Xid events on
// the running event set once a read obtains its handle.
func TestXidRegistersAHandleObtainedLater(t *testing.T) {
	x := newDGX(t)
	var mu sync.Mutex
	refuse := true
	orig := x.srv.DeviceGetHandleByIndexFunc
	x.srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		mu.Lock()
		r := refuse
		mu.Unlock()
		if i == 5 && r {
			return nil, gonvml.ERROR_UNKNOWN
		}
		return orig(i)
	}
	steps := make(chan waitStep, 4)
	x.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(ms uint32) (gonvml.EventData, gonvml.Return) {
				select {
				case st := <-steps:
					return st.data, st.ret
				case <-time.After(time.Duration(ms) * time.Millisecond):
					return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
				}
			},
			FreeFunc: func() gonvml.Return { return gonvml.SUCCESS },
		}, gonvml.SUCCESS
	}
	s := x.open(t, Options{Interval: 10 * time.Millisecond})
	r := startRun(t, s)
	r.next(t, "sample", isSample)
	if n := len(x.devs[5].RegisterEventsCalls()); n != 0 {
		t.Fatalf("GPU 5 without a handle asked to register %d times", n)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	r.next(t, "sample with GPU 5", func(p event.Payload) bool {
		smp, ok := p.(event.GPUSample)
		return ok && len(smp.GPUs) == 8
	})
	deadline := time.Now().Add(patience)
	for len(x.devs[5].RegisterEventsCalls()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("GPU 5 was never registered for Xid events")
		}
		time.Sleep(5 * time.Millisecond)
	}
	steps <- waitStep{data: gonvml.EventData{Device: x.srv.Devices[5], EventType: gonvml.EventTypeXidCriticalError, EventData: 79}}
	e := r.next(t, "xid", func(p event.Payload) bool { _, ok := p.(event.Xid); return ok })
	if x := e.Data.(event.Xid); x.Index != 5 || x.Code != 79 || x.UUID != "GPU-a100-5" {
		t.Errorf("xid %+v, want GPU 5's 79", x)
	}
	for i, d := range x.devs {
		if n := len(d.RegisterEventsCalls()); n != 1 {
			t.Errorf("GPU %d asked to register %d times, want 1 (one set, never rebuilt)", i, n)
		}
	}
	if n := len(x.srv.EventSetCreateCalls()); n != 1 {
		t.Errorf("%d event sets created, want 1", n)
	}
}

// Close while Run runs: Run returns ErrClosed, and Close returns nil
// without waiting out its grace for the PCIe poller's long sleep (2
// intervals of an hour); NVML is shut down once, after every goroutine
// has left it. Repeated with Run and Close started together, so that the
// race detector sees Run's start against Close.
func TestCloseDuringRun(t *testing.T) {
	for i := range 20 {
		x := newDGX(t)
		var mu sync.Mutex
		shut := false
		x.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) {
			mu.Lock()
			defer mu.Unlock()
			if shut {
				t.Error("EventSetCreate after Shutdown")
			}
			return &mock.EventSet{
				WaitFunc: func(ms uint32) (gonvml.EventData, gonvml.Return) {
					time.Sleep(time.Millisecond)
					return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
				},
				FreeFunc: func() gonvml.Return { return gonvml.SUCCESS },
			}, gonvml.SUCCESS
		}
		origShutdown := x.srv.ShutdownFunc
		x.srv.ShutdownFunc = func() gonvml.Return {
			mu.Lock()
			shut = true
			mu.Unlock()
			return origShutdown()
		}
		s, err := OpenLibrary(x.srv, Options{Interval: time.Hour, PCIe: true})
		if err != nil {
			t.Fatal(err)
		}
		s.closeGrace = patience
		ran := make(chan error, 1)
		started := make(chan struct{})
		go func() {
			ran <- s.Run(context.Background(), func(e event.Event) {
				if _, ok := e.Data.(event.GPUSample); ok {
					select {
					case <-started:
					default:
						close(started)
					}
				}
			})
		}()
		if i%2 == 0 {
			<-started // Close mid-run; otherwise as Run starts
		}
		if err := s.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
		select {
		case err := <-ran:
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("round %d: Run: %v, want nil or ErrClosed", i, err)
			}
		case <-time.After(patience):
			t.Fatalf("round %d: Run did not return after Close", i)
		}
		if n := len(x.srv.ShutdownCalls()); n != 1 {
			t.Errorf("round %d: Shutdown called %d times", i, n)
		}
	}
}
