package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const h200CapturePath = "captures/linux-x86_64__nvidia-h200__590.48.01.txt"

// simDir writes a sim.json for the nvidia-smi role and returns the directory.
func simDir(t *testing.T, cfg simConfig) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, configFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runSMI(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	var out syncBuffer
	code := runNvidiaSMI(context.Background(), args, smiEnv{dir: dir, stdout: &out})
	return out.String(), code
}

func writeState(t *testing.T, dir string, st serverState) {
	t.Helper()
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(dir, stateFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFaults(t *testing.T, dir string, f Faults) {
	t.Helper()
	b, _ := json.Marshal(f)
	if err := writeFileAtomic(filepath.Join(dir, faultsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCaptureH200(t *testing.T) {
	c, err := DefaultCapture()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 1 || len(c.Rows[0]) != 212 {
		t.Fatalf("rows %d, columns %d; want 1 row of 212 columns", len(c.Rows), len(c.Rows[0]))
	}
	for alias, want := range map[string]string{
		"clocks.sm": "clocks.current.sm", "clocks.current.sm": "clocks.current.sm", "gpu_name": "name",
		"gpu_bus_id": "pci.bus_id", "clocks_throttle_reasons.active": "clocks_event_reasons.active",
		"clocks.mem": "clocks.current.memory", "gpu.power.draw.average": "power.draw.average",
	} {
		if got, ok := c.Canonical(alias); !ok || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", alias, got, ok, want)
		}
	}
	if _, ok := c.Canonical("0: Default"); ok {
		t.Error(`"0: Default" (compute_mode help text) parsed as a field`)
	}
	for f, u := range map[string]string{"memory.used": "MiB", "power.draw": "W", "clocks.current.sm": "MHz", "utilization.gpu": "%", "temperature.gpu": ""} {
		if c.Units[f] != u {
			t.Errorf("unit of %s = %q, want %q", f, c.Units[f], u)
		}
	}
	r := c.Rows[0]
	for f, want := range map[string]string{"power.draw": "627.40", "temperature.gpu": "52", "memory.used": "32362",
		"clocks.current.sm": "1980", "pci.bus_id": "00000000:83:00.0", "platform.chassis_serial_number": "", "fan.speed": "[N/A]"} {
		if r[f] != want {
			t.Errorf("load row %s = %q, want %q", f, r[f], want)
		}
	}
}

func TestParseCaptureErrors(t *testing.T) {
	frame := strings.Repeat("#", 80)
	help := frame + "\n# capabilities :: help-query-gpu\n# $ nvidia-smi --help-query-gpu\n" + frame + "\n\"index\"\nZero based index.\n\n\"power.draw\"\nPower.\n"
	load := func(rows string) string {
		return frame + "\n# load :: query-gpu (csv)\n" + frame + "\nindex, power.draw [W]\n" + rows
	}
	for name, text := range map[string]string{
		"empty":        "",
		"no load":      help,
		"no help":      load("0, 1.00 W\n"),
		"short row":    help + load("0\n"),
		"header only":  help + load(""),
		"garbage only": "nvidia-smi: not a capture\n",
	} {
		if _, err := ParseCapture(text); err == nil {
			t.Errorf("%s: ParseCapture accepted it", name)
		}
	}
	c, err := ParseCapture(help + load("0, 1.50 W\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Rows[0]["power.draw"] != "1.50" || c.Units["power.draw"] != "W" {
		t.Errorf("minimal capture parsed to %v / %v", c.Rows, c.Units)
	}
}

func TestParseSMIArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		loop time.Duration
		bad  bool
	}{
		{[]string{"--query-gpu=index", "--format=csv", "-lms", "250"}, 250 * time.Millisecond, false},
		{[]string{"--query-gpu", "index", "--format", "csv", "--loop-ms=100"}, 100 * time.Millisecond, false},
		{[]string{"--query-gpu=index", "--format=csv", "-l", "2"}, 2 * time.Second, false},
		{[]string{"--query-gpu=index", "--format=csv", "--loop=3"}, 3 * time.Second, false},
		{[]string{"--query-gpu=index", "--format=csv", "-l"}, 5 * time.Second, false},
		{[]string{"--query-gpu=index", "--format=csv", "-lms"}, 0, true},
		{[]string{"--query-gpu=index", "--format=csv", "-lms", "0"}, 0, true},
		{[]string{"--frobnicate"}, 0, true},
		{[]string{"-i", "x"}, 0, true},
	} {
		o, err := parseSMIArgs(tc.args)
		if (err != nil) != tc.bad {
			t.Errorf("%v: err = %v, want bad=%v", tc.args, err, tc.bad)
			continue
		}
		if !tc.bad && o.loop != tc.loop {
			t.Errorf("%v: loop = %v, want %v", tc.args, o.loop, tc.loop)
		}
	}
}

const panelFields = "index,name,pci.bus_id,memory.used,memory.total,power.draw,power.limit,temperature.gpu,clocks.sm,clocks.mem,pstate,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,clocks_event_reasons.active,persistence_mode,ecc.mode.current,mig.mode.current,utilization.gpu"

func TestSMIQueryIdle(t *testing.T) {
	out, code := runSMI(t, "", "--query-gpu="+panelFields, "--format=csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	tab := parseSMICSV(t, out, true)
	wantHeader := "index, name, pci.bus_id, memory.used [MiB], memory.total [MiB], power.draw [W], power.limit [W], temperature.gpu, clocks.current.sm [MHz], clocks.current.memory [MHz], pstate, pcie.link.gen.current, pcie.link.width.current, pcie.link.gen.max, clocks_event_reasons.active, persistence_mode, ecc.mode.current, mig.mode.current, utilization.gpu [%]"
	if got := strings.SplitN(out, "\n", 2)[0]; got != wantHeader {
		t.Errorf("header\n got %s\nwant %s", got, wantHeader)
	}
	if len(tab.rows) != 8 {
		t.Fatalf("%d rows, want 8", len(tab.rows))
	}
	buses := map[string]bool{}
	for i, r := range tab.rows {
		if len(r) != 19 {
			t.Fatalf("row %d has %d cells: %q", i, len(r), r)
		}
		buses[r[2]] = true
		want := map[int]string{0: strconv.Itoa(i), 1: "NVIDIA H200", 3: "0 MiB", 4: "143771 MiB", 6: "700.00 W",
			8: "345 MHz", 9: "3201 MHz", 10: "P0", 11: "5", 12: "16", 13: "5", 14: "0x0000000000000001",
			15: "Enabled", 16: "Enabled", 17: "Disabled", 18: "0 %"}
		for col, w := range want {
			if r[col] != w {
				t.Errorf("GPU %d %s = %q, want %q", i, tab.names[col], r[col], w)
			}
		}
		p, err := strconv.ParseFloat(strings.TrimSuffix(r[5], " W"), 64)
		if err != nil || p < 65 || p > 90 {
			t.Errorf("GPU %d idle power %q, want ~75 W", i, r[5])
		}
		temp, err := strconv.Atoi(r[7])
		if err != nil || temp < 28 || temp > 36 {
			t.Errorf("GPU %d idle temperature %q, want 30–35", i, r[7])
		}
	}
	if len(buses) != 8 || !buses["00000000:18:00.0"] {
		t.Errorf("bus ids not unique or unexpected: %v", buses)
	}

	out, code = runSMI(t, "", "--query-gpu=memory.total,power.limit,clocks.sm", "--format=csv,noheader,nounits", "-i", "3")
	if code != 0 || out != "143771, 700.00, 345\n" {
		t.Errorf("noheader,nounits -i 3 = %q (exit %d)", out, code)
	}
}

func TestSMIInvalid(t *testing.T) {
	out, code := runSMI(t, "", "--query-gpu=index,bogus.field", "--format=csv")
	if code != 2 || out != "Field \"bogus.field\" is not a valid field to query.\n\n" {
		t.Errorf("unknown field: exit %d, %q", code, out)
	}
	out, code = runSMI(t, "", "--query-gpu=index")
	if code != 2 || !strings.HasPrefix(out, "Invalid combination of input arguments") {
		t.Errorf("no --format: exit %d, %q", code, out)
	}
	out, code = runSMI(t, "", "--query-gpu=index", "--format=json")
	if code != 2 {
		t.Errorf("--format=json: exit %d, %q", code, out)
	}
	out, code = runSMI(t, "", "-L", "-i", "9")
	if code == 0 {
		t.Errorf("-i 9 of 8 GPUs: exit 0, %q", out)
	}
	// The field set comes from the capture: 595's kmd_version is unknown to 590.
	out, code = runSMI(t, "", "--query-gpu=kmd_version", "--format=csv")
	if code != 2 {
		t.Errorf("kmd_version on the 590 capture: exit %d, %q", code, out)
	}
	abs, _ := filepath.Abs("testdata/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt")
	dir := simDir(t, simConfig{GPUs: 2, GPUCapture: abs})
	out, code = runSMI(t, dir, "--query-gpu=kmd_version,name", "--format=csv,noheader")
	if code != 0 || !strings.Contains(out, "NVIDIA GeForce RTX 4080 SUPER") {
		t.Errorf("kmd_version on the 595 capture: exit %d, %q", code, out)
	}
}

func TestSMIHelpAndList(t *testing.T) {
	c, _ := DefaultCapture()
	out, code := runSMI(t, "", "--help-query-gpu")
	if code != 0 || out != c.HelpQueryGPU || !strings.HasPrefix(out, "List of valid properties to query for the switch \"--query-gpu\":") {
		t.Errorf("--help-query-gpu: exit %d, starts %q", code, out[:min(80, len(out))])
	}
	if !strings.Contains(out, "\"clocks.current.sm\" or \"clocks.sm\"\n") {
		t.Error("help text lost its alias lines")
	}
	out, _ = runSMI(t, "", "-L")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 8 || !strings.HasPrefix(lines[7], "GPU 7: NVIDIA H200 (UUID: GPU-") {
		t.Errorf("-L: %q", out)
	}
	if lines[0] == strings.Replace(lines[1], "GPU 1:", "GPU 0:", 1) {
		t.Error("-L: GPUs share a UUID")
	}
}

func TestSMICaptureReplay(t *testing.T) {
	abs, _ := filepath.Abs(h200CapturePath)
	dir := simDir(t, simConfig{GPUs: 8, GPUCapture: abs})
	// A running server must not change the capture's values.
	writeState(t, dir, serverState{PID: os.Getpid(), Heartbeat: time.Now().UnixNano(), TP: 8, MemMiB: 120000, Load: 1, Heat: 1})
	out, code := runSMI(t, dir, "--query-gpu=index,pci.bus_id,power.draw,temperature.gpu,memory.used,clocks.sm,utilization.gpu,count", "--format=csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	tab := parseSMICSV(t, out, true)
	if len(tab.rows) != 8 {
		t.Fatalf("%d rows, want 8 (the capture's one row repeated)", len(tab.rows))
	}
	buses := map[string]bool{}
	for i, r := range tab.rows {
		want := []string{strconv.Itoa(i), "", "627.40 W", "52", "32362 MiB", "1980 MHz", "100 %", "8"}
		for col, w := range want {
			if w != "" && r[col] != w {
				t.Errorf("GPU %d %s = %q, want %q", i, tab.names[col], r[col], w)
			}
		}
		buses[r[1]] = true
	}
	if tab.rows[0][1] != "00000000:83:00.0" || len(buses) != 8 {
		t.Errorf("bus ids: first %q, %d distinct; want the capture's first and 8 distinct", tab.rows[0][1], len(buses))
	}
	out, _ = runSMI(t, dir, "--query-gpu=power.draw,clocks.current.sm", "--format=csv,noheader,nounits", "-i", "0")
	if out != "627.40, 1980\n" {
		t.Errorf("nounits replay = %q", out)
	}
}

func TestSMIFollowsServer(t *testing.T) {
	dir := simDir(t, simConfig{GPUs: 8})
	now := time.Now()
	writeState(t, dir, serverState{PID: os.Getpid(), Heartbeat: now.UnixNano(), TP: 8, MemMiB: 126000, Load: 1, Heat: 1})
	out, code := runSMI(t, dir, "--query-gpu=index,memory.used,utilization.gpu,power.draw,temperature.gpu,clocks.sm,clocks_event_reasons.active", "--format=csv,noheader,nounits")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, r := range parseSMICSV(t, out, false).rows {
		mem, _ := strconv.Atoi(r[1])
		util, _ := strconv.Atoi(r[2])
		pw, _ := strconv.ParseFloat(r[3], 64)
		temp, _ := strconv.Atoi(r[4])
		if mem < 126000 || mem > 127000 || util < 95 || util > 100 || pw < 560 || pw > 660 || temp < 54 || temp > 64 || r[5] != "1980" || r[6] != "0x0000000000000000" {
			t.Errorf("GPU %s under load: %q", r[0], r)
		}
	}
	apps, _ := runSMI(t, dir, "--query-compute-apps=pid,used_memory", "--format=csv")
	lines := strings.Split(strings.TrimSpace(apps), "\n")
	if len(lines) != 9 || lines[0] != "pid, used_gpu_memory [MiB]" || !strings.HasPrefix(lines[1], strconv.Itoa(os.Getpid())+", 126") {
		t.Errorf("compute apps:\n%s", apps)
	}

	// A server that stopped heart-beating (hung or killed) reads as gone.
	for name, st := range map[string]serverState{
		"stale":  {PID: os.Getpid(), Heartbeat: now.Add(-5 * time.Second).UnixNano(), TP: 8, MemMiB: 126000, Load: 1, Heat: 1},
		"exited": {PID: os.Getpid(), Heartbeat: now.UnixNano(), TP: 8, Exited: true, Heat: 1},
		"dead":   {PID: deadPID(t), Heartbeat: now.UnixNano(), TP: 8, MemMiB: 126000, Load: 1, Heat: 1},
	} {
		writeState(t, dir, st)
		out, _ := runSMI(t, dir, "--query-gpu=memory.used,utilization.gpu,clocks_event_reasons.active", "--format=csv,noheader,nounits", "-i", "0")
		if out != "0, 0, 0x0000000000000001\n" {
			t.Errorf("%s server: %q, want memory freed and idle", name, out)
		}
		apps, _ := runSMI(t, dir, "--query-compute-apps=pid", "--format=csv,noheader")
		if apps != "" {
			t.Errorf("%s server still listed: %q", name, apps)
		}
	}
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestSMIFaults(t *testing.T) {
	dir := simDir(t, simConfig{GPUs: 8})
	writeState(t, dir, serverState{PID: os.Getpid(), Heartbeat: time.Now().UnixNano(), TP: 8, MemMiB: 126000, Load: 1, Heat: 0.5})
	writeFaults(t, dir, Faults{LostGPUs: []int{2}, PCIeDegradedGPUs: []int{1}, ThermalGPUs: []int{4}})
	out, code := runSMI(t, dir, "--query-gpu=index,pci.bus_id,memory.used,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max,clocks_event_reasons.active,temperature.gpu,clocks.sm", "--format=csv,noheader,nounits")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	rows := parseSMICSV(t, out, false).rows
	if r := rows[2]; r[0] != "2" || r[1] != "00000000:3A:00.0" || r[2] != "[GPU is lost]" || r[9] != "[GPU is lost]" {
		t.Errorf("lost GPU row: %q", r)
	}
	if r := rows[1]; r[3] != "4" || r[4] != "8" || r[5] != "5" || r[6] != "16" {
		t.Errorf("degraded PCIe row: %q", r)
	}
	if r := rows[4]; r[7] != "0x0000000000000020" || atoi(r[8]) < 85 || atoi(r[9]) > 1600 {
		t.Errorf("thermal row: %q", r)
	}
	if r := rows[0]; r[3] != "5" || r[7] != "0x0000000000000000" {
		t.Errorf("healthy row: %q", r)
	}

	lost := 3
	writeFaults(t, dir, Faults{HandleLostGPU: &lost})
	out, code = runSMI(t, dir, "--query-gpu=index", "--format=csv")
	if code != 15 || out != "Unable to determine the device handle for GPU 0000:5D:00.0: GPU is lost. Reboot the system to recover this GPU\n" {
		t.Errorf("handle lost: exit %d, %q", code, out)
	}

	// The environment override wins over the file.
	t.Setenv(EnvFaults, `{"lost_gpus":[0]}`)
	out, _ = runSMI(t, dir, "--query-gpu=utilization.gpu", "--format=csv,noheader", "-i", "0")
	if out != "[GPU is lost]\n" {
		t.Errorf("env fault override: %q", out)
	}
}

func TestSMIStall(t *testing.T) {
	dir := simDir(t, simConfig{GPUs: 2})
	writeFaults(t, dir, Faults{Stall: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	var ticks atomic.Int32
	done := make(chan int)
	go func() {
		done <- runNvidiaSMI(ctx, []string{"--query-gpu=index", "--format=csv,noheader", "-lms", "5"},
			smiEnv{dir: dir, stdout: &out, tick: func() { ticks.Add(1) }})
	}()
	waitFor(t, 5*time.Second, "stalled ticks", func() bool { return ticks.Load() >= 5 })
	if s := out.String(); s != "" {
		t.Fatalf("stalled nvidia-smi printed %q", s)
	}
	writeFaults(t, dir, Faults{})
	waitFor(t, 5*time.Second, "output after the stall cleared", func() bool { return strings.Count(out.String(), "\n") >= 4 })
	if !strings.HasPrefix(out.String(), "0\n1\n0\n1\n") {
		t.Errorf("loop output %q", out.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("loop exit %d", code)
	}
}

func TestSMITableMatchesCapture(t *testing.T) {
	abs, _ := filepath.Abs(h200CapturePath)
	dir := simDir(t, simConfig{GPUs: 1, GPUCapture: abs})
	out, code := runSMI(t, dir)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	raw, _ := os.ReadFile(h200CapturePath)
	table, ok := captureSection(string(raw), "load :: nvidia-smi (default table)")
	if !ok {
		t.Fatal("capture has no load table")
	}
	want := strings.Split(table, "\n")
	got := strings.Split(out, "\n")
	// Everything but the date line and the process rows must match byte for
	// byte; the capture sampled its table apart from its CSV, so only the
	// power reading (627.40 W in the CSV, 628W in the table) may differ.
	power := regexp.MustCompile(`\d+W /`)
	for i := 1; i <= 11; i++ {
		if power.ReplaceAllString(got[i], "W /") != power.ReplaceAllString(want[i], "W /") {
			t.Errorf("table line %d\n got %q\nwant %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(out, "No running processes found") {
		t.Errorf("no server, but process rows:\n%s", out)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func FuzzParseCapture(f *testing.F) {
	raw, _ := os.ReadFile(h200CapturePath)
	f.Add(string(raw))
	frame := strings.Repeat("#", 80)
	f.Add(frame + "\n# capabilities :: help-query-gpu\n" + frame + "\n\"index\"\n" + frame + "\n# load :: query-gpu\n" + frame + "\nindex\n0\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseCapture(text)
		if err != nil {
			return
		}
		if len(c.Rows) == 0 || len(c.Fields) == 0 {
			t.Fatalf("accepted a capture without rows or fields")
		}
		for _, r := range c.Rows {
			if len(r) != len(c.Rows[0]) {
				t.Fatalf("rows of different widths")
			}
		}
	})
}

func FuzzParseSMIArgs(f *testing.F) {
	f.Add("--query-gpu=index,name\x00--format=csv,noheader\x00-lms\x00500")
	f.Add("-l\x00-i\x000,1\x00-L")
	f.Fuzz(func(t *testing.T, joined string) {
		o, err := parseSMIArgs(strings.Split(joined, "\x00"))
		if err == nil && o.loop < 0 {
			t.Fatalf("negative loop %v", o.loop)
		}
	})
}

// BenchmarkSMITick is one -lms tick for 8 GPUs: read state and faults,
// model the rows, format the CSV.
func BenchmarkSMITick(b *testing.B) {
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "run"), 0o755)
	st, _ := json.Marshal(serverState{PID: os.Getpid(), Heartbeat: time.Now().Add(time.Hour).UnixNano(), TP: 8, MemMiB: 126000, Load: 1, Heat: 1})
	os.WriteFile(filepath.Join(dir, stateFile), st, 0o644)
	c, _ := DefaultCapture()
	m := &gpuModel{cap: c, n: 8, rng: rand.New(rand.NewPCG(1, 2))}
	q, err := newQuery(panelFields, "csv,noheader,nounits", c.Fields, c.Units)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		now := time.Now()
		q.write(&buf, m.rows(now, readHostView(dir, now), readFaults(dir)), false)
	}
}

func BenchmarkParseCapture(b *testing.B) {
	for b.Loop() {
		if _, err := ParseCapture(h200Capture); err != nil {
			b.Fatal(err)
		}
	}
}
