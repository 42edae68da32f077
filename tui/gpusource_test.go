package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The sources the header names: NVML in flightdeck, the agent, and the
// nvidia-smi fallback with its reason.
var (
	srcNVML     = event.GPUSource{Mode: event.SourceNVML, Detail: "NVML 12.550.54.15, driver 550.54.15"}
	srcAgent    = event.GPUSource{Mode: event.SourceAgent, Detail: "agent 0.8.0 (uploaded), NVML 12.550.54.15, driver 550.54.15"}
	srcFallback = event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: "host is linux/arm64, this binary linux/amd64"}
	srcAsked    = event.GPUSource{Mode: event.SourceNvidiaSMI}
	// What the demo shows: the agent on the simulated host's fake NVML
	// (probes/agent's detail), and its fallback when the agent is killed.
	srcSimAgent = event.GPUSource{Mode: event.SourceAgent, Detail: "simulated NVML, agent v0.0.0-20261130082657-3b2fc0c519e0 go1.26.8, NVML 12.550.54.15, driver 550.54.15 (uploaded)"}
	srcExited   = event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: "agent exited: signal: killed; stderr: (none)"}
)

// demoHeader is a cockpit like the demo's: a label, a host on another
// port, a server with a pid ready 3m12s (after 41s), a profile and a
// HEAD with a subject, the clock at t0+3m53s.
func demoHeader(w int) *Model {
	m := scene(w, 45, 8, 100, Options{Label: "demo", Control: newFake()})
	send(m, ev(time.Second, event.ConnState{Host: "root@127.0.0.1:46263", Conn: event.Connected, Since: t0}),
		ev(4*time.Second, readyStatus()),
		ev(4*time.Second, event.RepoHead{Short: "a6d51c0", Commit: "a6d51c0" + strings.Repeat("0", 33), Subject: "Speculative decoding: raise the draft top-k"}))
	m.Update(ClockMsg{Now: at(41*time.Second + 3*time.Minute + 12*time.Second)})
	return m
}

// xid is Xid code on GPU i of h200s (its bus id as h200 draws it).
func xid(i int, code uint64) event.Xid {
	return event.Xid{Index: i, BusID: h200(i).BusID.S, UUID: fmt.Sprintf("GPU-%d", i), Code: code}
}

// The header in each sampling mode, at 80, 120 and 160 columns, on the
// standard screen and on one like the demo's (demoHeader): the golden
// files hold the header lines, and the help screen's first lines (the
// whole reason). Regenerate with go test -update.
func TestGPUSourceHeaderGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		src  event.GPUSource
	}{{"nvml", srcNVML}, {"agent", srcAgent}, {"fallback", srcFallback}, {"nvidia-smi", srcAsked},
		{"simulated", srcSimAgent}, {"agent-exited", srcExited}} {
		for _, w := range []int{80, 120, 160} {
			t.Run(fmt.Sprintf("%s_%d", c.name, w), func(t *testing.T) {
				m := scene(w, 24, 8, 100, Options{})
				send(m, ev(4*time.Second, c.src))
				d := demoHeader(w)
				send(d, ev(4*time.Second, c.src))
				out := screenLines(m)[0] + "\n" + screenLines(d)[0] + "\n"
				press(d, "?")
				out += strings.Join(screenLines(d)[1:5], "\n") + "\n"
				golden.RequireEqual(t, out)
				auditModel(t, c.name, m)
				auditModel(t, c.name, d)
			})
		}
	}
}

