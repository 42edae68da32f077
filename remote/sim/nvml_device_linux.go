//go:build linux && cgo

package sim

import (
	"math"
	"strconv"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// newDevice is GPU i's handle. Each function reads the snapshot's row for
// i, the cells the fake nvidia-smi prints for the matching --query-gpu
// field, converted to NVML's units:
//
//	GetName name · GetUUID uuid · GetSerial serial · GetIndex, GetMinorNumber index
//	GetPciInfo pci.bus_id, pci.domain, pci.bus, pci.device, pci.device_id, pci.sub_device_id
//	GetUtilizationRates utilization.gpu, utilization.memory (%)
//	GetMemoryInfo_v2 memory.total, memory.reserved, memory.free, memory.used (MiB → bytes)
//	GetMemoryInfo the same, with Used = Total − Free (reserved included, as NVML's v1 counts it)
//	GetPowerUsage power.draw · GetPowerManagementLimit power.limit ·
//	  GetEnforcedPowerLimit enforced.power.limit · GetPowerManagementDefaultLimit
//	  power.default_limit (W → mW)
//	GetTemperature(TEMPERATURE_GPU) temperature.gpu (°C)
//	GetClockInfo(GRAPHICS/SM/MEM/VIDEO) clocks.current.* · GetMaxClockInfo clocks.max.* (MHz)
//	GetFanSpeed, GetFanSpeed_v2(0) fan.speed (%) · GetNumFans 1 when fan.speed has a value, else 0
//	GetPerformanceState pstate ("P0" → PSTATE_0)
//	GetCurrentClocksEventReasons, GetCurrentClocksThrottleReasons clocks_event_reasons.active ·
//	  GetSupportedClocksEventReasons, GetSupportedClocksThrottleReasons clocks_event_reasons.supported
//	GetCurrPcieLinkGeneration pcie.link.gen.current · GetCurrPcieLinkWidth pcie.link.width.current ·
//	  GetMaxPcieLinkGeneration pcie.link.gen.max · GetMaxPcieLinkWidth pcie.link.width.max ·
//	  GetGpuMaxPcieLinkGeneration pcie.link.gen.gpumax
//	GetPcieThroughput(RX_BYTES/TX_BYTES) the model's PCIe traffic, KB/s, after blocking 20 ms
//	GetPersistenceMode persistence_mode · GetEccMode ecc.mode.current/pending ·
//	  GetMigMode mig.mode.current/pending · GetComputeMode compute_mode
//	GetCudaComputeCapability compute_cap · GetVbiosVersion vbios_version · IsMigDeviceHandle false
//	GetComputeRunningProcesses the rows of --query-compute-apps for this GPU (pid,
//	  used memory in bytes; GPU and compute instance 0xFFFFFFFF) ·
//	  GetGraphicsRunningProcesses, GetMPSComputeRunningProcesses none
//	GetSupportedEventTypes nvmlEventTypeAll · RegisterEvents into a set from EventSetCreate
func (f *fakeNVML) newDevice(i int) *mock.Device {
	text := func(key string) func() (string, gonvml.Return) {
		return func() (string, gonvml.Return) { return f.text(i, key) }
	}
	index := func() (int, gonvml.Return) {
		n, ret := f.number(i, "index", 1)
		return int(n), ret
	}
	u32 := func(key string, scale float64) func() (uint32, gonvml.Return) {
		return func() (uint32, gonvml.Return) {
			n, ret := f.number(i, key, scale)
			return uint32(n), ret
		}
	}
	integer := func(key string) func() (int, gonvml.Return) {
		return func() (int, gonvml.Return) {
			n, ret := f.number(i, key, 1)
			return int(n), ret
		}
	}
	mask := func(key string) func() (uint64, gonvml.Return) {
		return func() (uint64, gonvml.Return) { return f.mask(i, key) }
	}
	memory := func() (gonvml.Memory_v2, gonvml.Return) { return f.memory(i) }
	noProcs := func() ([]gonvml.ProcessInfo, gonvml.Return) {
		s, ret := f.begin()
		if ret != gonvml.SUCCESS {
			return nil, ret
		}
		if s.lost(i) {
			return nil, gonvml.ERROR_GPU_IS_LOST
		}
		return []gonvml.ProcessInfo{}, gonvml.SUCCESS
	}
	clock := func(prefix string) func(gonvml.ClockType) (uint32, gonvml.Return) {
		return func(c gonvml.ClockType) (uint32, gonvml.Return) {
			var key string
			switch c {
			case gonvml.CLOCK_GRAPHICS:
				key = "graphics"
			case gonvml.CLOCK_SM:
				key = "sm"
			case gonvml.CLOCK_MEM:
				key = "memory"
			case gonvml.CLOCK_VIDEO:
				key = "video"
			default:
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			n, ret := f.number(i, prefix+key, 1)
			return uint32(n), ret
		}
	}
	d := &mock.Device{
		GetNameFunc:         text("name"),
		GetUUIDFunc:         text("uuid"),
		GetSerialFunc:       text("serial"),
		GetVbiosVersionFunc: text("vbios_version"),
		GetIndexFunc:        index,
		GetMinorNumberFunc:  index,
		GetPciInfoFunc:      func() (gonvml.PciInfo, gonvml.Return) { return f.pciInfo(i) },
		GetUtilizationRatesFunc: func() (gonvml.Utilization, gonvml.Return) {
			s, ret := f.begin()
			if ret != gonvml.SUCCESS {
				return gonvml.Utilization{}, ret
			}
			g, ret := cellNumber(s.rows[i], "utilization.gpu", 1)
			if ret != gonvml.SUCCESS {
				return gonvml.Utilization{}, ret
			}
			m, ret := cellNumber(s.rows[i], "utilization.memory", 1)
			if ret != gonvml.SUCCESS {
				return gonvml.Utilization{}, ret
			}
			return gonvml.Utilization{Gpu: uint32(g), Memory: uint32(m)}, gonvml.SUCCESS
		},
		GetMemoryInfo_v2Func: memory,
		GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) {
			m, ret := memory()
			if ret != gonvml.SUCCESS {
				return gonvml.Memory{}, ret
			}
			return gonvml.Memory{Total: m.Total, Free: m.Free, Used: m.Total - m.Free}, gonvml.SUCCESS
		},
		GetPowerUsageFunc:                  u32("power.draw", 1000),
		GetPowerManagementLimitFunc:        u32("power.limit", 1000),
		GetEnforcedPowerLimitFunc:          u32("enforced.power.limit", 1000),
		GetPowerManagementDefaultLimitFunc: u32("power.default_limit", 1000),
		GetTemperatureFunc: func(t gonvml.TemperatureSensors) (uint32, gonvml.Return) {
			if t != gonvml.TEMPERATURE_GPU {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			return u32("temperature.gpu", 1)()
		},
		GetClockInfoFunc:    clock("clocks.current."),
		GetMaxClockInfoFunc: clock("clocks.max."),
		GetFanSpeedFunc:     u32("fan.speed", 1),
		GetFanSpeed_v2Func: func(fan int) (uint32, gonvml.Return) {
			if fan != 0 {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			return u32("fan.speed", 1)()
		},
		GetNumFansFunc: func() (int, gonvml.Return) {
			s, ret := f.begin()
			if ret != gonvml.SUCCESS {
				return 0, ret
			}
			if s.lost(i) {
				return 0, gonvml.ERROR_GPU_IS_LOST
			}
			if _, ret := cellNumber(s.rows[i], "fan.speed", 1); ret != gonvml.SUCCESS {
				return 0, gonvml.SUCCESS
			}
			return 1, gonvml.SUCCESS
		},
		GetPerformanceStateFunc:               f.pstate(i),
		GetCurrentClocksEventReasonsFunc:      mask("clocks_event_reasons.active"),
		GetCurrentClocksThrottleReasonsFunc:   mask("clocks_event_reasons.active"),
		GetSupportedClocksEventReasonsFunc:    mask("clocks_event_reasons.supported"),
		GetSupportedClocksThrottleReasonsFunc: mask("clocks_event_reasons.supported"),
		GetCurrPcieLinkGenerationFunc:         integer("pcie.link.gen.current"),
		GetCurrPcieLinkWidthFunc:              integer("pcie.link.width.current"),
		GetMaxPcieLinkGenerationFunc:          integer("pcie.link.gen.max"),
		GetMaxPcieLinkWidthFunc:               integer("pcie.link.width.max"),
		GetGpuMaxPcieLinkGenerationFunc:       integer("pcie.link.gen.gpumax"),
		GetPcieThroughputFunc:                 func(c gonvml.PcieUtilCounter) (uint32, gonvml.Return) { return f.pcieThroughput(i, c) },
		GetPersistenceModeFunc:                func() (gonvml.EnableState, gonvml.Return) { return f.enabled(i, "persistence_mode") },
		GetEccModeFunc:                        func() (gonvml.EnableState, gonvml.EnableState, gonvml.Return) { return f.eccMode(i) },
		GetMigModeFunc:                        func() (int, int, gonvml.Return) { return f.migMode(i) },
		GetComputeModeFunc:                    func() (gonvml.ComputeMode, gonvml.Return) { return f.computeMode(i) },
		GetCudaComputeCapabilityFunc:          func() (int, int, gonvml.Return) { return f.computeCap(i) },
		IsMigDeviceHandleFunc:                 func() (bool, gonvml.Return) { return false, gonvml.SUCCESS },
		GetComputeRunningProcessesFunc:        func() ([]gonvml.ProcessInfo, gonvml.Return) { return f.processes(i) },
		GetGraphicsRunningProcessesFunc:       noProcs,
		GetMPSComputeRunningProcessesFunc:     noProcs,
		GetSupportedEventTypesFunc: func() (uint64, gonvml.Return) {
			s, ret := f.begin()
			if ret != gonvml.SUCCESS {
				return 0, ret
			}
			if s.lost(i) {
				return 0, gonvml.ERROR_GPU_IS_LOST
			}
			return supportedEvents, gonvml.SUCCESS
		},
		RegisterEventsFunc: func(types uint64, set gonvml.EventSet) gonvml.Return { return f.register(i, types, set) },
	}
	return d
}

// text reads a text cell; a token ("[N/A]", "[GPU is lost]") gives its
// NVML error.
func (f *fakeNVML) text(i int, key string) (string, gonvml.Return) {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return "", ret
	}
	v, ok := s.rows[i][key]
	if !ok || strings.HasPrefix(v, "[") {
		return "", gonvml.Return(cellReturn(v))
	}
	return v, gonvml.SUCCESS
}

// number reads a numeric cell times scale, rounded to a whole number.
func (f *fakeNVML) number(i int, key string, scale float64) (uint64, gonvml.Return) {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return 0, ret
	}
	return cellNumber(s.rows[i], key, scale)
}

// cellNumber reads a cell of r as a non-negative number times scale,
// rounded. A token gives its NVML error (cellReturn); a negative number or
// one past 2^32 gives ERROR_UNKNOWN, never a wrapped value.
func cellNumber(r gpuRow, key string, scale float64) (uint64, gonvml.Return) {
	v, ok := r[key]
	if !ok {
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, gonvml.Return(cellReturn(v))
	}
	x = math.Round(x * scale)
	if x < 0 || x > math.MaxUint32 {
		return 0, gonvml.ERROR_UNKNOWN
	}
	return uint64(x), gonvml.SUCCESS
}

// mask reads a "0x…" bitmask cell.
func (f *fakeNVML) mask(i int, key string) (uint64, gonvml.Return) {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return 0, ret
	}
	v, ok := s.rows[i][key]
	if !ok {
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
	m, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		return 0, gonvml.Return(cellReturn(v))
	}
	return m, gonvml.SUCCESS
}

