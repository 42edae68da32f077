//go:build linux && cgo

package sim

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// testClock is an adjustable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// openFake returns an initialised fake over dir at clock with fast timings.
func openFake(t *testing.T, dir string, clock *testClock) *fakeNVML {
	t.Helper()
	f, err := newFakeNVML(dir, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	f.poll, f.pcieWindow = time.Millisecond, 0
	if ret := f.lib.Init(); ret != gonvml.SUCCESS {
		t.Fatalf("Init: %v", ret)
	}
	t.Cleanup(func() { f.lib.Shutdown() })
	return f
}

func handle(t *testing.T, f *fakeNVML, i int) gonvml.Device {
	t.Helper()
	d, ret := f.lib.DeviceGetHandleByIndex(i)
	if ret != gonvml.SUCCESS {
		t.Fatalf("handle %d: %v", i, ret)
	}
	return d
}

// TestFakeNVMLCalls checks the values and units of the calls one by one on
// an idle GPU and a loaded one.
func TestFakeNVMLCalls(t *testing.T) {
	dir := busyDir(t)
	clock := &testClock{t: nvmlTestNow}
	f := openFake(t, dir, clock)
	s := f.gpus.snapshot(nvmlTestNow)
	row := s.rows[1]
	d := handle(t, f, 1)

	m2, ret := d.GetMemoryInfo_v2()
	m1, ret1 := d.GetMemoryInfo()
	if ret != gonvml.SUCCESS || ret1 != gonvml.SUCCESS {
		t.Fatalf("memory: %v %v", ret, ret1)
	}
	if m2.Used/mib != mustInt(t, row["memory.used"]) || m2.Total/mib != mustInt(t, row["memory.total"]) ||
		m2.Reserved/mib != 614 || m2.Total != m2.Used+m2.Reserved+m2.Free || m2.Version != gonvml.STRUCT_VERSION(gonvml.Memory_v2{}, 2) {
		t.Errorf("memory v2 %+v for row used %s total %s", m2, row["memory.used"], row["memory.total"])
	}
	if m1.Total != m2.Total || m1.Free != m2.Free || m1.Used != m2.Used+m2.Reserved {
		t.Errorf("memory v1 %+v: want v2's total and free, used including reserved", m1)
	}
	if mw, ret := d.GetPowerUsage(); ret != gonvml.SUCCESS || float64(mw)/1000 != mustFloat(t, row["power.draw"]) {
		t.Errorf("power %d mW, %v; row %s W", mw, ret, row["power.draw"])
	}
	if mw, ret := d.GetPowerManagementLimit(); ret != gonvml.SUCCESS || mw != 700_000 {
		t.Errorf("power limit %d mW, %v", mw, ret)
	}
	if mw, ret := d.GetEnforcedPowerLimit(); ret != gonvml.SUCCESS || mw != 700_000 {
		t.Errorf("enforced power limit %d mW, %v", mw, ret)
	}
	if c, ret := d.GetClockInfo(gonvml.CLOCK_SM); ret != gonvml.SUCCESS || c != 1980 {
		t.Errorf("SM clock %d, %v (loaded GPU: 1980)", c, ret)
	}
	if c, ret := d.GetMaxClockInfo(gonvml.CLOCK_MEM); ret != gonvml.SUCCESS || c != 3201 {
		t.Errorf("max mem clock %d, %v", c, ret)
	}
	if _, ret := d.GetClockInfo(gonvml.ClockType(9)); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("clock 9: %v", ret)
	}
	if _, ret := d.GetFanSpeed(); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("fan on an H200 (nvidia-smi [N/A]): %v, want ERROR_NOT_SUPPORTED", ret)
	}
	if n, ret := d.GetNumFans(); n != 0 || ret != gonvml.SUCCESS {
		t.Errorf("fans %d, %v", n, ret)
	}
	if p, ret := d.GetPerformanceState(); p != gonvml.PSTATE_0 || ret != gonvml.SUCCESS {
		t.Errorf("pstate %v, %v", p, ret)
	}
	if m, ret := d.GetCurrentClocksEventReasons(); m != 0 || ret != gonvml.SUCCESS {
		t.Errorf("loaded GPU reasons %#x, %v", m, ret)
	}
	if m, ret := d.GetSupportedClocksEventReasons(); m != 0x1FF || ret != gonvml.SUCCESS {
		t.Errorf("supported reasons %#x, %v", m, ret)
	}
	p, ret := d.GetPciInfo()
	if ret != gonvml.SUCCESS || cString(p.BusId[:]) != "00000000:2A:00.0" || cString(p.BusIdLegacy[:]) != "0000:2A:00.0" ||
		p.Bus != 0x2A || p.PciDeviceId != 0x233510DE {
		t.Errorf("PCI info %+v (%q, %q), %v", p, cString(p.BusId[:]), cString(p.BusIdLegacy[:]), ret)
	}
	if st, ret := d.GetPersistenceMode(); st != gonvml.FEATURE_ENABLED || ret != gonvml.SUCCESS {
		t.Errorf("persistence %v, %v", st, ret)
	}
	if cur, pend, ret := d.GetEccMode(); cur != gonvml.FEATURE_ENABLED || pend != gonvml.FEATURE_ENABLED || ret != gonvml.SUCCESS {
		t.Errorf("ECC %v/%v, %v", cur, pend, ret)
	}
	if cur, _, ret := d.GetMigMode(); cur != gonvml.DEVICE_MIG_DISABLE || ret != gonvml.SUCCESS {
		t.Errorf("MIG %v, %v", cur, ret)
	}
	if g, ret := d.GetGpuMaxPcieLinkGeneration(); g != 5 || ret != gonvml.SUCCESS {
		t.Errorf("GPU max PCIe gen %d, %v", g, ret)
	}
	rx, ret := d.GetPcieThroughput(gonvml.PCIE_UTIL_RX_BYTES)
	tx, ret2 := d.GetPcieThroughput(gonvml.PCIE_UTIL_TX_BYTES)
	if want := pcieThroughput(1, 0.8); ret != gonvml.SUCCESS || ret2 != gonvml.SUCCESS || rx != want[0] || tx != want[1] {
		t.Errorf("PCIe rx %d tx %d (%v %v), want %v", rx, tx, ret, ret2, want)
	}
	procs, ret := d.GetComputeRunningProcesses()
	if ret != gonvml.SUCCESS || len(procs) != 1 || int(procs[0].Pid) != s.apps[1][0].pid ||
		procs[0].UsedGpuMemory != uint64(s.apps[1][0].memMiB)*mib || procs[0].GpuInstanceId != noInstance {
		t.Errorf("processes %+v, %v; want %+v", procs, ret, s.apps[1])
	}
	if maj, min, ret := d.GetCudaComputeCapability(); maj != 9 || min != 0 || ret != gonvml.SUCCESS {
		t.Errorf("compute capability %d.%d, %v", maj, min, ret)
	}
	if _, ret := f.lib.DeviceGetHandleByIndex(8); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("handle 8 of 8: %v", ret)
	}
	if h, ret := f.lib.DeviceGetHandleByPciBusId("0000:2a:00.0"); ret != gonvml.SUCCESS || h != d {
		t.Errorf("handle by bus id: %v, %v", h, ret)
	}
	if h, ret := f.lib.DeviceGetHandleByUUID(gpuUUID(1)); ret != gonvml.SUCCESS || h != d {
		t.Errorf("handle by UUID: %v, %v", h, ret)
	}
	if err := f.lib.Extensions().LookupSymbol("nvmlDeviceGetCurrentClocksEventReasons"); err != nil {
		t.Errorf("LookupSymbol: %v", err)
	}
}

