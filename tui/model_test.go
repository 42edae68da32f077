package tui

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/repo"
	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote"
)

func newSized(w, h int, o Options) *Model {
	m := New(o)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

func send(m *Model, evs ...event.Event) { m.Update(EventsMsg(evs)) }

func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(keyMsg(k))
	}
	return cmd
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// plain is the stripped screen; screenLines splits it.
func plain(m *Model) string { return ansi.Strip(m.View().Content) }

func screenLines(m *Model) []string { return strings.Split(plain(m), "\n") }

// rowOf returns the stripped table row of GPU idx.
func rowOf(t *testing.T, m *Model, idx string) string {
	t.Helper()
	for _, l := range screenLines(m) {
		f := strings.Fields(l)
		if len(f) > 1 && f[0] == idx && !strings.HasPrefix(l, "GPU") {
			return l
		}
	}
	t.Fatalf("no row for GPU %s in:\n%s", idx, plain(m))
	return ""
}

// painted reports whether text appears on screen wrapped in tone t.
func painted(m *Model, t Tone, text string) bool {
	return strings.Contains(m.View().Content, t.Render(text))
}

func TestNonValuesAreTokensNeverZero(t *testing.T) {
	cases := []struct {
		st   gpu.Status
		want string
	}{
		{gpu.NA, "N/A"}, {gpu.NotSupported, "n/s"}, {gpu.UnknownError, "UNK"}, {gpu.Lost, "LOST"},
		{gpu.Err, "ERR"}, {gpu.Empty, "?"}, {gpu.Deprecated, "dep"}, {gpu.OtherToken, "oth"},
		{gpu.Invalid, "bad"}, {gpu.Absent, "n/q"},
	}
	for _, c := range cases {
		t.Run(c.st.String(), func(t *testing.T) {
			g := h200(0)
			g.UtilGPUPct = bad(c.st, "[x]")
			g.TempC = bad(c.st, "[x]")
			g.SMClockMHz = bad(c.st, "[x]")
			g.PowerDrawW = bad(c.st, "[x]")
			g.PState = gpu.Text{S: "[x]", Status: c.st}
			m := newSized(120, 24, Options{})
			send(m, ev(0, sampleOf(g)))
			f := strings.Fields(rowOf(t, m, "0"))
			// idx name util mem power temp SM P PCIe throttle
			if f[2] != c.want || f[5] != c.want || f[6] != c.want || f[7] != c.want {
				t.Errorf("row %q: util/temp/SM/P want %q", f, c.want)
			}
			if f[4] != c.want+"/700" {
				t.Errorf("power cell %q, want %q", f[4], c.want+"/700")
			}
			for _, x := range []string{f[2], f[5], f[6]} {
				if strings.HasPrefix(x, "0") {
					t.Errorf("non-value shown as a number: %q", x)
				}
			}
		})
	}
}

func TestGPURowValuesAndNameShortening(t *testing.T) {
	m := newSized(120, 24, Options{})
	send(m, ev(0, h200s(2)))
	got := strings.Fields(rowOf(t, m, "1"))
	want := []string{"1", "H200", "97%", "120.4/141.0", "613/700", "62C", "1980", "P0", "Gen5x16", "-"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("row = %q\nwant  %q", got, want)
	}
}

func TestLostGPU(t *testing.T) {
	m := newSized(120, 24, Options{})
	send(m, ev(0, h200s(4)))
	lost := gpu.GPU{Index: 2, Name: gpu.Text{S: "[GPU is lost]", Status: gpu.Lost}}
	for _, r := range []*gpu.Reading{&lost.UtilGPUPct, &lost.MemUsedMiB, &lost.MemTotalMiB, &lost.PowerDrawW,
		&lost.PowerLimitW, &lost.TempC, &lost.SMClockMHz, &lost.PCIeGenCurrent, &lost.PCIeWidthCurrent} {
		*r = bad(gpu.Lost, "[GPU is lost]")
	}
	lost.PState = gpu.Text{S: "[GPU is lost]", Status: gpu.Lost}
	lost.ClockEvents = gpu.ClockEvents{Status: gpu.Lost, Raw: "[GPU is lost]"}
	s := h200s(4)
	s.GPUs[2] = lost
	send(m, ev(time.Second, s))
	row := rowOf(t, m, "2")
	if strings.Count(row, "LOST") < 8 {
		t.Errorf("lost row should say LOST in every value cell: %q", row)
	}
	if strings.ContainsAny(strings.ReplaceAll(row, "2 ", ""), "0123456789") {
		t.Errorf("lost row shows a number: %q", row)
	}
	if !painted(m, m.styles.Crit, "2") || !painted(m, m.styles.Crit, "LOST") {
		t.Error("lost row not painted critical")
	}

	// The parser flags the whole GPU (gpu.GPU.Lost): one message across
	// the row instead of LOST in every cell.
	lost.Lost = true
	s.GPUs[2] = lost
	send(m, ev(2*time.Second, s))
	row = rowOf(t, m, "2")
	if !strings.Contains(row, "LOST  nvidia-smi reads [GPU is lost]") || strings.Count(row, "LOST") > 2 { // the name cell may read LOST too
		t.Errorf("lost GPU row: %q", row)
	}
}

