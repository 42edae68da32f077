//go:build linux && cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/flightdeck-dev/flightdeck/probes/internal/ctxwait"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

const (
	// staleAfter is how many intervals a read may take before Run reports
	// it blocked (event.GPUStale); it reports again every interval after. Less
	// than the cockpit's 3 intervals of silence that make it give up on an
	// agent, so that a blocked read is reported, not taken for a dead
	// agent.
	staleAfter = 2
	// deadAfter is how many consecutive reads in which every GPU is lost
	// (or the driver gone) make Run publish a event.GPUFailure.
	deadAfter = 3
	// xidWaitMs bounds one nvmlEventSetWait, so that the Xid goroutine
	// notices the end of Run.
	xidWaitMs = 500
	// maxXidBackoff bounds the wait between event-set rebuilds.
	maxXidBackoff = 30 * time.Second
)

// Run samples every Interval until ctx ends, then returns nil. Each
// sample is published as a event.GPUSample event whose At is when its read
// began; the sink also gets:
//
//   - event.Xid for every Xid NVML reports (unless Options.NoXid), with the
//     time NVML reported it; a GPU whose handle NVML first gives after
//     Open is registered for Xid events then;
//   - event.GPUStale{Reason: "NVML call blocked for 2s"} when one read takes
//     more than 2 intervals, and again every interval while it stays
//     blocked (Missed and the time in Reason growing): a call stuck in the
//     driver cannot be cancelled; the read goes on, and its sample is
//     published when it returns. The agent relays these, so that the
//     cockpit tells an agent whose NVML is blocked from a dead one;
//   - event.GPUFailure when every GPU has been lost for 3 reads in a row: one
//     per GPU, class "gpu-lost" with its bus id, like nvidia-smi's "Unable
//     to determine the device handle for GPU …: GPU is lost"; or, when the
//     driver is gone (ERROR_DRIVER_NOT_LOADED, ERROR_UNINITIALIZED), one
//     of class "driver-not-loaded", and no samples while it lasts (as
//     nvidia-smi prints a failure instead of rows). Run keeps reading.
//
// With Options.PCIe a separate goroutine reads PCIe throughput every
// max(2 × Interval, 1 s); samples carry its latest values. The sink is
// called from Run's goroutine only. Run returns an error at once when the
// sink is nil, the sampler is closed, or another Run is in progress, and
// ErrClosed soon after Close is called while it runs (Close stops it
// without waiting for an interval to pass). Before returning it stops its
// goroutines and waits for them (at most 5 s); a read blocked in the
// driver is left to finish alone.
func (s *Sampler) Run(ctx context.Context, sink event.Sink) error {
	if sink == nil {
		return errors.New("nvml: Run: nil sink")
	}
	if s.closed.Load() {
		return ErrClosed
	}
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("nvml: Run: already running")
	}
	defer s.running.Store(false)

	xidOn := !s.opts.NoXid && s.sym.xid()
	pcieOn := s.opts.PCIe && s.sym.pcieThroughput
	bctx, stopBG := context.WithCancel(ctx)
	defer s.stopBackground(stopBG)
	// Add under life, only while open: Close's bg.Wait then never runs
	// concurrently with an Add from a zero count, and no goroutine starts
	// (and calls NVML) after Close has begun.
	s.life.Lock()
	if s.closed.Load() {
		s.life.Unlock()
		return ErrClosed
	}
	s.bg.Add(1)
	if xidOn {
		s.bg.Add(1)
	}
	if pcieOn {
		s.bg.Add(1)
	}
	s.life.Unlock()
	// Close ends the goroutines even while the sink blocks Run's loop.
	go func() {
		defer s.bg.Done()
		select {
		case <-s.quit:
			stopBG()
		case <-bctx.Done():
		}
	}()
	xids := make(chan event.Event, 64)
	if xidOn {
		go func() {
			defer s.bg.Done()
			s.watchXid(bctx, xids)
		}()
	}
	if pcieOn {
		go func() {
			defer s.bg.Done()
			s.pollPCIe(bctx)
		}()
	}

	// One worker goroutine does every read, so that a read blocked in the
	// driver holds up only itself. It owns no state Run reads except
	// through results; it exits when req closes (or, if blocked, when its
	// call returns).
	req := make(chan struct{})
	results := make(chan readResult, 1)
	go func() {
		for range req {
			if !s.acquire() {
				results <- readResult{closed: true}
				continue
			}
			res := s.read(false)
			s.release()
			results <- res
		}
	}()
	defer close(req)

	interval := s.opts.Interval
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	watchdog := time.NewTimer(time.Hour)
	watchdog.Stop()
	defer watchdog.Stop()

	var (
		busy       bool
		busySince  time.Time
		lastSample time.Time
		deadReads  int
		start      = s.opts.Now()
	)
	emit := func(at time.Time, p event.Payload) { sink(event.Event{At: at, Data: p}) }
	request := func() {
		busy = true
		busySince = time.Now()
		watchdog.Reset(staleAfter * interval)
		req <- struct{}{}
	}
	request()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.quit:
			return ErrClosed
		case <-ticker.C:
			if !busy {
				request()
			}
		case <-watchdog.C:
			if busy {
				watchdog.Reset(interval) // again each interval while blocked
				now := s.opts.Now()
				ref := lastSample
				if ref.IsZero() {
					ref = start
				}
				blocked := time.Since(busySince).Round(time.Millisecond)
				emit(now, event.GPUStale{
					LastSample: lastSample,
					Missed:     max(0, int(now.Sub(ref)/interval)),
					Reason:     fmt.Sprintf("NVML call blocked for %v", blocked),
				})
			}
		case x := <-xids:
			emit(x.At, x.Data)
		case res := <-results:
			busy = false
			watchdog.Stop()
			if res.closed {
				return ErrClosed
			}
			if res.dead {
				deadReads++
			} else {
				deadReads = 0
			}
			driverGone := res.dead && !res.allLost
			if deadReads == deadAfter {
				s.emitFailures(res, emit)
			}
			if !driverGone {
				emit(res.smp.At, res.smp)
				lastSample = res.smp.At
			}
		}
	}
}

