package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestExitText(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&remote.ExitError{Code: 143}, "killed by SIGTERM (exit status 143)"},
		{&remote.ExitError{Code: 137}, "killed by SIGKILL (exit status 137)"},
		{&remote.ExitError{Code: 139}, "killed by SIGSEGV (exit status 139)"},
		{&remote.ExitError{Code: 159}, "killed by SIGSYS (exit status 159)"},
		{&remote.ExitError{Code: 1}, "exit status 1"},
		{&remote.ExitError{Code: 128}, "exit status 128"},
		{&remote.ExitError{Code: 160}, "exit status 160"},
		{&remote.ExitError{Code: 255}, "exit status 255"},
		{&remote.ExitError{Code: -1, Signal: "TERM"}, "killed by SIGTERM"},
		{&remote.ExitError{Code: -1, Signal: "SIGSEGV"}, "killed by SIGSEGV"},
		{&remote.ExitError{Code: -1, Signal: "34"}, "killed by signal 34"},
		{&remote.ExitError{Code: -1, Signal: "KILL\x1b[2J"}, "killed by SIGKILL"},
		{fmt.Errorf("wait: %w", &remote.ExitError{Code: 143}), "killed by SIGTERM (exit status 143)"},
		{errors.New("session closed"), "session closed"},
	}
	for _, c := range cases {
		if got := exitText(c.err); got != c.want {
			t.Errorf("exitText(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

const retryNote = "; retrying the agent in the background"

// againSample is the sample of a retried fake agent.
var againSample = strings.Replace(fakeSample, "Fake GPU", "Fake GPU again", 1)

func isAgentSample(e event.Event) bool {
	s, ok := e.Data.(event.GPUSample)
	return ok && len(s.GPUs) == 1 && s.GPUs[0].TempC.Value == 40
}

// An agent that dies is retried beside the nvidia-smi fallback; the
// retried agent takes over at its first sample, and from then on only its
// samples are published. The retry costs one agent session at a time.
func TestRunnerRetriesAnAgentThatDied(t *testing.T) {
	rg := newRig(t)
	ran, proceed := filepath.Join(rg.dir, "ran"), filepath.Join(rg.dir, "proceed")
	// The first run dies after a sample as if its shell reported SIGTERM;
	// the second waits for the test to see the fallback's samples.
	body := fmt.Sprintf(`if [ ! -e %[1]s ]; then : > %[1]s; echo '%[3]s'; echo '%[4]s'; exit 143; fi
while [ ! -e %[2]s ]; do sleep 0.05; done
echo '%[3]s'
while :; do echo '%[5]s'; sleep 0.1; done`, ran, proceed, fakeHello, fakeSample, againSample)
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", body), retryFirst: 50 * time.Millisecond})

	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent || !strings.HasSuffix(src.Detail, "(uploaded)") {
		t.Fatalf("source %+v", src)
	}
	expect[event.GPUSample](t, events)
	src := expectFallback(t, events)
	if want := "agent exited: killed by SIGTERM (exit status 143)" + retryNote; src.Fallback != want {
		t.Errorf("fallback %q, want %q", src.Fallback, want)
	}
	expectSMISample(t, events)
	if err := os.WriteFile(proceed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Until the agent is back: nvidia-smi's samples only.
	for {
		e := next(t, events, "an event", func(event.Event) bool { return true })
		if s, ok := e.Data.(event.GPUSource); ok {
			if s.Mode != event.SourceAgent || s.Detail != "agent test, NVML 12.550.54.15, driver 550.54.15 (cached)" {
				t.Fatalf("source %+v, want the cached agent back", s)
			}
			break
		}
		if _, ok := e.Data.(event.GPUStale); ok {
			continue // nvidia-smi was slow: its own report
		}
		if s, ok := e.Data.(event.GPUSample); !ok || s.GPUs[0].TempC.Value != 41 {
			t.Fatalf("%T %+v before the agent came back, want nvidia-smi's samples", e.Data, e.Data)
		}
	}
	// From then on: the agent's samples only (the fallback stopped first).
	for i := range 10 {
		s := expect[event.GPUSample](t, events)
		if s.GPUs[0].Name.S != "Fake GPU again" {
			t.Fatalf("sample %d after the switch: %+v, want the agent's", i, s)
		}
	}
	if starts, maxOpen := rg.host.agentSessions(); starts != 2 || maxOpen != 1 {
		t.Errorf("agent started %d times with up to %d agent sessions open at once; want 2 starts, 1 session at a time", starts, maxOpen)
	}
}

// A reason a retry would meet again is never retried: the fallback
// samples on, and the agent is not started again.
func TestRunnerDoesNotRetryPermanentReasons(t *testing.T) {
	cases := []struct {
		name   string
		rig    func(*testing.T) *rig
		body   string
		want   string
		starts int
	}{
		{"NVML unavailable", newRig,
			`echo '{"t":"unavailable","v":1,"reason":"NVML init failed: ERROR_DRIVER_NOT_LOADED","code":9}'; exit 3`,
			"NVML unavailable on the host: NVML init failed: ERROR_DRIVER_NOT_LOADED", 1},
		{"no driver", func(t *testing.T) *rig {
			if hostHasDriver(t) {
				t.Skip("this machine has libnvidia-ml.so.1")
			}
			return newRigWith(t, sshdtest.Options{})
		}, steadyAgent, "no NVIDIA driver on the host (libnvidia-ml.so.1 not found)", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rg := c.rig(t)
			events := rg.run(&Runner{Binary: rg.fakeAgent("agent", c.body), retryFirst: 20 * time.Millisecond})
			src := expectFallback(t, events)
			if src.Fallback != c.want {
				t.Errorf("fallback %q, want %q", src.Fallback, c.want)
			}
			// 10 samples of 100 ms: many times the retry's first wait.
			for range 10 {
				e := next(t, events, "an event", func(event.Event) bool { return true })
				if _, ok := e.Data.(event.GPUSource); ok {
					t.Fatalf("source %+v after the fallback", e.Data)
				}
				if isAgentSample(e) {
					t.Fatalf("the agent's sample after the fallback: %+v", e.Data)
				}
			}
			starts, _ := rg.host.agentSessions()
			if starts != c.starts {
				t.Errorf("agent started %d times, want %d", starts, c.starts)
			}
			if _, uploads, _ := rg.host.counts(); c.starts == 0 && uploads != 0 {
				t.Errorf("%d uploads to a host without a driver", uploads)
			}
		})
	}
}

// A retry that meets a reason that will stay says so and stops retrying.
func TestRunnerStopsRetryingAtAPermanentReason(t *testing.T) {
	rg := newRig(t)
	ran := filepath.Join(rg.dir, "ran")
	body := fmt.Sprintf(`if [ ! -e %[1]s ]; then : > %[1]s; echo '%[2]s'; exit 1; fi
echo '{"t":"unavailable","v":1,"reason":"NVML init failed: ERROR_DRIVER_NOT_LOADED","code":9}'; exit 3`, ran, fakeHello)
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", body), retryFirst: 20 * time.Millisecond})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent {
		t.Fatalf("source %+v", src)
	}
	// Only nvidia-smi samples between the two: the retry's hello is held
	// until a sample that never comes.
	src := expect[event.GPUSource](t, events)
	if want := "agent exited: exit status 1" + retryNote; src.Mode != event.SourceNvidiaSMI || src.Fallback != want {
		t.Errorf("source %+v, want the fallback %q", src, want)
	}
	for {
		e := next(t, events, "an event", func(event.Event) bool { return true })
		if s, ok := e.Data.(event.GPUSource); ok {
			src = s
			break
		}
		if _, ok := e.Data.(event.GPUStale); ok {
			continue
		}
		if s, ok := e.Data.(event.GPUSample); !ok || s.GPUs[0].TempC.Value != 41 {
			t.Fatalf("%T %+v during the retry, want nvidia-smi's samples", e.Data, e.Data)
		}
	}
	if want := "NVML unavailable on the host: NVML init failed: ERROR_DRIVER_NOT_LOADED"; src.Mode != event.SourceNvidiaSMI || src.Fallback != want {
		t.Errorf("source %+v, want the fallback for good: %q", src, want)
	}
	for range 10 {
		if e := next(t, events, "a sample", func(event.Event) bool { return true }); isSource(e) || isAgentSample(e) {
			t.Fatalf("%+v after the retries stopped, want nvidia-smi's samples", e.Data)
		}
	}
	if starts, maxOpen := rg.host.agentSessions(); starts != 2 || maxOpen != 1 {
		t.Errorf("agent started %d times, up to %d agent sessions at once; want 2, 1", starts, maxOpen)
	}
}
