//go:build linux && cgo

package nvml

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// gpuVals are the NVML-unit values one mock GPU answers with. fail names
// a method ("util", "mem", …, or "*" for all) that returns a code
// instead. Methods lock mu, so a test may change values between reads
// while Run is going.
type gpuVals struct {
	mu sync.Mutex

	util, memUtil      uint32
	usedB, totalB      uint64 // bytes
	powerMW, limitMW   uint32
	tempC              uint32
	smMHz, memMHz      uint32
	smMaxMHz           uint32
	fanPct             uint32
	pstate             gonvml.Pstates
	genCur, genMax     int
	widthCur, widthMax int
	reasons            uint64
	persistence, ecc   gonvml.EnableState
	mig                int
	bus, name, uuid    string
	rxKBs, txKBs       uint32
	procs              []gonvml.ProcessInfo

	fail map[string]gonvml.Return
}

// ret returns the code method answers with (SUCCESS unless failed).
func (v *gpuVals) ret(method string) gonvml.Return {
	if r, ok := v.fail["*"]; ok {
		return r
	}
	if r, ok := v.fail[method]; ok {
		return r
	}
	return gonvml.SUCCESS
}

func (v *gpuVals) setFail(method string, r gonvml.Return) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.fail == nil {
		v.fail = map[string]gonvml.Return{}
	}
	if r == gonvml.SUCCESS {
		delete(v.fail, method)
		return
	}
	v.fail[method] = r
}

// a100Vals gives realistic DGX A100 values for GPU i, distinct per GPU.
func a100Vals(i int) *gpuVals {
	return &gpuVals{
		util: uint32(10 + i), memUtil: uint32(3 + i),
		usedB: uint64(1000+i)*mib + 123456, totalB: 40960 * mib,
		powerMW: 215_430 + uint32(i), limitMW: 400_000,
		tempC: uint32(40 + i), smMHz: 1410, memMHz: 1215, smMaxMHz: 1410,
		fanPct: 0, pstate: gonvml.PSTATE_0,
		genCur: 4, genMax: 4, widthCur: 16, widthMax: 16,
		reasons:     uint64(0x4 | 0x1),
		persistence: gonvml.FEATURE_ENABLED, ecc: gonvml.FEATURE_ENABLED, mig: gonvml.DEVICE_MIG_DISABLE,
		bus:  fmt.Sprintf("00000000:%02X:00.0", 0x07+0x10*i),
		name: "NVIDIA A100-SXM4-40GB", uuid: fmt.Sprintf("GPU-a100-%d", i),
		rxKBs: uint32(1000 * (i + 1)), txKBs: uint32(2000 * (i + 1)),
	}
}

// cstr is a C char array holding s.
func cstr(s string) [32]int8 {
	var b [32]int8
	for i := 0; i < len(s) && i < 31; i++ {
		b[i] = int8(s[i])
	}
	return b
}

