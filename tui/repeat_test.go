package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/measure"
)

// fakeRepeat records the repeats the cockpit runs; with wait set, Run
// returns when its context ends.
type fakeRepeat struct {
	callLog
	err  error
	wait bool
}

func (f *fakeRepeat) Repeat(ctx context.Context, cfg sessions.RepeatConfig) error {
	f.record(fmt.Sprintf("Run N=%d samples=%d bench=%v", cfg.N, cfg.MinSamples, cfg.Bench))
	if f.wait {
		<-ctx.Done()
		return ctx.Err()
	}
	return f.err
}

var _ RepeatControl = (*fakeRepeat)(nil)

// repeatScene is the lab scene with the scripted session (e3 open on a
// ready server) and a fake repeat.
func repeatScene(w, h int) (*Model, *fakeRepeat) {
	f := &fakeRepeat{}
	m, _ := labScene(w, h, Options{Repeat: f})
	send(m, session()...)
	return m, f
}

func TestRepeatFormRuns(t *testing.T) {
	m, f := repeatScene(100, 30)
	press(m, "R")
	if m.overlay.TopID() != measure.RepeatID || !strings.Contains(plain(m), "+- repeat e3 nccl-ll-ring @ a6d51c0 -") ||
		!strings.Contains(boxText(m), "more launches 4 samples each 10 bench each < no > 1/2") {
		t.Fatalf("R:\n%s", plain(m))
	}
	press(m, "backspace")
	typeText(m, "2")
	press(m, "down", "down", "right")
	msgs := do(m, "enter")
	if c := f.Calls(); len(c) != 1 || c[0] != "Run N=2 samples=10 bench=true" {
		t.Errorf("calls %q", c)
	}
	if len(msgs) != 1 || m.Status() != "repeat done: x, then c compares against the series" || m.bench.RepeatRun.Running {
		t.Errorf("answer %v status %q", msgs, m.Status())
	}
	// Bad numbers say why.
	press(m, "R")
	press(m, "backspace")
	typeText(m, "0")
	if press(m, "enter"); m.overlay.TopID() != measure.RepeatID || m.Status() != "cannot start: more launches: 0 is out of range (1 to 100)" {
		t.Errorf("bad N: dialog %q status %q", m.overlay.TopID(), m.Status())
	}
	press(m, "esc")
	if m.Status() != "repeat not started" {
		t.Errorf("esc: %q", m.Status())
	}
	f.err = fmt.Errorf("relaunch 2/3: launch failed: port 30000 in use\x1b[0m")
	press(m, "R")
	do(m, "enter")
	if m.Status() != "repeat failed: relaunch 2/3: launch failed: port 30000 in use" {
		t.Errorf("failure: %q", m.Status())
	}
}

func TestRepeatProgressAndStop(t *testing.T) {
	m, f := repeatScene(100, 30)
	f.wait = true
	press(m, "R")
	cmd := press(m, "enter")
	if cmd == nil || !m.bench.RepeatRun.Running {
		t.Fatal("no repeat started")
	}
	send(m, ev(200*time.Second, event.RepeatProgress{Series: "e3", I: 2, N: 5, Exp: "e4", Phase: sessions.RepeatWarmingUp, Samples: 3, Need: 10}))
	if l := screenLines(m)[1]; l != "repeat 2/5 of e3: warming up 3/10 (e4)  (R stops)" {
		t.Errorf("banner %q", l)
	}
	// q asks once while it runs.
	press(m, "q")
	if m.Quitting() || m.Status() != "a repeat is running: q again stops it, then quits once its relaunch is done" {
		t.Errorf("q: quitting %v status %q", m.Quitting(), m.Status())
	}
	press(m, "R")
	if m.overlay.TopID() != measure.StopRepeatID || !strings.Contains(boxText(m), "Stop the repeat at launch 2/5? A relaunch in progress finishes first; the server keeps running. y/N") {
		t.Fatalf("R while running:\n%s", plain(m))
	}
	press(m, "y")
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	if m.bench.RepeatRun.Running || m.Status() != "repeat stopped" {
		t.Errorf("stopped: running %v status %q", m.bench.RepeatRun.Running, m.Status())
	}
	send(m, ev(201*time.Second, event.RepeatProgress{Series: "e3", I: 2, N: 5, Phase: sessions.RepeatStopped, Err: "stopped"}))
	if l := screenLines(m)[1]; strings.HasPrefix(l, "repeat") {
		t.Errorf("banner after the end: %q", l)
	}
}

