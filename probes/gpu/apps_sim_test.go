package gpu_test

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

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// These tests drive the simulated host, which imports probes/nvml (and so
// probes/gpu): they live in the external test package.

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
	query := func() ([]event.ComputeApp, []gpu.GPUMemory) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		apps, err := gpu.QueryComputeApps(ctx, host, smi)
		if err != nil {
			t.Fatalf("gpu.QueryComputeApps: %v", err)
		}
		mem, err := gpu.QueryGPUMemory(ctx, host, smi)
		if err != nil {
			t.Fatalf("gpu.QueryGPUMemory: %v", err)
		}
		if len(mem) != gpus {
			t.Fatalf("%d GPUs, want %d: %+v", len(mem), gpus, mem)
		}
		for i, g := range mem {
			if g.Index != i || g.TotalMiB.Status != event.CellLost && (!g.TotalMiB.Valid() || g.TotalMiB.Value < 80000) || !gpu.SameBus(g.BusID, g.BusID) {
				t.Fatalf("GPU %d: %+v", i, g)
			}
		}
		return apps, mem
	}
	// onGPU returns the GPU index an app runs on, by bus id.
	onGPU := func(a event.ComputeApp, mem []gpu.GPUMemory) int {
		for _, g := range mem {
			if gpu.SameBus(a.BusID.S, g.BusID) {
				return g.Index
			}
		}
		t.Fatalf("app %+v on no GPU of %+v", a, mem)
		return -1
	}
	// settled reports whether every GPU's memory is what its apps hold.
	settled := func(apps []event.ComputeApp, mem []gpu.GPUMemory) bool {
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
	if apps, err := gpu.QueryComputeApps(ctx, host, ""); err != nil || len(apps) != 0 {
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
		if a.PIDStatus != event.CellOK || a.PID != server && parentPID(a.PID) != server {
			t.Errorf("GPU %d: pid %d (%v), want the server's %d or its worker's", i, a.PID, a.PIDStatus, server)
		}
		if a.Name != (event.Text{S: fmt.Sprintf("sglang::scheduler_TP%d", i), Status: event.CellOK}) || a.UUID.Status != event.CellOK || !a.UsedMiB.Valid() {
			t.Errorf("GPU %d: %+v", i, a)
		}
	}

	// A lost GPU: its memory reads event.CellLost, and nvidia-smi lists no process on it.
	if err := h.SetFaults(sim.Faults{LostGPUs: []int{1}}); err != nil {
		t.Fatal(err)
	}
	apps, mem = query()
	if mem[1].UsedMiB.Status != event.CellLost || !mem[0].UsedMiB.Valid() || len(apps) != 1 || onGPU(apps[0], mem) != 0 {
		t.Errorf("GPU 1 lost: apps %+v, memory %+v", apps, mem)
	}
	// A GPU fallen off the bus fails the whole command.
	one := 1
	if err := h.SetFaults(sim.Faults{HandleLostGPU: &one}); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"apps":   func() error { _, err := gpu.QueryComputeApps(ctx, host, smi); return err },
		"memory": func() error { _, err := gpu.QueryGPUMemory(ctx, host, smi); return err },
	} {
		err := run()
		var fe *gpu.FailureError
		var ee *remote.ExitError
		if !errors.As(err, &fe) || fe.Failure.Class != event.GPUFailLost || !fe.Failure.NeedsReboot || !gpu.SameBus(fe.Failure.BusID, mem[1].BusID) ||
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
	_, err := gpu.QueryComputeApps(sctx, host, smi)
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
