package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// What the screen says a sampler reported is worded by that sampler:
// NVML in flightdeck, the agent, or nvidia-smi (also when no event.GPUSource
// came: a journal recorded before them).

// A lost GPU's row names who reported it.
func TestLostRowBySampler(t *testing.T) {
	lostSample := func() event.GPUSample {
		s := h200s(4)
		s.GPUs[2].Lost = true
		s.GPUs[2].TempC = event.Reading{Status: event.CellLost, Raw: "[GPU is lost]"}
		return s
	}
	for _, c := range []struct {
		name string
		src  *event.GPUSource
		w    int
		want string
	}{
		{"no source", nil, 120, "LOST  nvidia-smi reads [GPU is lost]: reboot the system to recover this GPU"},
		{"nvidia-smi", &srcFallback, 120, "LOST  nvidia-smi reads [GPU is lost]: reboot the system to recover this GPU"},
		{"nvml", &srcNVML, 120, "LOST  GPU is lost (NVML): reboot the system to recover this GPU"},
		{"agent", &srcAgent, 120, "LOST  GPU is lost (NVML): reboot the system to recover this GPU"},
		{"agent, 80 columns", &srcAgent, 80, "LOST  GPU is lost (NVML): reboot the system to recover this GPU"},
		{"agent, 60 columns", &srcAgent, 60, "LOST  GPU is lost (NVML): reboot to recover it"},
		{"nvidia-smi, 80 columns", &srcAsked, 80, "LOST  [GPU is lost]: reboot the system to recover it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newSized(c.w, 24, Options{})
			send(m, connected())
			if c.src != nil {
				send(m, ev(time.Second, *c.src))
			}
			send(m, ev(2*time.Second, lostSample()))
			row := rowOf(t, m, "2")
			if !strings.HasSuffix(row, c.want) {
				t.Errorf("row %q, want it to end %q", row, c.want)
			}
			if style.Width(row) > c.w {
				t.Errorf("row %d wide", style.Width(row))
			}
		})
	}
	// A row keeps the words of the sampler of its latest sample: after
	// the fallback, the next sample is nvidia-smi's.
	m := newSized(120, 24, Options{})
	send(m, connected(), ev(time.Second, srcAgent), ev(2*time.Second, lostSample()))
	send(m, ev(3*time.Second, srcExited))
	if row := rowOf(t, m, "2"); !strings.Contains(row, "GPU is lost (NVML)") {
		t.Errorf("before nvidia-smi's first sample: %q", row)
	}
	send(m, ev(4*time.Second, lostSample()))
	if row := rowOf(t, m, "2"); !strings.Contains(row, "nvidia-smi reads [GPU is lost]") {
		t.Errorf("after nvidia-smi's first sample: %q", row)
	}
}

// The stale banner says what happens next by the sampler that reported
// it, and the failure banner who failed.
func TestBannersBySampler(t *testing.T) {
	stale := event.GPUStale{LastSample: at(3 * time.Second), Missed: 2, Reason: "NVML call blocked for 2s"}
	for _, c := range []struct {
		src  *event.GPUSource
		want string
	}{
		{nil, "GPUs stale 2s (since 10:27:03): NVML call blocked for 2s; restarting nvidia-smi"},
		{&srcAsked, "GPUs stale 2s (since 10:27:03): NVML call blocked for 2s; restarting nvidia-smi"},
		{&srcNVML, "GPUs stale 2s (since 10:27:03): NVML call blocked for 2s; waiting for NVML"},
		{&srcAgent, "GPUs stale 2s (since 10:27:03): NVML call blocked for 2s; waiting for the agent"},
	} {
		m := newSized(120, 24, Options{})
		send(m, connected())
		if c.src != nil {
			send(m, ev(time.Second, *c.src))
		}
		send(m, ev(3*time.Second, h200s(2)), ev(5*time.Second, stale))
		if got := screenLines(m)[1]; got != c.want {
			t.Errorf("stale banner %q, want %q", got, c.want)
		}
	}
	// A failure is worded by the sampler that reported it, even after
	// another one took over.
	m := newSized(120, 24, Options{})
	send(m, connected(), ev(time.Second, srcNVML), ev(2*time.Second, h200s(2)),
		ev(3*time.Second, event.GPUFailure{Class: event.GPUFailDriverNotLoaded, Reason: "NVML returns ERROR_UNINITIALIZED for every GPU", Line: "NVML: ERROR_UNINITIALIZED for every GPU"}),
		ev(4*time.Second, srcExited))
	if got := screenLines(m)[1]; got != "NVML failed: driver-not-loaded (NVML returns ERROR_UNINITIALIZED for every GPU), last 1s ago" {
		t.Errorf("NVML's failure: %q", got)
	}
	send(m, ev(5*time.Second, event.GPUFailure{Class: event.GPUFailNoDevices, Line: "No devices were found"}))
	if got := screenLines(m)[1]; !strings.HasPrefix(got, "nvidia-smi failed: no-devices") {
		t.Errorf("nvidia-smi's failure: %q", got)
	}
}

