package main

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
)

// TestDemoSamplesThroughTheAgentInTmux is the end-to-end check of
// the agent path on the simulated host: the demo uploads its own binary
// into the sim's cache over SSH (checksum equal to the binary's), runs
// `flightdeck agent` there against the sim's fake NVML, and the header
// says "GPU agent (simulated)" at 160 columns; an Xid the fake NVML
// reports marks GPU 3's row (under "Xid/throttle") and is written into
// the log panel with its time; when the agent is killed, the cockpit
// falls back to the nvidia-smi stream and says why, in the header and in
// the log, and the GPU rows keep updating.
func TestDemoSamplesThroughTheAgentInTmux(t *testing.T) {
	if !nvml.Compiled() {
		t.Skip("this build has no cgo: the agent cannot sample (the fallback is tested in probes/agent)")
	}
	bin := flightdeckBinary(t)
	s := startTmux(t, 160, 45, bin+" demo --no-journal --interval 250ms --fault xid=3:79")
	simDirRe := regexp.MustCompile(`(/\S*flightdeck-sim-[^/\s]+)/logs/`)
	screen := s.waitScreen(40*time.Second, func(screen string) string {
		switch {
		case simDirRe.FindStringSubmatch(screen) == nil:
			return "no sim directory on screen (the server's log path, once it is launched)"
		case countGPURows(screen) != 8:
			return "not 8 GPU rows"
		case !strings.Contains(strings.SplitN(screen, "\n", 2)[0], "GPU agent (simulated)"):
			return `header does not say "GPU agent (simulated)"`
		case !regexp.MustCompile(`(?m)^3\s+H200.*Xid 79`).MatchString(screen):
			return "GPU 3's row does not show Xid 79"
		case !regexp.MustCompile(`(?m)^GPU .*Xid/throttle$`).MatchString(screen):
			return `the column holding the Xid is not titled "Xid/throttle"`
		}
		return ""
	})
	simDir := simDirRe.FindStringSubmatch(screen)
	if simDir == nil {
		t.Fatalf("no sim directory on screen:\n%s", screen)
	}

	// The uploaded agent is this binary, byte for byte.
	agents, _ := filepath.Glob(filepath.Join(simDir[1], "cache", "flightdeck", "agent", "*", "flightdeck"))
	if len(agents) != 1 {
		t.Fatalf("agents in the sim's cache: %v", agents)
	}
	if sum(t, agents[0]) != sum(t, bin) {
		t.Errorf("uploaded agent %s differs from %s", agents[0], bin)
	}

	// The log panel holds the Xid line (filtered, so the server's lines
	// cannot scroll it away).
	s.keys("/")
	s.typed("Xid")
	s.keys("Enter")
	s.waitScreen(10*time.Second, func(screen string) string {
		if !regexp.MustCompile(`(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] flightdeck: GPU 3 \(00000000:`).MatchString(screen) {
			return "no timed Xid line for GPU 3"
		}
		return ""
	})
	s.waitScreen(5*time.Second, has("Xid 79: GPU has fallen off the bus"))
	s.keys("Escape")
	time.Sleep(600 * time.Millisecond)

	// Kill the agent on the host: the cockpit falls back to nvidia-smi.
	pid := agentPID(t, agents[0])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	before := s.capture()
	screen = s.waitScreen(20*time.Second, func(screen string) string {
		if !strings.Contains(screen, "GPU nvidia-smi (agent exited)") {
			return "header does not name the fallback and why"
		}
		if countGPURows(screen) != 8 {
			return "not 8 GPU rows after the fallback"
		}
		return ""
	})
	// Samples keep coming: the table changes after the fallback.
	s.waitScreen(10*time.Second, func(now string) string {
		if gpuTable(now) == gpuTable(screen) || gpuTable(now) == gpuTable(before) {
			return "the GPU table stopped updating after the fallback"
		}
		return ""
	})
	// The log says when sampling switched, and why.
	s.keys("/")
	s.typed("GPU sampling")
	s.keys("Enter")
	s.waitScreen(10*time.Second, has("flightdeck: GPU sampling switched to nvidia-smi (agent exited"))
	s.keys("Escape")
	time.Sleep(600 * time.Millisecond) // an Escape right before q reads as alt+q
	s.quit()
}

// sum is a file's SHA-256.
func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// agentPID finds the process running exe as `agent`.
func agentPID(t *testing.T, exe string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			// The run script execs the file it hashed as /proc/self/fd/3:
			// the image, not argv[0], names it.
			args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
			img, _ := os.Readlink(filepath.Join(filepath.Dir(p), "exe"))
			// The sampler's arguments are flags only: `agent watch`, `agent
			// follow`… are the host-side watchers, not the sampler.
			if len(args) >= 2 && img == exe && string(args[1]) == "agent" && (len(args) == 2 || strings.HasPrefix(string(args[2]), "-")) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				return pid
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no process runs %s agent", exe)
	return 0
}

// gpuTable is the screen's GPU rows.
func gpuTable(screen string) string {
	return strings.Join(gpuRow.FindAllString(screen, -1), "\n")
}
