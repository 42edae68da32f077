//go:build linux && cgo

package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// FakeNVML returns the simulated host's NVML library for the sim directory
// dir: a go-nvml Interface built on go-nvml's moq mocks (mock.Interface,
// mock.Device, mock.EventSet, mock.ExtendedInterface), whose GPUs are the
// fake nvidia-smi's. now is the model's clock (nil: time.Now); a call reads
// the GPUs as the fake nvidia-smi would print them at now (one snapshot
// answers every call for 5 ms of that clock, so one sampler tick sees one
// moment).
//
// What it answers, per NVML function (units as NVML gives them: mW, bytes,
// KB/s, MHz, °C):
//   - Init, InitWithFlags, Shutdown (reference counted), ErrorString,
//     Extensions().LookupSymbol (every "nvml…" symbol exists once
//     initialised), SystemGetDriverVersion / NVMLVersion /
//     CudaDriverVersion(_v2) (from the capture's `nvidia-smi --version`),
//     DeviceGetCount, DeviceGetHandleByIndex / ByUUID / ByPciBusId,
//     EventSetCreate;
//   - per device: see newDevice; a data cell nvidia-smi prints as a token
//     gives the NVML error behind it (cellReturn): "[GPU is lost]"
//     ERROR_GPU_IS_LOST, "[N/A]" ERROR_NOT_SUPPORTED, …;
//   - event sets: RegisterEvents, Wait (Faults.Xids), Free.
//
// Any other method panics (a moq mock with no function set): the sampler
// must not call it. Before Init and after the last Shutdown, calls return
// ERROR_UNINITIALIZED.
//
// Faults (Host.SetFaults, reread with each snapshot): LostGPUs give
// ERROR_GPU_IS_LOST on that GPU's data calls (name, UUID, bus id and index
// still answer, as nvidia-smi keeps those cells); HandleLostGPU makes
// DeviceGetHandleByIndex fail with ERROR_GPU_IS_LOST for that GPU, and an
// already obtained handle behave as lost; PCIe degradation and thermal
// slowdown read as in nvidia-smi; Stall blocks every call like a wedged
// driver until the fault is cleared, Shutdown is called, or 30 s pass
// (then ERROR_TIMEOUT), and Init until the fault is cleared or 30 s pass
// (there is no library to shut down yet); Xids are delivered through
// event sets.
// The error is that of reading sim.json or the GPU capture.
func FakeNVML(dir string, now func() time.Time) (gonvml.Interface, error) {
	f, err := newFakeNVML(dir, now)
	if err != nil {
		return nil, err
	}
	return f.lib, nil
}

// fakeNVML is the state behind FakeNVML's mocks.
type fakeNVML struct {
	gpus *simGPUs
	now  func() time.Time

	// Timings; tests shorten them.
	fresh      time.Duration // model-clock time a snapshot answers calls
	stallLimit time.Duration // wall-clock time a stalled call blocks at most
	poll       time.Duration // how often a stalled call or an event wait rereads the faults
	pcieWindow time.Duration // how long nvmlDeviceGetPcieThroughput blocks (NVML samples 20 ms)
	onStall    func()        // test hook: a call starts blocking on Faults.Stall

	lib  *mock.Interface
	ext  *mock.ExtendedInterface
	devs []*mock.Device

	mu        sync.Mutex
	inits     int           // Init calls minus Shutdown calls
	down      chan struct{} // closed when inits drops to 0: wakes blocked calls
	snap      *gpuSnapshot
	delivered map[XidFault]int // Xids delivered, by GPU and code
	made      time.Time        // when the library was made (now()), for XidReplay
	sets      map[*mock.EventSet]*fakeEventSet
}

// fakeEventSet is one nvmlEventSet_t: the event types each GPU registered.
type fakeEventSet struct {
	masks map[int]uint64 // GPU index → nvmlEventType* bits
}

const (
	snapshotFresh    = 5 * time.Millisecond
	stallLimit       = 30 * time.Second
	faultPoll        = 25 * time.Millisecond
	pcieSampleWindow = 20 * time.Millisecond
	// noInstance is NVML's GPU/compute instance id when MIG is off.
	noInstance = 0xFFFFFFFF
	mib        = 1 << 20
)