// An Xid leads the last column's text: its title says so.
func TestThrottleColumnTitleWithXid(t *testing.T) {
	m := scene(120, 30, 8, 10, Options{})
	send(m, ev(4*time.Second, srcNVML))
	if h := tableLine(m); !strings.HasSuffix(h, "  throttle") {
		t.Errorf("without an Xid: %q", h)
	}
	send(m, ev(5*time.Second, xid(3, 79)))
	if h := tableLine(m); !strings.HasSuffix(h, "  Xid/throttle") {
		t.Errorf("with an Xid: %q", h)
	}
	// Narrow enough to squeeze the column: "Xid" alone, never cut.
	for _, w := range []int{40, 50, 60, 80} {
		m.Update(tea.WindowSizeMsg{Width: w, Height: 30})
		h := screenLines(m)[1] // the header is the table's title row
		if style.Width(h) > w || !strings.HasSuffix(h, "  Xid/throttle") && !strings.HasSuffix(h, " Xid") {
			t.Errorf("%d columns: %q", w, h)
		}
	}
	// A launch clears a non-critical Xid, and the title with it.
	m = scene(120, 30, 8, 10, Options{})
	send(m, ev(5*time.Second, xid(3, 13)))
	if h := tableLine(m); !strings.HasSuffix(h, "Xid/throttle") {
		t.Errorf("with an application Xid: %q", h)
	}
	send(m, launched(6*time.Second))
	if h := tableLine(m); !strings.HasSuffix(h, "  throttle") {
		t.Errorf("after a launch: %q", h)
	}
}

// A change of sampler is a line of the log at its time, as an Xid is:
// the fallback as a warning (Xids are no longer reported), the way back
// plainly. The first sampler, and the same one again (the agent
// restarted after a reconnection), write none.
func TestSamplerChangeInTheLog(t *testing.T) {
	m := scene(200, 30, 8, 100, Options{})
	send(m, ev(4*time.Second, srcSimAgent), ev(10*time.Second, srcSimAgent))
	if strings.Contains(plain(m), "GPU sampling") {
		t.Fatalf("a line for the first sampler or the same one:\n%s", plain(m))
	}
	send(m, ev(20*time.Second, srcExited), ev(21*time.Second, decodeLines(100, 1)), ev(30*time.Second, srcAgent))
	body := logBody(m)
	want := []string{
		"[2025-10-22 10:27:20] flightdeck: GPU sampling switched to nvidia-smi (agent exited: signal: killed; stderr: (none)): Xids are not reported",
		decodeLine(100, rateAt(100)),
		"[2025-10-22 10:27:30] flightdeck: GPU sampling switched to the agent (agent 0.8.0 (uploaded), NVML 12.550.54.15, driver 550.54.15): Xids are reported",
	}
	got := body[len(body)-len(want):]
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("log line %d: %q, want %q", i, got[i], want[i])
		}
	}
	st := m.Styles()
	if !painted(m, st.Warn, want[0]) {
		t.Error("the fallback's line is not a warning")
	}
	if !painted(m, st.Dim, want[2]) {
		t.Error("the way back is not a plain marker")
	}
	// NVML in flightdeck and the agent both report Xids: no word on it.
	send(m, ev(40*time.Second, srcNVML))
	if l := logBody(m); l[len(l)-1] != "[2025-10-22 10:27:40] flightdeck: GPU sampling switched to NVML in flightdeck (NVML 12.550.54.15, driver 550.54.15)" {
		t.Errorf("agent to NVML: %q", l[len(l)-1])
	}
	// A filter keeps them, as it keeps every line of flightdeck's.
	press(m, "/")
	typeText(m, "no such text")
	press(m, "enter")
	if got := strings.Count(strings.Join(logBody(m), "\n"), "GPU sampling switched"); got != 3 {
		t.Errorf("filtered: %d sampler lines:\n%s", got, plain(m))
	}
	// Remote text is sanitised.
	m = scene(200, 30, 8, 10, Options{})
	send(m, ev(4*time.Second, srcAgent), ev(5*time.Second, event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: "agent exited: \x1b]0;pwn\x07\x1b[2J"}))
	if err := onlySGR(m.View().Content); err != nil {
		t.Error(err)
	}
}
