package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// EnvNVML names the environment variable the simulated host's SSH server
// sets for its sessions: the sim directory whose GPU model a `flightdeck
// agent` started there samples through a fake NVML (FakeNVML) instead of
// libnvidia-ml.so.1. Only the simulated host sets it.
const EnvNVML = "FLIGHTDECK_SIM_NVML"

// The fake NVML (FakeNVML, linux && cgo) answers from the same model as the
// fake nvidia-smi: this file computes what both see at one moment, without
// go-nvml, so that it builds and is tested everywhere.

// simGPUs is a sim directory's GPU model: its configuration and capture,
// read once, and the state files, read at every snapshot.
type simGPUs struct {
	dir string
	cfg simConfig
	cap *Capture
}

// newSimGPUs reads dir's sim.json and GPU capture (the embedded H200 one
// unless sim.json names another). It fails, as the fake nvidia-smi does
// ("Failed to initialize NVML: Unknown Error"), when either is unreadable.
func newSimGPUs(dir string) (*simGPUs, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	var c *Capture
	if cfg.GPUCapture != "" {
		c, err = LoadCapture(cfg.GPUCapture)
	} else {
		c, err = defaultCapture()
	}
	if err != nil {
		return nil, err
	}
	if cfg.GPUs > MaxGPUs {
		return nil, fmt.Errorf("sim.json: %d GPUs, at most %d", cfg.GPUs, MaxGPUs)
	}
	return &simGPUs{dir: dir, cfg: cfg, cap: c}, nil
}

// gpuSnapshot is every simulated GPU at one moment: the rows the fake
// nvidia-smi prints for that moment and state (same seed, same clock
// reading, same faults), the compute processes it lists, and what NVML
// shows beyond nvidia-smi (PCIe throughput, a lost handle).
type gpuSnapshot struct {
	at     time.Time
	faults Faults
	rows   []gpuRow    // by index; canonical --query-gpu name → value without unit
	apps   [][]simApp  // by GPU index: as --query-compute-apps lists them
	pcieKB [][2]uint32 // by GPU index: PCIe {rx, tx} throughput, KB/s
	// handleLost is the GPU whose handle cannot be obtained
	// (Faults.HandleLostGPU), -1 for none. Its data cells read "[GPU is
	// lost]" like a LostGPUs entry, for a handle obtained before the fault.
	handleLost int
}

// simApp is one compute process on one GPU.
type simApp struct {
	pid    int
	memMiB int64
}

// lostCell is what nvidia-smi prints in a lost GPU's data cells.
const lostCell = "[GPU is lost]"

// snapshot computes the GPUs at now. A one-shot `nvidia-smi --query-gpu`
// run with the clock at now prints exactly these rows: the model's noise
// is seeded from sim.json's seed and now, as the fake nvidia-smi seeds it.
func (s *simGPUs) snapshot(now time.Time) *gpuSnapshot {
	model := &gpuModel{cap: s.cap, n: s.cfg.GPUs, replay: s.cfg.GPUCapture != "",
		rng: rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(now.UnixNano())))}
	f := readFaults(s.dir)
	hv := readHostView(s.dir, now)
	rows := model.rows(now, hv, f)
	snap := &gpuSnapshot{at: now, faults: f, rows: rows, handleLost: -1,
		apps: make([][]simApp, len(rows)), pcieKB: make([][2]uint32, len(rows))}
	if h := f.HandleLostGPU; h != nil && *h >= 0 && *h < len(rows) {
		snap.handleLost = *h
		for k := range rows[*h] {
			if !identityFields[k] {
				rows[*h][k] = lostCell
			}
		}
	}
	for _, a := range appRows(rows, hv.procs(model.n)) {
		i, err1 := strconv.Atoi(a["index"])
		pid, err2 := strconv.Atoi(a["pid"])
		mem, err3 := strconv.ParseInt(a["used_gpu_memory"], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || i < 0 || i >= len(rows) {
			continue // cannot happen: appRows formats these itself
		}
		snap.apps[i] = append(snap.apps[i], simApp{pid: pid, memMiB: mem})
	}
	for i := range rows {
		var load float64
		if sv := hv.server; sv.Alive && i < sv.TP {
			load = sv.Load
		}
		snap.pcieKB[i] = pcieThroughput(i, load)
	}
	return snap
}

// pcieThroughput models PCIe traffic, KB/s {rx, tx}: a decoding server
// keeps its weights and KV cache on the GPU, so a GPU moves little over
// PCIe — token ids and logits, a few MB/s under full load, and the
// driver's housekeeping when idle. It is deterministic (no noise), so that
// the model's random sequence, and with it every value the fake
// nvidia-smi prints, stays what it was before NVML existed here.
func pcieThroughput(i int, load float64) [2]uint32 {
	base := uint32(20 + (i*13)%11)
	return [2]uint32{base + uint32(math.Round(load*3800)), base/2 + uint32(math.Round(load*1500))}
}

// cellReturn classifies a cell that holds no number: which NVML failure
// (as an nvmlReturn_t code) would make nvidia-smi print it. A lost GPU
// gives 15 (ERROR_GPU_IS_LOST), "[Unknown Error]" 999 (ERROR_UNKNOWN),
// "[Insufficient Permissions]" 4 (ERROR_NO_PERMISSION); every other token
// ("[N/A]", "[Not Supported]", deprecated, absent) 3
// (ERROR_NOT_SUPPORTED), which is what NVML answers where nvidia-smi
// prints "[N/A]" (a fan on an SXM board). Text that is not a token, where
// a number was expected, is 999.
func cellReturn(v string) int {
	switch v {
	case lostCell:
		return 15
	case "[Unknown Error]":
		return 999
	case "[Insufficient Permissions]":
		return 4
	}
	if v == "" || v == "N/A" || strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		return 3
	}
	return 999
}

// lost reports whether GPU i reads as fallen off the bus: a LostGPUs entry
// or the GPU of HandleLostGPU.
func (s *gpuSnapshot) lost(i int) bool {
	return has(s.faults.LostGPUs, i) || s.handleLost == i
}
