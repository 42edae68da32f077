package agent

// The Runner's fallback to nvidia-smi and the reason it gives: for good
// (another architecture, no cgo, NVML unavailable, a loader that refuses
// the agent) or retrying the agent (it exited, fell silent, was killed).

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestRunnerArchMismatchFallsBack(t *testing.T) {
	rg := newRig(t)
	host := localPlatform
	localPlatform = "linux/riscv64"
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	src := expect[event.GPUSource](t, events)
	if want := "host is " + host + ", this binary linux/riscv64"; src.Mode != event.SourceNvidiaSMI || src.Fallback != want {
		t.Fatalf("source %+v, want fallback %q", src, want)
	}
	expectSMISample(t, events)
	if _, uploads, _ := rg.host.counts(); uploads != 0 {
		t.Errorf("uploads %d, want none", uploads)
	}
}

func TestRunnerNoCgoFallsBack(t *testing.T) {
	rg := newRig(t)
	nvmlCompiled = func() bool { return false }
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	src := expect[event.GPUSource](t, events)
	if src.Mode != event.SourceNvidiaSMI || !strings.Contains(src.Fallback, "no cgo") && !strings.Contains(src.Fallback, "no NVML") {
		t.Fatalf("source %+v", src)
	}
	expectSMISample(t, events)
	for _, c := range rg.host.commands() {
		if strings.Contains(c, "flightdeck-agent") {
			t.Errorf("the host was asked about the agent: %s", c)
		}
	}
}

func TestRunnerAgentKilledFallsBack(t *testing.T) {
	rg := newRig(t)
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent {
		t.Fatalf("source %+v", src)
	}
	expect[event.GPUSample](t, events)
	expect[event.GPUSample](t, events)
	pid, err := os.ReadFile(filepath.Join(rg.dir, "agent.pid"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// What follows the kill: at most the samples already in flight, then
	// the fallback (the session's end is seen at once, well within 3
	// intervals), then nvidia-smi's samples.
	for {
		e := <-events
		if _, ok := e.Data.(event.GPUSample); ok {
			continue
		}
		src, ok := e.Data.(event.GPUSource)
		if !ok || src.Mode != event.SourceNvidiaSMI || !strings.HasPrefix(src.Fallback, "agent exited") {
			t.Fatalf("after the kill: %T %+v, want the nvidia-smi fallback", e.Data, e.Data)
		}
		break
	}
	expectSMISample(t, events)
}

func TestRunnerFallbackReasons(t *testing.T) {
	cases := []struct {
		name, body, want string
		retried          bool          // the agent is tried again: the reason may pass
		minStale         time.Duration // Runner.MinStale
	}{
		{"stalls", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; echo '` + fakeSample + `'; exec sleep 60`,
			"agent sent nothing for 3 intervals of 300ms", true, 0},
		// A floor above 3 intervals: the silence it waited for is named.
		{"stalls past MinStale", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; exec sleep 60`,
			"agent sent nothing for 1.5s", true, 1500 * time.Millisecond},
		{"unavailable", `echo '{"t":"unavailable","v":1,"reason":"NVML init failed: ERROR_LIBRARY_NOT_FOUND","code":12}'; exit 3`,
			"NVML unavailable on the host: NVML init failed: ERROR_LIBRARY_NOT_FOUND", false, 0},
		{"exits after samples", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; echo '` + fakeSample + `'; exit 0`,
			"agent exited", true, 0},
		// The loader refused the binary: every retry would meet the same.
		{"old glibc", "echo \"./flightdeck: /lib/x86_64-linux-gnu/libc.so.6: version \\`GLIBC_2.34' not found (required by ./flightdeck)\" >&2; echo 'more noise' >&2; exit 1",
			"agent cannot run on the host: ./flightdeck: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by ./flightdeck)", false, 0},
		{"GLIBC after the hello", `echo '` + fakeHello + `'; echo "GLIBC_2.34 mentioned" >&2; exit 1`,
			"agent exited: exit status 1: GLIBC_2.34 mentioned", true, 0},
		{"terminated", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; exit 143`,
			"agent exited: killed by SIGTERM (exit status 143)", true, 0},
		{"garbage", `echo '` + fakeHello + `'; while :; do printf 'Segmentation \033[31mfault\n'; sleep 0.1; done`,
			"agent sent nothing for 3 intervals of 300ms; last unreadable line: agent stream line", true, 0},
		{"newer protocol", `echo '{"t":"hello","v":2}'; exec sleep 60`,
			"agent speaks protocol v2", false, 0},
		{"no hello", `exec sleep 60`, "agent sent no hello within 2s", true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t)
			start := time.Now()
			events := rg.run(&Runner{Binary: rg.fakeAgent("agent", c.body), StartTimeout: 2 * time.Second, MinStale: c.minStale})
			src := expectFallback(t, events)
			if waited := time.Since(start); waited < c.minStale {
				t.Errorf("gave up after %v, before MinStale %v", waited, c.minStale)
			}
			if !strings.HasPrefix(src.Fallback, c.want) {
				t.Errorf("fallback %q, want it to start with %q", src.Fallback, c.want)
			}
			if strings.ContainsRune(src.Fallback, 0x1b) {
				t.Errorf("fallback not sanitised: %q", src.Fallback)
			}
			if retried := strings.HasSuffix(src.Fallback, "; retrying the agent in the background"); retried != c.retried {
				t.Errorf("fallback %q: retried %v, want %v", src.Fallback, retried, c.retried)
			}
		})
	}
}
