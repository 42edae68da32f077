package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sim"
)

// TestQueryCommands checks the command lines the one-shot queries run, with
// a scripted host.
func TestQueryCommands(t *testing.T) {
	h := newFakeHost(t)
	h.helpNext = []fakeHelp{
		{res: remote.Result{Stdout: []byte("4127, sglang::scheduler_TP0, 126384, 00000000:18:00.0, GPU-0\n")}},
		{res: remote.Result{Stdout: []byte("0, 00000000:18:00.0, 126384, 143771\n")}},
	}
	ctx := context.Background()
	apps, err := QueryComputeApps(ctx, h, "")
	if err != nil || len(apps) != 1 || apps[0] != app(4127, "sglang::scheduler_TP0", 126384, "00000000:18:00.0", "GPU-0") {
		t.Fatalf("apps %+v, %v", apps, err)
	}
	gs, err := QueryGPUMemory(ctx, h, "/opt/nvidia smi/bin/nvidia-smi")
	if err != nil || len(gs) != 1 || gs[0].Index != 0 || !SameBus(gs[0].BusID, apps[0].BusID.S) || gs[0].UsedMiB != okR(126384) {
		t.Fatalf("memory %+v, %v", gs, err)
	}
	want := []string{
		"nvidia-smi '--query-compute-apps=pid,process_name,used_memory,gpu_bus_id,gpu_uuid' '--format=csv,noheader,nounits'",
		"'/opt/nvidia smi/bin/nvidia-smi' '--query-gpu=index,pci.bus_id,memory.used,memory.total' '--format=csv,noheader,nounits'",
	}
	if strings.Join(h.cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands\n%s\nwant\n%s", strings.Join(h.cmds, "\n"), strings.Join(want, "\n"))
	}
}

// TestQueryErrors: how a failed nvidia-smi run comes back, for both queries.
func TestQueryErrors(t *testing.T) {
	mismatch := "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n"
	for _, tc := range []struct {
		name      string
		res       remote.Result
		err       error
		failClass FailureClass // a *FailureError of this class
		exitCode  int          // errors.As finds a *remote.ExitError with this code
		is        error        // errors.Is
		contains  string
		rowError  bool
	}{
		{name: "not installed", res: remote.Result{Stderr: []byte("sh: 1: nvidia-smi: not found\n"), ExitCode: 127},
			err: &remote.ExitError{Code: 127}, failClass: FailNoNVIDIASMI, exitCode: 127, contains: "not found"},
		{name: "gpu lost", res: remote.Result{Stdout: []byte("Unable to determine the device handle for GPU 0000:18:00.0: GPU is lost. Reboot the system to recover this GPU\n"), ExitCode: 15},
			err: &remote.ExitError{Code: 15}, failClass: FailGPULost, exitCode: 15, contains: "0000:18:00.0"},
		{name: "mismatch on stderr", res: remote.Result{Stderr: []byte(mismatch), ExitCode: 18},
			err: &remote.ExitError{Code: 18}, failClass: FailDriverLibraryMismatch, exitCode: 18},
		{name: "failure with exit 0", res: remote.Result{Stdout: []byte("No devices were found\n")}, failClass: FailNoDevices},
		{name: "bad field", res: remote.Result{Stdout: []byte("Field \"used_memory\" is not a valid field to query.\n\n"), ExitCode: 2},
			err: &remote.ExitError{Code: 2}, exitCode: 2, contains: `"used_memory" is not a valid field`},
		{name: "killed", err: &remote.ExitError{Code: -1, Signal: "KILL"}, exitCode: -1, contains: "killed by signal KILL"},
		{name: "disconnected", err: fmt.Errorf("run: %w", remote.ErrDisconnected), is: remote.ErrDisconnected},
		{name: "garbled", res: remote.Result{Stdout: []byte("x, y, z\n")}, rowError: true, contains: "line 1"},
	} {
		for _, q := range []struct {
			name string
			run  func(context.Context, remote.Host) (int, error)
		}{
			{"apps", func(ctx context.Context, h remote.Host) (int, error) {
				a, err := QueryComputeApps(ctx, h, "")
				return len(a), err
			}},
			{"memory", func(ctx context.Context, h remote.Host) (int, error) {
				g, err := QueryGPUMemory(ctx, h, "")
				return len(g), err
			}},
		} {
			t.Run(tc.name+"/"+q.name, func(t *testing.T) {
				h := newFakeHost(t)
				h.helpNext = []fakeHelp{{res: tc.res, err: tc.err}}
				n, err := q.run(context.Background(), h)
				if err == nil || n != 0 {
					t.Fatalf("%d results, error %v", n, err)
				}
				var fe *FailureError
				if isFail := errors.As(err, &fe); isFail != (tc.failClass != "") || isFail && fe.Failure.Class != tc.failClass {
					t.Errorf("error %v (%T), want failure class %q", err, err, tc.failClass)
				}
				if tc.failClass == FailDriverLibraryMismatch && fe.Failure.NVMLVersion != "570.124" {
					t.Errorf("version %q", fe.Failure.NVMLVersion)
				}
				var ee *remote.ExitError
				if hasExit := errors.As(err, &ee); hasExit != (tc.err != nil && tc.exitCode != 0) || hasExit && ee.Code != tc.exitCode {
					t.Errorf("error %v: exit error %+v, want code %d", err, ee, tc.exitCode)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("error %v is not %v", err, tc.is)
				}
				var re *RowError
				if errors.As(err, &re) != tc.rowError {
					t.Errorf("error %v: row error %v, want %v", err, re != nil, tc.rowError)
				}
				if !strings.Contains(err.Error(), tc.contains) {
					t.Errorf("error %q does not say %q", err, tc.contains)
				}
			})
		}
	}
	if _, err := QueryComputeApps(context.Background(), nil, ""); err == nil {
		t.Error("nil host: no error")
	}
	if _, err := QueryGPUMemory(context.Background(), newFakeHost(t), "nvidia\x00smi"); err == nil {
		t.Error("unquotable program: no error")
	}
}

