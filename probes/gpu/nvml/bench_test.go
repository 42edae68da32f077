//go:build linux && cgo

package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// leanDevice answers the sampler's calls from fixed values without the
// moq mock's bookkeeping (which records every call under a mutex and
// grows a slice per call), so that the benchmark measures the sampler.
type leanDevice struct {
	mock.Device // the methods the sampler does not call; they panic
	v           *gpuVals
}

func (d *leanDevice) GetName() (string, gonvml.Return) { return d.v.name, gonvml.SUCCESS }
func (d *leanDevice) GetUUID() (string, gonvml.Return) { return d.v.uuid, gonvml.SUCCESS }
func (d *leanDevice) GetPciInfo() (gonvml.PciInfo, gonvml.Return) {
	return gonvml.PciInfo{BusId: cstr(d.v.bus)}, gonvml.SUCCESS
}
func (d *leanDevice) GetUtilizationRates() (gonvml.Utilization, gonvml.Return) {
	return gonvml.Utilization{Gpu: d.v.util, Memory: d.v.memUtil}, gonvml.SUCCESS
}
func (d *leanDevice) GetMemoryInfo_v2() (gonvml.Memory_v2, gonvml.Return) {
	return gonvml.Memory_v2{Total: d.v.totalB, Used: d.v.usedB}, gonvml.SUCCESS
}
func (d *leanDevice) GetPowerUsage() (uint32, gonvml.Return) { return d.v.powerMW, gonvml.SUCCESS }
func (d *leanDevice) GetPowerManagementLimit() (uint32, gonvml.Return) {
	return d.v.limitMW, gonvml.SUCCESS
}
func (d *leanDevice) GetTemperature(gonvml.TemperatureSensors) (uint32, gonvml.Return) {
	return d.v.tempC, gonvml.SUCCESS
}
func (d *leanDevice) GetClockInfo(gonvml.ClockType) (uint32, gonvml.Return) {
	return d.v.smMHz, gonvml.SUCCESS
}
func (d *leanDevice) GetMaxClockInfo(gonvml.ClockType) (uint32, gonvml.Return) {
	return d.v.smMaxMHz, gonvml.SUCCESS
}
func (d *leanDevice) GetFanSpeed() (uint32, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
func (d *leanDevice) GetPerformanceState() (gonvml.Pstates, gonvml.Return) {
	return d.v.pstate, gonvml.SUCCESS
}
func (d *leanDevice) GetCurrPcieLinkGeneration() (int, gonvml.Return) {
	return d.v.genCur, gonvml.SUCCESS
}
func (d *leanDevice) GetMaxPcieLinkGeneration() (int, gonvml.Return) {
	return d.v.genMax, gonvml.SUCCESS
}
func (d *leanDevice) GetCurrPcieLinkWidth() (int, gonvml.Return) { return d.v.widthCur, gonvml.SUCCESS }
func (d *leanDevice) GetMaxPcieLinkWidth() (int, gonvml.Return)  { return d.v.widthMax, gonvml.SUCCESS }
func (d *leanDevice) GetCurrentClocksEventReasons() (uint64, gonvml.Return) {
	return d.v.reasons, gonvml.SUCCESS
}
func (d *leanDevice) GetPersistenceMode() (gonvml.EnableState, gonvml.Return) {
	return d.v.persistence, gonvml.SUCCESS
}
func (d *leanDevice) GetEccMode() (gonvml.EnableState, gonvml.EnableState, gonvml.Return) {
	return d.v.ecc, d.v.ecc, gonvml.SUCCESS
}
func (d *leanDevice) GetMigMode() (int, int, gonvml.Return) { return d.v.mig, d.v.mig, gonvml.SUCCESS }
func (d *leanDevice) GetComputeRunningProcesses() ([]gonvml.ProcessInfo, gonvml.Return) {
	// go-nvml allocates the list on every call too.
	return append([]gonvml.ProcessInfo(nil), d.v.procs...), gonvml.SUCCESS
}

// BenchmarkSample reads 8 GPUs per op (one sample, per-process memory on,
// two processes on GPU 0); divide by 8 for the cost per GPU. "lean" is the
// sampler's own cost; "dgxa100-mock" adds go-nvml's moq mock's.
func BenchmarkSample(b *testing.B) {
	b.Run("lean", func(b *testing.B) {
		x := newDGX(b)
		for i := range x.srv.Devices {
			x.srv.Devices[i] = &leanDevice{v: x.vals[i]}
		}
		x.vals[0].procs = []gonvml.ProcessInfo{{Pid: 1, UsedGpuMemory: 100 * mib}, {Pid: 2, UsedGpuMemory: 200 * mib}}
		benchSample(b, x.open(b, Options{NoXid: true}))
	})
	b.Run("dgxa100-mock", func(b *testing.B) {
		x := newDGX(b)
		x.vals[0].procs = []gonvml.ProcessInfo{{Pid: 1, UsedGpuMemory: 100 * mib}, {Pid: 2, UsedGpuMemory: 200 * mib}}
		benchSample(b, x.open(b, Options{NoXid: true}))
	})
}

func benchSample(b *testing.B, s *Sampler) {
	s.Sample() // identity and static limits cached, process names read
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		smp, err := s.Sample()
		if err != nil || len(smp.GPUs) != 8 || len(smp.Apps) != 2 {
			b.Fatalf("%v: %d GPUs, %d apps", err, len(smp.GPUs), len(smp.Apps))
		}
	}
}
