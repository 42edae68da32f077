package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// runToExit runs the server in this process until it exits by itself.
func runToExit(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := runServer(ctx, args, serverEnv{dir: dir, stdout: &out, stderr: &out})
	if ctx.Err() != nil {
		t.Fatalf("server did not exit by itself:\n%s", out.String())
	}
	return out.String(), code
}

// classify runs a log through serverlog's scanner, as the cockpit does, and
// returns the failure that explains it.
func classify(t *testing.T, log string) event.ServerFailure {
	t.Helper()
	sc := serverlog.Scanner{Server: serverlog.ServerSGLang}
	for i, l := range strings.Split(log, "\n") {
		sc.Feed([]byte(l), i+1, func(event.Payload) {})
	}
	f, ok := sc.Primary()
	if !ok {
		t.Fatalf("serverlog found no failure in:\n%s", log)
	}
	return f
}

func TestServerFailureModes(t *testing.T) {
	for _, tc := range []struct {
		fail      string
		class     event.ServerFailureClass
		rank      bool // the failure line carries the rank tag of its traceback
		wantReady bool
	}{
		{"oom", event.FailOOM, true, false},
		{"nccl", event.FailNCCL, true, false},
		{"crash-after-ready=0.5", event.FailCUDAIllegalMemory, true, true},
	} {
		t.Run(tc.fail, func(t *testing.T) {
			t.Parallel()
			dir := simDir(t, simConfig{GPUs: 8})
			log, code := runToExit(t, dir, "--port", "0", "--sim-fail", tc.fail, "--time-scale", "100", "--startup-delay", "0.5", "--seed", "5")
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			f := classify(t, log)
			if f.Class != tc.class || tc.rank && !strings.HasPrefix(f.Rank, "TP") {
				t.Errorf("classified %+v, want class %s with a rank", f, tc.class)
			}
			if ready := strings.Contains(log, "The server is fired up and ready to roll!"); ready != tc.wantReady {
				t.Errorf("ready line printed: %v, want %v", ready, tc.wantReady)
			}
			if tc.wantReady && strings.Index(log, "ready to roll") > strings.Index(log, "Scheduler hit an exception") {
				t.Error("crash logged before the ready line")
			}
			if !regexp.MustCompile(`(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP\d+\] Scheduler hit an exception: Traceback \(most recent call last\):\n  File "`).MatchString(log) ||
				!regexp.MustCompile(`(?m)^\n\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] Received sigquit from a child process\. It usually means the child failed\.\n\z`).MatchString(log) {
				t.Errorf("traceback block not in SGLang's shape:\n%s", log)
			}
			if strings.Contains(log, "Shutting down") {
				t.Error("a crashed server logged a graceful shutdown")
			}
			if sv := readServerView(dir, time.Now()); sv.Alive || sv.MemMiB != 0 {
				t.Errorf("GPU state after the failure: %+v", sv)
			}
		})
	}
}