func newFakeNVML(dir string, now func() time.Time) (*fakeNVML, error) {
	gpus, err := newSimGPUs(dir)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	f := &fakeNVML{gpus: gpus, now: now, fresh: snapshotFresh, stallLimit: stallLimit,
		poll: faultPoll, pcieWindow: pcieSampleWindow,
		delivered: map[XidFault]int{}, sets: map[*mock.EventSet]*fakeEventSet{}, made: now()}
	f.ext = &mock.ExtendedInterface{LookupSymbolFunc: f.lookupSymbol}
	for i := 0; i < gpus.cfg.GPUs; i++ {
		f.devs = append(f.devs, f.newDevice(i))
	}
	f.lib = &mock.Interface{
		InitFunc:                          f.init,
		InitWithFlagsFunc:                 func(uint32) gonvml.Return { return f.init() },
		ShutdownFunc:                      f.shutdown,
		ErrorStringFunc:                   func(r gonvml.Return) string { return r.Error() },
		ExtensionsFunc:                    func() gonvml.ExtendedInterface { return f.ext },
		SystemGetDriverVersionFunc:        f.driverVersion,
		SystemGetNVMLVersionFunc:          f.nvmlVersion,
		SystemGetCudaDriverVersionFunc:    f.cudaVersion,
		SystemGetCudaDriverVersion_v2Func: f.cudaVersion,
		DeviceGetCountFunc:                f.deviceCount,
		DeviceGetHandleByIndexFunc:        f.handleByIndex,
		DeviceGetHandleByUUIDFunc:         f.handleByUUID,
		DeviceGetHandleByPciBusIdFunc:     f.handleByBusID,
		EventSetCreateFunc:                f.eventSetCreate,
	}
	return f, nil
}