func TestGPUFailureBannerAndMissingRow(t *testing.T) {
	m := newSized(120, 24, Options{})
	s := h200s(3)
	s.GPUs[1].BusID = txt("00000000:0B:00.0")
	send(m, ev(0, s))
	// GPU 1 falls off the bus: nvidia-smi names it and reports the others.
	s2 := h200s(3)
	s2.GPUs = []gpu.GPU{s2.GPUs[0], s2.GPUs[2]}
	send(m, ev(2*time.Second, gpu.Failure{Class: "unknown-error", BusID: "0000:0B:00.0", Reason: "Unknown Error",
		Line: "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error"}),
		ev(2*time.Second, s2))
	scr := plain(m)
	if !strings.Contains(scr, "nvidia-smi failed: unknown-error bus 0000:0B:00.0 (Unknown Error)") {
		t.Errorf("no failure banner:\n%s", scr)
	}
	if row := rowOf(t, m, "1"); !strings.Contains(row, "LOST  unknown-error: Unknown Error") {
		t.Errorf("row of the failed bus id: %q", row)
	}
	// The same failure again is deduplicated and counted.
	send(m, ev(3*time.Second, gpu.Failure{Class: "unknown-error", BusID: "0000:0B:00.0", Reason: "Unknown Error"}))
	if got := strings.Count(plain(m), "nvidia-smi failed"); got != 1 {
		t.Errorf("%d banners, want 1 deduplicated", got)
	}
	if !strings.Contains(plain(m), "seen 2x") {
		t.Errorf("repeat count missing:\n%s", plain(m))
	}
	// The GPU comes back: banner and LOST go.
	send(m, ev(4*time.Second, s))
	if strings.Contains(plain(m), "nvidia-smi failed") || strings.Contains(rowOf(t, m, "1"), "LOST") {
		t.Errorf("failure not cleared by a healthy sample:\n%s", plain(m))
	}

	// A GPU that vanishes without a failure line is still not shown as current.
	send(m, ev(5*time.Second, s2))
	if row := rowOf(t, m, "1"); !strings.Contains(row, "LOST  missing from the latest sample") {
		t.Errorf("vanished GPU row: %q", row)
	}
}

func TestWholeHostFailureBanner(t *testing.T) {
	m := newSized(120, 24, Options{})
	send(m, ev(0, gpu.Failure{Class: gpu.FailDriverLibraryMismatch, Reason: "Driver/library version mismatch", NVMLVersion: "570.124"}))
	if !strings.Contains(plain(m), "nvidia-smi failed: driver-library-mismatch (Driver/library version mismatch)") {
		t.Errorf("banner missing:\n%s", plain(m))
	}
	if !strings.Contains(m.View().Content, m.styles.Crit.open+"nvidia-smi failed: driver-library-mismatch") {
		t.Error("banner not critical")
	}
}

func TestStaleMarkerClearedByNextSample(t *testing.T) {
	m := newSized(120, 24, Options{})
	s := h200s(2)
	s.GPUs[1].PState = txt("P2")
	send(m, ev(0, s))
	send(m, ev(5*time.Second, gpu.Stale{LastSample: at(0), Missed: 3}))
	scr := plain(m)
	if !strings.Contains(scr, "GPUs stale 5s: no sample for 3 intervals since 10:27:00; restarting nvidia-smi") {
		t.Errorf("no stale marker:\n%s", scr)
	}
	if !painted(m, m.styles.Dim, "97%") {
		t.Error("stale rows should be dimmed")
	}
	if !painted(m, m.styles.Warn, "P2") {
		t.Error("a stale row should keep its abnormal marks")
	}
	send(m, ev(6*time.Second, s))
	if strings.Contains(plain(m), "stale") {
		t.Errorf("stale marker not cleared:\n%s", plain(m))
	}
	if painted(m, m.styles.Dim, "97%") {
		t.Error("rows still dimmed after a fresh sample")
	}
}

