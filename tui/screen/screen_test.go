package screen

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// fakeTerm is a terminal that keeps what it is sent, safe for the screen's
// writes and the test's reads.
type fakeTerm struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (t *fakeTerm) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writes++
	return t.buf.Write(p)
}

func (t *fakeTerm) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

func (t *fakeTerm) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.Len()
}

// waitUntil polls cond for up to 5 s (a deadline for a broken screen).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func view(s string) tea.View {
	v := tea.NewView(s)
	v.AltScreen = true
	return v
}

var testEnv = []string{"TERM=xterm-256color", "TERM_PROGRAM=test", "SSH_TTY=/dev/pts/1"} // no mode queries

// TestScreenDrawsOnlyChanges: the first view is drawn whole with the
// terminal set up; the same view again costs no wake-up and no byte; a
// changed cell is drawn as a small difference; Close restores the terminal.
func TestScreenDrawsOnlyChanges(t *testing.T) {
	var out fakeTerm
	s := New(&out, testEnv, 20, 3, colorprofile.ANSI256, true)
	s.Start()
	s.Show(view("hello\nworld\n12:00:01"))
	waitUntil(t, "the first frame", func() bool { return s.Stats().Frames == 1 })
	first := out.String()
	for _, want := range []string{ansi.SetModeAltScreenSaveCursor, ansi.ResetModeTextCursorEnable, ansi.SetModeBracketedPaste, "hello", "world", "12:00:01"} {
		if !strings.Contains(first, want) {
			t.Errorf("first frame lacks %q: %q", want, first)
		}
	}
	for range 100 {
		s.Show(view("hello\nworld\n12:00:01"))
	}
	time.Sleep(50 * time.Millisecond)
	if st := s.Stats(); st.Wakes != 1 || st.Frames != 1 || out.Len() != len(first) {
		t.Errorf("100 unchanged views: %d wake-ups, %d frames, %d more bytes; want 1, 1, 0", st.Wakes, st.Frames, out.Len()-len(first))
	}
	s.Show(view("hello\nworld\n12:00:02"))
	waitUntil(t, "the changed frame", func() bool { return s.Stats().Frames == 2 })
	diff := out.String()[len(first):]
	if !strings.Contains(diff, "2") || strings.Contains(diff, "hello") || len(diff) > 16 {
		t.Errorf("one changed digit drew %q (%d bytes)", diff, len(diff))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	end := out.String()[len(first)+len(diff):]
	for _, want := range []string{ansi.ResetModeAltScreenSaveCursor, ansi.SetModeTextCursorEnable, ansi.ResetModeBracketedPaste} {
		if !strings.Contains(end, want) {
			t.Errorf("Close did not write %q: %q", want, end)
		}
	}
	if st := s.Stats(); st.Frames != 2 {
		t.Errorf("%d frames after Close, want 2 (the restore is not a frame)", st.Frames)
	}
}

// TestScreenIdleDoesNotWake: with nothing shown, the drawing goroutine
// never runs: no ticker.
func TestScreenIdleDoesNotWake(t *testing.T) {
	var out fakeTerm
	s := New(&out, testEnv, 20, 3, colorprofile.ANSI256, true)
	s.Start()
	s.Show(view("x"))
	waitUntil(t, "the first frame", func() bool { return s.Stats().Frames == 1 })
	time.Sleep(300 * time.Millisecond)
	if st := s.Stats(); st.Wakes != 1 {
		t.Errorf("%d wake-ups in 300 ms with no change, want 1 (the first frame's)", st.Wakes)
	}
	_ = s.Close()
}

// TestScreenResizeAndProfileRepaint: a new size or colour profile repaints
// the whole screen even though the view is the same.
func TestScreenResizeAndProfileRepaint(t *testing.T) {
	var out fakeTerm
	s := New(&out, testEnv, 20, 3, colorprofile.ANSI256, true)
	s.Start()
	s.Show(view("\x1b[38;2;255;0;0mred\x1b[m line\nsecond"))
	waitUntil(t, "the first frame", func() bool { return s.Stats().Frames == 1 })
	n := out.Len()
	s.Resize(30, 4)
	waitUntil(t, "the resized frame", func() bool { return s.Stats().Frames == 2 })
	if got := out.String()[n:]; !strings.Contains(got, "red") || !strings.Contains(got, "second") {
		t.Errorf("a resize did not repaint: %q", got)
	}
	n = out.Len()
	s.SetProfile(colorprofile.ANSI)
	waitUntil(t, "the repainted frame", func() bool { return s.Stats().Frames == 3 })
	got := out.String()[n:]
	if !strings.Contains(got, "red") || !strings.Contains(got, "\x1b[91m") && !strings.Contains(got, "\x1b[31m") {
		t.Errorf("a 16-colour profile did not repaint in 16 colours: %q", got)
	}
	s.Resize(30, 4)                 // the same size: nothing
	s.SetProfile(colorprofile.ANSI) // the same profile: nothing
	time.Sleep(30 * time.Millisecond)
	if st := s.Stats(); st.Frames != 3 {
		t.Errorf("%d frames after an unchanged size and profile, want 3", st.Frames)
	}
	_ = s.Close()
}

// TestScreenBurstIsPaced: a burst of changes is drawn at most once per
// MinFrame and ends with the latest view.
func TestScreenBurstIsPaced(t *testing.T) {
	var out fakeTerm
	s := New(&out, testEnv, 20, 1, colorprofile.ANSI256, true)
	s.Start()
	start := time.Now()
	for i := range 1000 {
		s.Show(view(fmt.Sprintf("n=%04d", i)))
	}
	took := time.Since(start)
	waitUntil(t, "the last view", func() bool { return strings.HasSuffix(strings.TrimRight(ansi.Strip(out.String()), " "), "9") })
	time.Sleep(2 * MinFrame)
	frames := s.Stats().Frames
	if most := int(took/MinFrame) + 3; frames > most {
		t.Errorf("%d frames for 1000 views in %v, want at most %d (one per %v)", frames, took, most, MinFrame)
	}
	_ = s.Close()
	if !strings.Contains(out.String(), "999") {
		t.Errorf("the last view was not drawn: %q", ansi.Strip(out.String()))
	}
}

// TestScreenHoldsLaterChanges: with a coalescing period, a change shown
// with ShowLater waits: the changes after it cost no wake-up, and the next
// Show draws them all in one frame, even a Show of the same view; without
// a Show, the period's end draws it.
func TestScreenHoldsLaterChanges(t *testing.T) {
	var out fakeTerm
	s := New(&out, testEnv, 20, 2, colorprofile.ANSI256, true)
	s.SetCoalesce(time.Hour)
	s.Start()
	s.Show(view("clock 1\nlog a"))
	waitUntil(t, "the first frame", func() bool { return s.Stats().Frames == 1 })
	s.ShowLater(view("clock 1\nlog b"))
	s.ShowLater(view("clock 1\nlog c"))
	s.ShowLater(view("clock 1\nlog d"))
	time.Sleep(50 * time.Millisecond)
	if st := s.Stats(); st.Frames != 1 || st.Wakes != 2 {
		t.Errorf("three held changes: %d frames, %d wake-ups; want 1 and 2 (the first change held)", st.Frames, st.Wakes)
	}
	n := out.Len()
	s.Show(view("clock 1\nlog d")) // the clock, its text unchanged
	waitUntil(t, "the held frame", func() bool { return s.Stats().Frames == 2 })
	if got := ansi.Strip(out.String()[n:]); !strings.Contains(got, "d") || strings.Contains(got, "b") {
		t.Errorf("the held frame drew %q, want only the latest view", got)
	}
	s.ShowLater(view("clock 1\nlog e"))
	s.Show(view("clock 2\nlog e"))
	waitUntil(t, "the clock's frame", func() bool { return s.Stats().Frames == 3 })
	s.ShowLater(view("clock 2\nlog e")) // unchanged: nothing held
	time.Sleep(30 * time.Millisecond)
	if st := s.Stats(); st.Frames != 3 {
		t.Errorf("%d frames after an unchanged held view, want 3", st.Frames)
	}
	s.SetCoalesce(MinFrame)
	s.ShowLater(view("clock 2\nlog f"))
	waitUntil(t, "the held frame at the period's end", func() bool { return s.Stats().Frames == 4 })
	s.SetCoalesce(0)
	s.ShowLater(view("clock 2\nlog g"))
	waitUntil(t, "a ShowLater without a period", func() bool { return s.Stats().Frames == 5 })
	_ = s.Close()
	if !strings.Contains(ansi.Strip(out.String()), "g") {
		t.Errorf("the last view was not drawn: %q", ansi.Strip(out.String()))
	}
}

// TestScreenModes: the first frame asks for modes 2026 and 2027 where
// Bubble Tea would; the answers turn on synchronized frames.
func TestScreenModes(t *testing.T) {
	var out fakeTerm
	s := New(&out, []string{"TERM=xterm-256color"}, 20, 2, colorprofile.ANSI256, true)
	s.Start()
	s.Show(view("a"))
	waitUntil(t, "the first frame", func() bool { return s.Stats().Frames == 1 })
	if got := out.String(); !strings.Contains(got, ansi.RequestModeSynchronizedOutput) || !strings.Contains(got, ansi.RequestModeUnicodeCore) {
		t.Errorf("no mode queries: %q", got)
	}
	s.SetModes(tea.ModeReportMsg{Mode: ansi.ModeSynchronizedOutput, Value: ansi.ModeReset})
	n := out.Len()
	s.Show(view("b"))
	waitUntil(t, "the second frame", func() bool { return s.Stats().Frames == 2 })
	if got := out.String()[n:]; !strings.HasPrefix(got, ansi.SetModeSynchronizedOutput) || !strings.HasSuffix(got, ansi.ResetModeSynchronizedOutput) {
		t.Errorf("the frame is not synchronized: %q", got)
	}
	_ = s.Close()

	var quiet fakeTerm
	s = New(&quiet, testEnv, 20, 2, colorprofile.ANSI256, true)
	s.Show(view("a"))
	_ = s.Close()
	if strings.Contains(quiet.String(), ansi.RequestModeSynchronizedOutput) {
		t.Errorf("asked an SSH session's unknown terminal: %q", quiet.String())
	}
}

// TestDrawOnlyUnstarted: Draw draws the pending change of a screen that
// was not started, and nothing when nothing changed.
func TestDrawOnlyUnstarted(t *testing.T) {
	var out fakeTerm
	s := New(&out, testEnv, 10, 1, colorprofile.ANSI256, true)
	if s.Draw() {
		t.Error("Draw with no view drew")
	}
	s.Show(view("x"))
	if !s.Draw() || s.Draw() {
		t.Error("Draw: want one frame, then none")
	}
	if st := s.Stats(); st.Frames != 1 || st.Wakes != 0 {
		t.Errorf("stats %+v, want 1 frame and no wake-up", st)
	}
}

// TestDrawLinesMatchesWholeDraw: drawing only the changed lines leaves the
// same cells as drawing the whole view, through views whose lines change,
// grow, shrink, and carry a style or a hyperlink to the next line.
func TestDrawLinesMatchesWholeDraw(t *testing.T) {
	red, reset := "\x1b[38;5;196m", "\x1b[m"
	link := "\x1b]8;;https://example.com\x1b\\"
	views := []string{
		"plain\n" + red + "red" + reset + " tail\nthird",
		"plain\n" + red + "red" + reset + " tail\nthird changed",
		"plain\n" + red + "red" + reset + " tail\nthird changed\nfourth\nfifth",
		"PLAIN\n" + red + "red" + reset + " tail",
		"PLAIN\n" + red + "red leaks\nso this is red\n" + reset + "and this not",
		"PLAIN\n" + red + "red" + reset + "\nwide 日本語 cells" + red + "x" + reset,
		"PLAIN\n" + link + "a link" + "\nstill linked\x1b]8;;\x1b\\ end",
		"PLAIN\n" + red + "red" + reset + "\nwide 日本語 cells",
		"",
		"x\n\n\ny",
		"x\n\n\nz and a line longer than the screen is wide: cut",
		// A log scrolling up under a header: moved lines are copied.
		"head\nl1 " + red + "red" + reset + "\nl2 日本語\nl3",
		"head\nl2 日本語\nl3\nl4",
		"HEAD\nl3\nl4\nl5 " + red + "x" + reset,
		"HEAD\nl5 " + red + "x" + reset + "\nl6\nl6",
		"HEAD\nl6\nl6\nl6",
		"HEAD\nl6\nl7",
	}
	const w, h = 24, 4
	cells := uv.NewScreenBuffer(w, h)
	var prev []string
	for i, v := range views {
		prev = drawLines(cells, v, prev)
		whole := uv.NewScreenBuffer(w, h)
		uv.NewStyledString(v).Draw(whole, whole.Bounds())
		for y := range h {
			for x := range w {
				if got, want := cells.CellAt(x, y), whole.CellAt(x, y); !cellSame(got, want) {
					t.Fatalf("view %d, cell %d,%d: %+v, whole draw %+v", i, x, y, got, want)
				}
			}
		}
	}
}

func cellSame(a, b *uv.Cell) bool {
	if a == nil || b == nil {
		return (a == nil || a.Equal(&uv.EmptyCell)) && (b == nil || b.Equal(&uv.EmptyCell))
	}
	return a.Equal(b)
}

// TestHoldUntilSized: a held screen draws nothing before its first size,
// then the latest view at once; Close draws a view still held.
func TestHoldUntilSized(t *testing.T) {
	var out fakeTerm
	s := New(&out, testEnv, 20, 3, colorprofile.ANSI256, true)
	s.HoldUntilSized()
	s.Start()
	s.Show(view("laid out for 80x24"))
	s.Show(view("laid out for 20x3"))
	time.Sleep(30 * time.Millisecond)
	if st := s.Stats(); st.Frames != 0 {
		t.Fatalf("%d frames before the size, want 0", st.Frames)
	}
	s.Resize(20, 3) // the size it has: still the end of the hold
	waitUntil(t, "the frame after the size", func() bool { return s.Stats().Frames == 1 })
	if got := ansi.Strip(out.String()); strings.Contains(got, "80x24") || !strings.Contains(got, "20x3") {
		t.Errorf("drew %q, want only the latest view", got)
	}
	_ = s.Close()

	var out2 fakeTerm
	s = New(&out2, testEnv, 20, 3, colorprofile.ANSI256, true)
	s.HoldUntilSized()
	s.Show(view("quit at once"))
	if s.Draw() {
		t.Error("Draw drew a held view")
	}
	_ = s.Close()
	if !strings.Contains(out2.String(), "quit at once") {
		t.Errorf("Close did not draw the held view: %q", out2.String())
	}
}
