package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
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
		failClass event.GPUFailureClass // a *FailureError of this class
		exitCode  int                   // errors.As finds a *remote.ExitError with this code
		is        error                 // errors.Is
		contains  string
		rowError  bool
	}{
		{name: "not installed", res: remote.Result{Stderr: []byte("sh: 1: nvidia-smi: not found\n"), ExitCode: 127},
			err: &remote.ExitError{Code: 127}, failClass: event.GPUFailNoNVIDIASMI, exitCode: 127, contains: "not found"},
		{name: "gpu lost", res: remote.Result{Stdout: []byte("Unable to determine the device handle for GPU 0000:18:00.0: GPU is lost. Reboot the system to recover this GPU\n"), ExitCode: 15},
			err: &remote.ExitError{Code: 15}, failClass: event.GPUFailLost, exitCode: 15, contains: "0000:18:00.0"},
		{name: "mismatch on stderr", res: remote.Result{Stderr: []byte(mismatch), ExitCode: 18},
			err: &remote.ExitError{Code: 18}, failClass: event.GPUFailDriverLibraryMismatch, exitCode: 18},
		{name: "failure with exit 0", res: remote.Result{Stdout: []byte("No devices were found\n")}, failClass: event.GPUFailNoDevices},
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
				if tc.failClass == event.GPUFailDriverLibraryMismatch && fe.Failure.NVMLVersion != "570.124" {
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
	if !errors.As(err, &fe) || fe.Failure.Class != event.GPUFailNoNVIDIASMI || !strings.Contains(fe.Failure.Reason, "nvidia-smi") ||
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
		if !found || a.UUID.Status != event.CellOK {
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