// memory is nvmlDeviceGetMemoryInfo_v2, bytes. A capture row without
// memory.reserved reads 0 reserved.
func (f *fakeNVML) memory(i int) (gonvml.Memory_v2, gonvml.Return) {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return gonvml.Memory_v2{}, ret
	}
	r := s.rows[i]
	var v [4]uint64
	for k, key := range [...]string{"memory.total", "memory.reserved", "memory.free", "memory.used"} {
		n, ret := cellNumber(r, key, 1)
		if ret == gonvml.ERROR_NOT_SUPPORTED && key == "memory.reserved" && r[key] == "" {
			n, ret = 0, gonvml.SUCCESS
		}
		if ret != gonvml.SUCCESS {
			return gonvml.Memory_v2{}, ret
		}
		v[k] = n * mib
	}
	return gonvml.Memory_v2{Version: gonvml.STRUCT_VERSION(gonvml.Memory_v2{}, 2),
		Total: v[0], Reserved: v[1], Free: v[2], Used: v[3]}, gonvml.SUCCESS
}

// pciInfo is nvmlDeviceGetPciInfo_v3. Identity cells keep their values on a
// lost GPU, so it answers there too.
func (f *fakeNVML) pciInfo(i int) (gonvml.PciInfo, gonvml.Return) {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return gonvml.PciInfo{}, ret
	}
	r := s.rows[i]
	bus := r["pci.bus_id"]
	if strings.HasPrefix(bus, "[") || bus == "" {
		return gonvml.PciInfo{}, gonvml.Return(cellReturn(bus))
	}
	var p gonvml.PciInfo
	hex := func(key string) uint32 {
		n, _ := strconv.ParseUint(r[key], 0, 32) // a token reads 0, as NVML leaves unknown ids
		return uint32(n)
	}
	p.Domain, p.Bus, p.Device = hex("pci.domain"), hex("pci.bus"), hex("pci.device")
	p.PciDeviceId, p.PciSubSystemId = hex("pci.device_id"), hex("pci.sub_device_id")
	putCString(p.BusId[:], bus)
	legacy := bus
	if dom, rest, ok := strings.Cut(bus, ":"); ok && len(dom) > 4 {
		legacy = dom[len(dom)-4:] + ":" + rest // "0000:18:00.0", NVML's 16-byte form
	}
	putCString(p.BusIdLegacy[:], legacy)
	return p, gonvml.SUCCESS
}

