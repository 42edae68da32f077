//go:build linux && cgo

package sim

// The real nvml.Sampler over the fake NVML: it reads what the cockpit
// parses from the fake nvidia-smi, a capture's values, the simulated
// host's Xids and stalls, and samples on without a GPU whose handle is
// lost.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// smiSample is what the fake nvidia-smi prints at the clock's moment,
// parsed by probes/gpu: the cockpit's --query-gpu row per GPU and the
// compute processes.
func smiSample(t *testing.T, dir string, now time.Time) ([]event.GPU, []event.ComputeApp) {
	t.Helper()
	fields := gpu.DefaultFields()
	var out syncBuffer
	env := smiEnv{dir: dir, stdout: &out, now: func() time.Time { return now }}
	if code := runNvidiaSMI(context.Background(), []string{"--query-gpu=" + strings.Join(fields, ","), "--format=csv,noheader,nounits"}, env); code != 0 {
		t.Fatalf("nvidia-smi exit %d: %s", code, out.String())
	}
	p, err := gpu.NewParser(fields)
	if err != nil {
		t.Fatal(err)
	}
	var gs []event.GPU
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		g, err := p.Parse([]byte(l))
		if err != nil {
			t.Fatalf("parse %q: %v", l, err)
		}
		gs = append(gs, g)
	}
	out = syncBuffer{}
	env.stdout = &out
	if code := runNvidiaSMI(context.Background(), []string{"--query-compute-apps=" + strings.Join(gpu.AppFields(), ","), "--format=csv,noheader,nounits"}, env); code != 0 {
		t.Fatalf("nvidia-smi compute-apps exit %d: %s", code, out.String())
	}
	apps, err := gpu.ParseComputeApps([]byte(out.String()), gpu.AppFields())
	if err != nil {
		t.Fatal(err)
	}
	return gs, apps
}

// sameReading: both hold the same value, or neither holds one, and a lost
// cell is lost on both sides. nvidia-smi prints "[N/A]" where NVML answers
// NOT_SUPPORTED (a fan on an SXM board), so the kind of non-value may
// differ otherwise. A static field (stable) that nvidia-smi prints as lost
// may keep, on the NVML side, the value the sampler read before the GPU
// was lost (event.GPU.Lost: "its other readings may still hold values from
// before").
func sameReading(a, b event.Reading, static bool) bool {
	if a.Status == event.CellLost && static && b.Valid() {
		return true
	}
	if a.Valid() || b.Valid() {
		return a.Valid() && b.Valid() && a.Value == b.Value
	}
	return (a.Status == event.CellLost) == (b.Status == event.CellLost)
}

func sameText(a, b event.Text, static bool) bool {
	if a.Status == event.CellLost && static && b.Status == event.CellOK {
		return true
	}
	if a.Status == event.CellOK || b.Status == event.CellOK {
		return a.Status == b.Status && a.S == b.S
	}
	return (a.Status == event.CellLost) == (b.Status == event.CellLost)
}