func cString(b []int8) string {
	var s []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

func mustInt(t *testing.T, s string) uint64 {
	t.Helper()
	return uint64(mustFloat(t, s))
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFakeNVMLUninitialized: nothing answers before Init or after the last
// Shutdown; Init and Shutdown are counted.
func TestFakeNVMLUninitialized(t *testing.T) {
	f, err := newFakeNVML(busyDir(t), func() time.Time { return nvmlTestNow })
	if err != nil {
		t.Fatal(err)
	}
	lib := f.lib
	if _, ret := lib.DeviceGetCount(); ret != gonvml.ERROR_UNINITIALIZED {
		t.Errorf("count before Init: %v", ret)
	}
	if err := lib.Extensions().LookupSymbol("nvmlInit_v2"); !errors.Is(err, errLibraryNotLoaded) {
		t.Errorf("LookupSymbol before Init: %v", err)
	}
	if ret := lib.Shutdown(); ret != gonvml.ERROR_UNINITIALIZED {
		t.Errorf("Shutdown before Init: %v", ret)
	}
	lib.Init()
	d, _ := lib.DeviceGetHandleByIndex(0)
	lib.Init()
	lib.Shutdown()
	if n, ret := lib.DeviceGetCount(); n != 8 || ret != gonvml.SUCCESS {
		t.Errorf("count after 2 Init and 1 Shutdown: %d, %v", n, ret)
	}
	lib.Shutdown()
	if _, ret := d.GetName(); ret != gonvml.ERROR_UNINITIALIZED {
		t.Errorf("name after Shutdown: %v", ret)
	}
	if err := lib.Extensions().LookupSymbol("nvmlInit_v2"); err == nil {
		t.Error("LookupSymbol after Shutdown succeeded")
	}
}

// TestFakeNVMLFaults: a lost GPU fails its data calls only; a lost handle
// fails for that GPU only; degraded PCIe and thermal slowdown read as in
// nvidia-smi. Faults are reread when the clock moves on.
func TestFakeNVMLFaults(t *testing.T) {
	dir := busyDir(t)
	clock := &testClock{t: nvmlTestNow}
	f := openFake(t, dir, clock)
	d6, d2, d5 := handle(t, f, 6), handle(t, f, 2), handle(t, f, 5)

	for name, ret := range map[string]gonvml.Return{
		"util": second(d6.GetUtilizationRates()), "memory": second(d6.GetMemoryInfo_v2()),
		"power": second(d6.GetPowerUsage()), "temp": second(d6.GetTemperature(gonvml.TEMPERATURE_GPU)),
		"clock": second(d6.GetClockInfo(gonvml.CLOCK_SM)), "pstate": second(d6.GetPerformanceState()),
		"procs": second(d6.GetComputeRunningProcesses()), "pcie": second(d6.GetPcieThroughput(gonvml.PCIE_UTIL_RX_BYTES)),
		"reasons": second(d6.GetCurrentClocksEventReasons()), "gen": second(d6.GetCurrPcieLinkGeneration()),
	} {
		if ret != gonvml.ERROR_GPU_IS_LOST {
			t.Errorf("lost GPU 6 %s: %v, want ERROR_GPU_IS_LOST", name, ret)
		}
	}
	if n, ret := d6.GetName(); ret != gonvml.SUCCESS || n != "NVIDIA H200" {
		t.Errorf("lost GPU 6 name %q, %v (nvidia-smi keeps identity cells)", n, ret)
	}
	if _, ret := d5.GetUtilizationRates(); ret != gonvml.SUCCESS {
		t.Errorf("GPU 5 beside the lost one: %v", ret)
	}

	gpu2 := 2
	writeFaults(t, dir, Faults{HandleLostGPU: &gpu2, Xids: []XidFault{{GPU: 2, Code: 79}}})
	if _, ret := d2.GetUtilizationRates(); ret != gonvml.SUCCESS {
		t.Errorf("faults reread before the clock moved: %v", ret)
	}
	clock.add(time.Second)
	if _, ret := f.lib.DeviceGetHandleByIndex(2); ret != gonvml.ERROR_GPU_IS_LOST {
		t.Errorf("handle of GPU 2 (handle lost): %v", ret)
	}
	if _, ret := d2.GetUtilizationRates(); ret != gonvml.ERROR_GPU_IS_LOST {
		t.Errorf("GPU 2 through an earlier handle: %v", ret)
	}
	if _, ret := f.lib.DeviceGetHandleByIndex(6); ret != gonvml.SUCCESS {
		t.Errorf("GPU 6 is no longer lost: %v", ret)
	}
	if _, ret := d6.GetUtilizationRates(); ret != gonvml.SUCCESS {
		t.Errorf("GPU 6 after the fault was cleared: %v", ret)
	}
	if _, ret := d5.GetUtilizationRates(); ret != gonvml.SUCCESS {
		t.Errorf("GPU 5: %v", ret)
	}

	writeFaults(t, dir, Faults{PCIeDegradedGPUs: []int{5}, ThermalGPUs: []int{5}})
	clock.add(time.Second)
	writeState(t, dir, serverState{PID: os.Getpid(), Heartbeat: clock.now().UnixNano(), TP: 8, MemMiB: 120_000, Load: 0.8, Heat: 0.5})
	g, _ := d5.GetCurrPcieLinkGeneration()
	w, _ := d5.GetCurrPcieLinkWidth()
	gm, _ := d5.GetMaxPcieLinkGeneration()
	wm, _ := d5.GetMaxPcieLinkWidth()
	if g != 4 || w != 8 || gm != 5 || wm != 16 {
		t.Errorf("degraded GPU 5: Gen%d x%d (max Gen%d x%d), want Gen4 x8 (max Gen5 x16)", g, w, gm, wm)
	}
	temp, _ := d5.GetTemperature(gonvml.TEMPERATURE_GPU)
	reasons, _ := d5.GetCurrentClocksEventReasons()
	sm, _ := d5.GetClockInfo(gonvml.CLOCK_SM)
	if temp < 87 || reasons&reasonSWThermalSlowdown == 0 || sm >= 1980 {
		t.Errorf("thermal GPU 5: %d °C, reasons %#x, SM %d MHz", temp, reasons, sm)
	}
}

func second[T any](_ T, r gonvml.Return) gonvml.Return { return r }

// TestFakeNVMLStall: while Faults.Stall holds, a call blocks like one into
// a wedged driver; it returns when the fault is cleared, when NVML is shut
// down, or at the stall limit.
func TestFakeNVMLStall(t *testing.T) {
	dir := busyDir(t)
	clock := &testClock{t: nvmlTestNow}
	f := openFake(t, dir, clock)
	d := handle(t, f, 0)
	writeFaults(t, dir, Faults{Stall: true})
	clock.add(time.Second)

	stalled := make(chan struct{}, 4)
	f.onStall = func() { stalled <- struct{}{} }
	done := make(chan gonvml.Return, 1)
	go func() { done <- second(d.GetUtilizationRates()) }()
	<-stalled
	select {
	case ret := <-done:
		t.Fatalf("stalled call returned %v before the fault was cleared", ret)
	default:
	}
	writeFaults(t, dir, Faults{})
	select {
	case ret := <-done:
		if ret != gonvml.SUCCESS {
			t.Errorf("call after the stall cleared: %v", ret)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call still blocked 10 s after the stall was cleared")
	}

	writeFaults(t, dir, Faults{Stall: true})
	clock.add(time.Second)
	f.stallLimit = 20 * time.Millisecond
	if _, ret := d.GetPowerUsage(); ret != gonvml.ERROR_TIMEOUT {
		t.Errorf("call past the stall limit: %v, want ERROR_TIMEOUT", ret)
	}
	f.stallLimit = time.Hour
	go func() { done <- second(f.lib.DeviceGetCount()) }()
	<-stalled
	f.lib.Shutdown()
	select {
	case ret := <-done:
		if ret != gonvml.ERROR_UNINITIALIZED {
			t.Errorf("stalled call at Shutdown: %v, want ERROR_UNINITIALIZED", ret)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stalled call still blocked 10 s after Shutdown")
	}
	writeFaults(t, dir, Faults{})
	f.lib.Init() // for the cleanup's Shutdown
}

// xidSet is a new event set of f with GPUs gpus registered for Xid events.
func xidSet(t *testing.T, f *fakeNVML, gpus ...int) gonvml.EventSet {
	t.Helper()
	set, ret := f.lib.EventSetCreate()
	if ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	for _, i := range gpus {
		if ret := handle(t, f, i).RegisterEvents(gonvml.EventTypeXidCriticalError, set); ret != gonvml.SUCCESS {
			t.Fatalf("register GPU %d: %v", i, ret)
		}
	}
	return set
}

// TestFakeNVMLXids: each injected Xid is delivered once, to a set where its
// GPU registered for Xid events; a repeated entry is delivered again, and
// so is one cleared and injected anew.
func TestFakeNVMLXids(t *testing.T) {
	dir := busyDir(t)
	writeFaults(t, dir, Faults{})
	clock := &testClock{t: nvmlTestNow}
	f := openFake(t, dir, clock)
	set := xidSet(t, f, 0, 3)
	if ret := handle(t, f, 1).RegisterEvents(gonvml.EventTypePState, set); ret != gonvml.SUCCESS {
		t.Fatalf("register GPU 1 for P-state events: %v", ret)
	}
	if _, ret := set.Wait(0); ret != gonvml.ERROR_TIMEOUT {
		t.Errorf("Wait with nothing injected: %v", ret)
	}
	type xid struct {
		gpu  int
		code uint64
	}
	drain := func() []xid {
		var got []xid
		for {
			ev, ret := set.Wait(0)
			if ret == gonvml.ERROR_TIMEOUT {
				return got
			}
			if ret != gonvml.SUCCESS || ev.EventType != gonvml.EventTypeXidCriticalError || ev.GpuInstanceId != noInstance {
				t.Fatalf("Wait: %+v, %v", ev, ret)
			}
			i, _ := ev.Device.GetIndex()
			got = append(got, xid{i, ev.EventData})
		}
	}
	check := func(step string, want ...xid) {
		t.Helper()
		if got := drain(); len(got) != len(want) || !slices.Equal(got, want) {
			t.Errorf("%s: delivered %v, want %v", step, got, want)
		}
	}
	// GPU 1 registered for P-state only, GPU 5 not at all, GPU 9 does not exist.
	writeFaults(t, dir, Faults{Xids: []XidFault{{GPU: 3, Code: 79}, {GPU: 1, Code: 13}, {GPU: 0, Code: 48}, {GPU: 5, Code: 31}, {GPU: 9, Code: 79}}})
	check("first injection", xid{3, 79}, xid{0, 48})
	check("same faults again")
	writeFaults(t, dir, Faults{Xids: []XidFault{{GPU: 3, Code: 79}, {GPU: 1, Code: 13}, {GPU: 0, Code: 48}, {GPU: 5, Code: 31}, {GPU: 9, Code: 79}, {GPU: 3, Code: 79}}})
	check("a second (3, 79)", xid{3, 79})
	writeFaults(t, dir, Faults{Xids: []XidFault{{GPU: 3, Code: 79}}})
	check("(0, 48) cleared")
	writeFaults(t, dir, Faults{Xids: []XidFault{{GPU: 3, Code: 79}, {GPU: 0, Code: 48}}})
	check("(0, 48) injected anew", xid{0, 48})

	// A Wait blocks until an Xid comes.
	done := make(chan xid, 1)
	go func() {
		ev, ret := set.Wait(60_000)
		if ret != gonvml.SUCCESS {
			done <- xid{-1, uint64(ret)}
			return
		}
		i, _ := ev.Device.GetIndex()
		done <- xid{i, ev.EventData}
	}()
	writeFaults(t, dir, Faults{Xids: []XidFault{{GPU: 3, Code: 79}, {GPU: 0, Code: 48}, {GPU: 0, Code: 94}}})
	select {
	case got := <-done:
		if got != (xid{0, 94}) {
			t.Errorf("blocking Wait: %v, want (0, 94)", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait still blocked 10 s after the Xid was injected")
	}

	if ret := set.Free(); ret != gonvml.SUCCESS {
		t.Errorf("Free: %v", ret)
	}
	if ret := set.Free(); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("second Free: %v", ret)
	}
	if _, ret := set.Wait(0); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("Wait on a freed set: %v", ret)
	}
	if ret := handle(t, f, 0).RegisterEvents(gonvml.EventTypeXidCriticalError, set); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("register into a freed set: %v", ret)
	}
}

// TestFakeNVMLXidReplayWindow: an Xid with a time goes to the first
// library of the sim directory however late it was made (the demo's Xid
// reaches its first agent on a slow machine), to another only when that
// one was made within XidReplay of it (a second cockpit starting with the
// demo), never to one made later (an agent restarted after a kill does not
// report the demo's Xid again).
func TestFakeNVMLXidReplayWindow(t *testing.T) {
	dir := busyDir(t)
	old, recent := nvmlTestNow.Add(-XidReplay-time.Second).UnixNano(), nvmlTestNow.Add(-XidReplay/2).UnixNano()
	writeFaults(t, dir, Faults{Xids: []XidFault{{GPU: 3, Code: 79, At: old}, {GPU: 0, Code: 48, At: recent}}})
	drain := func(f *fakeNVML) []uint64 {
		set := xidSet(t, f, 0, 3)
		var got []uint64
		for {
			ev, ret := set.Wait(0)
			if ret != gonvml.SUCCESS {
				return got
			}
			got = append(got, ev.EventData)
		}
	}
	if got := drain(openFake(t, dir, &testClock{t: nvmlTestNow})); !slices.Equal(got, []uint64{79, 48}) {
		t.Errorf("the first library got %v, want both Xids", got)
	}
	if got := drain(openFake(t, dir, &testClock{t: nvmlTestNow})); !slices.Equal(got, []uint64{48}) {
		t.Errorf("a second library made at once got %v, want only the recent Xid", got)
	}
	if got := drain(openFake(t, dir, &testClock{t: nvmlTestNow.Add(time.Minute)})); len(got) != 0 {
		t.Errorf("a library made a minute later (a restarted agent) got %v, want none", got)
	}
}