// putCString copies s into a NUL-terminated C char array, truncating.
func putCString(dst []int8, s string) {
	n := min(len(s), len(dst)-1)
	for k := 0; k < n; k++ {
		dst[k] = int8(s[k])
	}
	dst[n] = 0
}

func (f *fakeNVML) pstate(i int) func() (gonvml.Pstates, gonvml.Return) {
	return func() (gonvml.Pstates, gonvml.Return) {
		v, ret := f.text(i, "pstate")
		if ret != gonvml.SUCCESS {
			return gonvml.PSTATE_UNKNOWN, ret
		}
		n, err := strconv.Atoi(strings.TrimPrefix(v, "P"))
		if !strings.HasPrefix(v, "P") || err != nil || n < 0 || n > 15 {
			return gonvml.PSTATE_UNKNOWN, gonvml.ERROR_UNKNOWN
		}
		return gonvml.Pstates(n), gonvml.SUCCESS
	}
}

// enabled reads an "Enabled"/"Disabled" cell.
func (f *fakeNVML) enabled(i int, key string) (gonvml.EnableState, gonvml.Return) {
	v, ret := f.text(i, key)
	if ret != gonvml.SUCCESS {
		return gonvml.FEATURE_DISABLED, ret
	}
	return enableState(v)
}

func enableState(v string) (gonvml.EnableState, gonvml.Return) {
	switch v {
	case "Enabled":
		return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	case "Disabled":
		return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
	}
	return gonvml.FEATURE_DISABLED, gonvml.Return(cellReturn(v))
}

