package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/screen"
)

// liveCockpit runs the cockpit in a real program on a screen at w×h whose
// terminal is out. Its events are a day ahead of the wall clock, so the
// model's own 1 s clock (time.Now) never moves its ages: only the test's
// ClockMsgs do. It returns the program and the events' start.
func liveCockpit(t *testing.T, out *syncBuffer, w, h int) (*screen.Program, time.Time) {
	t.Helper()
	base := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	m := New(Options{Host: "gpu-box", Theme: ThemeDark})
	m.Update(EventsMsg{
		{At: base, Data: event.ConnState{Host: "root@gpu-box:22", Conn: event.Connected, Since: base}},
		{At: base.Add(time.Second), Data: event.ServerReady{Server: "sglang", Text: "The server is fired up and ready to roll!"}},
		{At: base.Add(2 * time.Second), Data: h200s(8)},
	})
	p, err := screen.NewProgram(m, screen.Target{Out: out, Env: []string{"TERM=xterm-256color", "SSH_TTY=/dev/pts/1"}, Width: w, Height: h, Profile: colorprofile.ANSI256},
		tea.WithInput(nil), tea.WithoutSignalHandler())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	t.Cleanup(func() {
		p.Quit()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the program did not quit")
		}
	})
	waitFor(t, "the first frame", out.Bytes, func(b []byte) bool { return strings.Contains(ansi.Strip(string(b)), "ready 1s") })
	return p, base
}

// waitFrames waits until the screen has drawn more than n frames.
func waitFrames(t *testing.T, s *screen.Screen, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Frames <= n {
		if time.Now().After(deadline) {
			t.Fatalf("no frame after frame %d", n)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// settle waits until the screen has drawn nothing for 100 ms.
func settle(s *screen.Screen) {
	for {
		n := s.Stats().Frames
		time.Sleep(100 * time.Millisecond)
		if s.Stats().Frames == n {
			return
		}
	}
}

// TestClockTickDrawsOnlyWhenTextChanges: the 1 s clock costs a frame only
// when a shown age changes ("ready 1s" to "ready 4s"); a tick within the
// same second wakes nothing and writes nothing.
func TestClockTickDrawsOnlyWhenTextChanges(t *testing.T) {
	var out syncBuffer
	p, base := liveCockpit(t, &out, 200, 60)
	s := p.Screen()
	settle(s) // the start-up messages (the size: a full-size frame) drawn
	before, n := s.Stats(), len(out.Bytes())
	p.Send(ClockMsg{Now: base.Add(2300 * time.Millisecond)}) // ready 1.3s: still "ready 1s"
	p.Send(ClockMsg{Now: base.Add(2600 * time.Millisecond)})
	time.Sleep(60 * time.Millisecond)
	if after := s.Stats(); after.Frames != before.Frames || after.Wakes != before.Wakes || len(out.Bytes()) != n {
		t.Fatalf("two ticks that change no text: %d frames, %d wake-ups, %d bytes (%q); want none",
			after.Frames-before.Frames, after.Wakes-before.Wakes, len(out.Bytes())-n, out.Bytes()[n:])
	}
	p.Send(ClockMsg{Now: base.Add(5 * time.Second)})
	waitFrames(t, s, before.Frames)
	waitFor(t, "ready 4s", out.Bytes, func(b []byte) bool { return strings.Contains(ansi.Strip(string(b[n:])), "4s") })
	if d := len(out.Bytes()) - n; d > 400 {
		t.Errorf("a new age drew %d bytes, want a small difference", d)
	}
}

// TestKeyDrawsAtOnce: a key's frame does not wait for a tick (Bubble Tea's
// ticker here runs once a second): the median of 6 keys is drawn within
// 200 ms (microseconds when the machine is idle), and a resize repaints.
func TestKeyDrawsAtOnce(t *testing.T) {
	var out syncBuffer
	p, _ := liveCockpit(t, &out, 200, 60)
	s := p.Screen()
	var took []time.Duration
	for _, k := range []string{"?", "esc", "?", "esc", "?", "esc"} {
		n := s.Stats().Frames
		start := time.Now()
		p.Send(keyMsg(k))
		waitFrames(t, s, n)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	if med := took[len(took)/2]; med > 200*time.Millisecond {
		t.Errorf("keys drawn in %v (sorted), median %v: want under 200 ms", took, med)
	}
	n, b := s.Stats().Frames, len(out.Bytes())
	p.Send(tea.WindowSizeMsg{Width: 120, Height: 40})
	waitFrames(t, s, n)
	waitFor(t, "the repaint at 120x40", out.Bytes, func(got []byte) bool {
		return strings.Count(ansi.Strip(string(got[b:])), "Gen5x16") == 8
	})
}