// The sampler's field outranks "ready in", the commit subject and the
// driver's "since": at 160 columns the demo's header names the agent
// (and that its NVML is simulated), or the fallback and why; at 80 a
// fallback still says "GPU nvidia-smi", in the warning tone.
func TestGPUSourceHeaderPriority(t *testing.T) {
	m := demoHeader(160)
	send(m, ev(5*time.Second, srcSimAgent))
	if h := screenLines(m)[0]; !strings.Contains(h, "  GPU agent (simulated)") || !strings.Contains(h, "sglang pid 4123 ready 3m12s") {
		t.Errorf("160 columns, agent: %q", h)
	}
	send(m, ev(6*time.Second, srcExited))
	h := screenLines(m)[0]
	if !strings.Contains(h, "  GPU nvidia-smi (agent exited)") || strings.Contains(h, "raise the draft") {
		t.Errorf("160 columns, fallback: %q", h)
	}
	if !painted(m, m.styles.Warn, "GPU nvidia-smi (agent exited)") {
		t.Error("fallback not in the warning tone")
	}
	// Wide enough, everything shows.
	m.Update(tea.WindowSizeMsg{Width: 220, Height: 45})
	if h := screenLines(m)[0]; !strings.Contains(h, "ready in 41s") || !strings.Contains(h, "raise the draft") || !strings.Contains(h, "GPU nvidia-smi (agent exited)") {
		t.Errorf("220 columns: %q", h)
	}
	for _, w := range []int{80, 100, 120} {
		m.Update(tea.WindowSizeMsg{Width: w, Height: 45})
		if h := screenLines(m)[0]; !strings.Contains(h, "GPU nvidia-smi") || !strings.Contains(h, "sglang") || style.Width(h) > w {
			t.Errorf("%d columns, fallback: %q", w, h)
		}
		if !strings.Contains(m.View().Content, m.styles.Warn.SGR()+"GPU nvidia-smi") {
			t.Errorf("%d columns: fallback not in the warning tone", w)
		}
	}
	// A replay of a driving cockpit's journal: the field outranks the
	// driver's "since".
	r := scene(160, 45, 8, 100, Options{ReadOnly: true, Label: "demo"})
	send(r, ev(time.Second, event.ConnState{Host: "root@127.0.0.1:46263", Conn: event.Connected, Since: t0}),
		ev(2*time.Second, event.DriverState{Role: event.RoleDriving, Holder: event.DriverInfo{User: "alice", Machine: "laptop", PID: 4242, Since: at(2 * time.Second)}}),
		ev(4*time.Second, readyStatus()),
		ev(4*time.Second, event.RepoHead{Short: "a6d51c0", Commit: "a6d51c0" + strings.Repeat("0", 33), Subject: "Speculative decoding: raise the draft top-k"}),
		ev(5*time.Second, srcExited))
	if h := screenLines(r)[0]; !strings.Contains(h, "GPU nvidia-smi (agent exited)") || !strings.Contains(h, "driver alice@laptop") {
		t.Errorf("replay at 160 columns: %q", h)
	}
}

func TestGPUSourceHeader(t *testing.T) {
	// Before any event.GPUSource (a journal recorded before issue 8): nothing.
	m := scene(120, 24, 8, 10, Options{})
	if h := screenLines(m)[0]; strings.Contains(h, "GPU ") {
		t.Errorf("header without a source: %q", h)
	}
	// The fallback: its reason's first clause, warned; the whole reason
	// in the help screen.
	send(m, ev(4*time.Second, srcFallback))
	h := screenLines(m)[0]
	if !strings.Contains(h, "GPU nvidia-smi (host is linux/arm64)") || strings.Contains(h, "this binary") {
		t.Errorf("fallback header: %q", h)
	}
	if !painted(m, m.styles.Warn, "GPU nvidia-smi (host is linux/arm64)") {
		t.Error("fallback not in the warning tone")
	}
	press(m, "?")
	if !strings.Contains(plain(m), "GPUs sampled by nvidia-smi\nNVML not used: host is linux/arm64, this binary linux/amd64") {
		t.Errorf("help lacks the whole reason:\n%s", plain(m))
	}
	press(m, "esc")
	// At 80 columns the reason goes first; the fallback stays.
	m = scene(80, 24, 8, 10, Options{})
	send(m, ev(4*time.Second, srcFallback))
	h = screenLines(m)[0]
	if h != "flightdeck  connected  sglang ready 3m12s  GPU nvidia-smi  HEAD bba2fc4" {
		t.Errorf("80 columns: %q", h)
	}
	// Narrower, a healthy "connected" gives way to it, the server's
	// state does not (and HEAD takes the host's place).
	m = scene(60, 24, 8, 10, Options{})
	send(m, ev(4*time.Second, srcFallback))
	if h := screenLines(m)[0]; h != "flightdeck  sglang ready 3m12s  GPU nvidia-smi  HEAD bba2fc4" {
		t.Errorf("60 columns: %q", h)
	}
	m.Update(tea.WindowSizeMsg{Width: 50, Height: 24})
	if h := screenLines(m)[0]; h != "flightdeck  sglang ready 3m12s  HEAD bba2fc4" {
		t.Errorf("50 columns: %q", h)
	}
	// When all is well the field gives way to every other: the header
	// reads as it did before.
	for _, src := range []event.GPUSource{srcNVML, srcAgent, srcAsked} {
		m := scene(80, 24, 8, 10, Options{})
		before := screenLines(m)[0]
		send(m, ev(4*time.Second, src))
		if h := screenLines(m)[0]; h != before {
			t.Errorf("80 columns, %s: %q, want %q", src.Mode, h, before)
		}
	}
	// A later source replaces it: the agent came back.
	send(m, ev(5*time.Second, srcAgent))
	if h := screenLines(m)[0]; strings.Contains(h, "nvidia-smi") {
		t.Errorf("header kept the old source: %q", h)
	}
	// Remote text (a journal's, an agent's) is sanitised in every field,
	// in the header and in the help screen: no escape but the view's own
	// SGR colours reaches the terminal.
	for _, src := range []event.GPUSource{
		{Mode: "nvidia-smi\x1b]0;pwned\x07", Fallback: "agent exited"},
		{Mode: "agent", Detail: "agent 1.0 \x1b]0;pwned\x07\x1b[2J"},
		{Mode: "nvidia-smi", Fallback: "NVML init failed: \x1b]0;pwned\x07ERROR_LIBRARY_NOT_FOUND"},
	} {
		m = scene(200, 24, 8, 10, Options{})
		send(m, ev(4*time.Second, src))
		if err := onlySGR(m.View().Content); err != nil {
			t.Errorf("header with %+v: %v", src, err)
		}
		press(m, "?")
		if c := m.View().Content; onlySGR(c) != nil || strings.Contains(c, "\x07") {
			t.Errorf("help with %+v: %v", src, onlySGR(c))
		}
	}
}

