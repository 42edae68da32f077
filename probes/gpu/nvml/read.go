//go:build linux && cgo

package nvml

import (
	"strconv"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// readResult is one read of every GPU, with what Run needs to decide on
// failures.
type readResult struct {
	smp event.GPUSample
	// dead is set when every GPU with a handle ended its row on
	// GPU_IS_LOST, UNINITIALIZED or DRIVER_NOT_LOADED (and at least one
	// has a handle); deadRet is then the first such code seen, allLost
	// whether every one was GPU_IS_LOST.
	dead    bool
	deadRet gonvml.Return
	allLost bool
	// lostBus lists the bus ids of the rows that ended on GPU_IS_LOST.
	lostBus []string
	// closed: the sampler was closed before the read could start.
	closed bool
}

// absentRow is a GPU whose every field is Absent (not read): the driver
// lacks the function, or the option is off.
var absentRow = event.AbsentGPU(-1)

// pstateNames are P0…P15 as nvidia-smi prints them, built once.
var pstateNames = func() [16]string {
	var n [16]string
	for i := range n {
		n[i] = "P" + strconv.Itoa(i)
	}
	return n
}()

const mib = 1 << 20

// notAvailable is NVML_VALUE_NOT_AVAILABLE (an unsigned long long of all
// ones): NVML's "no value" in a numeric out-parameter, e.g. a process's
// used memory under MIG or in a container.
const notAvailable = ^uint64(0)

// read reads every GPU once; the caller holds the busy token. pcieInline
// reads PCIe throughput now (Sample outside Run) instead of taking the
// poller's latest values.
func (s *Sampler) read(pcieInline bool) readResult {
	var res readResult
	at := s.opts.Now()
	gpus := make([]event.GPU, 0, len(s.devs))
	var apps []event.ComputeApp
	if !s.opts.NoApps && s.sym.procs {
		apps = make([]event.ComputeApp, 0, 2*len(s.devs))
	}
	s.names.begin()
	withHandle, deadRows, lostRows := 0, 0, 0
	for _, d := range s.devs {
		if d.h == nil && !s.reopen(d) {
			res.smp.Missing = append(res.smp.Missing, d.index)
			continue
		}
		withHandle++
		var r row
		g := s.readGPU(d, &r)
		if s.opts.PCIe {
			s.fillPCIe(d, &g, &r, pcieInline)
		}
		if r.dead != gonvml.SUCCESS {
			deadRows++
			if res.deadRet == gonvml.SUCCESS {
				res.deadRet = r.dead
			}
			if r.dead == gonvml.ERROR_GPU_IS_LOST {
				lostRows++
				if g.BusID.Status == event.CellOK {
					res.lostBus = append(res.lostBus, g.BusID.S)
				}
			}
		}
		d.dead.Store(r.dead != gonvml.SUCCESS)
		if apps != nil && r.dead == gonvml.SUCCESS {
			apps = s.readApps(d, &g, apps)
		}
		gpus = append(gpus, g)
	}
	s.names.end()
	res.smp = event.GPUSample{At: at, GPUs: gpus, Missing: res.smp.Missing, Apps: apps}
	res.dead = withHandle > 0 && deadRows == withHandle
	res.allLost = res.dead && lostRows == withHandle
	return res
}

// reopen asks NVML again for the handle of a GPU it refused at Open or
// earlier.
func (s *Sampler) reopen(d *device) bool {
	h, ret := s.lib.DeviceGetHandleByIndex(d.index)
	if ret != gonvml.SUCCESS || h == nil {
		return false
	}
	s.mu.Lock()
	d.h = h
	s.mu.Unlock()
	select {
	case s.newHandle <- struct{}{}:
	default: // already signalled
	}
	return true
}

// row tracks one GPU's reads within a tick: after the first dead code
// (GPU lost, driver gone) the remaining fields take the same token
// without a call.
type row struct {
	dead gonvml.Return
}

// live reports whether a function whose symbol is present should be
// called now.
func (r *row) live(present bool) bool { return present && r.dead == gonvml.SUCCESS }

// skipped is the reading of a field not called: Absent when the driver
// lacks the function, else the dead code's token.
func (r *row) skipped(present bool) event.Reading {
	if !present {
		return event.Reading{Status: event.CellAbsent}
	}
	st, raw := nonValue(r.dead)
	return event.Reading{Status: st, Raw: raw}
}

func (r *row) skippedText(present bool) event.Text {
	x := r.skipped(present)
	return event.Text{S: x.Raw, Status: x.Status}
}

// num is a numeric reading from a call's result.
func (r *row) num(v float64, ret gonvml.Return) event.Reading {
	if ret == gonvml.SUCCESS {
		return event.Reading{Value: v}
	}
	if deadCode(ret) && r.dead == gonvml.SUCCESS {
		r.dead = ret
	}
	st, raw := nonValue(ret)
	return event.Reading{Status: st, Raw: raw}
}

// text is a text reading from a call's result.
func (r *row) text(s string, ret gonvml.Return) event.Text {
	if ret == gonvml.SUCCESS {
		return event.Text{S: s}
	}
	x := r.num(0, ret)
	return event.Text{S: x.Raw, Status: x.Status}
}

// events is the clock-event reasons bitmask from a call's result.
func (r *row) events(mask uint64, ret gonvml.Return) event.ClockEvents {
	x := r.num(0, ret)
	if x.Status != event.CellOK {
		return event.ClockEvents{Status: x.Status, Raw: x.Raw}
	}
	return event.ClockEvents{Mask: event.ClockEventReason(mask)}
}

// stable reports whether a static field's reading may be kept for the
// next ticks: a value, or a non-value that will not change.
func stable(st event.CellStatus) bool {
	return st == event.CellOK || st == event.CellNA || st == event.CellNotSupported || st == event.CellAbsent || st == event.CellDeprecated
}

// enabled is the text nvidia-smi prints for an NVML enable state.
func enabled(v int) event.Text {
	switch v {
	case 0:
		return event.Text{S: "Disabled"}
	case 1:
		return event.Text{S: "Enabled"}
	}
	return event.Text{S: "[enable state " + strconv.Itoa(v) + "]", Status: event.CellInvalid}
}

// readGPU reads one GPU's row. Identity and static limits are read until
// they hold a stable value, then kept; everything else is read every tick.
func (s *Sampler) readGPU(d *device, r *row) event.GPU {
	h, sym := d.h, &s.sym
	g := absentRow
	g.Index = d.index

	// Identity first, until it is known (then it is kept): a GPU lost
	// before the first read keeps its name and bus id where the driver
	// still answers them, as nvidia-smi does.
	if !d.haveName {
		if r.live(sym.name) {
			v, ret := h.GetName()
			d.name = r.text(cleanID(v), ret)
			d.haveName = stable(d.name.Status)
		} else {
			d.name = r.skippedText(sym.name)
		}
	}
	if !d.haveUUID {
		if r.live(sym.uuid) {
			v, ret := h.GetUUID()
			d.uuid = r.text(cleanID(v), ret)
			d.haveUUID = stable(d.uuid.Status)
		} else {
			d.uuid = r.skippedText(sym.uuid)
		}
	}
	if !d.haveBus {
		if r.live(sym.pciInfo) {
			p, ret := h.GetPciInfo()
			d.bus = r.text(busID(p.BusId[:]), ret)
			if d.bus.Status == event.CellOK && d.bus.S == "" {
				d.bus = event.Text{S: tokNA, Status: event.CellNA}
			}
			d.haveBus = stable(d.bus.Status)
		} else {
			d.bus = r.skippedText(sym.pciInfo)
		}
	}
	g.Name, g.UUID, g.BusID = d.name, d.uuid, d.bus

	// Then utilisation: the cheapest dynamic call tells a lost GPU.
	if r.live(sym.util) {
		u, ret := h.GetUtilizationRates()
		g.UtilGPUPct = r.num(float64(u.Gpu), ret)
		g.UtilMemPct = r.num(float64(u.Memory), ret)
	} else {
		g.UtilGPUPct, g.UtilMemPct = r.skipped(sym.util), r.skipped(sym.util)
	}
	if d.haveUUID && d.haveBus && d.xidUUID == "" && d.xidBus == "" {
		s.mu.Lock()
		if d.uuid.Status == event.CellOK {
			d.xidUUID = d.uuid.S
		}
		if d.bus.Status == event.CellOK {
			d.xidBus = d.bus.S
		}
		s.mu.Unlock()
	}

	switch {
	case r.live(sym.memV2):
		m, ret := h.GetMemoryInfo_v2()
		g.MemUsedMiB = r.num(float64(m.Used/mib), ret)
		g.MemTotalMiB = r.num(float64(m.Total/mib), ret)
	case !sym.memV2 && r.live(sym.memV1):
		m, ret := h.GetMemoryInfo()
		g.MemUsedMiB = r.num(float64(m.Used/mib), ret)
		g.MemTotalMiB = r.num(float64(m.Total/mib), ret)
	default:
		x := r.skipped(sym.memV2 || sym.memV1)
		g.MemUsedMiB, g.MemTotalMiB = x, x
	}

	if r.live(sym.power) {
		mw, ret := h.GetPowerUsage()
		g.PowerDrawW = r.num(float64(mw)/1000, ret)
	} else {
		g.PowerDrawW = r.skipped(sym.power)
	}
	if r.live(sym.powerLimit) {
		mw, ret := h.GetPowerManagementLimit()
		g.PowerLimitW = r.num(float64(mw)/1000, ret)
	} else {
		g.PowerLimitW = r.skipped(sym.powerLimit)
	}
	if r.live(sym.temp) {
		c, ret := h.GetTemperature(gonvml.TEMPERATURE_GPU)
		g.TempC = r.num(float64(c), ret)
	} else {
		g.TempC = r.skipped(sym.temp)
	}
	if r.live(sym.clock) {
		sm, ret := h.GetClockInfo(gonvml.CLOCK_SM)
		g.SMClockMHz = r.num(float64(sm), ret)
	} else {
		g.SMClockMHz = r.skipped(sym.clock)
	}
	if r.live(sym.clock) {
		mem, ret := h.GetClockInfo(gonvml.CLOCK_MEM)
		g.MemClockMHz = r.num(float64(mem), ret)
	} else {
		g.MemClockMHz = r.skipped(sym.clock)
	}
	if !d.haveSMMax {
		if r.live(sym.maxClock) {
			v, ret := h.GetMaxClockInfo(gonvml.CLOCK_SM)
			d.smMax = r.num(float64(v), ret)
			d.haveSMMax = stable(d.smMax.Status)
		} else {
			d.smMax = r.skipped(sym.maxClock)
		}
	}
	g.SMClockMax = d.smMax
	if r.live(sym.fan) {
		v, ret := h.GetFanSpeed()
		g.FanPct = r.num(float64(v), ret)
	} else {
		g.FanPct = r.skipped(sym.fan)
	}
	if r.live(sym.pstate) {
		p, ret := h.GetPerformanceState()
		switch {
		case ret != gonvml.SUCCESS:
			g.PState = r.text("", ret)
		case p >= 0 && int(p) < len(pstateNames):
			g.PState = event.Text{S: pstateNames[p]}
		default: // PSTATE_UNKNOWN (32)
			g.PState = event.Text{S: tokNA, Status: event.CellNA}
		}
	} else {
		g.PState = r.skippedText(sym.pstate)
	}

	if r.live(sym.genCur) {
		v, ret := h.GetCurrPcieLinkGeneration()
		g.PCIeGenCurrent = r.num(float64(v), ret)
	} else {
		g.PCIeGenCurrent = r.skipped(sym.genCur)
	}
	// pcie.link.gen.max is "the maximum PCI-E link generation possible
	// with this GPU and system configuration" (the lower of GPU and root
	// port): nvmlDeviceGetMaxPcieLinkGeneration, not
	// nvmlDeviceGetGpuMaxPcieLinkGeneration (the GPU's alone, gen.gpumax).
	if !d.haveGenMax {
		if r.live(sym.genMax) {
			v, ret := h.GetMaxPcieLinkGeneration()
			d.genMax = r.num(float64(v), ret)
			d.haveGenMax = stable(d.genMax.Status)
		} else {
			d.genMax = r.skipped(sym.genMax)
		}
	}
	g.PCIeGenMax = d.genMax
	if r.live(sym.widthCur) {
		v, ret := h.GetCurrPcieLinkWidth()
		g.PCIeWidthCurrent = r.num(float64(v), ret)
	} else {
		g.PCIeWidthCurrent = r.skipped(sym.widthCur)
	}
	if !d.haveWidthMax {
		if r.live(sym.widthMax) {
			v, ret := h.GetMaxPcieLinkWidth()
			d.widthMax = r.num(float64(v), ret)
			d.haveWidthMax = stable(d.widthMax.Status)
		} else {
			d.widthMax = r.skipped(sym.widthMax)
		}
	}
	g.PCIeWidthMax = d.widthMax

	switch {
	case r.live(sym.eventReasons):
		mask, ret := h.GetCurrentClocksEventReasons()
		g.ClockEvents = r.events(mask, ret)
	case !sym.eventReasons && r.live(sym.throttleReasons):
		mask, ret := h.GetCurrentClocksThrottleReasons() // drivers before 535
		g.ClockEvents = r.events(mask, ret)
	default:
		x := r.skipped(sym.eventReasons || sym.throttleReasons)
		g.ClockEvents = event.ClockEvents{Status: x.Status, Raw: x.Raw}
	}

	if r.live(sym.persistence) {
		v, ret := h.GetPersistenceMode()
		if ret == gonvml.SUCCESS {
			g.Persistence = enabled(int(v))
		} else {
			g.Persistence = r.text("", ret)
		}
	} else {
		g.Persistence = r.skippedText(sym.persistence)
	}
	if !d.haveECC {
		if r.live(sym.ecc) {
			cur, _, ret := h.GetEccMode()
			if ret == gonvml.SUCCESS {
				d.ecc = enabled(int(cur))
			} else {
				d.ecc = r.text("", ret)
			}
			d.haveECC = stable(d.ecc.Status)
		} else {
			d.ecc = r.skippedText(sym.ecc)
		}
	}
	g.ECCMode = d.ecc
	if r.live(sym.mig) {
		cur, _, ret := h.GetMigMode()
		if ret == gonvml.SUCCESS {
			g.MIGMode = enabled(cur)
		} else {
			g.MIGMode = r.text("", ret)
		}
	} else {
		g.MIGMode = r.skippedText(sym.mig)
	}

	g.Lost = r.dead == gonvml.ERROR_GPU_IS_LOST || hasLost(&g)
	return g
}

// hasLost reports whether any cell of g reads "[GPU is lost]".
func hasLost(g *event.GPU) bool {
	for _, x := range [...]event.CellStatus{
		g.Name.Status, g.BusID.Status, g.UUID.Status, g.UtilGPUPct.Status, g.UtilMemPct.Status,
		g.MemUsedMiB.Status, g.MemTotalMiB.Status, g.PowerDrawW.Status, g.PowerLimitW.Status,
		g.TempC.Status, g.SMClockMHz.Status, g.MemClockMHz.Status, g.SMClockMax.Status, g.FanPct.Status,
		g.PState.Status, g.PCIeGenCurrent.Status, g.PCIeGenMax.Status, g.PCIeWidthCurrent.Status,
		g.PCIeWidthMax.Status, g.ClockEvents.Status, g.Persistence.Status, g.ECCMode.Status, g.MIGMode.Status,
	} {
		if x == event.CellLost {
			return true
		}
	}
	return false
}

// fillPCIe puts PCIe throughput into g: read now (inline), or the poller's
// latest. A row that ended dead reads as the row's other cells do (lost),
// never the poller's last value; the poller's value reads "[N/A]" until
// its first read and once it is older than pcieStaleAfter polls (a poller
// blocked in the driver), never as a current value.
func (s *Sampler) fillPCIe(d *device, g *event.GPU, r *row, inline bool) {
	if !s.sym.pcieThroughput {
		return // Absent
	}
	if r.dead != gonvml.SUCCESS {
		g.PCIeRxKBs, g.PCIeTxKBs = r.skipped(true), r.skipped(true)
		return
	}
	if inline {
		g.PCIeRxKBs, g.PCIeTxKBs = readPCIe(d.h)
		return
	}
	s.mu.Lock()
	rx, tx, at := d.pcie[0], d.pcie[1], d.pcieAt
	s.mu.Unlock()
	if at.IsZero() || s.opts.Now().Sub(at) > pcieStaleAfter*s.pcieEvery() {
		rx = event.Reading{Status: event.CellNA, Raw: tokNA}
		tx = rx
	}
	g.PCIeRxKBs, g.PCIeTxKBs = rx, tx
}

// pcieStaleAfter is how many poll periods old the PCIe poller's reading
// may be before a sample shows it as "[N/A]".
const pcieStaleAfter = 3

// readPCIe reads one GPU's PCIe receive and transmit throughput, KB/s
// over NVML's 20 ms window; each call blocks for that window.
func readPCIe(h gonvml.Device) (rx, tx event.Reading) {
	var r row
	v, ret := h.GetPcieThroughput(gonvml.PCIE_UTIL_RX_BYTES)
	rx = r.num(float64(v), ret)
	if r.dead != gonvml.SUCCESS {
		return rx, rx
	}
	v, ret = h.GetPcieThroughput(gonvml.PCIE_UTIL_TX_BYTES)
	tx = r.num(float64(v), ret)
	return rx, tx
}

// busID turns NVML's NUL-terminated C char array into a string
// ("00000000:83:00.0").
func busID(b []int8) string {
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(b[i])
	}
	return cleanID(string(buf))
}

// maxID bounds a name, UUID, bus id or version string from NVML.
const maxID = 256

// cleanID makes a string NVML returned safe to print (a fake or damaged
// library could return anything) and bounds it.
func cleanID(s string) string {
	if len(s) > maxID {
		s = s[:maxID]
	}
	return sanitize.String(s)
}
