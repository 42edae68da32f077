package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Files inside a sim directory. The roles find them through
// FLIGHTDECK_SIM_DIR, so they work however they are started (wrapper run by
// the in-process SSH server, a real sshd, or a local shell).
const (
	configFile = "sim.json"              // simConfig, written by Start
	stateFile  = "run/gpu-state.json"    // serverState, written by the fake server
	faultsFile = "run/faults.json"       // Faults, written by Host.SetFaults
	pidFile    = "run/sglang.pid"        // "PID STARTTIME" of the fake server
	logFile    = "logs/sglang.log"       // the fake server's stdout and stderr
	binDir     = "bin"                   // wrappers: nvidia-smi, sglang-server, flightdeck
	repoDir    = "repo"                  // the simulated SGLang checkout
	upstream   = "upstream.git"          // bare repository the checkout pulls from (origin)
	workerGlob = "run/worker-*.json"     // workerState, one file per worker process
	sshDir     = "ssh"                   // keys and known_hosts
	staleAfter = 1500 * time.Millisecond // a heartbeat older than this means the server is gone
)

// simConfig is the sim-wide configuration the roles read from sim.json.
// Flags given to a role override it.
type simConfig struct {
	GPUs         int     `json:"gpus"`
	GPUCapture   string  `json:"gpu_capture,omitempty"` // absolute path
	Seed         int64   `json:"seed"`
	ReplayLog    string  `json:"replay_log,omitempty"` // absolute path
	StartupDelay float64 `json:"startup_delay_s"`
	TimeScale    float64 `json:"time_scale"`
	Eagle        bool    `json:"eagle,omitempty"`
	LogPrefix    string  `json:"log_prefix,omitempty"`
	NoAutoLoad   bool    `json:"no_auto_load,omitempty"`
	// OwnerPID is the process that built the sim host (flightdeck demo, a
	// test). The fake server exits when it is gone, so a demo killed with
	// SIGKILL, or a test binary that dies, leaves no server behind.
	OwnerPID int `json:"owner_pid,omitempty"`
}

func readConfig(dir string) (simConfig, error) {
	c := simConfig{GPUs: 8, TimeScale: 1, StartupDelay: 2.5}
	if dir == "" {
		return c, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, configFile))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", configFile, err)
	}
	if c.GPUs <= 0 {
		c.GPUs = 8
	}
	if c.TimeScale <= 0 {
		c.TimeScale = 1
	}
	return c, nil
}

// serverState is what the fake server publishes for the fake nvidia-smi:
// a heartbeat plus the GPU memory and load it is causing. Rewritten
// atomically (temp file + rename) every heartbeat.
type serverState struct {
	PID       int     `json:"pid"`
	Heartbeat int64   `json:"heartbeat_unix_ns"`
	TP        int     `json:"tp"`           // GPUs 0..TP-1 hold the server
	MemMiB    int64   `json:"mem_used_mib"` // per GPU, MiB
	Load      float64 `json:"load"`         // 0 idle … 1 decoding flat out
	Heat      float64 `json:"heat"`         // 0 cold … 1 hot; first-order lag of Load
	Exited    bool    `json:"exited,omitempty"`
}

// serverView is serverState as the fake nvidia-smi sees it at one instant.
type serverView struct {
	Alive  bool
	PID    int
	TP     int
	MemMiB int64
	Load   float64
	Heat   float64
}

// heatTau is the thermal time constant (model seconds) for heating and cooling.
const heatTau = 40.0

func readServerView(dir string, now time.Time) serverView {
	if dir == "" {
		return serverView{}
	}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return serverView{}
	}
	var s serverState
	if json.Unmarshal(b, &s) != nil {
		return serverView{}
	}
	age := now.Sub(time.Unix(0, s.Heartbeat))
	v := serverView{PID: s.PID, TP: s.TP, MemMiB: s.MemMiB, Load: s.Load, Heat: s.Heat}
	v.Alive = !s.Exited && age < staleAfter && pidAlive(s.PID)
	if !v.Alive {
		// Gone (exited, killed, or hung without heartbeat): memory freed,
		// no load, and the silicon cools from where it was.
		v.MemMiB, v.Load, v.PID = 0, 0, 0
		if age > 0 {
			v.Heat = s.Heat * math.Exp(-age.Seconds()/heatTau)
		}
	}
	return v
}

// workerState is what a worker process of the fake server publishes in
// run/worker-PID.json: the GPU memory it holds, for the fake nvidia-smi.
// Rewritten atomically every heartbeat; removed when the worker exits.
type workerState struct {
	PID       int    `json:"pid"`
	ServerPID int    `json:"server_pid"` // the server that spawned it
	GPU       int    `json:"gpu"`
	Name      string `json:"name"` // process name, e.g. "sglang::scheduler_TP3"
	MemMiB    int64  `json:"mem_used_mib"`
	Heartbeat int64  `json:"heartbeat_unix_ns"`
}