// fill makes a dgxa100 mock device answer every method the sampler
// calls from v.
func fill(d *dgxa100.Device, v *gpuVals) {
	lock := func() func() { v.mu.Lock(); return v.mu.Unlock }
	d.GetNameFunc = func() (string, gonvml.Return) { defer lock()(); return v.name, v.ret("name") }
	d.GetUUIDFunc = func() (string, gonvml.Return) { defer lock()(); return v.uuid, v.ret("uuid") }
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		defer lock()()
		return gonvml.PciInfo{BusId: cstr(v.bus)}, v.ret("pci")
	}
	d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
		defer lock()()
		return gonvml.Utilization{Gpu: v.util, Memory: v.memUtil}, v.ret("util")
	}
	d.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
		defer lock()()
		return gonvml.Memory_v2{Total: v.totalB, Used: v.usedB, Reserved: 500 * mib, Free: v.totalB - v.usedB - 500*mib}, v.ret("mem")
	}
	d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) {
		defer lock()()
		return gonvml.Memory{Total: v.totalB, Used: v.usedB + 500*mib, Free: v.totalB - v.usedB - 500*mib}, v.ret("mem1")
	}
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { defer lock()(); return v.powerMW, v.ret("power") }
	d.GetPowerManagementLimitFunc = func() (uint32, gonvml.Return) { defer lock()(); return v.limitMW, v.ret("limit") }
	d.GetTemperatureFunc = func(s gonvml.TemperatureSensors) (uint32, gonvml.Return) {
		defer lock()()
		if s != gonvml.TEMPERATURE_GPU {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		return v.tempC, v.ret("temp")
	}
	d.GetClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) {
		defer lock()()
		switch c {
		case gonvml.CLOCK_SM:
			return v.smMHz, v.ret("sm")
		case gonvml.CLOCK_MEM:
			return v.memMHz, v.ret("memclock")
		}
		return 0, gonvml.ERROR_INVALID_ARGUMENT
	}
	d.GetMaxClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) {
		defer lock()()
		if c != gonvml.CLOCK_SM {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		return v.smMaxMHz, v.ret("smmax")
	}
	d.GetFanSpeedFunc = func() (uint32, gonvml.Return) { defer lock()(); return v.fanPct, v.ret("fan") }
	d.GetPerformanceStateFunc = func() (gonvml.Pstates, gonvml.Return) { defer lock()(); return v.pstate, v.ret("pstate") }
	d.GetCurrPcieLinkGenerationFunc = func() (int, gonvml.Return) { defer lock()(); return v.genCur, v.ret("gen") }
	d.GetMaxPcieLinkGenerationFunc = func() (int, gonvml.Return) { defer lock()(); return v.genMax, v.ret("genmax") }
	d.GetCurrPcieLinkWidthFunc = func() (int, gonvml.Return) { defer lock()(); return v.widthCur, v.ret("width") }
	d.GetMaxPcieLinkWidthFunc = func() (int, gonvml.Return) { defer lock()(); return v.widthMax, v.ret("widthmax") }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) { defer lock()(); return v.reasons, v.ret("reasons") }
	d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, gonvml.Return) { defer lock()(); return v.reasons, v.ret("throttle") }
	d.GetPersistenceModeFunc = func() (gonvml.EnableState, gonvml.Return) { defer lock()(); return v.persistence, v.ret("persistence") }
	d.GetEccModeFunc = func() (gonvml.EnableState, gonvml.EnableState, gonvml.Return) {
		defer lock()()
		return v.ecc, v.ecc, v.ret("ecc")
	}
	d.GetMigModeFunc = func() (int, int, gonvml.Return) { defer lock()(); return v.mig, v.mig, v.ret("mig") }
	d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		defer lock()()
		return append([]gonvml.ProcessInfo(nil), v.procs...), v.ret("procs")
	}
	d.GetPcieThroughputFunc = func(c gonvml.PcieUtilCounter) (uint32, gonvml.Return) {
		defer lock()()
		if c == gonvml.PCIE_UTIL_RX_BYTES {
			return v.rxKBs, v.ret("pcie")
		}
		return v.txKBs, v.ret("pcie")
	}
	d.RegisterEventsFunc = func(types uint64, set gonvml.EventSet) gonvml.Return { return v.ret("register") }
}

// dgx is a DGX A100 mock server with every device filled.
type dgx struct {
	srv  *dgxa100.Server
	devs []*dgxa100.Device
	vals []*gpuVals
	// missing holds symbols LookupSymbol reports absent.
	missing map[string]bool
}

func newDGX(t testing.TB) *dgx {
	t.Helper()
	x := &dgx{srv: dgxa100.New(), missing: map[string]bool{}}
	for i, d := range x.srv.Devices {
		md := d.(*dgxa100.Device)
		v := a100Vals(i)
		fill(md, v)
		x.devs = append(x.devs, md)
		x.vals = append(x.vals, v)
	}
	x.srv.LookupSymbolFunc = func(sym string) error {
		if x.missing[sym] {
			return errors.New("undefined symbol: " + sym)
		}
		return nil
	}
	// No event set unless a test gives one.
	x.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return nil, gonvml.ERROR_NOT_SUPPORTED }
	return x
}

// open opens a Sampler over the mock, closing it when the test ends.
func (x *dgx) open(t testing.TB, opts Options) *Sampler {
	t.Helper()
	s, err := OpenLibrary(x.srv, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sample(t testing.TB, s *Sampler) event.GPUSample {
	t.Helper()
	smp, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	return smp
}
