package agent

// One agent session's lines: an alive agent whose NVML is blocked is kept,
// the simulated NVML is named, and an agent changed after its check is
// not started.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// fakeStale is the stale line an agent whose NVML read is blocked writes
// every interval.
const fakeStale = `{"t":"stale","at":2,"last_sample":1,"missed":2,"reason":"NVML call blocked for 600ms"}`

// An agent whose NVML is blocked is alive: it writes stale lines (and
// heartbeats). The Runner shows the stale reports and keeps the agent,
// for much longer than 3 intervals, until samples come again; only total
// silence makes it give up.
func TestRunnerKeepsAnAliveStaleAgent(t *testing.T) {
	rg := newRig(t)
	// 30 × 100 ms = 10 intervals without a sample, then samples.
	body := `echo '` + fakeHello + `'; echo '` + fakeSample + `'
i=0; while [ $i -lt 30 ]; do echo '` + fakeStale + `'; if [ $((i % 3)) = 0 ]; then echo '{"t":"alive","at":3}'; fi; sleep 0.1; i=$((i + 1)); done
while :; do echo '` + strings.Replace(fakeSample, "Fake GPU", "Fake GPU again", 1) + `'; sleep 0.1; done`
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", body)})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent {
		t.Fatalf("source %+v", src)
	}
	first := expect[event.GPUSample](t, events)
	stales := 0
	for {
		e := next(t, events, "an event", func(event.Event) bool { return true })
		switch p := e.Data.(type) {
		case event.GPUStale:
			stales++
			if p.Reason != "NVML call blocked for 600ms" || p.Missed != 2 || p.LastSample.IsZero() || p.LastSample.After(e.At) {
				t.Errorf("stale %+v at %v", p, e.At)
			}
			continue
		case event.GPUSample:
			if p.GPUs[0].Name.S != "Fake GPU again" {
				t.Fatalf("sample %+v", p)
			}
			if p.At.Before(first.At) {
				t.Errorf("sample at %v before the first %v", p.At, first.At)
			}
		default:
			t.Fatalf("%T %+v while the agent was stale, want only stale reports, then its samples", e.Data, e.Data)
		}
		break
	}
	if stales < 20 {
		t.Errorf("%d stale reports shown, want the agent's 30 (at least 20)", stales)
	}
	if _, _, starts := rg.host.counts(); starts != 1 {
		t.Errorf("agent started %d times, want once", starts)
	}
}

// The simulated host's fake NVML is named in the header's detail.
func TestRunnerSimulatedAgent(t *testing.T) {
	rg := newLocalRig(t)
	hello := strings.Replace(fakeHello, `"interval_ms":300`, `"interval_ms":300,"simulated":true`, 1)
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", `echo '`+hello+`'; while :; do echo '`+fakeSample+`'; sleep 0.1; done`)})
	src := expect[event.GPUSource](t, events)
	if want := "simulated NVML, agent test, NVML 12.550.54.15, driver 550.54.15 (uploaded)"; src.Mode != event.SourceAgent || src.Detail != want {
		t.Fatalf("source %+v, want detail %q", src, want)
	}
}

// swapHost replaces the cached agent just before the Runner starts it:
// what runs must be what was checked, so the start is refused.
type swapHost struct {
	remote.Host
	path string
}

func (h *swapHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	if err := os.WriteFile(h.path, []byte("#!/bin/sh\necho swapped\n"), 0o700); err != nil {
		return nil, err
	}
	return h.Host.Start(ctx, cmd)
}

func TestRunnerRefusesAnAgentChangedAfterItsCheck(t *testing.T) {
	rg := newRig(t)
	host := &swapHost{Host: rg.host, path: rg.cachedPath("v0.8.0-test")}
	events := rg.run(&Runner{Host: host, Binary: rg.fakeAgent("agent", steadyAgent)})
	src := expectFallback(t, events)
	want := "agent not started: the agent " + rg.cachedPath("v0.8.0-test") + " changed since it was checked (SHA-256 "
	if !strings.HasPrefix(src.Fallback, want) {
		t.Errorf("fallback %q, want it to start with %q", src.Fallback, want)
	}
	if _, err := os.Stat(filepath.Join(rg.dir, "agent.pid")); err == nil {
		t.Error("the agent ran")
	}
}
