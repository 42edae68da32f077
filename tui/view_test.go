package tui

import (
	"errors"
	"image/color"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/panels/spark"
)

func TestComputeLayout(t *testing.T) {
	cases := []struct {
		h, gpus, banners int
		want             layout
	}{
		{24, 8, 0, layout{gpuRows: 8, logLines: 11}},
		{24, 8, 2, layout{banners: 2, gpuRows: 8, logLines: 9}},
		{60, 8, 0, layout{gpuRows: 8, logLines: 47}},
		{60, 72, 0, layout{gpuRows: 37, logLines: 18}},
		{24, 72, 0, layout{gpuRows: 13, logLines: 6}},
		{24, 0, 0, layout{gpuRows: 1, logLines: 18}},
		{8, 8, 5, layout{banners: 1, gpuRows: 1, logLines: 1}},
		{3, 8, 0, layout{gpuRows: 1, logLines: 1}},
	}
	for _, c := range cases {
		if got := computeLayout(c.h, c.gpus, c.banners); got != c.want {
			t.Errorf("computeLayout(%d, %d, %d) = %+v, want %+v", c.h, c.gpus, c.banners, got, c.want)
		}
	}
}

// TestEverySizeFits checks the frame invariants at many sizes: exactly
// height lines, none wider than the terminal, in every mode.
func TestEverySizeFits(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {200, 60}, {120, 40}, {60, 20}, {40, 10}, {20, 5}, {1, 1}, {300, 100}} {
		for _, n := range []int{0, 1, 8, 72} {
			for _, wrap := range []bool{false, true} {
				m := scene(sz[0], sz[1], n, 300, Options{})
				send(m, ev(5*time.Second, event.GPUStale{Missed: 3}), ev(5*time.Second, event.GPUFailure{Class: event.GPUFailLost, BusID: "0000:01:00.0", NeedsReboot: true}),
					ev(5*time.Second, linesOf("宽"+strings.Repeat("x宽", 300), "d "+strings.Repeat("é", 500))))
				if wrap {
					press(m, "w")
				}
				for _, keys := range [][]string{nil, {"?"}, {"/", "d"}, {"k"}, {"home"}} {
					press(m, keys...)
					c := m.View().Content
					ls := strings.Split(c, "\n")
					if len(ls) != sz[1] {
						t.Errorf("%dx%d %d GPUs wrap=%v %v: %d lines", sz[0], sz[1], n, wrap, keys, len(ls))
					}
					for i, l := range ls {
						if w := ansi.StringWidth(l); w > sz[0] {
							t.Errorf("%dx%d %d GPUs wrap=%v %v: line %d is %d wide: %q", sz[0], sz[1], n, wrap, keys, i, w, ansi.Strip(l))
						}
					}
					press(m, "esc")
				}
			}
		}
	}
}

func TestNarrowLayoutDropsColumns(t *testing.T) {
	wide := scene(200, 30, 8, 10, Options{})
	if h := screenLines(wide)[1]; !strings.HasPrefix(h, "GPU  name  util  mem GiB      power W  temp  SM MHz  P    PCIe     throttle") {
		t.Errorf("wide header %q", h)
	}
	// A long model name at 80 columns: name goes first, the rest stays.
	m := newSized(80, 24, Options{})
	g := h200(0)
	g.Name = txt("NVIDIA RTX PRO 6000 Blackwell Server Edition")
	g.ClockEvents.Mask = event.ReasonSWPowerCap | event.ReasonSWThermalSlowdown
	send(m, ev(0, sampleOf(g)))
	h := screenLines(m)[1]
	for _, c := range []string{"GPU", "util", "mem GiB", "power W", "temp", "SM MHz", "P", "PCIe", "throttle"} {
		if !strings.Contains(h, c) {
			t.Errorf("80 columns lost %q: %q", c, h)
		}
	}
	if strings.Contains(h, "name") {
		t.Errorf("80 columns kept the name: %q", h)
	}
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 24})
	h = screenLines(m)[1]
	if strings.Contains(h, "SM MHz") || !strings.Contains(h, "PCIe") || !strings.Contains(h, "throttle") {
		t.Errorf("60 columns: %q", h)
	}
}

