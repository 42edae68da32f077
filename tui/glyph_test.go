package tui

import (
	"fmt"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// auditModel audits the model's screen and window title.
func auditModel(t *testing.T, name string, m *Model) {
	t.Helper()
	v := m.View()
	tuitest.AuditGlyphs(t, name, v.Content)
	tuitest.AuditGlyphs(t, name+" (window title)", v.WindowTitle+" ")
}

// TestChromeHasNoAmbiguousGlyphs renders every screen the cockpit has
// with ASCII data (remote text such as log lines and GPU names is not
// chrome, and stays out of the fixtures) and refuses any rune that could
// take a different number of cells in another terminal or in tmux.
func TestChromeHasNoAmbiguousGlyphs(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		w, h := sz[0], sz[1]
		name := func(s string) string { return fmt.Sprintf("%s %dx%d", s, w, h) }

		auditModel(t, name("main"), scene(w, h, 8, 500, Options{}))
		auditModel(t, name("trouble"), troubleAt(w, h))
		m := scene(w, h, 8, 100, Options{})
		press(m, "?")
		auditModel(t, name("help"), m)
		m = scene(w, h, 8, 100, Options{})
		press(m, "w", "/")
		typeText(m, "Decode")
		auditModel(t, name("wrapped, filtering"), m)
		m = scene(w, h, 72, 100, Options{})
		press(m, "tab")
		auditModel(t, name("72 GPUs, focus on GPUs"), m)

		// Server control: the launch form, its relaunch confirmation, the
		// profile picker, the kill confirmation, a failed launch.
		m, _ = controlled(w, h, ptr(readyStatus()))
		press(m, "L", "down", "left", "down")
		auditModel(t, name("launch form"), m)
		press(m, "down", "down", "down", "down", "down", "enter")
		auditModel(t, name("relaunch confirm"), m)
		m, _ = controlled(w, h, ptr(readyStatus()))
		press(m, "p", "up")
		auditModel(t, name("profile picker"), m)
		m, _ = controlled(w, h, ptr(readyStatus()))
		press(m, "K")
		auditModel(t, name("kill confirm"), m)

		// The git panel, its checkout picker and a HEAD-moved banner.
		m, f := gitScene(w, h, ptr(dirtyStatus()), Options{})
		openGit(t, m)
		m.Update(space())
		press(m, "j", "j")
		auditModel(t, name("git panel"), m)
		checkoutPicker(t, m, f)
		auditModel(t, name("git checkout picker"), m)

		// Experiments: the panel, the start form, the end prompt; the
		// compare view (constructed and from the panel).
		lab, _ := labScene(w, h, Options{})
		send(lab, session()...)
		press(lab, "x", "up")
		auditModel(t, name("experiments panel"), lab)
		lab, _ = labScene(w, h, Options{})
		press(lab, "e")
		auditModel(t, name("experiment start form"), lab)
		lab, _ = labScene(w, h, Options{})
		send(lab, session()...)
		press(lab, "e")
		auditModel(t, name("experiment end"), lab)
		lab, _ = labScene(w, h, Options{})
		send(lab, session()...)
		press(lab, "n")
		typeText(lab, "nccl ll ring looks faster")
		auditModel(t, name("note"), lab)
		lab, _ = labScene(w, h, Options{})
		openDiff(lab, constructedDiff())
		auditModel(t, name("compare view"), lab)
		ms, _ := measureScene(w, h)
		press(ms, "x", "up")
		ms.Update(space())
		press(ms, "down")
		ms.Update(space())
		for _, msg := range run(press(ms, "c")) {
			ms.Update(msg)
		}
		auditModel(t, name("compare view from the panel"), ms)

		// The bench and repeat forms, progress and result.
		b, _ := benchScene(w, h)
		press(b, "b")
		auditModel(t, name("bench form"), b)
		press(b, "enter")
		send(b, benchEvents()[:3]...)
		auditModel(t, name("bench progress"), b)
		press(b, "b")
		auditModel(t, name("bench stop question"), b)
		b, _ = benchScene(w, h)
		send(b, benchEvents()...)
		auditModel(t, name("bench result"), b)
		rp, _ := repeatScene(w, h)
		press(rp, "R")
		auditModel(t, name("repeat form"), rp)
		// The replay timeline: tui/replay's TestReplayChromeHasNoAmbiguousGlyphs.
	}
}

// troubleAt is the trouble scene (reconnecting, a lost GPU, throttling,
// stale data, an OOM) at any size.
func troubleAt(w, h int) *Model {
	m := scene(w, h, 8, 40, Options{})
	s := h200s(8)
	s.GPUs[1].PCIeGenCurrent = ok(3)
	s.GPUs[3].TempC = ok(88)
	s.GPUs[3].ClockEvents.Mask = event.ReasonSWThermalSlowdown | event.ReasonHWSlowdown
	s.GPUs[5].PowerDrawW = bad(event.CellNA, "[N/A]")
	send(m, ev(200*time.Second, s))
	send(m, ev(201*time.Second, event.GPUFailure{Class: event.GPUFailLost, BusID: "0000:0B:00.0", Reason: "GPU is lost"}))
	send(m, ev(205*time.Second, event.GPUStale{LastSample: at(201 * time.Second), Missed: 3}))
	send(m, ev(206*time.Second, linesOf("torch.OutOfMemoryError: CUDA out of memory.")), ev(206*time.Second, serverlogFailureOOM()))
	send(m, ev(206*time.Second, event.LogReset{Reason: "truncated"}))
	send(m, ev(207*time.Second, event.ConnState{Host: "root@gpu-box:22", Conn: event.Reconnecting, Attempt: 2, NextTry: at(210 * time.Second)}))
	return m
}
