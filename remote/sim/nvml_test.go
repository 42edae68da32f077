package sim

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nvmlTestNow is the fixed moment the fake NVML and the fake nvidia-smi
// are compared at.
var nvmlTestNow = time.Date(2026, 7, 3, 22, 11, 9, 763_000_000, time.UTC)

// busyDir is a sim directory with a live 8-GPU server under load (this test
// process stands in for its pid), an orphaned worker on GPU 5 (the test's
// parent process stands in for it) and faults on GPUs 3, 4 and 6.
func busyDir(t *testing.T) string {
	t.Helper()
	dir := simDir(t, simConfig{GPUs: 8, Seed: 42})
	writeState(t, dir, serverState{PID: os.Getpid(), Heartbeat: nvmlTestNow.Add(-200 * time.Millisecond).UnixNano(),
		TP: 8, MemMiB: 120_000, Load: 0.8, Heat: 0.5})
	w := workerState{PID: os.Getppid(), ServerPID: 1, GPU: 5, Name: "python3", MemMiB: 2048,
		Heartbeat: nvmlTestNow.Add(-100 * time.Millisecond).UnixNano()}
	b, _ := json.Marshal(w)
	if err := os.WriteFile(workerFile(dir, w.PID), b, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFaults(t, dir, Faults{LostGPUs: []int{6}, PCIeDegradedGPUs: []int{3}, ThermalGPUs: []int{4}})
	return dir
}

// TestGPUSnapshotIsWhatNvidiaSMIPrints: the snapshot at a moment holds the
// rows a one-shot nvidia-smi prints at that moment, cell for cell, and the
// compute processes it lists.
func TestGPUSnapshotIsWhatNvidiaSMIPrints(t *testing.T) {
	dir := busyDir(t)
	g, err := newSimGPUs(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := g.snapshot(nvmlTestNow)
	c, _ := DefaultCapture()
	var fields []string
	for f := range c.Rows[0] {
		fields = append(fields, f)
	}
	var out syncBuffer
	code := runNvidiaSMI(context.Background(), []string{"--query-gpu=" + strings.Join(fields, ","), "--format=csv,noheader,nounits"},
		smiEnv{dir: dir, stdout: &out, now: func() time.Time { return nvmlTestNow }})
	if code != 0 {
		t.Fatalf("nvidia-smi exit %d: %s", code, out.String())
	}
	tab := parseSMICSV(t, out.String(), false)
	if len(tab.rows) != 8 || len(s.rows) != 8 {
		t.Fatalf("nvidia-smi printed %d rows, snapshot has %d; want 8", len(tab.rows), len(s.rows))
	}
	for i, cells := range tab.rows {
		if len(cells) != len(fields) {
			t.Fatalf("row %d has %d cells, want %d (a cell held \", \"?)", i, len(cells), len(fields))
		}
		for k, f := range fields {
			if s.rows[i][f] != cells[k] {
				t.Errorf("GPU %d %s: snapshot %q, nvidia-smi %q", i, f, s.rows[i][f], cells[k])
			}
		}
	}
	if s.rows[6]["utilization.gpu"] != lostCell || s.rows[6]["name"] != "NVIDIA H200" || !s.lost(6) || s.lost(5) {
		t.Errorf("GPU 6 lost: util %q, name %q, lost %v", s.rows[6]["utilization.gpu"], s.rows[6]["name"], s.lost(6))
	}
	if s.rows[3]["pcie.link.gen.current"] != "4" || s.rows[3]["pcie.link.width.current"] != "8" {
		t.Errorf("GPU 3 PCIe: gen %s width %s", s.rows[3]["pcie.link.gen.current"], s.rows[3]["pcie.link.width.current"])
	}

	out = syncBuffer{}
	runNvidiaSMI(context.Background(), []string{"--query-compute-apps=gpu_bus_id,pid,used_memory", "--format=csv,noheader,nounits"},
		smiEnv{dir: dir, stdout: &out, now: func() time.Time { return nvmlTestNow }})
	var apps []string
	for i, as := range s.apps {
		for _, a := range as {
			apps = append(apps, strings.Join([]string{s.rows[i]["pci.bus_id"], strconv.Itoa(a.pid), strconv.FormatInt(a.memMiB, 10)}, ", "))
		}
	}
	if got, want := apps, strings.Split(strings.TrimSpace(out.String()), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot apps\n%q\nnvidia-smi --query-compute-apps\n%q", got, want)
	}
	if len(s.apps[5]) != 2 || len(s.apps[6]) != 0 {
		t.Errorf("GPU 5 has %d processes (want the server's and the orphan), lost GPU 6 %d (want 0)", len(s.apps[5]), len(s.apps[6]))
	}
}

// TestGPUSnapshotHandleLost: the GPU whose handle is lost reads as lost
// (nvidia-smi fails as a whole there, NVML only for that GPU).
func TestGPUSnapshotHandleLost(t *testing.T) {
	dir := busyDir(t)
	gpu := 2
	writeFaults(t, dir, Faults{HandleLostGPU: &gpu})
	g, err := newSimGPUs(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := g.snapshot(nvmlTestNow)
	if s.handleLost != 2 || !s.lost(2) || s.lost(1) {
		t.Fatalf("handleLost %d, lost(2) %v, lost(1) %v", s.handleLost, s.lost(2), s.lost(1))
	}
	if s.rows[2]["memory.used"] != lostCell || s.rows[2]["uuid"] != gpuUUID(2) || s.rows[1]["memory.used"] == lostCell {
		t.Errorf("GPU 2 memory %q uuid %q; GPU 1 memory %q", s.rows[2]["memory.used"], s.rows[2]["uuid"], s.rows[1]["memory.used"])
	}
	if len(s.apps[2]) != 0 {
		t.Errorf("lost GPU 2 lists processes %v", s.apps[2])
	}
}

// TestPCIeThroughputModel: idle GPUs move little, loaded ones more; the
// model is deterministic.
func TestPCIeThroughputModel(t *testing.T) {
	idle, busy := pcieThroughput(1, 0), pcieThroughput(1, 1)
	if idle[0] == 0 || idle[0] > 100 || busy[0] <= idle[0] || busy[1] <= idle[1] || busy != pcieThroughput(1, 1) {
		t.Errorf("idle %v, busy %v", idle, busy)
	}
}

func TestCellReturn(t *testing.T) {
	for cell, want := range map[string]int{
		"[GPU is lost]": 15, "[Unknown Error]": 999, "[Insufficient Permissions]": 4, "[N/A]": 3,
		"[Not Supported]": 3, "[Requested functionality has been deprecated]": 3, "": 3, "N/A": 3, "garbage": 999,
	} {
		if got := cellReturn(cell); got != want {
			t.Errorf("cellReturn(%q) = %d, want %d", cell, got, want)
		}
	}
}

// TestSSHSessionEnv: a session on the simulated host finds the sim
// directory in FLIGHTDECK_SIM_NVML (a `flightdeck agent` there then samples
// the fake NVML) and its cache under the sim directory, whatever the
// server's own environment says.
func TestSSHSessionEnv(t *testing.T) {
	t.Setenv(EnvNVML, "/elsewhere")
	t.Setenv("XDG_CACHE_HOME", "/home/someone/.cache")
	h := startHost(t, Options{})
	c := dial(t, h)
	out, err := run(t, c, `printf '%s\n%s\n' "$`+EnvNVML+`" "$XDG_CACHE_HOME"; env | grep -c '^XDG_CACHE_HOME='`)
	want := h.Dir + "\n" + filepath.Join(h.Dir, "cache") + "\n1\n"
	if err != nil || out != want {
		t.Errorf("session env: %q, %v; want %q", out, err, want)
	}
}

// BenchmarkGPUSnapshot: one moment of 8 GPUs for the fake NVML (reading the
// state, faults and worker files, and modelling every row).
func BenchmarkGPUSnapshot(b *testing.B) {
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "run"), 0o755)
	cfg, _ := json.Marshal(simConfig{GPUs: 8, Seed: 1})
	os.WriteFile(filepath.Join(dir, configFile), cfg, 0o644)
	st, _ := json.Marshal(serverState{PID: os.Getpid(), Heartbeat: time.Now().Add(time.Hour).UnixNano(), TP: 8, MemMiB: 120_000, Load: 0.8})
	os.WriteFile(filepath.Join(dir, stateFile), st, 0o644)
	g, err := newSimGPUs(dir)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g.snapshot(now.Add(time.Duration(i) * time.Millisecond))
	}
}