// stopBackground ends Run's Xid and PCIe goroutines and waits for them,
// at most closeGrace: each returns within one NVML call (an event wait
// lasts at most 500 ms, a PCIe read about 20 ms) unless the driver hangs.
func (s *Sampler) stopBackground(stop context.CancelFunc) {
	stop()
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	t := time.NewTimer(s.grace())
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// emitFailures publishes the event.GPUFailure events of a read in which every
// GPU is lost or the driver is gone.
func (s *Sampler) emitFailures(res readResult, emit func(time.Time, event.Payload)) {
	at := res.smp.At
	if res.allLost {
		line := "NVML: ERROR_GPU_IS_LOST for every GPU"
		if len(res.lostBus) == 0 {
			emit(at, event.GPUFailure{Class: event.GPUFailLost, Reason: "GPU is lost", NeedsReboot: true, Line: line})
		}
		for _, bus := range res.lostBus {
			emit(at, event.GPUFailure{Class: event.GPUFailLost, BusID: bus, Reason: "GPU is lost", NeedsReboot: true, Line: line})
		}
		return
	}
	name := retName(res.deadRet)
	emit(at, event.GPUFailure{
		Class:       event.GPUFailDriverNotLoaded,
		Reason:      "NVML returns " + name + " for every GPU",
		NVMLVersion: s.info.NVML,
		Line:        "NVML: " + name + " for every GPU",
	})
}

// watchXid reads Xid events from an NVML event set until ctx ends,
// sending each to out. A GPU that refuses registration is skipped; a GPU
// whose handle NVML first gives after Open (s.newHandle) is registered
// then, on the same set, between two waits. When no GPU accepts and every
// GPU has a handle, the goroutine ends; while some lack one, it waits for
// them. nvmlEventSetWait's TIMEOUT is normal; any other error frees the
// set and rebuilds it after a back-off.
func (s *Sampler) watchXid(ctx context.Context, out chan<- event.Event) {
	backoff := s.xidBackoff
	if backoff <= 0 {
		backoff = time.Second
	}
	first := backoff
	for ctx.Err() == nil {
		// The set is built from the handles there are now; a handle that
		// arrives later signals again.
		select {
		case <-s.newHandle:
		default:
		}
		set, tried, registered := s.buildEventSet()
		if set == nil {
			if !ctxwait.Sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, maxXidBackoff)
			continue
		}
		if len(registered) == 0 {
			set.Free()
			if s.allHandled() {
				return // no GPU reports Xid events (GeForce, or all refused)
			}
			select {
			case <-ctx.Done():
				return
			case <-s.newHandle:
			}
			continue
		}
		for ctx.Err() == nil {
			select {
			case <-s.newHandle:
				registered = s.registerNew(set, tried, registered)
			default:
			}
			data, ret := set.Wait(xidWaitMs)
			if ret == gonvml.ERROR_TIMEOUT {
				continue
			}
			if ret != gonvml.SUCCESS {
				break
			}
			backoff = first
			if data.EventType&gonvml.EventTypeXidCriticalError == 0 {
				continue
			}
			x := s.xidFor(data, registered)
			select {
			case out <- event.Event{At: s.opts.Now(), Data: x}:
			case <-ctx.Done():
			}
		}
		set.Free()
		if !ctxwait.Sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, maxXidBackoff)
	}
}