// xidScene is the standard 8-GPU screen after three GPUs reported Xids:
// GPU 3 fell off the bus, GPU 5 had two application faults, GPU 6 a
// double-bit ECC error then an application fault.
func xidScene(w, h int) *Model {
	m := scene(w, h, 8, 100, Options{})
	send(m, ev(4*time.Second, srcNVML),
		ev(10*time.Second, xid(5, 13)),
		ev(11*time.Second, decodeLines(100, 2)),
		ev(12*time.Second, xid(6, 48)),
		ev(13*time.Second, xid(5, 13)),
		ev(14*time.Second, xid(6, 13)),
		ev(15*time.Second, decodeLines(102, 1)),
		ev(16*time.Second, xid(3, 79)),
		ev(17*time.Second, h200s(8)))
	return m
}

// Golden screens with Xids in the rows and the log. Regenerate with go
// test -update.
func TestXidGolden(t *testing.T) {
	t.Run("80x24", func(t *testing.T) { golden.RequireEqual(t, plain(xidScene(80, 24))) })
	t.Run("120x30", func(t *testing.T) { golden.RequireEqual(t, plain(xidScene(120, 30))) })
}

func TestXidInTheGPURow(t *testing.T) {
	m := xidScene(120, 30)
	st := m.Styles()
	for _, c := range []struct {
		idx, cell string
		tone      style.Tone
	}{
		{"3", "Xid 79", st.Crit},
		{"5", "Xid 13 +1", st.Warn},
		{"6", "Xid 48 +1", st.Crit}, // the critical code stays shown
	} {
		row := rowOf(t, m, c.idx)
		if !strings.Contains(row, c.cell) {
			t.Errorf("GPU %s row %q lacks %q", c.idx, row, c.cell)
		}
		if !painted(m, c.tone, c.cell) || !painted(m, c.tone, c.idx) {
			t.Errorf("GPU %s: %q or its index not in the right tone", c.idx, c.cell)
		}
	}
	if row := rowOf(t, m, "4"); strings.Contains(row, "Xid") {
		t.Errorf("GPU 4 has no Xid: %q", row)
	}
	// Healthy samples do not clear it: it stays for the session.
	for i := range 5 {
		send(m, ev(time.Duration(20+i)*time.Second, h200s(8)))
	}
	if row := rowOf(t, m, "3"); !strings.Contains(row, "Xid 79") {
		t.Errorf("Xid cleared by later samples: %q", row)
	}
	// The Xid leads the throttle list: squeezed, the list keeps it.
	g := h200s(8)
	g.GPUs[3].ClockEvents.Mask = event.ReasonSWPowerCap | event.ReasonSWThermalSlowdown | event.ReasonHWSlowdown
	send(m, ev(30*time.Second, g))
	if row := rowOf(t, m, "3"); !strings.Contains(row, "Xid 79,sw-power,hw-slow,sw-thermal") {
		t.Errorf("throttle column: %q", row)
	}
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 30})
	if row := rowOf(t, m, "3"); !strings.Contains(row, "Xid 79") {
		t.Errorf("80 columns lost the Xid: %q", row)
	}
}

func TestXidRowMatching(t *testing.T) {
	// By bus id when NVML named no index; an Xid before the GPU's first
	// sample still lands; one naming no GPU marks no row.
	m := newSized(120, 24, Options{})
	send(m, ev(0, event.Xid{Index: -1, BusID: "0000:38:00.0", Code: 74}), // h200(2)'s bus, short form
		ev(time.Second, event.Xid{Index: -1, Code: 31}),
		ev(2*time.Second, h200s(4)))
	if row := rowOf(t, m, "2"); !strings.Contains(row, "Xid 74") {
		t.Errorf("by bus: %q", row)
	}
	for _, i := range []string{"0", "1", "3"} {
		if row := rowOf(t, m, i); strings.Contains(row, "Xid") {
			t.Errorf("GPU %s marked: %q", i, row)
		}
	}
	// A lost row says the Xid first.
	s := h200s(4)
	s.GPUs[2].Lost = true
	send(m, ev(3*time.Second, s))
	if row := rowOf(t, m, "2"); !strings.Contains(row, "LOST  Xid 74  nvidia-smi reads [GPU is lost]") {
		t.Errorf("lost row: %q", row)
	}
	// A missing one too, and it counts as abnormal.
	s = h200s(4)
	s.GPUs = s.GPUs[:2]
	send(m, ev(4*time.Second, s))
	if row := rowOf(t, m, "2"); !strings.Contains(row, "LOST  Xid 74  missing from the latest sample") {
		t.Errorf("missing row: %q", row)
	}
}