func (f *fakeNVML) eccMode(i int) (gonvml.EnableState, gonvml.EnableState, gonvml.Return) {
	cur, ret := f.enabled(i, "ecc.mode.current")
	if ret != gonvml.SUCCESS {
		return cur, cur, ret
	}
	pend, ret := f.enabled(i, "ecc.mode.pending")
	if ret != gonvml.SUCCESS {
		pend = cur // a capture without the pending column: nothing pending
	}
	return cur, pend, gonvml.SUCCESS
}

func (f *fakeNVML) migMode(i int) (int, int, gonvml.Return) {
	cur, ret := f.enabled(i, "mig.mode.current")
	if ret != gonvml.SUCCESS {
		return 0, 0, ret
	}
	pend, ret := f.enabled(i, "mig.mode.pending")
	if ret != gonvml.SUCCESS {
		pend = cur
	}
	mode := func(e gonvml.EnableState) int {
		if e == gonvml.FEATURE_ENABLED {
			return gonvml.DEVICE_MIG_ENABLE
		}
		return gonvml.DEVICE_MIG_DISABLE
	}
	return mode(cur), mode(pend), gonvml.SUCCESS
}

func (f *fakeNVML) computeMode(i int) (gonvml.ComputeMode, gonvml.Return) {
	v, ret := f.text(i, "compute_mode")
	if ret != gonvml.SUCCESS {
		return 0, ret
	}
	switch v {
	case "Default":
		return gonvml.COMPUTEMODE_DEFAULT, gonvml.SUCCESS
	case "Exclusive_Thread":
		return gonvml.COMPUTEMODE_EXCLUSIVE_THREAD, gonvml.SUCCESS
	case "Prohibited":
		return gonvml.COMPUTEMODE_PROHIBITED, gonvml.SUCCESS
	case "Exclusive_Process":
		return gonvml.COMPUTEMODE_EXCLUSIVE_PROCESS, gonvml.SUCCESS
	}
	return 0, gonvml.ERROR_UNKNOWN
}