// TestQuitDuringRepeatWaitsForIt: a confirmed quit while a repeat runs
// stops the repeat and quits only when RepeatControl.Run has returned (a
// relaunch cut halfway would strand the server killed); q again quits at
// once; ctrl+c skips the question but still waits.
func TestQuitDuringRepeatWaitsForIt(t *testing.T) {
	isQuit := func(cmd tea.Cmd) bool {
		if cmd == nil {
			return false
		}
		_, ok := cmd().(tea.QuitMsg)
		return ok
	}
	start := func(t *testing.T) (*Model, *fakeRepeat, tea.Cmd) {
		t.Helper()
		m, f := repeatScene(100, 30)
		f.wait = true
		press(m, "R")
		cmd := press(m, "enter")
		if cmd == nil || !m.bench.RepeatRun.Running {
			t.Fatal("no repeat started")
		}
		send(m, ev(200*time.Second, event.RepeatProgress{Series: "e3", I: 2, N: 5, Exp: "e4", Phase: sessions.RepeatRelaunching}))
		return m, f, cmd
	}
	const waiting = "stopping the repeat: waiting for the relaunch to finish (q again quits now)"

	t.Run("q q waits for the repeat", func(t *testing.T) {
		m, _, cmd := start(t)
		if c := press(m, "q"); m.Quitting() || c != nil {
			t.Fatal("the first q quit")
		}
		c := press(m, "q")
		if m.Quitting() || isQuit(c) || m.Status() != waiting {
			t.Fatalf("second q: quitting %v status %q", m.Quitting(), m.Status())
		}
		if !m.bench.RepeatRun.Stopped || !m.bench.RepeatRun.Running {
			t.Fatalf("the repeat was not stopped: stopped %v running %v", m.bench.RepeatRun.Stopped, m.bench.RepeatRun.Running)
		}
		if l := screenLines(m)[1]; l != "repeat 2/5 of e3: relaunching (e4)  (stopping to quit; q quits now)" {
			t.Errorf("banner %q", l)
		}
		// Other keys leave the wait alone.
		press(m, "f")
		if m.Quitting() || !m.bench.QuitWhen {
			t.Error("a key ended the wait")
		}
		msgs := run(cmd) // Run returns: its context was cancelled
		if len(msgs) != 1 {
			t.Fatalf("answer %v", msgs)
		}
		if r, ok := msgs[0].(RepeatResultMsg); !ok || !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("answer %#v", msgs[0])
		}
		_, q := m.Update(msgs[0])
		if !m.Quitting() || !isQuit(q) {
			t.Errorf("the repeat's end did not quit: quitting %v", m.Quitting())
		}
	})
	t.Run("q q q quits now", func(t *testing.T) {
		m, _, _ := start(t)
		press(m, "q", "q")
		if c := press(m, "q"); !m.Quitting() || !isQuit(c) {
			t.Errorf("third q: quitting %v", m.Quitting())
		}
	})
	t.Run("ctrl+c waits, twice quits", func(t *testing.T) {
		m, _, _ := start(t)
		if c := press(m, "ctrl+c"); m.Quitting() || isQuit(c) || m.Status() != waiting || !m.bench.RepeatRun.Stopped {
			t.Fatalf("ctrl+c: quitting %v status %q", m.Quitting(), m.Status())
		}
		if c := press(m, "ctrl+c"); !m.Quitting() || !isQuit(c) {
			t.Errorf("second ctrl+c: quitting %v", m.Quitting())
		}
	})
	t.Run("a failed repeat still quits", func(t *testing.T) {
		m, _, _ := start(t)
		press(m, "q", "q")
		if _, q := m.Update(RepeatResultMsg{Err: fmt.Errorf("relaunch 2/5: launch failed")}); !m.Quitting() || !isQuit(q) {
			t.Errorf("quitting %v", m.Quitting())
		}
	})
	t.Run("no quit asked: the end does not quit", func(t *testing.T) {
		m, _, cmd := start(t)
		press(m, "R", "y")
		for _, msg := range run(cmd) {
			if _, q := m.Update(msg); m.Quitting() || q != nil {
				t.Error("a stopped repeat quit")
			}
		}
	})
}