// startSimHost starts a simulated host without SSH, closed at the end of
// the test.
func startSimHost(t *testing.T, opt sim.Options) *sim.Host {
	t.Helper()
	h, err := sim.Start(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// parentPID reads a process's parent from /proc ("" when it cannot).
func parentPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// "pid (comm) state ppid …": comm may hold spaces and parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// TestQueryOnSimHost runs both queries against the simulated host's fake
// nvidia-smi through remote.Local: nothing before the server starts, its
// scheduler on every GPU with that GPU's memory while it runs, nothing and
// the memory back after it is stopped; and the faults a real host shows.
func TestQueryOnSimHost(t *testing.T) {
	const gpus = 2
	h := startSimHost(t, sim.Options{NoSSH: true, GPUs: gpus, StartupDelay: 200 * time.Millisecond, TimeScale: 20, Seed: 3})
	host := remote.NewLocal()
	defer host.Close()
	smi := filepath.Join(h.BinDir, "nvidia-smi")
	query := func() ([]App, []GPUMemory) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		apps, err := QueryComputeApps(ctx, host, smi)
		if err != nil {
			t.Fatalf("QueryComputeApps: %v", err)
		}
		mem, err := QueryGPUMemory(ctx, host, smi)
		if err != nil {
			t.Fatalf("QueryGPUMemory: %v", err)
		}
		if len(mem) != gpus {
			t.Fatalf("%d GPUs, want %d: %+v", len(mem), gpus, mem)
		}
		for i, g := range mem {
			if g.Index != i || g.TotalMiB.Status != Lost && (!g.TotalMiB.Valid() || g.TotalMiB.Value < 80000) || !SameBus(g.BusID, g.BusID) {
				t.Fatalf("GPU %d: %+v", i, g)
			}
		}
		return apps, mem
	}
	// onGPU returns the GPU index an app runs on, by bus id.
	onGPU := func(a App, mem []GPUMemory) int {
		for _, g := range mem {
			if SameBus(a.BusID.S, g.BusID) {
				return g.Index
			}
		}
		t.Fatalf("app %+v on no GPU of %+v", a, mem)
		return -1
	}
	// settled reports whether every GPU's memory is what its apps hold.
	settled := func(apps []App, mem []GPUMemory) bool {
		held := make([]float64, len(mem))
		for _, a := range apps {
			held[onGPU(a, mem)] += a.UsedMiB.Value
		}
		for i, g := range mem {
			if !g.UsedMiB.Valid() || g.UsedMiB.Value != held[i] {
				return false
			}
		}
		return true
	}

	apps, mem := query()
	if len(apps) != 0 || !settled(apps, mem) || mem[0].UsedMiB.Value != 0 {
		t.Fatalf("before the server: apps %+v, memory %+v", apps, mem)
	}

	// Program "" is nvidia-smi from the host's PATH.
	t.Setenv("PATH", h.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if apps, err := QueryComputeApps(ctx, host, ""); err != nil || len(apps) != 0 {
		t.Fatalf("nvidia-smi from PATH: %+v %v", apps, err)
	}

	if err := h.StartServer(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	server := h.ServerPID()
	deadline := time.Now().Add(60 * time.Second)
	for {
		apps, mem = query()
		// Loaded: one process per GPU, and the memory no longer changing
		// between the two queries.
		if len(apps) == gpus && settled(apps, mem) && mem[0].UsedMiB.Value > 100000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never showed on every GPU: apps %+v, memory %+v", apps, mem)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("server %d: apps %+v, memory %+v", server, apps, mem)
	for _, a := range apps {
		i := onGPU(a, mem)
		if a.PIDStatus != OK || a.PID != server && parentPID(a.PID) != server {
			t.Errorf("GPU %d: pid %d (%v), want the server's %d or its worker's", i, a.PID, a.PIDStatus, server)
		}
		if a.Name != okT(fmt.Sprintf("sglang::scheduler_TP%d", i)) || a.UUID.Status != OK || !a.UsedMiB.Valid() {
			t.Errorf("GPU %d: %+v", i, a)
		}
	}

	// A lost GPU: its memory reads Lost, and nvidia-smi lists no process on it.
	if err := h.SetFaults(sim.Faults{LostGPUs: []int{1}}); err != nil {
		t.Fatal(err)
	}
	apps, mem = query()
	if mem[1].UsedMiB.Status != Lost || !mem[0].UsedMiB.Valid() || len(apps) != 1 || onGPU(apps[0], mem) != 0 {
		t.Errorf("GPU 1 lost: apps %+v, memory %+v", apps, mem)
	}
	// A GPU fallen off the bus fails the whole command.
	one := 1
	if err := h.SetFaults(sim.Faults{HandleLostGPU: &one}); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"apps":   func() error { _, err := QueryComputeApps(ctx, host, smi); return err },
		"memory": func() error { _, err := QueryGPUMemory(ctx, host, smi); return err },
	} {
		err := run()
		var fe *FailureError
		var ee *remote.ExitError
		if !errors.As(err, &fe) || fe.Failure.Class != FailGPULost || !fe.Failure.NeedsReboot || !SameBus(fe.Failure.BusID, mem[1].BusID) ||
			!errors.As(err, &ee) || ee.Code != 15 {
			t.Errorf("%s with GPU 1 off the bus: %v", name, err)
		}
	}
	// A hung nvidia-smi ends with ctx's deadline.
	if err := h.SetFaults(sim.Faults{Stall: true}); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	start := time.Now()
	_, err := QueryComputeApps(sctx, host, smi)
	scancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("stalled nvidia-smi: %v after %v", err, time.Since(start))
	}
	if err := h.SetFaults(sim.Faults{}); err != nil {
		t.Fatal(err)
	}

	// Stopped: no process left and the memory back.
	if err := h.StopServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		apps, mem = query()
		if len(apps) == 0 && settled(apps, mem) && mem[0].UsedMiB.Value == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after stop: apps %+v, memory %+v", apps, mem)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestQueryMissingProgram: a host without the program gives a
// FailNoNVIDIASMI failure with the shell's message.
func TestQueryMissingProgram(t *testing.T) {
	host := remote.NewLocal()
	defer host.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := QueryComputeApps(ctx, host, filepath.Join(t.TempDir(), "nvidia-smi"))
	var fe *FailureError
	var ee *remote.ExitError
	if !errors.As(err, &fe) || fe.Failure.Class != FailNoNVIDIASMI || !strings.Contains(fe.Failure.Reason, "nvidia-smi") ||
		!errors.As(err, &ee) || ee.Code != 127 {
		t.Errorf("missing program: %v", err)
	}
}

// TestRealComputeApps runs the queries against this machine's real
// nvidia-smi (FLIGHTDECK_REAL_GPU=1, as for TestRealNvidiaSMI): the driver
// offers AppFields, its header-and-units output parses too, and every
// process sits on a GPU of QueryGPUMemory.
func TestRealComputeApps(t *testing.T) {
	if os.Getenv("FLIGHTDECK_REAL_GPU") == "" {
		t.Skip("set FLIGHTDECK_REAL_GPU=1 on a machine with an NVIDIA GPU")
	}
	host := remote.NewLocal()
	defer host.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	help, err := host.Run(ctx, "nvidia-smi --help-query-compute-apps", nil)
	if err != nil {
		t.Fatalf("--help-query-compute-apps: %v", err)
	}
	set, err := ParseHelpQueryGPU(help.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range AppFields() {
		if !set[f] {
			t.Errorf("the driver does not offer %q", f)
		}
	}
	mem, err := QueryGPUMemory(ctx, host, "")
	if err != nil || len(mem) == 0 {
		t.Fatalf("QueryGPUMemory: %+v %v", mem, err)
	}
	apps, err := QueryComputeApps(ctx, host, "")
	if err != nil {
		t.Fatalf("QueryComputeApps: %v", err)
	}
	t.Logf("GPUs %+v\napps %+v", mem, apps)
	for _, g := range mem {
		if !g.UsedMiB.Valid() || !g.TotalMiB.Valid() || g.TotalMiB.Value <= 0 || !SameBus(g.BusID, g.BusID) {
			t.Errorf("GPU %+v", g)
		}
	}
	for _, a := range apps {
		found := false
		for _, g := range mem {
			found = found || SameBus(a.BusID.S, g.BusID)
		}
		if !found || a.UUID.Status != OK {
			t.Errorf("app %+v on no GPU", a)
		}
	}
	full, err := host.Run(ctx, "nvidia-smi --query-compute-apps=timestamp,gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,pid,process_name,used_gpu_memory --format=csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseComputeApps(full.Stdout, nil); err != nil {
		t.Errorf("header and units: %v\n%s", err, full.Stdout)
	}
}
