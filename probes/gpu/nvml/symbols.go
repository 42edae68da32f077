//go:build linux && cgo

package nvml

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// symbols records which NVML functions the loaded libnvidia-ml.so.1
// exports. go-nvml binds every function lazily: calling one the driver
// lacks makes the dynamic loader kill the process ("symbol lookup error",
// exit 127; go-nvml#82, nvtop#32), which recover cannot catch. So each
// function the sampler calls is looked up once after a successful init,
// and a missing one is never called: its field is event.CellAbsent (as the
// nvidia-smi probe shows a field the driver does not offer), or an older
// function is used instead (memory v1, legacy throttle reasons).
//
// The names are the literal symbols go-nvml v0.13.4-1 binds (it compiles
// nvml.h with NVML_NO_UNVERSIONED_FUNC_DEFS, so GetMemoryInfo_v2 binds
// "nvmlDeviceGetMemoryInfo_v2" and GetMemoryInfo binds
// "nvmlDeviceGetMemoryInfo"). For the functions go-nvml versions itself
// at load time (updateVersionedSymbols: count, handle by index, PCI info,
// compute processes, event wait) it calls the newest variant present, so
// one of the variants must be present.
type symbols struct {
	driverVersion, nvmlVersion, cudaVersion bool

	count, handle, pciInfo, name, uuid bool

	util, memV2, memV1, power, powerLimit, temp, clock, maxClock, fan, pstate bool

	genCur, genMax, widthCur, widthMax bool

	eventReasons, throttleReasons bool

	persistence, ecc, mig bool

	procs, pcieThroughput bool

	eventSetCreate, registerEvents, eventSetWait, eventSetFree bool
}

// symbolTable lists every guarded function: the symbols that make it
// callable (any one of them) and where the answer goes. Tests read it to
// check that a missing symbol is never called.
var symbolTable = []struct {
	names []string
	field func(*symbols) *bool
}{
	{[]string{"nvmlSystemGetDriverVersion"}, func(s *symbols) *bool { return &s.driverVersion }},
	{[]string{"nvmlSystemGetNVMLVersion"}, func(s *symbols) *bool { return &s.nvmlVersion }},
	{[]string{"nvmlSystemGetCudaDriverVersion"}, func(s *symbols) *bool { return &s.cudaVersion }},
	{[]string{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, func(s *symbols) *bool { return &s.count }},
	{[]string{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, func(s *symbols) *bool { return &s.handle }},
	{[]string{"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"}, func(s *symbols) *bool { return &s.pciInfo }},
	{[]string{"nvmlDeviceGetName"}, func(s *symbols) *bool { return &s.name }},
	{[]string{"nvmlDeviceGetUUID"}, func(s *symbols) *bool { return &s.uuid }},
	{[]string{"nvmlDeviceGetUtilizationRates"}, func(s *symbols) *bool { return &s.util }},
	{[]string{"nvmlDeviceGetMemoryInfo_v2"}, func(s *symbols) *bool { return &s.memV2 }},
	{[]string{"nvmlDeviceGetMemoryInfo"}, func(s *symbols) *bool { return &s.memV1 }},
	{[]string{"nvmlDeviceGetPowerUsage"}, func(s *symbols) *bool { return &s.power }},
	{[]string{"nvmlDeviceGetPowerManagementLimit"}, func(s *symbols) *bool { return &s.powerLimit }},
	{[]string{"nvmlDeviceGetTemperature"}, func(s *symbols) *bool { return &s.temp }},
	{[]string{"nvmlDeviceGetClockInfo"}, func(s *symbols) *bool { return &s.clock }},
	{[]string{"nvmlDeviceGetMaxClockInfo"}, func(s *symbols) *bool { return &s.maxClock }},
	{[]string{"nvmlDeviceGetFanSpeed"}, func(s *symbols) *bool { return &s.fan }},
	{[]string{"nvmlDeviceGetPerformanceState"}, func(s *symbols) *bool { return &s.pstate }},
	{[]string{"nvmlDeviceGetCurrPcieLinkGeneration"}, func(s *symbols) *bool { return &s.genCur }},
	{[]string{"nvmlDeviceGetMaxPcieLinkGeneration"}, func(s *symbols) *bool { return &s.genMax }},
	{[]string{"nvmlDeviceGetCurrPcieLinkWidth"}, func(s *symbols) *bool { return &s.widthCur }},
	{[]string{"nvmlDeviceGetMaxPcieLinkWidth"}, func(s *symbols) *bool { return &s.widthMax }},
	{[]string{"nvmlDeviceGetCurrentClocksEventReasons"}, func(s *symbols) *bool { return &s.eventReasons }},
	{[]string{"nvmlDeviceGetCurrentClocksThrottleReasons"}, func(s *symbols) *bool { return &s.throttleReasons }},
	{[]string{"nvmlDeviceGetPersistenceMode"}, func(s *symbols) *bool { return &s.persistence }},
	{[]string{"nvmlDeviceGetEccMode"}, func(s *symbols) *bool { return &s.ecc }},
	{[]string{"nvmlDeviceGetMigMode"}, func(s *symbols) *bool { return &s.mig }},
	{[]string{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses"}, func(s *symbols) *bool { return &s.procs }},
	{[]string{"nvmlDeviceGetPcieThroughput"}, func(s *symbols) *bool { return &s.pcieThroughput }},
	{[]string{"nvmlEventSetCreate"}, func(s *symbols) *bool { return &s.eventSetCreate }},
	{[]string{"nvmlDeviceRegisterEvents"}, func(s *symbols) *bool { return &s.registerEvents }},
	{[]string{"nvmlEventSetWait_v2", "nvmlEventSetWait"}, func(s *symbols) *bool { return &s.eventSetWait }},
	{[]string{"nvmlEventSetFree"}, func(s *symbols) *bool { return &s.eventSetFree }},
}

// lookupSymbols probes every guarded function once. It must be called
// only after a successful Init (LookupSymbol needs the library loaded).
func lookupSymbols(ext gonvml.ExtendedInterface) symbols {
	var s symbols
	for _, e := range symbolTable {
		p := e.field(&s)
		for _, n := range e.names {
			if ext.LookupSymbol(n) == nil {
				*p = true
				break
			}
		}
	}
	return s
}

// xid reports whether Xid events can be read at all.
func (s *symbols) xid() bool {
	return s.eventSetCreate && s.registerEvents && s.eventSetWait && s.eventSetFree
}