func TestBackgroundColourReply(t *testing.T) {
	m := newSized(80, 24, Options{})
	if !m.Styles().Dark {
		t.Fatal("default must be dark without waiting for the terminal")
	}
	m.Update(tea.BackgroundColorMsg{Color: color.White})
	if m.Styles().Dark {
		t.Error("light background reply ignored")
	}
	fixed := newSized(80, 24, Options{Theme: ThemeDark})
	fixed.Update(tea.BackgroundColorMsg{Color: color.White})
	if !fixed.Styles().Dark {
		t.Error("ThemeDark must not follow the terminal")
	}
	nc := newSized(80, 24, Options{NoColor: true})
	nc.Update(tea.BackgroundColorMsg{Color: color.White})
	if !nc.Styles().Plain {
		t.Error("NoColor must stay colourless")
	}
	send(nc, ev(0, h200s(8)))
	if strings.Contains(nc.View().Content, "38;2;") {
		t.Error("NoColor frame has colours")
	}
}

func TestInitDoesNotWaitForTheTerminal(t *testing.T) {
	// The first frame renders before any reply; Init only asks.
	m := New(Options{})
	if m.Init() == nil {
		t.Error("Init should request the background colour and start the clock")
	}
	if !strings.HasPrefix(plain(m), "flightdeck  local") {
		t.Errorf("first frame: %q", screenLines(m)[0])
	}
	ro := New(Options{ReadOnly: true, Theme: ThemeDark})
	if ro.Init() != nil {
		t.Error("a read-only dark model needs no commands")
	}
	if _, cmd := ro.Update(ClockMsg{Now: t0}); cmd != nil {
		t.Error("read-only model re-armed the clock")
	}
}

// The golden screens: stripped text at 80x24 and 200x60, the 72-GPU
// table, help, and one with colours. Regenerate with go test -update.
func TestGolden(t *testing.T) {
	t.Run("80x24", func(t *testing.T) {
		golden.RequireEqual(t, plain(scene(80, 24, 8, 5000, Options{})))
	})
	t.Run("200x60", func(t *testing.T) {
		golden.RequireEqual(t, plain(scene(200, 60, 8, 5000, Options{})))
	})
	t.Run("200x60_72gpus", func(t *testing.T) {
		golden.RequireEqual(t, plain(scene(200, 60, 72, 5000, Options{})))
	})
	t.Run("80x24_trouble", func(t *testing.T) {
		golden.RequireEqual(t, plain(troubleScene(Options{})))
	})
	t.Run("80x24_help", func(t *testing.T) {
		m := scene(80, 24, 8, 100, Options{})
		press(m, "?")
		golden.RequireEqual(t, plain(m))
	})
	t.Run("80x24_trouble_colour", func(t *testing.T) {
		golden.RequireEqual(t, troubleScene(Options{}).View().Content)
	})
}

// troubleScene is a host in trouble: reconnecting, one GPU lost, one
// throttling hot with a degraded link, a P2 GPU, stale data, an OOM.
func troubleScene(o Options) *Model {
	m := scene(80, 24, 8, 40, o)
	s := h200s(8)
	s.GPUs[1].PCIeGenCurrent = ok(3)
	s.GPUs[2].PState = txt("P2")
	s.GPUs[3].TempC = ok(88)
	s.GPUs[3].ClockEvents.Mask = event.ReasonSWThermalSlowdown | event.ReasonHWSlowdown
	s.GPUs[4].UtilGPUPct = ok(0)
	s.GPUs[4].ClockEvents.Mask = event.ReasonGPUIdle
	s.GPUs[4].PState = txt("P8")
	s.GPUs[4].PCIeGenCurrent = ok(1)
	s.GPUs[5].PowerDrawW = bad(event.CellNA, "[N/A]")
	s.GPUs[6].BusID = txt("00000000:0B:00.0")
	send(m, ev(200*time.Second, s))
	s.GPUs = append(s.GPUs[:6:6], s.GPUs[7])
	send(m, ev(201*time.Second, event.GPUFailure{Class: "unknown-error", BusID: "0000:0B:00.0", Reason: "Unknown Error"}),
		ev(201*time.Second, s))
	send(m, ev(205*time.Second, event.GPUStale{LastSample: at(201 * time.Second), Missed: 3}))
	send(m, ev(206*time.Second, linesOf("torch.OutOfMemoryError: CUDA out of memory.")))
	send(m, ev(206*time.Second, serverlogFailureOOM()))
	send(m, connReconnecting(207*time.Second, 2, 210*time.Second))
	return m
}