// computeCap reads compute_cap, "9.0" → (9, 0).
func (f *fakeNVML) computeCap(i int) (int, int, gonvml.Return) {
	v, ret := f.text(i, "compute_cap")
	if ret != gonvml.SUCCESS {
		return 0, 0, ret
	}
	maj, min, _ := strings.Cut(v, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil {
		return 0, 0, gonvml.ERROR_UNKNOWN
	}
	return a, b, gonvml.SUCCESS
}

// pcieThroughput is nvmlDeviceGetPcieThroughput: it blocks for NVML's
// sampling window (wall clock), then reads the model's traffic, KB/s.
func (f *fakeNVML) pcieThroughput(i int, c gonvml.PcieUtilCounter) (uint32, gonvml.Return) {
	if c != gonvml.PCIE_UTIL_RX_BYTES && c != gonvml.PCIE_UTIL_TX_BYTES {
		return 0, gonvml.ERROR_INVALID_ARGUMENT
	}
	if f.pcieWindow > 0 {
		f.mu.Lock()
		down := f.down
		f.mu.Unlock()
		t := time.NewTimer(f.pcieWindow)
		select {
		case <-t.C:
		case <-down: // shut down meanwhile: begin says so
			t.Stop()
		}
	}
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return 0, ret
	}
	if s.lost(i) {
		return 0, gonvml.ERROR_GPU_IS_LOST
	}
	if c == gonvml.PCIE_UTIL_RX_BYTES {
		return s.pcieKB[i][0], gonvml.SUCCESS
	}
	return s.pcieKB[i][1], gonvml.SUCCESS
}

// processes is nvmlDeviceGetComputeRunningProcesses_v3: the GPU's rows of
// the fake nvidia-smi's --query-compute-apps, memory in bytes.
func (f *fakeNVML) processes(i int) ([]gonvml.ProcessInfo, gonvml.Return) {
	s, ret := f.begin()
	if ret != gonvml.SUCCESS {
		return nil, ret
	}
	if s.lost(i) {
		return nil, gonvml.ERROR_GPU_IS_LOST
	}
	out := make([]gonvml.ProcessInfo, 0, len(s.apps[i]))
	for _, a := range s.apps[i] {
		out = append(out, gonvml.ProcessInfo{Pid: uint32(a.pid), UsedGpuMemory: uint64(a.memMiB) * mib,
			GpuInstanceId: noInstance, ComputeInstanceId: noInstance})
	}
	return out, gonvml.SUCCESS
}
