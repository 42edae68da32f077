//go:build linux && cgo

package nvml

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Sampler is NVML opened for sampling: the library initialised once, the
// functions it exports looked up once, and a handle per GPU cached.
//
// Sample and Run may be used from any goroutine; reads of the GPUs are
// serialised (one at a time). Close may be called during Run (it stops it)
// and releases NVML once Run has returned.
type Sampler struct {
	lib  gonvml.Interface
	opts Options // defaults applied
	info Info
	sym  symbols
	devs []*device

	// busy is held (a token in the channel) while a goroutine is inside
	// NVML reading the GPUs or shutting it down; Close waits for it with a
	// deadline, because a call blocked in the driver cannot be cancelled.
	busy chan struct{}

	// mu guards what Run's Xid and PCIe goroutines share with the reads:
	// device handles obtained after Open, the identity an Xid event
	// carries, the PCIe readings.
	mu sync.Mutex

	running atomic.Bool // a Run is in progress
	// closed is set once, by Close, under life; read freely.
	closed atomic.Bool
	// life orders Close against Run's start: Run adds its goroutines to
	// bg under it only while the sampler is open, and Close sets closed
	// under it, so bg.Add never races Close's bg.Wait, and no goroutine
	// enters NVML (EventSetCreate) after Close decided to shut it down.
	life sync.Mutex
	bg   sync.WaitGroup // Run's Xid and PCIe goroutines
	// quit is closed by Close: Run returns ErrClosed and its goroutines
	// stop at once, instead of at their next wake-up (a PCIe poll sleeps
	// 2 intervals), which would outlast Close's grace.
	quit chan struct{}
	// newHandle is signalled (without blocking) when a GPU's handle is
	// obtained after Open, so that the Xid goroutine registers it.
	newHandle chan struct{}

	// names caches process names by PID; see apps.go.
	names nameCache

	// xidBackoff is the first wait before an event set is rebuilt (tests
	// shorten it); 0 means 1 s.
	xidBackoff time.Duration
	// closeGrace bounds how long Close waits for a blocked NVML call;
	// 0 means 5 s.
	closeGrace time.Duration
}

// device is one GPU NVML counts, with what does not change between ticks.
type device struct {
	index int
	// h is nil while NVML refuses a handle (the GPU is then Missing). The
	// goroutine holding the busy token reads it freely and writes it under
	// Sampler.mu; other goroutines read it under Sampler.mu.
	h gonvml.Device

	// Identity and static limits, kept once read with a value (or a
	// stable non-value: not supported, absent); re-read while they fail.
	name, uuid, bus, ecc    event.Text
	smMax, genMax, widthMax event.Reading
	haveName, haveUUID      bool
	haveBus, haveECC        bool
	haveSMMax, haveGenMax   bool
	haveWidthMax            bool

	// Guarded by Sampler.mu: the UUID and bus id an Xid event names once
	// read; the latest PCIe rx and tx readings (KB/s) from Run's poller,
	// and when it read them (Options.Now; zero before the first read).
	xidUUID, xidBus string
	pcie            [2]event.Reading
	pcieAt          time.Time

	// dead is set (atomically, read by the PCIe poller) while the GPU's
	// last tick ended on GPU_IS_LOST, UNINITIALIZED or DRIVER_NOT_LOADED.
	dead atomic.Bool
}

const (
	defaultInterval = time.Second
	minInterval     = 10 * time.Millisecond
)