func TestHighlights(t *testing.T) {
	type tc struct {
		name   string
		mutate func(*gpu.GPU)
		cell   string
		tone   func(Styles) Tone // nil: must not be highlighted
	}
	warn := func(s Styles) Tone { return s.Warn }
	crit := func(s Styles) Tone { return s.Crit }
	cases := []tc{
		{"pcie gen below max while busy", func(g *gpu.GPU) { g.PCIeGenCurrent = ok(4) }, "Gen4x16", warn},
		{"pcie width below max while busy", func(g *gpu.GPU) { g.PCIeWidthCurrent = ok(8) }, "Gen5x8", warn},
		{"pcie downshift while idle is normal", func(g *gpu.GPU) { g.UtilGPUPct = ok(0); g.PCIeGenCurrent = ok(1) }, "Gen1x16", nil},
		{"pstate not P0 under load", func(g *gpu.GPU) { g.PState = txt("P2") }, "P2", warn},
		{"pstate P8 idle is normal", func(g *gpu.GPU) { g.UtilGPUPct = ok(3); g.PState = txt("P8") }, "P8", nil},
		{"temperature high", func(g *gpu.GPU) { g.TempC = ok(85) }, "85C", warn},
		{"temperature fine", func(g *gpu.GPU) { g.TempC = ok(84) }, "84C", nil},
		{"sw power cap", func(g *gpu.GPU) { g.ClockEvents.Mask = gpu.ReasonSWPowerCap }, "sw-power", warn},
		{"hw thermal is critical", func(g *gpu.GPU) {
			g.ClockEvents.Mask = gpu.ReasonHWThermalSlowdown | gpu.ReasonSWThermalSlowdown
		}, "sw-thermal,hw-thermal", crit},
		{"idle alone is normal", func(g *gpu.GPU) { g.UtilGPUPct = ok(0); g.ClockEvents.Mask = gpu.ReasonGPUIdle }, "idle", nil},
		{"unknown bits shown in hex", func(g *gpu.GPU) { g.ClockEvents.Mask = 0x1000 }, "0x1000", warn},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := h200(0)
			c.mutate(&g)
			m := newSized(120, 24, Options{})
			send(m, ev(0, sampleOf(g)))
			if !strings.Contains(rowOf(t, m, "0"), c.cell) {
				t.Fatalf("row %q lacks %q", rowOf(t, m, "0"), c.cell)
			}
			st := m.Styles()
			for name, tn := range map[string]Tone{"warn": st.Warn, "crit": st.Crit} {
				hl := painted(m, tn, c.cell)
				switch {
				case c.tone == nil && hl:
					t.Errorf("%q painted %s, want plain", c.cell, name)
				case c.tone != nil && c.tone(st) == tn && !hl:
					t.Errorf("%q not painted %s", c.cell, name)
				}
			}
		})
	}
}

