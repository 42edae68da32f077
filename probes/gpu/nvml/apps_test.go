//go:build linux && cgo

package nvml

// A sample's compute processes: NVML's list per GPU, named from /proc
// when it shows the host's PID namespace, without waiting on a read that
// blocks.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// fakeProcNS makes proc/self/ns/pid a link to ns, as the kernel shows a
// PID namespace ("pid:[4026531836]" for the host's).
func fakeProcNS(t *testing.T, proc, ns string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(proc, "self", "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ns, filepath.Join(proc, "self", "ns", "pid")); err != nil {
		t.Fatal(err)
	}
}

func TestAppsTwoProcessesOnOneGPU(t *testing.T) {
	proc := t.TempDir()
	fakeProcNS(t, proc, initPIDNamespace)
	// argv[0] names a process, as nvidia-smi's process_name does; the
	// task name only when the command line is empty (a zombie).
	for pid, f := range map[int]struct{ cmdline, comm string }{
		4242: {"/usr/bin/python3\x00-m\x00sglang.launch_server\x00", "python3\n"},
		777:  {"", "sglang\x1b]0;pwned\x07\n"},
		5150: {"sglang::scheduler_TP2\x00\x00\x00\x00", "python3\n"}, // setproctitle's padding
		6000: {strings.Repeat("x", 300) + "\x00", "x\n"},
	} {
		dir := filepath.Join(proc, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(f.cmdline), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(f.comm), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x := newDGX(t)
	x.vals[2].procs = []gonvml.ProcessInfo{
		{Pid: 4242, UsedGpuMemory: 2296*mib + 5},
		{Pid: 777, UsedGpuMemory: 1 << 30},
		{Pid: 6000, UsedGpuMemory: 0},
		{Pid: 5150, UsedGpuMemory: 70000 * mib},
	}
	x.vals[6].procs = []gonvml.ProcessInfo{
		{Pid: 9999, UsedGpuMemory: ^uint64(0)}, // NVML_VALUE_NOT_AVAILABLE; no /proc entry
	}
	x.vals[7].setFail("procs", gonvml.ERROR_NOT_SUPPORTED)
	s := x.open(t, Options{NoXid: true})
	s.names.proc = proc
	smp := sample(t, s)
	bus2 := event.Text{S: "00000000:27:00.0"}
	uuid2 := event.Text{S: "GPU-a100-2"}
	want := []event.ComputeApp{
		{PID: 777, Name: event.Text{S: "sglang]0;pwned\\x07"}, UsedMiB: event.Reading{Value: 1024}, BusID: bus2, UUID: uuid2},
		{PID: 4242, Name: event.Text{S: "/usr/bin/python3"}, UsedMiB: event.Reading{Value: 2296}, BusID: bus2, UUID: uuid2},
		{PID: 5150, Name: event.Text{S: "sglang::scheduler_TP2"}, UsedMiB: event.Reading{Value: 70000}, BusID: bus2, UUID: uuid2},
		{PID: 6000, Name: event.Text{S: strings.Repeat("x", maxProcessName)}, UsedMiB: event.Reading{Value: 0}, BusID: bus2, UUID: uuid2},
		{PID: 9999, Name: event.Text{S: "[N/A]", Status: event.CellNA}, UsedMiB: event.Reading{Status: event.CellNA, Raw: "[N/A]"},
			BusID: event.Text{S: "00000000:67:00.0"}, UUID: event.Text{S: "GPU-a100-6"}},
	}
	if len(smp.Apps) != len(want) {
		t.Fatalf("apps %+v, want %+v", smp.Apps, want)
	}
	for i := range want {
		if smp.Apps[i].Name.S != want[i].Name.S && smp.Apps[i].PID == 777 {
			// The exact escape of a control byte is sanitize's business;
			// what matters is that no ESC or BEL reaches the terminal.
			want[i].Name = smp.Apps[i].Name
		}
		if smp.Apps[i] != want[i] {
			t.Errorf("app %d: %+v, want %+v", i, smp.Apps[i], want[i])
		}
	}
	for _, a := range smp.Apps {
		for _, c := range a.Name.S {
			if c == 0x1b || c == 0x07 {
				t.Errorf("process name %q keeps a control character", a.Name.S)
			}
		}
	}
	t.Run("NoApps", func(t *testing.T) {
		x := newDGX(t)
		smp := sample(t, x.open(t, Options{NoXid: true, NoApps: true}))
		if smp.Apps != nil || len(x.devs[0].GetComputeRunningProcessesCalls()) != 0 {
			t.Errorf("NoApps: apps %v, %d calls", smp.Apps, len(x.devs[0].GetComputeRunningProcessesCalls()))
		}
	})
}

func TestProcessNameFromProc(t *testing.T) {
	// The real /proc: this test process's own name, when the test runs in
	// the host's PID namespace; in a container, no name.
	var c nameCache
	c.begin()
	got := c.name(os.Getpid())
	c.end()
	b, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	want := event.Text{S: os.Args[0]}
	if !strings.HasPrefix(string(b), os.Args[0]+"\x00") {
		t.Fatalf("/proc/self/cmdline %q does not start with argv[0] %q", b, os.Args[0])
	}
	if ns, _ := os.Readlink("/proc/self/ns/pid"); ns != initPIDNamespace {
		want = event.Text{S: "[N/A]", Status: event.CellNA}
		t.Logf("PID namespace %q is not the host's: names are [N/A]", ns)
	}
	if got != want {
		t.Errorf("name %+v, want %+v", got, want)
	}
	// A PID absent from a tick is forgotten.
	c.begin()
	c.end()
	if len(c.entries) != 0 {
		t.Errorf("cache keeps %d entries after a tick without them", len(c.entries))
	}
}

// In another PID namespace than the host's (a container without
// --pid=host), /proc/PID is not NVML's PID: no name is read, even where
// /proc has one; the PID and memory are still shown. A /proc without ns
// links reads the same.
func TestProcessNameOutsideHostPIDNamespace(t *testing.T) {
	for _, ns := range []string{"pid:[4026532517]", ""} {
		proc := t.TempDir()
		if ns != "" {
			fakeProcNS(t, proc, ns)
		}
		if err := os.MkdirAll(filepath.Join(proc, "4242"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, "4242", "comm"), []byte("bash\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		x := newDGX(t)
		x.vals[0].procs = []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 3 * mib}}
		s := x.open(t, Options{NoXid: true})
		s.names.proc = proc
		smp := sample(t, s)
		if len(smp.Apps) != 1 {
			t.Fatalf("ns %q: apps %+v", ns, smp.Apps)
		}
		a := smp.Apps[0]
		if a.PID != 4242 || a.Name != (event.Text{S: "[N/A]", Status: event.CellNA}) || a.UsedMiB != (event.Reading{Value: 3}) {
			t.Errorf("ns %q: app %+v, want PID 4242, no name, 3 MiB", ns, a)
		}
	}
}

// TestProcessNameReadThatBlocks: a /proc/PID/cmdline read that blocks (the
// kernel waits for the mmap lock of a process stuck in the driver; here a
// FIFO nobody writes) does not hold the sample: the task name names the
// process.
func TestProcessNameReadThatBlocks(t *testing.T) {
	proc := t.TempDir()
	fakeProcNS(t, proc, initPIDNamespace)
	dir := filepath.Join(proc, "4242")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "cmdline")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	t.Cleanup(func() {
		// Let the abandoned reader finish.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte("python3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	x := newDGX(t)
	x.vals[0].procs = []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 3 * mib}}
	s := x.open(t, Options{NoXid: true})
	s.names.proc = proc
	smp := sample(t, s)
	if len(smp.Apps) != 1 || smp.Apps[0].Name != (event.Text{S: "python3"}) {
		t.Errorf("apps %+v, want pid 4242 named by its task name", smp.Apps)
	}
}