// init is nvmlInit: it blocks while the driver is stalled.
func (f *fakeNVML) init() gonvml.Return {
	if readFaults(f.gpus.dir).Stall {
		if ret := f.wedged(nil); ret != gonvml.SUCCESS {
			return ret
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inits == 0 {
		f.down = make(chan struct{})
		f.snap = nil
	}
	f.inits++
	return gonvml.SUCCESS
}

// shutdown is nvmlShutdown: the last one wakes every blocked call and
// forgets the event sets.
func (f *fakeNVML) shutdown() gonvml.Return {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inits == 0 {
		return gonvml.ERROR_UNINITIALIZED
	}
	f.inits--
	if f.inits == 0 {
		close(f.down)
		clear(f.sets)
	}
	return gonvml.SUCCESS
}

var errLibraryNotLoaded = errors.New("library not loaded")

// lookupSymbol answers as go-nvml does for a driver that has every
// function: nil for an "nvml…" symbol once initialised.
func (f *fakeNVML) lookupSymbol(name string) error {
	f.mu.Lock()
	inited := f.inits > 0
	f.mu.Unlock()
	if !inited {
		return fmt.Errorf("error looking up %s: %w", name, errLibraryNotLoaded)
	}
	if !strings.HasPrefix(name, "nvml") {
		return fmt.Errorf("error looking up %s: undefined symbol", name)
	}
	return nil
}

// begin starts a call that reads the driver: ERROR_UNINITIALIZED unless
// initialised; while Faults.Stall holds it blocks (wedged). It returns the
// snapshot that answers the call.
func (f *fakeNVML) begin() (*gpuSnapshot, gonvml.Return) {
	for {
		f.mu.Lock()
		if f.inits == 0 {
			f.mu.Unlock()
			return nil, gonvml.ERROR_UNINITIALIZED
		}
		now := f.now()
		if f.snap == nil || now.Sub(f.snap.at) >= f.fresh || now.Before(f.snap.at) {
			f.snap = f.gpus.snapshot(now)
		}
		s, down := f.snap, f.down
		f.mu.Unlock()
		if !s.faults.Stall {
			return s, gonvml.SUCCESS
		}
		if ret := f.wedged(down); ret != gonvml.SUCCESS {
			return nil, ret
		}
	}
}

// wedged blocks like a call into a hung driver: until Faults.Stall is
// cleared (SUCCESS; the next call takes a new snapshot), down is closed
// (ERROR_UNINITIALIZED: NVML was shut down) or stallLimit passes
// (ERROR_TIMEOUT).
func (f *fakeNVML) wedged(down <-chan struct{}) gonvml.Return {
	if f.onStall != nil {
		f.onStall()
	}
	limit := time.NewTimer(f.stallLimit)
	defer limit.Stop()
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	for {
		select {
		case <-down:
			return gonvml.ERROR_UNINITIALIZED
		case <-limit.C:
			return gonvml.ERROR_TIMEOUT
		case <-tick.C:
			if !readFaults(f.gpus.dir).Stall {
				f.mu.Lock()
				f.snap = nil
				f.mu.Unlock()
				return gonvml.SUCCESS
			}
		}
	}
}

// versionField is a "KEY : value" line of the capture's `nvidia-smi
// --version` section.
func (f *fakeNVML) versionField(key string) string {
	for _, l := range strings.Split(f.gpus.cap.Version, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// driverVersion is nvmlSystemGetDriverVersion: "590.48.01".
func (f *fakeNVML) driverVersion() (string, gonvml.Return) {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return "", ret
	}
	if v := f.versionField("DRIVER version"); v != "" {
		return v, gonvml.SUCCESS
	}
	if len(s.rows) > 0 && isVersion(s.rows[0]["driver_version"]) {
		return s.rows[0]["driver_version"], gonvml.SUCCESS
	}
	return "590.48.01", gonvml.SUCCESS
}

func isVersion(s string) bool {
	return s != "" && strings.Trim(s, "0123456789.") == ""
}

// cudaVersion is nvmlSystemGetCudaDriverVersion: 1000×major + 10×minor
// ("13.1" → 13010).
func (f *fakeNVML) cudaVersion() (int, gonvml.Return) {
	if _, ret := f.begin(); ret != gonvml.SUCCESS {
		return 0, ret
	}
	v := f.versionField("CUDA Version")
	if v == "" {
		v = "13.1"
	}
	maj, min, _ := strings.Cut(v, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil {
		return 0, gonvml.ERROR_UNKNOWN
	}
	return a*1000 + b*10, gonvml.SUCCESS
}

// nvmlVersion is nvmlSystemGetNVMLVersion: CUDA major "." driver version,
// "13.590.48.01".
func (f *fakeNVML) nvmlVersion() (string, gonvml.Return) {
	d, ret := f.driverVersion()
	if ret != gonvml.SUCCESS {
		return "", ret
	}
	c, ret := f.cudaVersion()
	if ret != gonvml.SUCCESS {
		return "", ret
	}
	return strconv.Itoa(c/1000) + "." + d, gonvml.SUCCESS
}

func (f *fakeNVML) deviceCount() (int, gonvml.Return) {
	if _, ret := f.begin(); ret != gonvml.SUCCESS {
		return 0, ret
	}
	return len(f.devs), gonvml.SUCCESS
}

// handleByIndex is nvmlDeviceGetHandleByIndex_v2; the GPU of
// Faults.HandleLostGPU gives ERROR_GPU_IS_LOST.
func (f *fakeNVML) handleByIndex(i int) (gonvml.Device, gonvml.Return) {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return nil, ret
	}
	if i < 0 || i >= len(f.devs) {
		return nil, gonvml.ERROR_INVALID_ARGUMENT
	}
	if s.handleLost == i {
		return nil, gonvml.ERROR_GPU_IS_LOST
	}
	return f.devs[i], gonvml.SUCCESS
}

func (f *fakeNVML) handleByUUID(uuid string) (gonvml.Device, gonvml.Return) {
	return f.handleWhere(func(r gpuRow) bool { return r["uuid"] == uuid })
}

// handleByBusID accepts the 8- and 4-digit domain forms, any case.
func (f *fakeNVML) handleByBusID(bus string) (gonvml.Device, gonvml.Return) {
	want := normBus(bus)
	return f.handleWhere(func(r gpuRow) bool { return normBus(r["pci.bus_id"]) == want })
}

func normBus(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	dom, rest, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	return strings.TrimLeft(dom, "0") + ":" + rest
}

func (f *fakeNVML) handleWhere(match func(gpuRow) bool) (gonvml.Device, gonvml.Return) {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return nil, ret
	}
	for i, r := range s.rows {
		if match(r) {
			if s.handleLost == i {
				return nil, gonvml.ERROR_GPU_IS_LOST
			}
			return f.devs[i], gonvml.SUCCESS
		}
	}
	return nil, gonvml.ERROR_NOT_FOUND
}

// eventSetCreate is nvmlEventSetCreate: a set whose Wait delivers
// Faults.Xids for the GPUs registered in it.
func (f *fakeNVML) eventSetCreate() (gonvml.EventSet, gonvml.Return) {
	if _, ret := f.begin(); ret != gonvml.SUCCESS {
		return nil, ret
	}
	es := &mock.EventSet{}
	es.WaitFunc = func(ms uint32) (gonvml.EventData, gonvml.Return) { return f.wait(es, ms) }
	es.FreeFunc = func() gonvml.Return { return f.free(es) }
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inits == 0 {
		return nil, gonvml.ERROR_UNINITIALIZED // shut down meanwhile
	}
	f.sets[es] = &fakeEventSet{masks: map[int]uint64{}}
	return es, gonvml.SUCCESS
}

// supportedEvents is what every simulated GPU can report
// (nvmlDeviceGetSupportedEventTypes).
const supportedEvents = gonvml.EventTypeAll

// register is nvmlDeviceRegisterEvents for GPU i.
func (f *fakeNVML) register(i int, types uint64, set gonvml.EventSet) gonvml.Return {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return ret
	}
	if s.lost(i) {
		return gonvml.ERROR_GPU_IS_LOST
	}
	if types&^uint64(supportedEvents) != 0 {
		return gonvml.ERROR_NOT_SUPPORTED
	}
	es, _ := set.(*mock.EventSet)
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.sets[es]
	if st == nil {
		return gonvml.ERROR_INVALID_ARGUMENT
	}
	st.masks[i] |= types
	return gonvml.SUCCESS
}

// wait is nvmlEventSetWait_v2: the next undelivered Xid of a GPU
// registered for Xid events in es, waiting up to ms milliseconds (wall
// clock) for one to be injected; ERROR_TIMEOUT when none came.
func (f *fakeNVML) wait(es *mock.EventSet, ms uint32) (gonvml.EventData, gonvml.Return) {
	deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
	for {
		faults := readFaults(f.gpus.dir)
		f.mu.Lock()
		st, down, inited := f.sets[es], f.down, f.inits > 0
		var ev gonvml.EventData
		found := false
		if inited && st != nil {
			ev, found = f.nextXid(st, faults.Xids)
		}
		f.mu.Unlock()
		switch {
		case !inited:
			return gonvml.EventData{}, gonvml.ERROR_UNINITIALIZED
		case st == nil:
			return gonvml.EventData{}, gonvml.ERROR_INVALID_ARGUMENT // freed
		case found:
			return ev, gonvml.SUCCESS
		}
		left := time.Until(deadline)
		if left <= 0 {
			return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
		}
		t := time.NewTimer(min(left, f.poll))
		select {
		case <-down:
			t.Stop()
			return gonvml.EventData{}, gonvml.ERROR_UNINITIALIZED
		case <-t.C:
		}
	}
}

// nextXid takes the first entry of xids not yet delivered whose GPU is
// registered for Xid events in st and that happened at most XidReplay
// before the library was made. An entry is told from others by its GPU
// and code: the k-th (GPU, code) entry is delivered once, and when the
// faults hold fewer such entries than were delivered (cleared), the count
// drops, so that adding the entry again delivers it again. f.mu is held.
func (f *fakeNVML) nextXid(st *fakeEventSet, xids []XidFault) (gonvml.EventData, bool) {
	count := make(map[XidFault]int, len(xids))
	for _, x := range xids {
		count[x]++
	}
	for x, n := range f.delivered {
		if c := count[x]; n > c {
			if c == 0 {
				delete(f.delivered, x)
			} else {
				f.delivered[x] = c
			}
		}
	}
	seen := make(map[XidFault]int, len(xids))
	for _, x := range xids {
		seen[x]++
		if seen[x] <= f.delivered[x] || x.GPU < 0 || x.GPU >= len(f.devs) ||
			st.masks[x.GPU]&gonvml.EventTypeXidCriticalError == 0 {
			continue
		}
		if x.At != 0 && !f.firstToReport(x, seen[x]) && f.made.Sub(time.Unix(0, x.At)) > XidReplay {
			continue
		}
		f.delivered[x]++
		return gonvml.EventData{Device: f.devs[x.GPU], EventType: gonvml.EventTypeXidCriticalError,
			EventData: x.Code, GpuInstanceId: noInstance, ComputeInstanceId: noInstance}, true
	}
	return gonvml.EventData{}, false
}

// firstToReport reports whether this library is the first of the sim
// directory to report the k-th entry x, and claims it (a marker file
// created with O_EXCL in run/). An Xid is reported by the first library
// however late it was made (the demo's Xid reaches its first agent however
// slowly it started), and by others only when made within XidReplay of it
// (a second cockpit starting with the demo), never by an agent restarted
// later.
func (f *fakeNVML) firstToReport(x XidFault, k int) bool {
	name := filepath.Join(f.gpus.dir, "run", fmt.Sprintf("xid-reported-%d-%d-%d-%d", x.GPU, x.Code, x.At, k))
	m, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	m.Close()
	return true
}

// free is nvmlEventSetFree; freeing a set twice is ERROR_INVALID_ARGUMENT.
func (f *fakeNVML) free(es *mock.EventSet) gonvml.Return {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inits == 0 {
		return gonvml.ERROR_UNINITIALIZED
	}
	if f.sets[es] == nil {
		return gonvml.ERROR_INVALID_ARGUMENT
	}
	delete(f.sets, es)
	return gonvml.SUCCESS
}