// compareGPU reports every field where the NVML row n differs from the
// nvidia-smi row s.
func compareGPU(t *testing.T, s, n event.GPU) {
	t.Helper()
	readings := []struct {
		name   string
		a, b   event.Reading
		static bool
	}{
		{"utilization.gpu", s.UtilGPUPct, n.UtilGPUPct, false}, {"utilization.memory", s.UtilMemPct, n.UtilMemPct, false},
		{"memory.used", s.MemUsedMiB, n.MemUsedMiB, false}, {"memory.total", s.MemTotalMiB, n.MemTotalMiB, true},
		{"power.draw", s.PowerDrawW, n.PowerDrawW, false}, {"power.limit", s.PowerLimitW, n.PowerLimitW, true},
		{"temperature.gpu", s.TempC, n.TempC, false}, {"clocks.current.sm", s.SMClockMHz, n.SMClockMHz, false},
		{"clocks.current.memory", s.MemClockMHz, n.MemClockMHz, false}, {"clocks.max.sm", s.SMClockMax, n.SMClockMax, true},
		{"fan.speed", s.FanPct, n.FanPct, false}, {"pcie.link.gen.current", s.PCIeGenCurrent, n.PCIeGenCurrent, false},
		{"pcie.link.gen.max", s.PCIeGenMax, n.PCIeGenMax, true}, {"pcie.link.width.current", s.PCIeWidthCurrent, n.PCIeWidthCurrent, false},
		{"pcie.link.width.max", s.PCIeWidthMax, n.PCIeWidthMax, true},
	}
	for _, r := range readings {
		if !sameReading(r.a, r.b, r.static) {
			t.Errorf("GPU %d %s: nvidia-smi %+v, NVML %+v", s.Index, r.name, r.a, r.b)
		}
	}
	texts := []struct {
		name   string
		a, b   event.Text
		static bool
	}{
		{"name", s.Name, n.Name, true}, {"pci.bus_id", s.BusID, n.BusID, true}, {"uuid", s.UUID, n.UUID, true},
		{"pstate", s.PState, n.PState, false}, {"persistence_mode", s.Persistence, n.Persistence, true},
		{"ecc.mode.current", s.ECCMode, n.ECCMode, true}, {"mig.mode.current", s.MIGMode, n.MIGMode, true},
	}
	for _, x := range texts {
		if !sameText(x.a, x.b, x.static) {
			t.Errorf("GPU %d %s: nvidia-smi %+v, NVML %+v", s.Index, x.name, x.a, x.b)
		}
	}
	if s.Index != n.Index || s.Lost != n.Lost || s.ShowsLost() != n.ShowsLost() {
		t.Errorf("GPU %d: index %d/%d, lost %v/%v, shows lost %v/%v", s.Index, s.Index, n.Index, s.Lost, n.Lost, s.ShowsLost(), n.ShowsLost())
	}
	if (s.ClockEvents.Status == event.CellOK) != (n.ClockEvents.Status == event.CellOK) || s.ClockEvents.Mask != n.ClockEvents.Mask {
		t.Errorf("GPU %d clock events: nvidia-smi %+v, NVML %+v", s.Index, s.ClockEvents, n.ClockEvents)
	}
}