func TestHeaderConnectionStates(t *testing.T) {
	cases := []struct {
		st   remote.State
		want string
		tone func(Styles) Tone
	}{
		{remote.State{Host: "root@gpu-box:22", Conn: remote.Connected}, "connected", func(s Styles) Tone { return s.OK }},
		{remote.State{Host: "root@gpu-box:22", Conn: remote.Reconnecting, Attempt: 3, NextTry: at(13 * time.Second),
			Err: errors.New("connection reset")}, "reconnecting (attempt 3, next in 3s)", func(s Styles) Tone { return s.Warn }},
		{remote.State{Host: "root@gpu-box:22", Conn: remote.Failed, Err: errors.New("host key mismatch\x1b]0;pwn\x07")},
			"failed: host key mismatch", func(s Styles) Tone { return s.Crit }},
		{remote.State{Host: "root@gpu-box:22", Conn: remote.Connecting}, "connecting", func(s Styles) Tone { return s.Warn }},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			m := newSized(120, 24, Options{Host: "gpu-box"})
			send(m, ev(10*time.Second, c.st))
			head := screenLines(m)[0]
			if !strings.HasPrefix(head, "flightdeck  root@gpu-box:22  "+c.want) {
				t.Errorf("header %q, want state %q", head, c.want)
			}
			if !strings.Contains(m.View().Content, c.tone(m.Styles()).open+c.want) {
				t.Errorf("state %q painted in the wrong tone", c.want)
			}
			if strings.Contains(m.View().Content, "pwn") && strings.Contains(m.View().Content, "\x1b]") {
				t.Error("error text reached the screen unsanitised")
			}
		})
	}
	// The relative time follows the clock messages, not the wall clock.
	m := newSized(120, 24, Options{})
	send(m, ev(10*time.Second, remote.State{Conn: remote.Reconnecting, Attempt: 1, NextTry: at(13 * time.Second)}))
	m.Update(ClockMsg{Now: at(12 * time.Second)})
	if h := screenLines(m)[0]; !strings.Contains(h, "next in 1s") {
		t.Errorf("header after clock tick: %q", h)
	}
	m.Update(ClockMsg{Now: at(14 * time.Second)})
	if h := screenLines(m)[0]; !strings.Contains(h, "(attempt 1, dialing)") {
		t.Errorf("header after NextTry passed: %q", h)
	}
}

func TestHeaderServerStateAndHead(t *testing.T) {
	m := newSized(160, 24, Options{Host: "gpu-box", Head: "bba2fc4"})
	if h := screenLines(m)[0]; h != "flightdeck  gpu-box  HEAD bba2fc4" {
		t.Errorf("initial header %q", h)
	}
	send(m, ev(0, serverlog.Reset{Reason: "truncated"}))
	if h := screenLines(m)[0]; !strings.Contains(h, "  starting") {
		t.Errorf("after reset: %q", h)
	}
	send(m, ev(10*time.Second, serverlog.Ready{Server: "sglang", Text: "The server is fired up and ready to roll!"}))
	m.Update(ClockMsg{Now: at(10*time.Second + 3*time.Minute + 12*time.Second)})
	if h := screenLines(m)[0]; !strings.Contains(h, "  sglang ready 3m12s  HEAD bba2fc4") {
		t.Errorf("ready: %q", h)
	}
	m.Update(HeadMsg{Head: "1c0ffee (+1 dirty)"})
	send(m, ev(4*time.Minute, serverlog.Failure{Class: serverlog.FailOOM, Text: "torch.OutOfMemoryError: CUDA out of memory."}))
	if h := screenLines(m)[0]; !strings.Contains(h, "  sglang failed (oom)  HEAD 1c0ffee (+1 dirty)") {
		t.Errorf("failed: %q", h)
	}
	// Throughput without a readiness line (attached mid-run) reads as running.
	m2 := newSized(120, 24, Options{})
	send(m2, ev(0, serverlog.Rate{TokPerSec: 80, Ranks: 1}))
	if h := screenLines(m2)[0]; !strings.HasSuffix(h, "  running") {
		t.Errorf("running: %q", h)
	}
}

func TestEventsByPointerAreAccepted(t *testing.T) {
	m := newSized(120, 24, Options{})
	s := h200s(1)
	send(m, ev(0, &s), ev(0, &serverlog.Rate{TokPerSec: 77.7, Ranks: 1}), ev(0, (*gpu.Stale)(nil)))
	if !strings.Contains(plain(m), "77.7 now") || !strings.Contains(rowOf(t, m, "0"), "H200") {
		t.Errorf("pointer payloads ignored:\n%s", plain(m))
	}
}

func TestDataRoutesByIndexRegardlessOfFocus(t *testing.T) {
	m := newSized(120, 12, Options{})
	send(m, ev(0, h200s(16))) // more rows than fit: the table scrolls
	press(m, "tab")
	if m.focus != focusGPUs {
		t.Fatal("tab did not focus the GPU table")
	}
	g := h200(13)
	g.TempC = ok(88)
	s := h200s(16)
	s.GPUs[13] = g
	send(m, ev(time.Second, s))
	if m.gpus.rows[m.gpus.byIdx[13]].g.TempC.Value != 88 {
		t.Error("sample for an off-screen GPU was not applied")
	}
	if !strings.Contains(screenLines(m)[1], "1 abnormal hidden") {
		t.Errorf("off-screen abnormal row not counted: %q", screenLines(m)[1])
	}
	press(m, "G")
	if row := rowOf(t, m, "13"); !strings.Contains(row, "88C") {
		t.Errorf("row 13 after scrolling: %q", row)
	}
}