// buildEventSet creates an event set and registers every GPU with a
// handle for Xid events. It returns nil when the set cannot be created;
// else the set, which devices were asked (by position in s.devs), and
// those that registered.
func (s *Sampler) buildEventSet() (gonvml.EventSet, []bool, []*device) {
	set, ret := s.lib.EventSetCreate()
	if ret != gonvml.SUCCESS || set == nil {
		return nil, nil, nil
	}
	tried := make([]bool, len(s.devs))
	return set, tried, s.registerNew(set, tried, nil)
}

// registerNew registers on set, for Xid events, every GPU with a handle
// not yet tried, marking it tried, and returns registered with those that
// accepted.
func (s *Sampler) registerNew(set gonvml.EventSet, tried []bool, registered []*device) []*device {
	for i, d := range s.devs {
		if tried[i] {
			continue
		}
		h := s.handle(d)
		if h == nil {
			continue
		}
		tried[i] = true
		if h.RegisterEvents(gonvml.EventTypeXidCriticalError, set) == gonvml.SUCCESS {
			registered = append(registered, d)
		}
	}
	return registered
}

// allHandled reports whether every GPU has a handle.
func (s *Sampler) allHandled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devs {
		if d.h == nil {
			return false
		}
	}
	return true
}

// xidFor names the GPU of an event by comparing its handle with the
// cached ones; Index is -1 when it matches none.
func (s *Sampler) xidFor(data gonvml.EventData, registered []*device) event.Xid {
	x := event.Xid{Index: -1, Code: data.EventData}
	s.mu.Lock()
	for _, d := range registered {
		if sameDevice(d.h, data.Device) {
			x.Index, x.UUID, x.BusID = d.index, d.xidUUID, d.xidBus
			break
		}
	}
	s.mu.Unlock()
	// An Xid that comes before the first sample read the GPU's identity:
	// ask the event's handle (NVML is safe for concurrent use).
	if x.Index >= 0 && data.Device != nil {
		if x.UUID == "" && s.sym.uuid {
			if v, ret := data.Device.GetUUID(); ret == gonvml.SUCCESS {
				x.UUID = cleanID(v)
			}
		}
		if x.BusID == "" && s.sym.pciInfo {
			if p, ret := data.Device.GetPciInfo(); ret == gonvml.SUCCESS {
				x.BusID = busID(p.BusId[:])
			}
		}
	}
	return x
}

// sameDevice compares two handles without panicking on a handle type
// that is not comparable (a fake's).
func sameDevice(a, b gonvml.Device) (same bool) {
	if a == nil || b == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// pollPCIe reads every GPU's PCIe throughput every max(2 × Interval, 1 s)
// until ctx ends. Each GPU takes about 40 ms (two 20 ms driver windows),
// so this runs apart from the sample reads. GPUs whose last row was dead
// are skipped.
func (s *Sampler) pollPCIe(ctx context.Context) {
	every := s.pcieEvery()
	for {
		for _, d := range s.devs {
			if ctx.Err() != nil {
				return
			}
			h := s.handle(d)
			if h == nil || d.dead.Load() {
				continue
			}
			rx, tx := readPCIe(h)
			at := s.opts.Now()
			s.mu.Lock()
			d.pcie[0], d.pcie[1], d.pcieAt = rx, tx, at
			s.mu.Unlock()
		}
		if !ctxwait.Sleep(ctx, every) {
			return
		}
	}
}

// pcieEvery is the PCIe poller's period: max(2 × Interval, 1 s).
func (s *Sampler) pcieEvery() time.Duration { return max(2*s.opts.Interval, time.Second) }

// handle returns d's handle for a goroutine other than the reader's.
func (s *Sampler) handle(d *device) gonvml.Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	return d.h
}