// withDefaults fills Options' zero values.
func withDefaults(o Options) Options {
	if o.Interval <= 0 {
		o.Interval = defaultInterval
	}
	o.Interval = max(o.Interval, minInterval)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Open initialises NVML from libnvidia-ml.so.1 (the driver's library,
// found by the dynamic loader) and opens every GPU: OpenLibrary over
// go-nvml's library. Errors are as OpenLibrary's.
func Open(opts Options) (*Sampler, error) {
	return OpenLibrary(gonvml.New(), opts)
}

// OpenLibrary initialises lib and opens every GPU it counts. lib is
// go-nvml's library (gonvml.New()), one of go-nvml's mocks, or a fake
// (the simulated host's); it must answer Extensions().LookupSymbol for
// the functions the sampler calls (symbols.go lists them).
//
// If Init fails, no other function of lib is called, not even Shutdown
// or ErrorString (with the real library that would kill the process), and
// the error is an *UnavailableError carrying the return code and a reason
// an operator can act on ("NVML init failed: ERROR_LIBRARY_NOT_FOUND (no
// libnvidia-ml.so.1: is the NVIDIA driver installed?)"). After a
// successful Init, OpenLibrary shuts NVML down again and returns an
// *UnavailableError when the device count cannot be read, when it is 0
// ("NVML lists no GPU"), or when no GPU's handle can be obtained. A GPU
// whose handle alone fails is kept: it is listed in Sample.Missing until
// NVML gives a handle for it.
func OpenLibrary(lib gonvml.Interface, opts Options) (*Sampler, error) {
	if lib == nil {
		return nil, &UnavailableError{Reason: "no NVML library"}
	}
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return nil, initFailed(ret)
	}
	s := &Sampler{lib: lib, opts: withDefaults(opts), busy: make(chan struct{}, 1),
		quit: make(chan struct{}), newHandle: make(chan struct{}, 1)}
	fail := func(e *UnavailableError) (*Sampler, error) {
		lib.Shutdown()
		return nil, e
	}
	ext := lib.Extensions()
	if ext == nil {
		return fail(&UnavailableError{Reason: "the NVML library offers no symbol lookup"})
	}
	s.sym = lookupSymbols(ext)
	if !s.sym.count || !s.sym.handle {
		return fail(&UnavailableError{Reason: "libnvidia-ml.so.1 lacks nvmlDeviceGetCount or nvmlDeviceGetHandleByIndex"})
	}
	s.info = s.readInfo()
	n, ret := lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return fail(&UnavailableError{Reason: "NVML cannot count GPUs: " + retName(ret), Code: int(ret)})
	}
	if n <= 0 {
		return fail(&UnavailableError{Reason: "NVML lists no GPU"})
	}
	s.info.GPUs = n
	s.devs = make([]*device, n)
	opened := 0
	var firstErr gonvml.Return
	for i := range s.devs {
		d := &device{index: i}
		s.devs[i] = d
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS || h == nil {
			if firstErr == gonvml.SUCCESS {
				firstErr = ret
			}
			continue
		}
		d.h = h
		opened++
	}
	if opened == 0 {
		return fail(&UnavailableError{
			Reason: fmt.Sprintf("NVML could not open any of %d GPUs: %s", n, retName(firstErr)),
			Code:   int(firstErr),
		})
	}
	return s, nil
}

// readInfo reads the driver and library versions; a value NVML cannot
// give stays empty (0 for CUDA).
func (s *Sampler) readInfo() Info {
	var in Info
	if s.sym.driverVersion {
		if v, ret := s.lib.SystemGetDriverVersion(); ret == gonvml.SUCCESS {
			in.Driver = cleanID(v)
		}
	}
	if s.sym.nvmlVersion {
		if v, ret := s.lib.SystemGetNVMLVersion(); ret == gonvml.SUCCESS {
			in.NVML = cleanID(v)
		}
	}
	if s.sym.cudaVersion {
		if v, ret := s.lib.SystemGetCudaDriverVersion(); ret == gonvml.SUCCESS && v > 0 {
			in.CUDA = v
		}
	}
	return in
}

// Info describes the library and driver: versions and GPU count.
func (s *Sampler) Info() Info { return s.info }

// acquire takes the busy token; it returns false when the sampler is
// closed.
func (s *Sampler) acquire() bool {
	s.busy <- struct{}{}
	if s.closed.Load() {
		<-s.busy
		return false
	}
	return true
}

func (s *Sampler) release() { <-s.busy }

// Sample reads every GPU once and returns the sample (At is when the read
// began; GPUs sorted by index). It publishes nothing: Xid events are only
// read by Run. With Options.PCIe and no Run in progress, it reads PCIe
// throughput itself, which blocks about 20 ms per GPU per direction. A GPU
// that fails answers with non-value Statuses in its row, not an error;
// the error is ErrClosed after Close.
func (s *Sampler) Sample() (event.GPUSample, error) {
	if !s.acquire() {
		return event.GPUSample{}, ErrClosed
	}
	defer s.release()
	r := s.read(!s.running.Load())
	return r.smp, nil
}

// grace is how long Close and Run wait for goroutines inside NVML.
func (s *Sampler) grace() time.Duration {
	if s.closeGrace > 0 {
		return s.closeGrace
	}
	return 5 * time.Second
}

// Close stops using NVML: it stops a Run in progress (which returns
// ErrClosed), waits for Run's goroutines and for a read in progress (at
// most a few seconds each: a call blocked in the driver cannot be
// cancelled) and shuts NVML down, once. Calls after the first return nil.
// It returns an error when a call is still blocked (NVML is then left
// initialised) or when nvmlShutdown fails.
func (s *Sampler) Close() error {
	s.life.Lock()
	if s.closed.Load() {
		s.life.Unlock()
		return nil
	}
	s.closed.Store(true)
	close(s.quit)
	s.life.Unlock()
	t := time.NewTimer(s.grace())
	defer t.Stop()
	bgDone := make(chan struct{})
	go func() { s.bg.Wait(); close(bgDone) }()
	select {
	case <-bgDone:
	case <-t.C:
		return errors.New("nvml: close: an NVML call is still blocked; NVML left initialised")
	}
	select {
	case s.busy <- struct{}{}:
	case <-t.C:
		return errors.New("nvml: close: an NVML call is still blocked; NVML left initialised")
	}
	defer func() { <-s.busy }()
	if ret := s.lib.Shutdown(); ret != gonvml.SUCCESS {
		return fmt.Errorf("nvml: shutdown: %s", retName(ret))
	}
	return nil
}