func TestSparkline(t *testing.T) {
	m := newSized(80, 24, Options{})
	vals := []float64{80, 81, 82, 83, 84}
	for _, v := range vals {
		send(m, ev(0, serverlog.Rate{TokPerSec: v, Ranks: 1}))
	}
	send(m, ev(0, serverlog.Rate{TokPerSec: 0.3, Dropped: true}), ev(0, serverlog.Rate{TokPerSec: 0.2, Dropped: true}))
	send(m, ev(0, serverlog.Rate{TokPerSec: 89, AcceptLength: 2.314, HasAccept: true, Ranks: 8}))
	var line string
	for _, l := range screenLines(m) {
		if strings.HasPrefix(l, "tok/s") {
			line = l
		}
	}
	if !strings.HasSuffix(line, "▁▂▃▃▄ █  89.0 now  median 82.5  accept 2.31") {
		t.Errorf("sparkline %q", line)
	}
	if w := ansi.StringWidth(line); w != 80 {
		t.Errorf("sparkline width %d, want the panel width 80", w)
	}
	for _, r := range line {
		if r > 0x7f && (r < 0x2581 || r > 0x2588) {
			t.Errorf("non-block glyph %q in sparkline", r)
		}
	}
}

func TestSparklineWindowIsPanelWidth(t *testing.T) {
	m := newSized(60, 24, Options{})
	for i := range 500 {
		send(m, ev(0, serverlog.Rate{TokPerSec: float64(i), Ranks: 1}))
	}
	var line string
	for _, l := range screenLines(m) {
		if strings.HasPrefix(l, "tok/s") {
			line = l
		}
	}
	// 60 - "tok/s " - "  499.0 now" - "  median NNN.N": the median is over
	// exactly the drawn points (the last n values).
	bars := strings.TrimSpace(strings.TrimPrefix(strings.Split(line, "  ")[0], "tok/s"))
	n := len([]rune(bars))
	want := 499 - float64(n-1)/2
	if !strings.Contains(line, "median "+strconv.FormatFloat(want, 'f', 1, 64)) {
		t.Errorf("line %q: %d bars, median should be %.1f", line, n, want)
	}
	if ansi.StringWidth(line) != 60 {
		t.Errorf("width %d", ansi.StringWidth(line))
	}
}