// TestFailureTextFromFixtures: the tracebacks are the real ones (the
// fixtures' frames, exception lines and parent lines), not look-alikes.
func TestFailureTextFromFixtures(t *testing.T) {
	ours := map[string]string{}
	for _, mode := range []string{"oom", "nccl", "crash-after-ready=0"} {
		log, _ := runToExit(t, "", "--port", "0", "--sim-fail", mode, "--time-scale", "100", "--startup-delay", "0.2")
		ours[mode] = log
	}
	stamp := regexp.MustCompile(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d( TP\d+)?\] `)
	for fixture, tc := range map[string]struct {
		mode, root string
	}{
		"sglang-crash-illegal-memory-access-2025-02.txt":      {"crash-after-ready=0", "/sgl-workspace/sglang/python/sglang"},
		"sglang-nccl-unhandled-system-error-tail-2025-03.txt": {"nccl", "/home/<user>/miniconda3/envs/sglang/lib/python3.10/site-packages/sglang"},
		"sglang-crash-startup-oom-2025-08.txt":                {"oom", "/data/<user>/github/ob-sglang/python/sglang"},
	} {
		raw, err := os.ReadFile(filepath.Join("testdata", fixture))
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, l := range strings.Split(ours[tc.mode], "\n") {
			have[stamp.ReplaceAllString(l, "")] = true
		}
		lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")[1:]
		for i, l := range lines {
			l = strings.ReplaceAll(stamp.ReplaceAllString(l, ""), tc.root, "/sgl-workspace/sglang/python/sglang")
			if strings.Trim(l, " ^") == "" || strings.Contains(l, "proces.") {
				continue // Python 3.11 caret lines (we print 3.10's), v0.4.3's old typo
			}
			if i == len(lines)-1 { // cut off in the stored copy
				found := false
				for h := range have {
					found = found || strings.HasPrefix(h, l)
				}
				if !found {
					t.Errorf("%s: last line %q is not the start of any line we print", fixture, l)
				}
				continue
			}
			if !have[l] {
				t.Errorf("%s: line %q missing from --sim-fail %s:\n%s", fixture, l, tc.mode, ours[tc.mode])
			}
		}
	}
	// torch's OOM message: the wording of the fixture (torch ≥ 2.6, no
	// private pools), only the numbers differ.
	raw, err := os.ReadFile("testdata/vllm-oom-v1-enginecore.txt")
	if err != nil {
		t.Fatal(err)
	}
	fx := string(raw)
	fx = fx[strings.Index(fx, "torch.OutOfMemoryError"):]
	fx = strings.Replace(fx[:strings.IndexByte(fx, '\n')], "with 24.00 MiB allocated in private pools (e.g., CUDA Graphs), ", "", 1)
	shape := regexp.QuoteMeta(regexp.MustCompile(`GPU \d+|\d+\.\d\d [KMG]iB`).ReplaceAllString(fx, "@"))
	re := regexp.MustCompile("(?m)^" + strings.ReplaceAll(shape, "@", `(?:GPU \d+|\d+\.\d\d [KMG]iB)`) + "$")
	if !re.MatchString(ours["oom"]) {
		t.Errorf("OOM line not in torch's wording:\n%s", ours["oom"])
	}
}

func TestServerPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := simDir(t, simConfig{GPUs: 8})
	// The server that holds the port publishes the GPU state; the failed
	// launch must not touch it.
	holder := serverState{PID: os.Getpid(), Heartbeat: time.Now().Add(time.Hour).UnixNano(), TP: 8, MemMiB: 126000, Load: 1}
	writeState(t, dir, holder)
	start := time.Now()
	log, code := runToExit(t, dir, "--port", strconv.Itoa(port), "--startup-delay", "60")
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v: the port must be checked before loading", d)
	}
	want := fmt.Sprintf(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] ERROR:    \[Errno 98\] error while attempting to bind on address \('127\.0\.0\.1', %d\): address already in use\n$`, port)
	if !regexp.MustCompile(want).MatchString(log) {
		t.Errorf("log %q, want only uvicorn's bind error", log)
	}
	if f := classify(t, log); f.Class != event.FailPortInUse {
		t.Errorf("classified %+v, want port-in-use", f)
	}
	if sv := readServerView(dir, time.Now()); !sv.Alive || sv.MemMiB != holder.MemMiB {
		t.Errorf("the failed launch touched the GPU state: %+v", sv)
	}
	// The later bind (a port taken during start-up) prints the same line.
	if f := classify(t, "[2026-11-29 10:15:00] "+bindErrorLine("127.0.0.1", port, &net.OpError{Op: "listen", Err: os.NewSyscallError("bind", syscall.EADDRINUSE)})); f.Class != event.FailPortInUse {
		t.Errorf("late bind error classified %+v", f)
	}
}

// sleeper starts a process that only stays alive, as the pid of a fake
// worker; it is killed when the test ends.
func sleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

