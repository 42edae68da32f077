package tui

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/panels/gpus"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

func TestNonValuesAreTokensNeverZero(t *testing.T) {
	cases := []struct {
		st   event.CellStatus
		want string
	}{
		{event.CellNA, "N/A"}, {event.CellNotSupported, "n/s"}, {event.CellUnknownError, "UNK"}, {event.CellLost, "LOST"},
		{event.CellErr, "ERR"}, {event.CellEmpty, "?"}, {event.CellDeprecated, "dep"}, {event.CellOther, "oth"},
		{event.CellInvalid, "bad"}, {event.CellAbsent, "n/q"},
	}
	for _, c := range cases {
		t.Run(c.st.String(), func(t *testing.T) {
			g := h200(0)
			g.UtilGPUPct = bad(c.st, "[x]")
			g.TempC = bad(c.st, "[x]")
			g.SMClockMHz = bad(c.st, "[x]")
			g.PowerDrawW = bad(c.st, "[x]")
			g.PState = event.Text{S: "[x]", Status: c.st}
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
	lost := event.AbsentGPU(2)
	lost.Name = event.Text{S: "[GPU is lost]", Status: event.CellLost}
	for _, r := range []*event.Reading{&lost.UtilGPUPct, &lost.MemUsedMiB, &lost.MemTotalMiB, &lost.PowerDrawW,
		&lost.PowerLimitW, &lost.TempC, &lost.SMClockMHz, &lost.PCIeGenCurrent, &lost.PCIeWidthCurrent} {
		*r = bad(event.CellLost, "[GPU is lost]")
	}
	lost.PState = event.Text{S: "[GPU is lost]", Status: event.CellLost}
	lost.ClockEvents = event.ClockEvents{Status: event.CellLost, Raw: "[GPU is lost]"}
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

	// The parser flags the whole GPU (event.GPU.Lost): one message across
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
	s2.GPUs = []event.GPU{s2.GPUs[0], s2.GPUs[2]}
	send(m, ev(2*time.Second, event.GPUFailure{Class: "unknown-error", BusID: "0000:0B:00.0", Reason: "Unknown Error",
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
	send(m, ev(3*time.Second, event.GPUFailure{Class: "unknown-error", BusID: "0000:0B:00.0", Reason: "Unknown Error"}))
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
	send(m, ev(0, event.GPUFailure{Class: event.GPUFailDriverLibraryMismatch, Reason: "Driver/library version mismatch", NVMLVersion: "570.124"}))
	if !strings.Contains(plain(m), "nvidia-smi failed: driver-library-mismatch (Driver/library version mismatch)") {
		t.Errorf("banner missing:\n%s", plain(m))
	}
	if !strings.Contains(m.View().Content, m.styles.Crit.SGR()+"nvidia-smi failed: driver-library-mismatch") {
		t.Error("banner not critical")
	}
}

func TestStaleMarkerClearedByNextSample(t *testing.T) {
	m := newSized(120, 24, Options{})
	s := h200s(2)
	s.GPUs[1].PState = txt("P2")
	send(m, ev(0, s))
	send(m, ev(5*time.Second, event.GPUStale{LastSample: at(0), Missed: 3}))
	scr := plain(m)
	if !strings.Contains(scr, "GPUs stale 5s (since 10:27:00): no sample for 3 intervals; restarting nvidia-smi") {
		t.Errorf("no stale marker:\n%s", scr)
	}
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(ClockMsg{Now: at(15 * time.Second)})
	if scr := plain(m); !strings.Contains(scr, "GPUs stale 15s: no sample for 3 intervals; restarting nvidia-smi\n") {
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

// TestStaleBannerSaysWhy: the banner gives the sampler's Reason when it
// has one (a lost connection is not "no sample for 0 intervals"), counts
// missed intervals only when there are some, and fits 80 columns whole
// in the common case (without the clock time, which the age repeats).
func TestStaleBannerSaysWhy(t *testing.T) {
	last := at(0)
	cases := []struct {
		st   event.GPUStale
		want string
	}{
		{event.GPUStale{LastSample: last, Reason: "connection to host lost"},
			"GPUs stale 19s (since 10:27:00): connection to host lost; restarting nvidia-smi"},
		{event.GPUStale{LastSample: last, Missed: 2, Reason: "nvidia-smi exited: exit status 6\x1b[31m"},
			"GPUs stale 19s: nvidia-smi exited: exit status 6; restarting nvidia-smi"},
		{event.GPUStale{LastSample: last, Missed: 3, Reason: "no sample for 3 intervals"},
			"GPUs stale 19s: no sample for 3 intervals; restarting nvidia-smi"},
		{event.GPUStale{LastSample: last, Missed: 3},
			"GPUs stale 19s: no sample for 3 intervals; restarting nvidia-smi"},
		{event.GPUStale{LastSample: last},
			"GPUs stale 19s (since 10:27:00); restarting nvidia-smi"},
		{event.GPUStale{Reason: "connection to host lost"},
			"GPUs stale: connection to host lost; restarting nvidia-smi"},
	}
	for _, c := range cases {
		m := newSized(80, 24, Options{})
		send(m, ev(0, h200s(2)), ev(19*time.Second, c.st))
		banner := screenLines(m)[1]
		if !strings.HasPrefix(banner, c.want) {
			t.Errorf("%+v:\n got %q\nwant %q", c.st, banner, c.want)
		}
		if strings.Contains(banner, " 0 intervals") || strings.Contains(m.View().Content, "\x1b[31m") {
			t.Errorf("%+v: %q", c.st, banner)
		}
	}
}

func TestHighlights(t *testing.T) {
	type tc struct {
		name   string
		mutate func(*event.GPU)
		cell   string
		tone   func(style.Styles) style.Tone // nil: must not be highlighted
	}
	warn := func(s style.Styles) style.Tone { return s.Warn }
	crit := func(s style.Styles) style.Tone { return s.Crit }
	cases := []tc{
		{"pcie gen below max while busy", func(g *event.GPU) { g.PCIeGenCurrent = ok(4) }, "Gen4x16", warn},
		{"pcie width below max while busy", func(g *event.GPU) { g.PCIeWidthCurrent = ok(8) }, "Gen5x8", warn},
		{"pcie downshift while idle is normal", func(g *event.GPU) { g.UtilGPUPct = ok(0); g.PCIeGenCurrent = ok(1) }, "Gen1x16", nil},
		{"pstate not P0 under load", func(g *event.GPU) { g.PState = txt("P2") }, "P2", warn},
		{"pstate P8 idle is normal", func(g *event.GPU) { g.UtilGPUPct = ok(3); g.PState = txt("P8") }, "P8", nil},
		{"temperature high", func(g *event.GPU) { g.TempC = ok(85) }, "85C", warn},
		{"temperature fine", func(g *event.GPU) { g.TempC = ok(84) }, "84C", nil},
		{"sw power cap", func(g *event.GPU) { g.ClockEvents.Mask = event.ReasonSWPowerCap }, "sw-power", warn},
		{"hw thermal is critical", func(g *event.GPU) {
			g.ClockEvents.Mask = event.ReasonHWThermalSlowdown | event.ReasonSWThermalSlowdown
		}, "sw-thermal,hw-thermal", crit},
		{"idle alone is normal", func(g *event.GPU) { g.UtilGPUPct = ok(0); g.ClockEvents.Mask = event.ReasonGPUIdle }, "idle", nil},
		{"unknown bits shown in hex", func(g *event.GPU) { g.ClockEvents.Mask = 0x1000 }, "0x1000", warn},
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
			for name, tn := range map[string]style.Tone{"warn": st.Warn, "crit": st.Crit} {
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

func TestDataRoutesByIndexRegardlessOfFocus(t *testing.T) {
	m := newSized(120, 12, Options{})
	send(m, ev(0, h200s(16))) // more rows than fit: the table scrolls
	press(m, "tab")
	if !m.gpus.Focused {
		t.Fatal("tab did not focus the GPU table")
	}
	g := h200(13)
	g.TempC = ok(88)
	s := h200s(16)
	s.GPUs[13] = g
	send(m, ev(time.Second, s))
	if g, _ := m.gpus.GPU(13); g.TempC.Value != 88 {
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

// A row that renders as one spanning message (lost, missing, or named by a
// failure) must not widen the columns of the rows around it.
func TestSpanningRowsDoNotWidenColumns(t *testing.T) {
	healthy := newSized(120, 24, Options{})
	send(healthy, ev(0, h200s(8)))
	want := tableHeader(healthy)

	lostGPU := func() event.GPU {
		g := event.GPU{Index: 6, Lost: true, Name: txt("NVIDIA H200"), BusID: txt("00000000:78:00.0")}
		for _, r := range []*event.Reading{&g.UtilGPUPct, &g.MemUsedMiB, &g.MemTotalMiB, &g.PowerDrawW,
			&g.PowerLimitW, &g.TempC, &g.SMClockMHz, &g.PCIeGenCurrent, &g.PCIeWidthCurrent} {
			*r = bad(event.CellLost, "[GPU is lost]")
		}
		g.PState = event.Text{S: "[GPU is lost]", Status: event.CellLost}
		g.ClockEvents = event.ClockEvents{Status: event.CellLost, Raw: "[GPU is lost]"}
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
	s.GPUs[6].PState = event.Text{S: "[Unknown Error]", Status: event.CellUnknownError}
	s.GPUs[6].PowerDrawW = bad(event.CellUnknownError, "[Unknown Error]")
	s.GPUs[6].PowerLimitW = bad(event.CellLost, "[GPU is lost]")
	send(f, ev(0, s), ev(0, event.GPUFailure{Class: "unknown-error", BusID: "0000:78:00.0", Reason: "Unknown Error"}))
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

// Until the first sample, the table says whether the sampler is merely
// slow to answer or has been failing, and which sampler once known.
func TestEmptyTableSaysWhy(t *testing.T) {
	for _, c := range []struct {
		src  *event.GPUSource
		want string
	}{
		{nil, "GPU  waiting for the first GPU sample"},
		{&srcAgent, "GPU  waiting for the first GPU sample from the agent"},
		{&srcNVML, "GPU  waiting for the first GPU sample from NVML"},
		{&srcFallback, "GPU  waiting for the first GPU sample from nvidia-smi"},
	} {
		m := newSized(80, 24, Options{})
		if c.src != nil {
			send(m, ev(time.Second, *c.src))
		}
		if got := tableLine(m); got != c.want {
			t.Errorf("before a sample: %q, want %q", got, c.want)
		}
	}
	m := newSized(80, 24, Options{})
	send(m, ev(5*time.Second, event.GPUStale{Missed: 5}))
	if got := tableLine(m); got != "GPU  no sample yet" {
		t.Errorf("stale without a sample: %q", got)
	}
	f := newSized(80, 24, Options{})
	send(f, ev(0, event.GPUFailure{Class: event.GPUFailDriverLibraryMismatch, Reason: "Driver/library version mismatch"}))
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

// TestValueColumnsNeverCutMidValue: at every width from 10 to 80, every
// GPU row shows whole values: a column that does not fit is dropped, never
// cut inside its value ("Gen5x16" cut to "Gen5x1" reads as an x1 link). The
// throttle list, which takes what is left of the row, is shortened at a
// reason boundary with "+N" saying how many reasons are not shown.
func TestValueColumnsNeverCutMidValue(t *testing.T) {
	s := h200s(8)
	s.GPUs[1].ClockEvents.Mask = event.ReasonSWPowerCap | event.ReasonHWSlowdown | event.ReasonSWThermalSlowdown | event.ReasonHWThermalSlowdown
	s.GPUs[2].PowerDrawW = bad(event.CellNA, "[N/A]")
	s.GPUs[3].PState = txt("P2")
	s.GPUs[3].TempC = ok(101)
	s.GPUs[4].MemUsedMiB = bad(event.CellUnknownError, "[Unknown Error]")
	s.GPUs[5].ClockEvents.Mask = event.ReasonGPUIdle
	s.GPUs[6].ClockEvents = event.ClockEvents{Status: event.CellNotSupported}
	s.GPUs[7].PCIeWidthCurrent = ok(8)
	headers := map[string]bool{"GPU": true, "name": true, "util": true, "mem": true, "GiB": true, "power": true,
		"W": true, "temp": true, "SM": true, "MHz": true, "P": true, "PCIe": true, "throttle": true}
	throttleParts := func(text string) []string { return strings.Split(text, ",") }
	for w := 10; w <= 80; w++ {
		m := newSized(w, 40, Options{})
		send(m, ev(0, s))
		lines := screenLines(m)
		head := lines[1]
		if !strings.HasPrefix(head, "GPU") {
			t.Fatalf("width %d: no table header: %q", w, head)
		}
		for _, f := range strings.Fields(head) {
			if !headers[f] {
				t.Errorf("width %d: header cut: %q in %q", w, f, head)
			}
		}
		for i, g := range s.GPUs {
			row := lines[2+i]
			cells := gpus.Cells(&g)
			whole := map[string]bool{}
			for _, c := range cells {
				whole[c] = true
			}
			fields := strings.Fields(row)
			if len(fields) == 0 || fields[0] != strconv.Itoa(g.Index) {
				t.Errorf("width %d: row %d lost its index: %q", w, i, row)
				continue
			}
			for _, f := range fields {
				if whole[f] {
					continue
				}
				// A shortened throttle list: whole reasons, then ",+N".
				all := throttleParts(cells[len(cells)-1]) // the throttle column
				parts := throttleParts(f)
				n, err := strconv.Atoi(strings.TrimPrefix(parts[len(parts)-1], "+"))
				okShort := err == nil && strings.HasPrefix(parts[len(parts)-1], "+") &&
					len(parts)-1+n == len(all) && slices.Equal(parts[:len(parts)-1], all[:len(parts)-1])
				if !okShort {
					t.Errorf("width %d: GPU %d: %q is not a whole value (row %q)", w, g.Index, f, row)
				}
			}
		}
	}
}

// TestFocusLeavesATableThatFits: tab gave the GPU table the focus at
// 80x24; once the terminal grows and every row fits, the scrolling keys
// move the log again, G included (it follows the log again, as the
// paused title promises), and Home and End too.
func TestFocusLeavesATableThatFits(t *testing.T) {
	m := newSized(80, 24, Options{})
	send(m, ev(0, h200s(16)), ev(0, numbered(0, 100)))
	press(m, "tab")
	if ls := screenLines(m); !strings.Contains(strings.Join(ls, "\n"), "j/k scroll") {
		t.Fatalf("tab did not focus the table:\n%s", strings.Join(ls, "\n"))
	}
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	screenLines(m) // drawn at the new size, as the program does after each message
	press(m, "k")
	if m.Following() {
		t.Fatal("k on a table that fits did not scroll the log")
	}
	press(m, "G")
	if !m.Following() {
		t.Errorf("G did not follow the log again: %q", logTitle(m))
	}
	press(m, "home")
	if m.Following() || logBody(m)[0] != "line 0000" {
		t.Errorf("home: following %v, first %q", m.Following(), logBody(m)[0])
	}
	press(m, "end")
	if !m.Following() {
		t.Error("end did not follow the log again")
	}
}