// TestOpenNVMLMatchesNvidiaSMI: the real nvml.Sampler over the fake NVML
// reads, for one moment and one state, what the cockpit parses from the
// fake nvidia-smi: every field of every GPU (a degraded link and a thermal
// slowdown among them, then a GPU lost mid-run) and every compute process.
func TestOpenNVMLMatchesNvidiaSMI(t *testing.T) {
	dir := busyDir(t)
	writeFaults(t, dir, Faults{PCIeDegradedGPUs: []int{3}, ThermalGPUs: []int{4}})
	clock := &testClock{t: nvmlTestNow}
	s, err := openNVML(dir, nvml.Options{Now: clock.now, NoXid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if in := s.Info(); in.GPUs != 8 || in.Driver != "590.48.01" || in.CUDA != 13010 || in.NVML != "13.590.48.01" {
		t.Errorf("Info %+v", in)
	}
	compare := func(step string) event.GPUSample {
		t.Helper()
		smp, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		want, wantApps := smiSample(t, dir, clock.now())
		if len(smp.GPUs) != len(want) || len(want) != 8 {
			t.Fatalf("%s: NVML sample has %d GPUs, nvidia-smi %d; want 8", step, len(smp.GPUs), len(want))
		}
		for i := range want {
			compareGPU(t, want[i], smp.GPUs[i])
			if smp.GPUs[i].Name.S != "NVIDIA H200" {
				t.Errorf("%s: GPU %d name %+v", step, i, smp.GPUs[i].Name)
			}
		}
		// NVML lists processes by GPU then pid, nvidia-smi in its own order.
		byBusPID := func(a, b event.ComputeApp) int {
			if c := strings.Compare(gpu.NormBusID(a.BusID.S), gpu.NormBusID(b.BusID.S)); c != 0 {
				return c
			}
			return a.PID - b.PID
		}
		got := slices.SortedFunc(slices.Values(smp.Apps), byBusPID)
		slices.SortFunc(wantApps, byBusPID)
		if len(got) != len(wantApps) || len(wantApps) < 7 {
			t.Fatalf("%s: NVML apps %+v\nnvidia-smi apps %+v", step, got, wantApps)
		}
		for k, w := range wantApps {
			a := got[k]
			if a.PID != w.PID || !sameReading(a.UsedMiB, w.UsedMiB, false) || !gpu.SameBus(a.BusID.S, w.BusID.S) || a.UUID.S != w.UUID.S {
				t.Errorf("%s: app %d: NVML %+v, nvidia-smi %+v", step, k, a, w)
			}
		}
		return smp
	}
	smp := compare("first sample")
	if g := smp.GPUs[3]; g.PCIeGenCurrent.Value != 4 || g.PCIeWidthCurrent.Value != 8 || g.PCIeGenMax.Value != 5 {
		t.Errorf("GPU 3 (degraded) PCIe gen %v/%v width %v", g.PCIeGenCurrent, g.PCIeGenMax, g.PCIeWidthCurrent)
	}
	if g := smp.GPUs[4]; g.ClockEvents.Mask&event.ReasonSWThermalSlowdown == 0 || g.TempC.Value < 87 {
		t.Errorf("GPU 4 (thermal) reasons %v temp %v", g.ClockEvents, g.TempC)
	}
	if len(smp.Apps) != 9 {
		t.Errorf("%d processes, want 9 (a rank on each GPU, and an orphan on GPU 5)", len(smp.Apps))
	}

	writeFaults(t, dir, Faults{LostGPUs: []int{6}})
	clock.add(500 * time.Millisecond) // the server's heartbeat stays fresh
	smp = compare("GPU 6 lost")
	if !smp.GPUs[6].Lost || smp.GPUs[6].TempC.Status != event.CellLost || smp.GPUs[5].Lost {
		t.Errorf("GPU 6 (lost) %+v; GPU 5 lost %v", smp.GPUs[6].TempC, smp.GPUs[5].Lost)
	}
}

// TestOpenNVMLCaptureReplay: with a capture (an RTX 4080 SUPER, a board
// with a fan), the fake NVML answers that capture's values.
func TestOpenNVMLCaptureReplay(t *testing.T) {
	capture, err := filepath.Abs("testdata/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := simDir(t, simConfig{GPUs: 2, GPUCapture: capture})
	now := func() time.Time { return nvmlTestNow }
	s, err := openNVML(dir, nvml.Options{Now: now, NoXid: true, NoApps: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	smp, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := smiSample(t, dir, nvmlTestNow)
	if len(smp.GPUs) != 2 {
		t.Fatalf("%d GPUs, want 2", len(smp.GPUs))
	}
	for i := range want {
		compareGPU(t, want[i], smp.GPUs[i])
	}
	if g := smp.GPUs[0]; !strings.Contains(g.Name.S, "4080") || !g.FanPct.Valid() {
		t.Errorf("GPU 0 name %+v fan %+v", g.Name, g.FanPct)
	}
	if s.Info().Driver != "595.71.05" {
		t.Errorf("driver %q", s.Info().Driver)
	}
}

// TestOpenNVMLRunOnSimHost runs the real sampler over a simulated host's
// fake NVML, as `flightdeck agent` does there: samples of the sim's 8
// H200s, each injected Xid published once as a event.Xid naming its GPU, and
// a stalled driver reported as event.GPUStale, after which samples resume.
func TestOpenNVMLRunOnSimHost(t *testing.T) {
	h := startHost(t, Options{NoSSH: true})
	s, err := openNVML(h.Dir, nvml.Options{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	events := make(chan event.Event, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, func(e event.Event) { events <- e }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	var xids []event.Xid
	// next returns the next event of kind (collecting Xids on the way),
	// failing after 20 s without one.
	next := func(kind string) event.Event {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case e := <-events:
				if x, ok := e.Data.(event.Xid); ok {
					xids = append(xids, x)
				}
				if e.Data.Kind().String() == kind {
					return e
				}
			case <-deadline:
				t.Fatalf("no %s event in 20 s (Xids so far %+v)", kind, xids)
			}
		}
	}
	smp := next("gpu-sample").Data.(event.GPUSample)
	if len(smp.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(smp.GPUs))
	}
	for i, g := range smp.GPUs {
		if g.Index != i || g.Name.S != "NVIDIA H200" || g.UUID.S != gpuUUID(i) || !g.MemUsedMiB.Valid() {
			t.Errorf("GPU %d: index %d name %+v uuid %+v memory %+v", i, g.Index, g.Name, g.UUID, g.MemUsedMiB)
		}
	}

	if err := h.SetFaults(Faults{Xids: []XidFault{{GPU: 3, Code: 79}}}); err != nil {
		t.Fatal(err)
	}
	next("gpu-xid")
	if err := h.SetFaults(Faults{Xids: []XidFault{{GPU: 3, Code: 79}, {GPU: 0, Code: 48}}}); err != nil {
		t.Fatal(err)
	}
	next("gpu-xid")
	for range 10 { // later samples bring no repeat
		next("gpu-sample")
	}
	want := []event.Xid{{Index: 3, UUID: gpuUUID(3), BusID: "00000000:5D:00.0", Code: 79}, {Index: 0, UUID: gpuUUID(0), BusID: "00000000:18:00.0", Code: 48}}
	if !slices.Equal(xids, want) {
		t.Errorf("Xids %+v, want %+v", xids, want)
	}

	if err := h.SetFaults(Faults{Stall: true}); err != nil {
		t.Fatal(err)
	}
	st := next("gpu-stale").Data.(event.GPUStale)
	if !strings.Contains(st.Reason, "blocked") {
		t.Errorf("stale reason %q", st.Reason)
	}
	if err := h.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	if smp := next("gpu-sample").Data.(event.GPUSample); len(smp.GPUs) != 8 {
		t.Errorf("after the stall: %d GPUs", len(smp.GPUs))
	}
}

// BenchmarkOpenNVMLSample: one nvml.Sampler.Sample of the simulated host's
// 8 GPUs over the fake NVML, a new moment (snapshot) each time; what a
// `flightdeck agent` on the simulated host spends per tick.
func BenchmarkOpenNVMLSample(b *testing.B) {
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "run"), 0o755)
	cfg, _ := json.Marshal(simConfig{GPUs: 8, Seed: 1})
	os.WriteFile(filepath.Join(dir, configFile), cfg, 0o644)
	clock := &testClock{t: time.Now()}
	st, _ := json.Marshal(serverState{PID: os.Getpid(), Heartbeat: clock.now().Add(time.Hour).UnixNano(), TP: 8, MemMiB: 120_000, Load: 0.8})
	os.WriteFile(filepath.Join(dir, stateFile), st, 0o644)
	s, err := openNVML(dir, nvml.Options{Now: clock.now, NoXid: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		clock.add(time.Second)
		if _, err := s.Sample(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOpenNVMLHandleLost: a GPU whose handle NVML cannot give at Open is
// missing from the samples, the other seven keep reporting; nvidia-smi
// would fail as a whole.
func TestOpenNVMLHandleLost(t *testing.T) {
	dir := busyDir(t)
	gpu2 := 2
	writeFaults(t, dir, Faults{HandleLostGPU: &gpu2})
	s, err := openNVML(dir, nvml.Options{Now: func() time.Time { return nvmlTestNow }, NoXid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	smp, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, g := range smp.GPUs {
		idx = append(idx, g.Index)
		if g.Lost {
			t.Errorf("GPU %d lost", g.Index)
		}
	}
	if !slices.Equal(idx, []int{0, 1, 3, 4, 5, 6, 7}) || !slices.Equal(smp.Missing, []int{2}) {
		t.Errorf("GPUs %v, missing %v; want all but 2, and 2 missing", idx, smp.Missing)
	}
}

// openNVML samples the fake NVML in dir with the real nvml.Sampler, as the
// agent does on the simulated host (agent.OpenSimNVML, which this package
// cannot import).
func openNVML(dir string, opts nvml.Options) (*nvml.Sampler, error) {
	lib, err := FakeNVML(dir, opts.Now)
	if err != nil {
		return nil, &nvml.UnavailableError{Reason: "simulated NVML: " + err.Error()}
	}
	return nvml.OpenLibrary(lib, opts)
}
