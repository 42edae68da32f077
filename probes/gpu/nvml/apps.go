//go:build linux && cgo

package nvml

import (
	"bytes"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// readApps appends the compute processes NVML lists on d
// (nvmlDeviceGetComputeRunningProcesses, the newest variant the driver
// has) to apps, sorted by PID, each named by the row's bus id and UUID. A
// GPU whose list cannot be read adds nothing (Sample.Apps has no place
// for a per-GPU failure; the row's own cells tell a lost GPU).
func (s *Sampler) readApps(d *device, g *event.GPU, apps []event.ComputeApp) []event.ComputeApp {
	procs, ret := d.h.GetComputeRunningProcesses()
	if ret != gonvml.SUCCESS {
		return apps
	}
	start := len(apps)
	for _, p := range procs {
		a := event.ComputeApp{PID: int(p.Pid), BusID: g.BusID, UUID: g.UUID}
		if p.Pid == 0 || p.Pid > math.MaxInt32 {
			a.PID, a.PIDStatus = 0, event.CellNA
			a.Name = event.Text{S: tokNA, Status: event.CellNA}
		} else {
			a.Name = s.names.name(int(p.Pid))
		}
		if p.UsedGpuMemory == notAvailable {
			a.UsedMiB = event.Reading{Status: event.CellNA, Raw: tokNA}
		} else {
			a.UsedMiB = event.Reading{Value: float64(p.UsedGpuMemory / mib)}
		}
		apps = append(apps, a)
	}
	slices.SortFunc(apps[start:], func(a, b event.ComputeApp) int { return a.PID - b.PID })
	return apps
}

// nameCache remembers process names by PID. A name is read the first tick
// a PID appears, from /proc/PID/cmdline (argv[0], as nvidia-smi names
// processes; see readArgv0) or, when that is empty, /proc/PID/comm (the
// kernel's 15-byte task name), and forgotten the first tick the PID is
// not listed, so a reused PID is read again unless it was reused between
// two ticks. Only the goroutine holding the sampler's busy token uses it.
//
// NVML gives PIDs in the host's (the initial) PID namespace. In a
// container with its own PID namespace /proc shows that namespace's PIDs,
// and /proc/PID would name whichever container process has the same
// number, or nothing: a wrong name is worse than none. Comparing
// /proc/self/ns/pid with /proc/1/ns/pid cannot tell (in a container
// /proc/1 is the container's init, in the same namespace), but the initial
// PID namespace has a fixed inode, PROC_PID_INIT_INO (0xEFFFFFFC, Linux
// include/linux/proc_ns.h, since 3.8): names are read only when
// /proc/self/ns/pid is "pid:[4026531836]". Elsewhere (a container without
// --pid=host, gVisor, a /proc without ns links) every name is "[N/A]",
// the PID and memory still shown.
type nameCache struct {
	gen     uint64
	entries map[int]nameEntry
	// proc is the /proc directory; tests point it elsewhere.
	proc string
	// nsChecked and hostNS cache whether this process is in the initial
	// PID namespace (it cannot change).
	nsChecked, hostNS bool
}

// initPIDNamespace is readlink("/proc/self/ns/pid") in the initial PID
// namespace: "pid:[PROC_PID_INIT_INO]".
const initPIDNamespace = "pid:[4026531836]"

func (c *nameCache) procDir() string {
	if c.proc == "" {
		return "/proc"
	}
	return c.proc
}

// inHostPIDNamespace reports whether NVML's PIDs are this process's
// /proc PIDs.
func (c *nameCache) inHostPIDNamespace() bool {
	if !c.nsChecked {
		link, err := os.Readlink(c.procDir() + "/self/ns/pid")
		c.hostNS = err == nil && link == initPIDNamespace
		c.nsChecked = true
	}
	return c.hostNS
}

type nameEntry struct {
	name event.Text
	gen  uint64
}

func (c *nameCache) begin() {
	c.gen++
	if c.entries == nil {
		c.entries = make(map[int]nameEntry)
	}
}

// end forgets the PIDs not seen since begin.
func (c *nameCache) end() {
	for pid, e := range c.entries {
		if e.gen != c.gen {
			delete(c.entries, pid)
		}
	}
}

// name returns pid's process name, sanitised for the terminal, or "[N/A]"
// (Status NA) when /proc does not show it (the process is gone) or this
// process is not in the host's PID namespace (see nameCache).
func (c *nameCache) name(pid int) event.Text {
	if e, ok := c.entries[pid]; ok {
		e.gen = c.gen
		c.entries[pid] = e
		return e.name
	}
	t := event.Text{S: tokNA, Status: event.CellNA}
	if !c.inHostPIDNamespace() {
		c.entries[pid] = nameEntry{name: t, gen: c.gen}
		return t
	}
	dir := c.procDir() + "/" + strconv.Itoa(pid)
	b := readArgv0(dir + "/cmdline")
	if len(b) == 0 {
		// No command line (a zombie, a kernel thread): the task name.
		if comm, err := os.ReadFile(dir + "/comm"); err == nil {
			b = bytes.TrimRight(comm, "\n")
		}
	}
	if len(b) > 0 {
		t = event.Text{S: sanitize.Line(b)}
	}
	c.entries[pid] = nameEntry{name: t, gen: c.gen}
	return t
}

// maxProcessName bounds a process name read from /proc/PID/cmdline, in
// bytes; a longer argv[0] is cut there.
const maxProcessName = 256

// readArgv0 returns the first NUL-terminated field of the /proc/PID/cmdline
// file at path (at most maxProcessName bytes), or nil when it cannot be
// read within argv0Timeout or is empty. This is the name nvidia-smi --query-compute-apps gives
// as process_name ("./gpu_burn", "/usr/bin/python3"), and the title a
// process set for itself with setproctitle ("sglang::scheduler_TP0").
func readArgv0(path string) []byte {
	got := make(chan []byte, 1)
	go func() { got <- readArgv0Now(path) }()
	t := time.NewTimer(argv0Timeout)
	defer t.Stop()
	select {
	case b := <-got:
		return b
	case <-t.C:
		return nil // the reader is left to finish; the PID is not read again
	}
}

// argv0Timeout bounds a read of /proc/PID/cmdline: the kernel takes the
// process's memory-map lock for it, which a process stuck in the driver
// may hold (the "ps hangs" symptom, on exactly the hosts flightdeck
// watches); past it the task name (/proc/PID/comm, which needs no such
// lock) names the process.
const argv0Timeout = 100 * time.Millisecond

// readArgv0Now is readArgv0's read, unbounded.
func readArgv0Now(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var buf [maxProcessName]byte
	n, _ := io.ReadFull(f, buf[:])
	b := buf[:n]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return bytes.Clone(bytes.TrimRight(b, " "))
}
