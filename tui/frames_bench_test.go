package tui

import (
	"io"
	"testing"
	"time"

	"github.com/charmbracelet/colorprofile"

	"github.com/flightdeck-dev/flightdeck/tui/screen"
)

// The render path of issue 20 at 200x60 (8 GPUs, a full 5,000-line log and
// sparkline): what one message costs from Update to the terminal, through
// the screen's comparison and, when the view changed, its cell-diffing
// renderer, in the caller's goroutine (screen.Draw), writing to io.Discard.

// benchScreen is the standard scene on a screen that has drawn its first
// frame.
func benchScreen(b *testing.B) (*Model, *screen.Screen) {
	m := scene(200, 60, 8, 5000, Options{})
	s := screen.New(io.Discard, []string{"TERM=xterm-256color"}, 200, 60, colorprofile.TrueColor, false)
	s.Show(m.View())
	if !s.Draw() {
		b.Fatal("no first frame")
	}
	return m, s
}

// BenchmarkTickUnchanged is a clock tick whose time shows no new text:
// Update, View and the comparison that finds nothing to draw.
func BenchmarkTickUnchanged(b *testing.B) {
	m, s := benchScreen(b)
	now := m.now
	b.ReportAllocs()
	for b.Loop() {
		m.Update(ClockMsg{Now: now.Add(time.Millisecond)})
		s.Show(m.View())
		if s.Draw() {
			b.Fatal("an unchanged tick drew a frame")
		}
	}
}

// BenchmarkFrameSample is a new 8-GPU sample whose power column changes on
// every row: Update, View, and the frame with its changed cells.
func BenchmarkFrameSample(b *testing.B) {
	m, s := benchScreen(b)
	smp := h200s(8)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		for j := range smp.GPUs {
			smp.GPUs[j].PowerDrawW.Value = float64(600 + (i+j)%100)
		}
		m.Update(EventsMsg{ev(3*time.Second, smp)})
		s.Show(m.View())
		if !s.Draw() {
			b.Fatal("a new sample drew no frame")
		}
	}
}

// BenchmarkFrameKey is a key that opens or closes the help overlay: a
// large part of the screen redrawn.
func BenchmarkFrameKey(b *testing.B) {
	m, s := benchScreen(b)
	keys := []string{"?", "esc"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		press(m, keys[i%2])
		i++
		s.Show(m.View())
		if !s.Draw() {
			b.Fatal("a key drew no frame")
		}
	}
}