func workerFile(dir string, pid int) string {
	return filepath.Join(dir, "run", "worker-"+strconv.Itoa(pid)+".json")
}

// readWorkers returns the live workers of the sim directory, by GPU then
// pid. A worker is live while its pid exists, is not a zombie, and its
// heartbeat is fresh; one killed with SIGKILL leaves its file behind, and
// reads as gone at once (no pid) or within staleAfter (pid reused).
func readWorkers(dir string, now time.Time) []workerState {
	if dir == "" {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(dir, workerGlob))
	var out []workerState
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var w workerState
		if json.Unmarshal(b, &w) != nil || w.PID <= 0 {
			continue
		}
		if now.Sub(time.Unix(0, w.Heartbeat)) < staleAfter && pidAlive(w.PID) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b workerState) int {
		if a.GPU != b.GPU {
			return a.GPU - b.GPU
		}
		return a.PID - b.PID
	})
	return out
}

// pidAlive reports whether pid exists and is not a zombie.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no procfs: trust kill(0)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// Faults are failures the fake nvidia-smi injects. It rereads them every
// tick, so they can be set while a -lms loop is running (Host.SetFaults, or
// the JSON in FLIGHTDECK_SIM_FAULTS, which takes precedence over the file).
type Faults struct {
	// LostGPUs lists GPU indices whose data cells read "[GPU is lost]"
	// (identity cells — timestamp, index, name, uuid, serial, pci.* — keep
	// their values so the row can still be attributed).
	LostGPUs []int `json:"lost_gpus,omitempty"`
	// HandleLostGPU, when set, makes every query fail like a GPU that fell
	// off the bus: one line "Unable to determine the device handle for GPU
	// 0000:18:00.0: GPU is lost. Reboot the system to recover this GPU" on
	// stdout and exit status 15. The fake NVML fails only that GPU: its
	// handle cannot be obtained, and one obtained before reads as lost.
	HandleLostGPU *int `json:"handle_lost_gpu,omitempty"`
	// PCIeDegradedGPUs lists GPUs whose link trained down to Gen4 x8 (max
	// stays Gen5 x16).
	PCIeDegradedGPUs []int `json:"pcie_degraded_gpus,omitempty"`
	// ThermalGPUs lists GPUs in thermal slowdown: ~88 °C, SM clock cut to
	// ~1410–1500 MHz, clocks_event_reasons.active has sw_thermal_slowdown (0x20).
	ThermalGPUs []int `json:"thermal_gpus,omitempty"`
	// Stall makes nvidia-smi stop printing (as when it hangs in the driver)
	// until the fault is cleared or the process is killed, and makes the
	// fake NVML's calls block (see FakeNVML).
	Stall bool `json:"stall,omitempty"`
	// Xids lists driver errors the fake NVML reports through its event set
	// (nvmlEventSetWait), each entry once per process (per FakeNVML
	// library), including entries set before the set was registered. An
	// entry with a time (XidFault.At) goes to the first library of the sim
	// directory to report it, and to others only when they were made
	// within XidReplay of it: real NVML reports only events after
	// registration, so an agent restarted later does not report it again,
	// while a demo started with an Xid shows it however slowly its agent
	// started. Clearing an entry and adding it again reports it again.
	// nvidia-smi has no Xid query, so the fake nvidia-smi ignores them.
	Xids []XidFault `json:"xids,omitempty"`
}

// XidReplay is how long before a fake NVML library was made an Xid may
// have happened and still be reported to it (see Faults.Xids).
const XidReplay = 10 * time.Second

// XidFault is one NVIDIA driver error event ("Xid") on a simulated GPU.
type XidFault struct {
	GPU  int    `json:"gpu"`  // GPU index; one the host lacks is never reported
	Code uint64 `json:"code"` // the Xid number, e.g. 79 ("GPU has fallen off the bus")
	// At is when it happened, Unix ns; 0: whenever a library is made (it
	// is always reported once).
	At int64 `json:"at,omitempty"`
}

// EnvFaults names the environment variable that, when set, holds Faults as
// JSON and overrides the sim directory's faults file.
const EnvFaults = "FLIGHTDECK_SIM_FAULTS"

func readFaults(dir string) Faults {
	var f Faults
	if s := os.Getenv(EnvFaults); s != "" {
		_ = json.Unmarshal([]byte(s), &f) // a malformed override injects nothing
		return f
	}
	if dir == "" {
		return f
	}
	if b, err := os.ReadFile(filepath.Join(dir, faultsFile)); err == nil {
		_ = json.Unmarshal(b, &f)
	}
	return f
}

func has(list []int, i int) bool {
	for _, v := range list {
		if v == i {
			return true
		}
	}
	return false
}

// writeFileAtomic writes b to path through a temp file and rename, so a
// reader never sees a half-written file.
func writeFileAtomic(path string, b []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), perm)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}