// With no server log followed, the screen says so and how to follow one
// instead of waiting for lines that will never come.
func TestNoLogFollowedSaysSo(t *testing.T) {
	const msg = "no server log followed (start with --log PATH)"
	m := newSized(80, 24, Options{Host: "local", NoLog: true})
	send(m, connected(), ev(0, h200s(8)))
	scr := plain(m)
	if strings.Contains(scr, "waiting for throughput") {
		t.Errorf("still waiting for a log:\n%s", scr)
	}
	if !strings.Contains(scr, "tok/s "+msg) {
		t.Errorf("tok/s line does not say why:\n%s", scr)
	}
	if body := logBody(m); len(body) != 1 || body[0] != msg {
		t.Errorf("log area %q, want the message once", body)
	}
	if !painted(m, m.styles.Dim, msg) {
		t.Error("the message should be dim")
	}
	if title := logTitle(m); strings.Contains(title, "follow") {
		t.Errorf("log title claims to follow: %q", title)
	}
	// The log keys say why they cannot act.
	for _, k := range []string{"f", "/"} {
		press(m, k)
		if m.Status() != msg {
			t.Errorf("%s: status %q", k, m.Status())
		}
	}
	press(m, "esc")
	// Lines that arrive anyway are shown as usual.
	send(m, ev(time.Second, linesOf("hello")))
	if body := logBody(m); len(body) != 1 || body[0] != "hello" {
		t.Errorf("lines after all: %q", body)
	}
	if strings.Contains(plain(m), msg) {
		t.Errorf("message stays after lines arrived:\n%s", plain(m))
	}
	// Without NoLog (the demo: the path is not known yet) it waits.
	w := newSized(80, 24, Options{})
	if !strings.Contains(plain(w), "tok/s waiting for throughput lines in the log") || strings.Contains(plain(w), msg) {
		t.Errorf("default should wait:\n%s", plain(w))
	}
}

// TestChromeIsASCII: with ASCII data, everything on screen but the
// sparkline's block glyphs and the wrap mark is ASCII. Box drawing, the
// ellipsis and similar characters are ambiguous-width (two cells in some
// CJK setups) and would misalign the screen in tmux.
func TestChromeIsASCII(t *testing.T) {
	allowed := map[rune]bool{'↳': true}
	for _, g := range spark.Glyphs {
		allowed[[]rune(g)[0]] = true
	}
	for _, size := range [][2]int{{80, 24}, {200, 60}, {50, 20}} {
		m := newSized(size[0], size[1], Options{Label: "demo", LogPath: "/data/logs/" + strings.Repeat("very-long-dir/", 20) + "sglang.log"})
		s := h200s(8)
		send(m, ev(0, event.ConnState{Host: "root@gpu-box:22", Conn: event.Reconnecting, Attempt: 2, Err: errors.New("EOF")}),
			ev(time.Second, s), ev(time.Second, event.LogReset{Reason: "truncated"}),
			ev(2*time.Second, event.LogLines{Lines: []event.LogLine{{Text: []byte(strings.Repeat("a long ascii log line ", 20))}}}),
			ev(3*time.Second, event.TokRate{TokPerSec: 82}), ev(4*time.Second, event.TokRate{TokPerSec: 83}),
			ev(5*time.Second, event.GPUStale{Missed: 3}), ev(5*time.Second, event.GPUFailure{Class: event.GPUFailLost, BusID: "0000:01:00.0"}))
		for _, wrap := range []bool{false, true} {
			if wrap != m.Wrapping() {
				m.Update(tea.KeyPressMsg{Code: 'w', Text: "w"})
			}
			for _, r := range plain(m) {
				if r > 0x7e && !allowed[r] {
					t.Fatalf("%dx%d wrap=%v: non-ASCII %q (U+%04X) in chrome:\n%s", size[0], size[1], wrap, r, r, plain(m))
				}
			}
		}
	}
}
