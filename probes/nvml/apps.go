//go:build linux && cgo

package nvml

import (
	"bytes"
	"math"
	"os"
	"slices"
	"strconv"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/sanitize"
)

// readApps appends the compute processes NVML lists on d
// (nvmlDeviceGetComputeRunningProcesses, the newest variant the driver
// has) to apps, sorted by PID, each named by the row's bus id and UUID. A
// GPU whose list cannot be read adds nothing (Sample.Apps has no place
// for a per-GPU failure; the row's own cells tell a lost GPU).
func (s *Sampler) readApps(d *device, g *gpu.GPU, apps []gpu.App) []gpu.App {
	procs, ret := d.h.GetComputeRunningProcesses()
	if ret != gonvml.SUCCESS {
		return apps
	}
	start := len(apps)
	for _, p := range procs {
		a := gpu.App{PID: int(p.Pid), BusID: g.BusID, UUID: g.UUID}
		if p.Pid == 0 || p.Pid > math.MaxInt32 {
			a.PID, a.PIDStatus = 0, gpu.NA
			a.Name = gpu.Text{S: tokNA, Status: gpu.NA}
		} else {
			a.Name = s.comm.name(int(p.Pid))
		}
		if p.UsedGpuMemory == notAvailable {
			a.UsedMiB = gpu.Reading{Status: gpu.NA, Raw: tokNA}
		} else {
			a.UsedMiB = gpu.Reading{Value: float64(p.UsedGpuMemory / mib)}
		}
		apps = append(apps, a)
	}
	slices.SortFunc(apps[start:], func(a, b gpu.App) int { return a.PID - b.PID })
	return apps
}

// commCache remembers process names by PID. A name is read from
// /proc/PID/comm (the kernel's 15-byte task name; the sampler runs on the
// GPU host, and NVML's PIDs are the host's) the first tick a PID appears
// and forgotten the first tick it does not, so a reused PID is read again
// unless it was reused between two ticks. Only the goroutine holding the
// sampler's busy token uses it.
type commCache struct {
	gen     uint64
	entries map[int]commEntry
	// proc is the /proc directory; tests point it elsewhere.
	proc string
}

type commEntry struct {
	name gpu.Text
	gen  uint64
}

func (c *commCache) begin() {
	c.gen++
	if c.entries == nil {
		c.entries = make(map[int]commEntry)
	}
}

// end forgets the PIDs not seen since begin.
func (c *commCache) end() {
	for pid, e := range c.entries {
		if e.gen != c.gen {
			delete(c.entries, pid)
		}
	}
}

// name returns pid's process name, sanitised for the terminal, or "[N/A]"
// (Status NA) when /proc does not show it (the process is gone, or lives
// in another PID namespace).
func (c *commCache) name(pid int) gpu.Text {
	if e, ok := c.entries[pid]; ok {
		e.gen = c.gen
		c.entries[pid] = e
		return e.name
	}
	proc := c.proc
	if proc == "" {
		proc = "/proc"
	}
	t := gpu.Text{S: tokNA, Status: gpu.NA}
	if b, err := os.ReadFile(proc + "/" + strconv.Itoa(pid) + "/comm"); err == nil {
		b = bytes.TrimRight(b, "\n")
		if len(b) > 0 {
			t = gpu.Text{S: sanitize.Line(b)}
		}
	}
	c.entries[pid] = commEntry{name: t, gen: c.gen}
	return t
}