func TestXidInTheLog(t *testing.T) {
	m := xidScene(120, 30)
	body := logBody(m)
	// Each Xid line starts with its time, as the server's lines do.
	want := []string{
		"[2025-10-22 10:27:10] flightdeck: GPU 5 (00000000:68:00.0) Xid 13: graphics engine exception (application fault, e.g. an illegal memory access)",
		decodeLine(100, rateAt(100)),
		decodeLine(101, rateAt(101)),
		"[2025-10-22 10:27:12] flightdeck: GPU 6 (00000000:78:00.0) Xid 48: double-bit ECC error (DBE)",
		"[2025-10-22 10:27:13] flightdeck: GPU 5 (00000000:68:00.0) Xid 13: graphics engine exception (application fault, e.g. an illegal memory access)",
		"[2025-10-22 10:27:14] flightdeck: GPU 6 (00000000:78:00.0) Xid 13: graphics engine exception (application fault, e.g. an illegal memory access)",
		decodeLine(102, rateAt(102)),
		"[2025-10-22 10:27:16] flightdeck: GPU 3 (00000000:48:00.0) Xid 79: GPU has fallen off the bus",
	}
	if len(body) < len(want) {
		t.Fatalf("log body %q", body)
	}
	got := body[len(body)-len(want):]
	for i := range want {
		if !strings.HasPrefix(want[i], strings.TrimSpace(got[i])) || got[i] == "" {
			t.Errorf("log line %d: %q, want %q", i, got[i], want[i])
		}
	}
	st := m.Styles()
	if !painted(m, st.Crit, "[2025-10-22 10:27:16] flightdeck: GPU 3 (00000000:48:00.0) Xid 79: GPU has fallen off the bus") {
		t.Error("a critical Xid's line is not critical")
	}
	if !painted(m, st.Warn, style.Truncate("[2025-10-22 10:27:10] flightdeck: GPU 5 (00000000:68:00.0) Xid 13: graphics engine exception (application fault, e.g. an illegal memory access)", 120)) {
		t.Error("an application Xid's line is not a warning")
	}

	// A filter keeps flightdeck's lines with the matches; a reset does
	// not remove them.
	press(m, "/")
	typeText(m, "#token: 1302")
	press(m, "enter")
	body = logBody(m)
	if len(body) != 6 || !strings.Contains(body[5], "Xid 79") || !strings.Contains(body[4], "1302") {
		t.Errorf("filtered: %q", body)
	}
	press(m, "esc")
	send(m, ev(40*time.Second, event.LogReset{Reason: "truncated"}), ev(41*time.Second, decodeLines(0, 2)))
	if !strings.Contains(plain(m), "Xid 79: GPU has fallen off the bus") {
		t.Errorf("a log reset dropped the Xid line:\n%s", plain(m))
	}
	// A new log (another path) keeps it too: the ring holds both.
	send(m, ev(42*time.Second, event.LogLines{Path: "/data/logs/vllm.log", Lines: []event.LogLine{{Text: []byte("vllm starting")}}}))
	if !strings.Contains(plain(m), "Xid 79: GPU has fallen off the bus") {
		t.Errorf("a new log dropped the Xid line:\n%s", plain(m))
	}
}

// A session that follows no log still shows the Xid lines, under the
// message that says no log is followed.
func TestXidWithoutALog(t *testing.T) {
	m := newSized(80, 24, Options{NoLog: true})
	send(m, connected(), ev(0, h200s(2)), ev(time.Second, xid(1, 79)))
	body := logBody(m)
	if len(body) != 2 || body[0] != noLogText || !strings.Contains(body[1], "Xid 79") {
		t.Errorf("log area %q", body)
	}
}

func TestXidScreensHaveNoAmbiguousGlyphs(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		m := xidScene(sz[0], sz[1])
		auditModel(t, fmt.Sprintf("xid %dx%d", sz[0], sz[1]), m)
		press(m, "?")
		auditModel(t, fmt.Sprintf("xid help %dx%d", sz[0], sz[1]), m)
	}
}