func TestHeaderShowsRepoHeadFromTheStream(t *testing.T) {
	m := newSized(160, 24, Options{Host: "gpu-box"})
	m.Update(EventsMsg{{At: time.Unix(100, 0), Data: repo.Head{Short: "3207427", Subject: "Fix PCG MoE Error\x1b[2J", Dirty: 2}}})
	got := ansi.Strip(m.View().Content)
	if !strings.Contains(got, "HEAD 3207427 Fix PCG MoE Error (+2 dirty)") {
		t.Fatalf("header lacks HEAD:\n%s", firstLine(got))
	}
	if strings.Contains(m.View().Content, "\x1b[2J") {
		t.Fatal("commit subject escape sequence reached the screen")
	}
	m.Update(EventsMsg{{At: time.Unix(101, 0), Data: repo.Unreadable{Path: "/x", Err: "not a git repository"}}})
	if got := firstLine(ansi.Strip(m.View().Content)); !strings.Contains(got, "HEAD ? (repository unreadable)") {
		t.Fatalf("header after unreadable repo: %s", got)
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// A row that renders as one spanning message (lost, missing, or named by a
// failure) must not widen the columns of the rows around it.
func TestSpanningRowsDoNotWidenColumns(t *testing.T) {
	healthy := newSized(120, 24, Options{})
	send(healthy, ev(0, h200s(8)))
	want := tableHeader(healthy)

	lostGPU := func() gpu.GPU {
		g := gpu.GPU{Index: 6, Lost: true, Name: txt("NVIDIA H200"), BusID: txt("00000000:78:00.0")}
		for _, r := range []*gpu.Reading{&g.UtilGPUPct, &g.MemUsedMiB, &g.MemTotalMiB, &g.PowerDrawW,
			&g.PowerLimitW, &g.TempC, &g.SMClockMHz, &g.PCIeGenCurrent, &g.PCIeWidthCurrent} {
			*r = bad(gpu.Lost, "[GPU is lost]")
		}
		g.PState = gpu.Text{S: "[GPU is lost]", Status: gpu.Lost}
		g.ClockEvents = gpu.ClockEvents{Status: gpu.Lost, Raw: "[GPU is lost]"}
		return g
	}
	m := newSized(120, 24, Options{})
	s := h200s(8)
	s.GPUs[6] = lostGPU()
	send(m, ev(0, s))
	if got := tableHeader(m); got != want {
		t.Errorf("a lost GPU widened the columns:\n got %q\nwant %q", got, want)
	}

	// Named by a failure: the row spans too, whatever its cells hold.
	f := newSized(120, 24, Options{})
	s = h200s(8)
	s.GPUs[6].PState = gpu.Text{S: "[Unknown Error]", Status: gpu.UnknownError}
	s.GPUs[6].PowerDrawW = bad(gpu.UnknownError, "[Unknown Error]")
	s.GPUs[6].PowerLimitW = bad(gpu.Lost, "[GPU is lost]")
	send(f, ev(0, s), ev(0, gpu.Failure{Class: "unknown-error", BusID: "0000:78:00.0", Reason: "Unknown Error"}))
	if row := rowOf(t, f, "6"); !strings.Contains(row, "LOST  unknown-error: Unknown Error") {
		t.Errorf("row named by a failure: %q", row)
	}
	if got := tableHeader(f); got != want {
		t.Errorf("a row named by a failure widened the columns:\n got %q\nwant %q", got, want)
	}
	// Once it reports healthy again it is measured again.
	send(f, ev(time.Second, h200s(8)))
	if got := tableHeader(f); got != want {
		t.Errorf("after recovery:\n got %q\nwant %q", got, want)
	}
}

// tableHeader is the stripped GPU table header line.
func tableHeader(m *Model) string {
	for _, l := range screenLines(m) {
		if strings.HasPrefix(l, "GPU  ") {
			return l
		}
	}
	return ""
}

// Options.Label stays in the header (and window title) before the host,
// whatever host a remote.State names.
func TestHeaderLabelStaysBeforeTheHost(t *testing.T) {
	m := newSized(120, 24, Options{Label: "demo", Host: "demo (simulated host)"})
	if h := screenLines(m)[0]; h != "flightdeck  demo  demo (simulated host)" {
		t.Errorf("before any state: %q", h)
	}
	send(m, ev(0, remote.State{Host: "root@127.0.0.1:40123", Conn: remote.Connected}))
	if h := screenLines(m)[0]; h != "flightdeck  demo  root@127.0.0.1:40123  connected" {
		t.Errorf("after the state: %q", h)
	}
	if got := m.View().WindowTitle; got != "flightdeck demo root@127.0.0.1:40123" {
		t.Errorf("window title %q", got)
	}
	if !painted(m, m.styles.Title, "demo") {
		t.Error("label not painted as a title")
	}
	// Remote-controlled text never reaches the terminal raw; the caller's
	// label is sanitised too.
	e := newSized(120, 24, Options{Label: "x\x1b]0;pwn\x07"})
	if err := onlySGR(e.View().Content); err != nil {
		t.Error(err)
	}
	// Without a label the header is as before.
	n := newSized(120, 24, Options{})
	send(n, ev(0, remote.State{Host: "root@gpu-box:22", Conn: remote.Connected}))
	if h := screenLines(n)[0]; h != "flightdeck  root@gpu-box:22  connected" {
		t.Errorf("no label: %q", h)
	}
}

// A lost GPU's row message has a short form that fits 80 columns whole
// rather than being cut mid-word.
func TestLostRowMessageFitsNarrowTerminals(t *testing.T) {
	for _, c := range []struct {
		w    int
		want string
	}{
		{120, "LOST  nvidia-smi reads [GPU is lost]: reboot the system to recover this GPU"},
		{80, "LOST  [GPU is lost]: reboot the system to recover it"},
		{60, "LOST  [GPU is lost]: reboot the system to recover it"},
	} {
		m := newSized(c.w, 24, Options{})
		s := h200s(8)
		s.GPUs[6].Lost = true
		send(m, ev(0, s))
		if row := rowOf(t, m, "6"); !strings.HasSuffix(row, c.want) {
			t.Errorf("width %d: %q, want it to end %q", c.w, row, c.want)
		}
	}
}

// Until the first sample, the table says whether nvidia-smi is merely
// slow to answer or has been failing.
func TestEmptyTableSaysWhy(t *testing.T) {
	m := newSized(80, 24, Options{})
	if got := tableLine(m); got != "GPU  waiting for nvidia-smi" {
		t.Errorf("before anything: %q", got)
	}
	send(m, ev(5*time.Second, gpu.Stale{Missed: 5}))
	if got := tableLine(m); got != "GPU  no sample yet" {
		t.Errorf("stale without a sample: %q", got)
	}
	f := newSized(80, 24, Options{})
	send(f, ev(0, gpu.Failure{Class: gpu.FailDriverLibraryMismatch, Reason: "Driver/library version mismatch"}))
	if got := tableLine(f); got != "GPU  no sample yet" {
		t.Errorf("failing without a sample: %q", got)
	}
}

// tableLine is the stripped first line of the GPU table (after banners).
func tableLine(m *Model) string {
	for _, l := range screenLines(m)[1:] {
		if strings.HasPrefix(l, "GPU  ") {
			return l
		}
	}
	return ""
}

// When the table scrolls and its note does not fit beside the headers (80
// columns), the note takes the last row: hidden abnormal GPUs are never
// silent.
func TestScrollNoteOnItsOwnRowWhenNarrow(t *testing.T) {
	m := newSized(80, 24, Options{})
	s := h200s(64)
	s.GPUs[40].TempC = ok(89)
	send(m, ev(0, s))
	ls := screenLines(m)
	if strings.Contains(ls[1], "of 64") {
		t.Fatalf("note squeezed into the headers: %q", ls[1])
	}
	// 13 table rows: 12 GPUs and the note.
	if ls[13] != "11   H200  97%   120.4/141.0  623/700  63C   1980    P0   Gen5x16  -" {
		t.Errorf("last GPU row %q", ls[13])
	}
	if ls[14] != "GPU 0-11 of 64, 1 abnormal hidden, tab to scroll" || !painted(m, m.styles.Warn, ls[14]) {
		t.Errorf("note row %q", ls[14])
	}
	press(m, "tab", "j")
	if ls := screenLines(m); ls[14] != "GPU 1-12 of 64, 1 abnormal hidden, j/k scroll" || !strings.HasPrefix(ls[2], "1 ") {
		t.Errorf("after tab j: %q / %q", ls[2], ls[14])
	}
	// Wide enough: beside the headers, all rows for GPUs.
	m.Update(tea.WindowSizeMsg{Width: 140, Height: 24})
	ls = screenLines(m)
	if !strings.HasSuffix(ls[1], "GPU 1-13 of 64, 1 abnormal hidden, j/k scroll") || !strings.HasPrefix(ls[14], "13 ") {
		t.Errorf("wide: %q / %q", ls[1], ls[14])
	}
	// Between the two: the key hint goes first.
	m.Update(tea.WindowSizeMsg{Width: 112, Height: 24})
	if ls := screenLines(m); !strings.HasSuffix(ls[1], "  GPU 1-13 of 64, 1 abnormal hidden") {
		t.Errorf("medium: %q", ls[1])
	}
}

// A narrow header drops the fields that do not fit whole (a bare "HEAD"
// or "rea" says nothing) rather than cutting them.
func TestNarrowHeaderDropsFieldsWhole(t *testing.T) {
	m := newSized(60, 24, Options{Head: "e7b9c70 [CI] Raise the nightly benchmark timeout"})
	send(m, ev(0, remote.State{Host: "root@127.0.0.1:42133", Conn: remote.Connected}),
		ev(0, serverlog.Ready{Server: "sglang"}))
	m.Update(ClockMsg{Now: at(19 * time.Second)})
	if h := screenLines(m)[0]; h != "flightdeck  root@127.0.0.1:42133  connected  ready 19s" {
		t.Errorf("60 columns: %q", h)
	}
	m.Update(tea.WindowSizeMsg{Width: 50, Height: 24})
	if h := screenLines(m)[0]; h != "flightdeck  root@127.0.0.1:42133  connected" {
		t.Errorf("50 columns: %q", h)
	}
	// The host is cut rather than dropped: it says where this is.
	m.Update(tea.WindowSizeMsg{Width: 20, Height: 24})
	if h := screenLines(m)[0]; h != "flightdeck  root@127" {
		t.Errorf("20 columns: %q", h)
	}
}