func writeWorker(t *testing.T, dir string, w workerState) {
	t.Helper()
	b, _ := json.Marshal(w)
	if err := writeFileAtomic(workerFile(dir, w.PID), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestServerOOMOnOrphanedMemory: a relaunch while an orphaned worker of an
// earlier server still holds GPU 3 runs out of memory loading weights
// there, and torch's message names the process holding it.
func TestServerOOMOnOrphanedMemory(t *testing.T) {
	dir := simDir(t, simConfig{GPUs: 8})
	orphan := sleeper(t)
	writeWorker(t, dir, workerState{PID: orphan, ServerPID: 1, GPU: 3, Name: schedulerName(3), MemMiB: 126000,
		Heartbeat: time.Now().Add(time.Hour).UnixNano()})
	log, code := runToExit(t, dir, "--port", "0", "--time-scale", "100", "--startup-delay", "0.5")
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if f := classify(t, log); f.Class != event.FailOOM || f.Rank != "TP3" {
		t.Errorf("classified %+v, want oom on TP3", f)
	}
	for _, want := range []string{
		"TP3] Load weight begin. avail mem=14.79 GB\n",
		fmt.Sprintf("is free. Process %d has 123.05 GiB memory in use. Including non-PyTorch memory, this process has ", orphan),
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if out, _ := runSMI(t, dir, "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "3"); out != "126000\n" {
		t.Errorf("GPU 3 after the failed launch: %q, want the orphan's 126000", out)
	}
}

// TestServerDefaultsRepoToSimDir: with a sim directory and no --repo the
// server runs from <dir>/repo, regressed or not.
func TestServerDefaultsRepoToSimDir(t *testing.T) {
	dir := simDir(t, simConfig{GPUs: 8})
	p := filepath.Join(dir, repoDir, PyncclPath)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(pyncclBad), 0o644); err != nil {
		t.Fatal(err)
	}
	s := runInProc(t, dir, profileEnv(), "--port", "0", "--time-scale", "100", "--startup-delay", "0.2", "--seed", "3")
	waitFor(t, 60*time.Second, "16 decode lines", func() bool { return strings.Count(s.out.String(), "Decode batch") >= 16 })
	s.stop()
	sum, n := 0.0, 0
	for _, d := range decodeLines(t, s.out.String())[1:16] {
		sum += d.tokS
		n++
	}
	if mean := sum / float64(n); mean < 81.88*0.95 || mean > 81.88*1.05 {
		t.Errorf("mean %.2f tok/s, want ~81.9 (the regressed <dir>/repo)", mean)
	}
}

func TestRunServerStandalone(t *testing.T) {
	t.Setenv(EnvDir, "")
	var out syncBuffer
	code := RunServer(context.Background(), []string{"--port", "0", "--sim-fail", "crash-after-ready=0.2", "--time-scale", "100", "--startup-delay", "0.2"}, &out, &out)
	if code != 1 || !strings.Contains(out.String(), "illegal memory access") {
		t.Errorf("standalone crash: status %d\n%s", code, out.String())
	}
	out = syncBuffer{}
	if code := RunServer(context.Background(), []string{"--sim-workers", "1"}, &out, &out); code != 2 || !strings.Contains(out.String(), "--sim-workers needs a sim directory") {
		t.Errorf("workers without a sim dir: status %d %q", code, out.String())
	}
	// --sim-dir: sim.json is read (2 GPUs: TP 2) and the GPU state published.
	dir := simDir(t, simConfig{GPUs: 2, TimeScale: 100, StartupDelay: 0.2})
	out = syncBuffer{}
	if code := RunServer(context.Background(), []string{"--sim-dir", dir, "--port", "0", "--sim-fail", "oom"}, &out, &out); code != 1 {
		t.Errorf("--sim-dir oom: status %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "tp_size=2,") || !strings.Contains(out.String(), filepath.Join(dir, repoDir, "python", "sglang", "srt")) {
		t.Errorf("sim.json or <dir>/repo not used:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err != nil {
		t.Errorf("no GPU state published under --sim-dir: %v", err)
	}
}