func TestRepeatUnavailable(t *testing.T) {
	f := &fakeRepeat{}
	for _, c := range []struct {
		name string
		o    Options
		exps bool
		want string
	}{
		{"replay", Options{ReadOnly: true, Repeat: f}, true, "read-only replay: a repeat would relaunch the server"},
		{"no control", Options{}, true, "repeat not available here: it needs server control and a journal"},
		{"no open experiment", Options{Repeat: f}, false, "no open experiment: a launch from here starts one (or e)"},
	} {
		m, _ := labScene(100, 30, c.o)
		if c.exps {
			send(m, session()...)
		}
		press(m, "R")
		if m.DialogOpen() || m.Status() != c.want {
			t.Errorf("%s: dialog %q status %q, want %q", c.name, m.overlay.TopID(), m.Status(), c.want)
		}
	}
	m := scene(100, 30, 1, 0, Options{Repeat: f})
	press(m, "R")
	if m.Status() != "no server running: L launches one" {
		t.Errorf("no server status: %q", m.Status())
	}
}

func TestRepeatGolden(t *testing.T) {
	t.Run("form_80x24", func(t *testing.T) {
		m, _ := repeatScene(80, 24)
		press(m, "R")
		golden.RequireEqual(t, plain(m))
	})
	t.Run("progress_100x30", func(t *testing.T) {
		m, _ := repeatScene(100, 30)
		send(m, ev(200*time.Second, event.RepeatProgress{Series: "e3", I: 3, N: 5, Exp: "e5", Phase: sessions.RepeatMeasuring, Samples: 7, Need: 10}))
		golden.RequireEqual(t, plain(m))
	})
}

// TestMeasureScreensFit: the bench and repeat forms, the stop question,
// the progress lines and the result box fit every size.
func TestMeasureScreensFit(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {40, 12}, {200, 60}, {20, 6}, {10, 3}} {
		fb := &fakeBench{defaults: benchDefaults(), wait: true}
		m, _ := labScene(sz[0], sz[1], Options{Bench: fb, Repeat: &fakeRepeat{wait: true}})
		send(m, session()...)
		check := func(what string) {
			t.Helper()
			assertFits(t, m, sz[0], sz[1], what)
		}
		press(m, "b")
		check("bench form")
		press(m, "enter")
		send(m, benchEvents()[:3]...)
		check("bench progress")
		press(m, "b")
		check("stop question")
		press(m, "n")
		send(m, benchEvents()[3])
		check("result box")
		m.bench.BenchRun.Running = false
		press(m, "esc", "R")
		check("repeat form")
		press(m, "esc")
		send(m, ev(300*time.Second, event.RepeatProgress{Series: "e3", I: 2, N: 5, Exp: "e4", Phase: sessions.RepeatWarmingUp, Samples: 3, Need: 10}))
		check("repeat progress")
	}
}

// TestRepeatGuardsItsLaunches: while a repeat runs, e (ending or starting
// an experiment), L and p would break its series; they say so. The form
// refuses fewer samples a launch than a comparison counts.
func TestRepeatGuardsItsLaunches(t *testing.T) {
	m, _ := labScene(100, 30, Options{Repeat: &fakeRepeat{}, Control: newFake()})
	send(m, session()...)
	press(m, "R")
	press(m, "down", "backspace", "backspace")
	typeText(m, "2")
	if press(m, "enter"); m.overlay.TopID() != measure.RepeatID || m.Status() != "cannot start: samples each: 2 is out of range (3 to 100000)" {
		t.Errorf("2 samples: dialog %q status %q", m.overlay.TopID(), m.Status())
	}
	press(m, "esc")
	m.bench.RepeatRun.Running = true
	for key, want := range map[string]string{
		"e": "a repeat is running: it starts and ends its experiments itself (R stops it)",
		"L": "a repeat is running: it relaunches the server itself (R stops it)",
		"p": "a repeat is running: its relaunches keep the profile it started with (R stops it)",
	} {
		if press(m, key); m.DialogOpen() || m.Status() != want {
			t.Errorf("%s during a repeat: dialog %q status %q", key, m.overlay.TopID(), m.Status())
		}
	}
}
