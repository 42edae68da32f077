package sim

import (
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// gpuModel produces one tick of per-GPU rows (canonical field → value
// without unit). In synthetic mode it starts from the capture's load row and
// overrides what it models from the fake server's state; in replay mode it
// shows the capture's rows unchanged (only timestamp, count, and for
// repeated rows index and bus id differ).
type gpuModel struct {
	cap    *Capture
	n      int
	replay bool
	rng    *rand.Rand
}

// busIDs are the PCI buses of an 8-GPU HGX H200 board (as on common
// 8-GPU servers); more GPUs take the remaining bus numbers in order.
var baseBuses = []int{0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB}

func busNumbers(n int, taken map[int]bool) []int {
	out := make([]int, 0, n)
	used := map[int]bool{}
	for k := range taken {
		used[k] = true
	}
	for _, b := range baseBuses {
		if len(out) == n {
			return out
		}
		if !used[b] {
			out = append(out, b)
			used[b] = true
		}
	}
	for b := 1; b < 256 && len(out) < n; b++ {
		if !used[b] {
			out = append(out, b)
			used[b] = true
		}
	}
	return out
}

// MaxGPUs is the most GPUs a sim host can have (one per PCI bus number).
const MaxGPUs = 64

func gpuUUID(i int) string {
	h := sha256.Sum256([]byte("flightdeck-sim-gpu-" + strconv.Itoa(i)))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// identityFields keep their values on a lost GPU so the row stays attributable.
var identityFields = map[string]bool{
	"timestamp": true, "driver_version": true, "count": true, "index": true, "name": true,
	"serial": true, "uuid": true, "pci.bus_id": true, "pci.domain": true, "pci.bus": true,
	"pci.device": true, "pci.device_id": true, "pci.sub_device_id": true,
	"pci.baseClass": true, "pci.subClass": true,
}

// gpuRow is one GPU's values in one tick.
type gpuRow map[string]string

func (m *gpuModel) rows(now time.Time, hv hostView, f Faults) []gpuRow {
	ts := now.Format("2006/01/02 15:04:05.000")
	procs := hv.procs(m.n)
	out := make([]gpuRow, m.n)
	var repeatBuses []int
	if m.replay && m.n > len(m.cap.Rows) {
		taken := map[int]bool{}
		for _, r := range m.cap.Rows {
			if b, err := strconv.ParseInt(r["pci.bus"], 0, 0); err == nil {
				taken[int(b)] = true
			}
		}
		repeatBuses = busNumbers(m.n-len(m.cap.Rows), taken)
	}
	var buses []int
	if !m.replay {
		buses = busNumbers(m.n, nil)
	}
	for i := 0; i < m.n; i++ {
		src := m.cap.Rows[i%len(m.cap.Rows)]
		r := make(gpuRow, len(src)+4)
		for k, v := range src {
			r[k] = v
		}
		r["timestamp"] = ts
		r["count"] = strconv.Itoa(m.n)
		switch {
		case m.replay && i >= len(m.cap.Rows):
			// Repeated capture row: a distinct GPU needs its own index and bus.
			setBus(r, repeatBuses[i-len(m.cap.Rows)])
			r["index"] = strconv.Itoa(i)
		case !m.replay:
			setBus(r, buses[i])
			r["index"] = strconv.Itoa(i)
			r["uuid"] = gpuUUID(i)
			r["serial"] = fmt.Sprintf("165242%07d", 1003700+i*13)
			m.synthesize(r, i, hv.server, procs[i], f)
		}
		if has(f.LostGPUs, i) {
			for k := range r {
				if !identityFields[k] {
					r[k] = "[GPU is lost]"
				}
			}
		}
		out[i] = r
	}
	return out
}

func setBus(r gpuRow, bus int) {
	r["pci.bus_id"] = fmt.Sprintf("00000000:%02X:00.0", bus)
	r["pci.bus"] = fmt.Sprintf("0x%02X", bus)
}

// Clock event reason bits (nvmlClocksEventReason*).
const (
	reasonGPUIdle           = 0x1
	reasonSWThermalSlowdown = 0x20
)

// gpuProc is one process holding memory on a GPU, as nvidia-smi lists it.
type gpuProc struct {
	pid    int
	name   string
	memMiB int64
}

// hostView is what the fake nvidia-smi sees at one instant: the server and
// the live worker processes, its own and orphans.
type hostView struct {
	server  serverView
	workers []workerState
}

func readHostView(dir string, now time.Time) hostView {
	return hostView{server: readServerView(dir, now), workers: readWorkers(dir, now)}
}

// schedulerName is the process name SGLang gives the scheduler of TP rank i.
func schedulerName(i int) string { return fmt.Sprintf("sglang::scheduler_TP%d", i) }

// procs returns, for each of n GPUs, the processes holding memory on it. A
// live server holds memory on GPUs 0..TP-1, through its own worker where it
// has one on that GPU (the worker mirrors the server's per-GPU memory);
// other live workers (orphans of a dead or earlier server) add what they
// hold.
func (v hostView) procs(n int) [][]gpuProc {
	sv := v.server
	out := make([][]gpuProc, n)
	for i := range out {
		var own *workerState
		if sv.Alive {
			for k := range v.workers {
				if w := &v.workers[k]; w.GPU == i && w.ServerPID == sv.PID {
					own = w
					break
				}
			}
		}
		if sv.Alive && i < sv.TP {
			p := gpuProc{pid: sv.PID, name: schedulerName(i), memMiB: sv.MemMiB}
			if own != nil {
				p = gpuProc{pid: own.PID, name: own.Name, memMiB: own.MemMiB}
			}
			if i == 0 {
				p.memMiB += 384 // rank 0 also holds the tokenizer-side buffers
			} else if p.memMiB > 0 {
				p.memMiB += int64((i * 37) % 96)
			}
			out[i] = append(out[i], p)
		}
		for k := range v.workers {
			if w := &v.workers[k]; w.GPU == i && w != own {
				out[i] = append(out[i], gpuProc{pid: w.PID, name: w.Name, memMiB: w.MemMiB})
			}
		}
	}
	return out
}

// synthesize overrides the modelled fields of a template row for GPU i.
// Idle numbers follow the H200 capture's idle section (P0, 345 MHz SM,
// ~77 W, 28–35 °C, reason 0x1); load numbers its load section (1980 MHz,
// ~600–630 W, reason 0x0) with temperature rising with the server's heat.
// Memory is what procs hold on it.
func (m *gpuModel) synthesize(r gpuRow, i int, sv serverView, procs []gpuProc, f Faults) {
	on := sv.Alive && i < sv.TP
	var load, heat float64
	var mem int64
	if on {
		load = sv.Load
	}
	for _, p := range procs {
		mem += max(p.memMiB, 0)
	}
	if i < sv.TP || sv.TP == 0 {
		heat = sv.Heat
	}
	thermal := has(f.ThermalGPUs, i)
	jit := func(a float64) float64 { return (m.rng.Float64()*2 - 1) * a }
	offset := float64((i * 7) % 5) // per-GPU cooling differences, °C

	total, _ := strconv.ParseInt(r["memory.total"], 10, 64)
	reserved, _ := strconv.ParseInt(r["memory.reserved"], 10, 64)
	if total <= 0 {
		total = 143771
	}
	if mem > total-reserved {
		mem = total - reserved
	}
	r["memory.used"] = strconv.FormatInt(mem, 10)
	r["memory.free"] = strconv.FormatInt(total-reserved-mem, 10)

	busy := load > 0.05
	util, memUtil := 0, 0
	if load >= 0.5 {
		util = 95 + m.rng.IntN(6)
		memUtil = 55 + m.rng.IntN(15)
	} else if busy {
		util = int(math.Round(load * 100 * (0.8 + 0.4*m.rng.Float64())))
		memUtil = util / 3
	}
	r["utilization.gpu"] = strconv.Itoa(util)
	r["utilization.memory"] = strconv.Itoa(memUtil)

	temp := 30 + offset + heat*27 + jit(0.6)
	if thermal {
		temp = 87 + m.rng.Float64()*2
	}
	t := int(math.Round(temp))
	r["temperature.gpu"] = strconv.Itoa(t)
	r["temperature.gpu.tlimit"] = strconv.Itoa(max(0, 87-t))
	r["temperature.memory"] = strconv.Itoa(int(math.Round(32 + offset/2 + heat*9)))

	power := 75 + offset/2 + load*525 + heat*12
	if busy {
		power += jit(20)
	} else {
		power += jit(2.5)
	}
	if thermal && busy {
		power -= 90
	}
	r["power.draw"] = fmt.Sprintf("%.2f", power)
	r["power.draw.average"] = fmt.Sprintf("%.2f", power)
	r["power.draw.instant"] = fmt.Sprintf("%.2f", power+jit(4))

	sm, video := 345, 765
	if busy {
		sm, video = 1980, 1545
	}
	if thermal && busy {
		sm = 1410 + 15*m.rng.IntN(7)
	}
	r["clocks.current.sm"] = strconv.Itoa(sm)
	r["clocks.current.graphics"] = strconv.Itoa(sm)
	r["clocks.current.video"] = strconv.Itoa(video)
	r["clocks.current.memory"] = "3201"
	r["pstate"] = "P0"

	gen, width := "5", "16"
	if has(f.PCIeDegradedGPUs, i) {
		gen, width = "4", "8"
	}
	r["pcie.link.gen.current"] = gen
	r["pcie.link.gen.gpucurrent"] = gen
	r["pcie.link.width.current"] = width

	var reasons uint64
	if !busy {
		reasons |= reasonGPUIdle
	}
	if thermal {
		reasons |= reasonSWThermalSlowdown
	}
	r["clocks_event_reasons.active"] = fmt.Sprintf("0x%016X", reasons)
	r["clocks_event_reasons.gpu_idle"] = activeText(reasons&reasonGPUIdle != 0)
	r["clocks_event_reasons.sw_thermal_slowdown"] = activeText(reasons&reasonSWThermalSlowdown != 0)
}

func activeText(on bool) string {
	if on {
		return "Active"
	}
	return "Not Active"
}
