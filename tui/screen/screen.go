// Package screen draws a Bubble Tea program's views on a terminal when, and
// only when, a view changes.
//
// Bubble Tea v2.1.1's renderer flushes on a fixed-rate ticker (60 frames a
// second by default, tea.WithFPS at least 1): every tick wakes the process
// whether or not anything changed, and a frame waits for the next tick. A
// Screen replaces it (the program runs with tea.WithoutRenderer): the
// program's View is handed over after each Update, compared with the last
// one in the caller's goroutine, and only a changed view wakes the drawing
// goroutine, which draws at once (frames at least MinFrame apart). It draws
// with the same cell-diffing terminal renderer as Bubble Tea
// (ultraviolet's TerminalRenderer), so the bytes on the wire are Bubble
// Tea's.
//
// A background change (ShowLater) may wait: with SetCoalesce it is held
// until the next change shown with Show (a key, a clock tick), or for the
// coalescing period at most, so that a second's GPU sample, log lines and
// clock are one frame rather than four.
//
// A Screen always uses the alternate screen, hides the text cursor, turns
// on bracketed paste and the keyboard disambiguation Bubble Tea asks for,
// and sets the window title. Of tea.View it draws Content and WindowTitle;
// the other fields (mouse modes, a visible cursor, colours, progress bar)
// are not supported.
package screen

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// MinFrame is the least time between two frames (120 a second at most):
// a burst of changes is drawn as its first view at once and then its latest
// view at most MinFrame later. A change after a quiet spell is drawn at once.
const MinFrame = time.Second / 120

// Screen draws views on a writer. Show, Resize and SetProfile may be called
// from any goroutine and never block on the terminal; the drawing is done
// by the goroutine that Start starts, until Close.
type Screen struct {
	out   io.Writer
	query bool // ask the terminal for modes 2026 and 2027 in the first frame

	mu      sync.Mutex
	view    tea.View // the latest view shown
	hasView bool
	width   int // the size to draw at, in cells
	height  int
	profile colorprofile.Profile
	dirty   bool          // view, size or profile changed since the last frame
	urgent  bool          // a change shown with Show is pending: draw it at once
	since   time.Time     // when the first change held since the last frame came
	hold    time.Duration // the longest a ShowLater change waits (SetCoalesce)
	unsized bool          // hold frames until the first Resize (see HoldUntilSized)
	redraw  bool          // the next frame repaints every cell (size or profile changed)
	syncd   bool          // the terminal has synchronized output (mode 2026)
	unicode bool          // the terminal has unicode core (mode 2027): grapheme widths
	wakes   int           // times the drawing goroutine woke
	frames  int           // frames drawn
	bytes   int           // bytes written
	err     error

	wake    chan struct{} // a change is waiting (capacity 1)
	stop    chan struct{}
	stopped chan struct{}
	started bool
	closed  bool

	// Owned by the drawing goroutine (by Close once it has stopped).
	scr      *uv.TerminalRenderer
	buf      bytes.Buffer // the renderer's output for one frame
	cells    uv.ScreenBuffer
	mapNL    bool
	drawn    bool     // the terminal is set up (alternate screen, modes)
	wide     bool     // unicode core is on
	lines    []string // the view's lines in cells, nil: none reusable
	frameSyn bool     // this frame is wrapped in synchronized output
	title    string   // the window title on the terminal
	lastDraw time.Time
}

// New returns a screen that draws on out at width×height cells in profile's
// colours. env is the terminal's environment (TERM picks the renderer's
// capabilities). mapNL is true when out's terminal turns "\n" into "\r\n"
// (its output is not raw), false when the screen's raw mode is on.
func New(out io.Writer, env []string, width, height int, profile colorprofile.Profile, mapNL bool) *Screen {
	s := &Screen{
		out: out, query: shouldQuery(env), width: max(width, 1), height: max(height, 1), profile: profile, mapNL: mapNL,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	s.scr = uv.NewTerminalRenderer(&s.buf, env)
	s.scr.SetColorProfile(profile)
	s.scr.SetTabStops(-1)
	s.scr.SetMapNewline(mapNL)
	s.scr.SetScrollOptim(true)
	s.scr.SetFullscreen(true)
	s.scr.SetRelativeCursor(false)
	s.scr.Resize(s.width, s.height)
	s.cells = uv.NewScreenBuffer(s.width, s.height)
	return s
}

// Start starts the drawing goroutine. Frames are drawn only while it runs;
// Close draws the last one.
func (s *Screen) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	go s.loop()
}

// Show hands over the program's latest view. A view equal to the last one
// shown costs a comparison and nothing else: no wake-up, no frame, unless a
// change held by ShowLater is pending, which is then drawn at once.
func (s *Screen) Show(v tea.View) {
	s.mu.Lock()
	s.apply(s.show(v) || s.dirty)
}

// ShowLater is Show for a background change (a new sample, a log line):
// with a coalescing period set (SetCoalesce), a changed view is drawn with
// the next Show or SetCoalesce's period after the first change held,
// whichever comes first; without one it is Show.
func (s *Screen) ShowLater(v tea.View) {
	s.mu.Lock()
	s.applyLater(s.show(v))
}

// ShowSized is Show, Resize and SetProfile at once, under one lock, so
// that the drawing goroutine never draws the view before a resize at the
// new size (a program tells its model the size, then renders the view for
// it). A width or height under 1 and colorprofile.Unknown change nothing.
// later makes it ShowLater's (a resize or a new profile is still drawn at
// once).
func (s *Screen) ShowSized(v tea.View, width, height int, p colorprofile.Profile, later bool) {
	s.mu.Lock()
	a, b, c := s.resize(width, height), s.setProfile(p), s.show(v)
	if later && !a && !b {
		s.applyLater(c)
		return
	}
	s.apply(a || b || c || s.dirty)
}

// SetCoalesce sets how long a change shown with ShowLater may wait for
// more changes to draw with it; 0 (the default) draws it at once.
func (s *Screen) SetCoalesce(d time.Duration) {
	s.mu.Lock()
	s.hold = max(d, 0)
	s.mu.Unlock()
}

// HoldUntilSized makes the screen draw nothing until the first Resize
// (Close still draws): a program's first view comes before it is told the
// terminal's size, laid out for a default size, and would be a wasted
// frame at once replaced.
func (s *Screen) HoldUntilSized() {
	s.mu.Lock()
	s.unsized = true
	s.mu.Unlock()
}

// Resize sets the terminal's size in cells; the next frame repaints it all.
// Sizes under 1×1 are ignored.
func (s *Screen) Resize(width, height int) {
	s.mu.Lock()
	s.apply(s.resize(width, height))
}

// SetProfile sets the colour profile frames are drawn in (Bubble Tea's
// tea.ColorProfileMsg); a change repaints every cell.
func (s *Screen) SetProfile(p colorprofile.Profile) {
	s.mu.Lock()
	s.apply(s.setProfile(p))
}

// show, resize and setProfile change the state (s.mu held) and report
// whether a frame is due.
func (s *Screen) show(v tea.View) bool {
	if s.hasView && sameView(&s.view, &v) {
		return false
	}
	s.view, s.hasView = v, true
	return true
}

func (s *Screen) resize(width, height int) bool {
	if width < 1 || height < 1 {
		return false
	}
	held := s.unsized
	s.unsized = false
	if width == s.width && height == s.height {
		return held && s.dirty
	}
	s.width, s.height, s.redraw = width, height, true
	return true
}

func (s *Screen) setProfile(p colorprofile.Profile) bool {
	if p == colorprofile.Unknown || p == s.profile {
		return false
	}
	s.profile, s.redraw = p, true
	return true
}

// apply releases s.mu, first marking a frame due at once when due is
// true.
func (s *Screen) apply(due bool) {
	if due {
		s.changed()
		return
	}
	s.mu.Unlock()
}

// applyLater releases s.mu, first marking a held frame due when due is
// true. Only the first change held since the last frame wakes the drawing
// goroutine (to start the period); those after it cost nothing.
func (s *Screen) applyLater(due bool) {
	if !due {
		s.mu.Unlock()
		return
	}
	if s.hold <= 0 || s.urgent {
		s.changed()
		return
	}
	if s.dirty {
		s.mu.Unlock() // the period is running (or a frame is on its way)
		return
	}
	s.dirty, s.since = true, time.Now()
	s.mu.Unlock()
	s.poke()
}

// SetModes takes the terminal's answer to the first frame's mode queries
// (Bubble Tea's tea.ModeReportMsg): synchronized output (2026) wraps each
// frame so the terminal shows it whole; unicode core (2027) switches cell
// widths to graphemes. Other modes are ignored.
func (s *Screen) SetModes(r tea.ModeReportMsg) {
	s.mu.Lock()
	switch {
	case r.Mode == ansi.ModeSynchronizedOutput && r.Value == ansi.ModeReset:
		s.syncd = true
	case r.Mode == ansi.ModeUnicodeCore && (r.Value == ansi.ModeReset || r.Value == ansi.ModeSet || r.Value == ansi.ModePermanentlySet):
		if !s.unicode {
			s.unicode, s.redraw = true, true
			s.changed()
			return
		}
	}
	s.mu.Unlock()
}

// changed marks a frame due at once and wakes the drawing goroutine; s.mu
// is held and is released.
func (s *Screen) changed() {
	s.dirty, s.urgent = true, true
	s.mu.Unlock()
	s.poke()
}

// poke wakes the drawing goroutine.
func (s *Screen) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Stats are a screen's counts so far.
type Stats struct {
	Wakes  int   // times the drawing goroutine woke
	Frames int   // frames drawn (each one Write)
	Bytes  int   // bytes written, the terminal set-up and restore included
	Err    error // the first write error (nothing is written after it)
}

// Stats reports the screen's counts so far.
func (s *Screen) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Wakes: s.wakes, Frames: s.frames, Bytes: s.bytes, Err: s.err}
}

// Draw draws the pending change now, in the caller's goroutine, and
// reports whether there was one. It is for a screen that was not started
// (a benchmark, a test); on a started one it does nothing.
func (s *Screen) Draw() bool {
	s.mu.Lock()
	started, due := s.started || s.closed, s.dirty && s.hasView && !s.unsized
	s.mu.Unlock()
	if started || !due {
		return false
	}
	s.frame()
	return true
}

func (s *Screen) loop() {
	defer close(s.stopped)
	var pace *time.Timer
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		s.wakes++
		s.mu.Unlock()
		for {
			wait, due := s.wait()
			if !due {
				break // drawn already (Draw, or the frame before)
			}
			if wait <= 0 {
				s.frame()
				break
			}
			if pace == nil {
				pace = time.NewTimer(wait)
			} else {
				pace.Reset(wait)
			}
			select {
			case <-s.stop:
				pace.Stop()
				return
			case <-pace.C:
			case <-s.wake: // a change to draw sooner, perhaps
				pace.Stop()
			}
		}
	}
}

// wait reports whether a frame is due and how long to wait before drawing
// it: until MinFrame after the last frame, and for a held change until its
// coalescing period has passed.
func (s *Screen) wait() (time.Duration, bool) {
	s.mu.Lock()
	dirty, urgent, since, hold := s.dirty, s.urgent, s.since, s.hold
	s.mu.Unlock()
	if !dirty {
		return 0, false
	}
	wait := MinFrame - time.Since(s.lastDraw)
	if !urgent && hold > 0 {
		wait = max(wait, hold-time.Since(since))
	}
	return wait, true
}

// frame draws the pending change, if any: the view's cells that differ
// from the terminal's, in one write.
func (s *Screen) frame() {
	s.mu.Lock()
	if !s.dirty || !s.hasView || s.err != nil || s.unsized && !s.closed {
		s.mu.Unlock()
		return
	}
	v, w, h, p, redraw := s.view, s.width, s.height, s.profile, s.redraw
	s.frameSyn = s.syncd
	wide := s.unicode
	s.dirty, s.redraw, s.urgent, s.since = false, false, false, time.Time{}
	s.mu.Unlock()

	s.lastDraw = time.Now()
	if !s.drawn {
		// Bubble Tea's start-up sequences for an alternate-screen view
		// with no cursor.
		s.buf.WriteString(ansi.SetModeAltScreenSaveCursor + ansi.ResetModeTextCursorEnable +
			ansi.SetModeBracketedPaste + ansi.SetModifyOtherKeys2 + ansi.PushKittyKeyboard(1))
		if s.query {
			s.buf.WriteString(ansi.RequestModeSynchronizedOutput + ansi.RequestModeUnicodeCore)
		}
		s.scr.Erase()
		s.drawn = true
	}
	if wide && !s.wide {
		s.buf.WriteString(ansi.SetModeUnicodeCore)
		s.cells.Method = ansi.GraphemeWidth
		s.wide = true
		s.lines = nil
	}
	if redraw {
		s.scr.SetColorProfile(p)
		s.scr.Erase()
	}
	if w != s.cells.Width() || h != s.cells.Height() {
		s.cells.Resize(w, h)
		s.cells.Touched = nil
		s.lines = nil
		s.scr.Resize(w, h)
		s.scr.Erase()
	}
	if v.WindowTitle != s.title {
		s.buf.WriteString(ansi.SetWindowTitle(v.WindowTitle))
		s.title = v.WindowTitle
	}
	s.lines = drawLines(s.cells, v.Content, s.lines)
	s.scr.Render(s.cells.RenderBuffer)
	s.write(true)
}

// drawLines puts content's cells in cells and returns its lines. When prev
// (the lines drawn last) is not nil and every line ends with its text
// attributes and link reset (as lipgloss and the cockpit's views do), only
// the lines that differ from prev are parsed again: a new log line or GPU
// sample costs its rows, not the screen's 12,000 cells. Otherwise the
// whole content is drawn as Bubble Tea does, and the result is nil (no
// line may be reused next time).
func drawLines(cells uv.ScreenBuffer, content string, prev []string) []string {
	lines := strings.Split(content, "\n")
	h := cells.Height()
	if len(lines) > h {
		lines = lines[:h]
	}
	all := false
	for _, l := range lines[:max(len(lines)-1, 0)] {
		if !endsReset(l) {
			all = true // a style carried to the next line: draw it whole
			break
		}
	}
	if all || prev == nil {
		cells.Clear()
		uv.NewStyledString(content).Draw(cells, cells.Bounds())
		if all {
			return nil
		}
		return lines
	}
	w := cells.Width()
	k := 0 // how far the last line found lower down had moved up
	for y := range max(len(lines), len(prev)) {
		if y < len(lines) && y < len(prev) && lines[y] == prev[y] {
			continue
		}
		area := uv.Rect(0, y, w, 1)
		if y >= len(lines) {
			cells.ClearArea(area)
			continue
		}
		// A line drawn lower down last time (the log scrolled up) is in
		// the cells already: copied, not parsed again. The rows below y
		// are not drawn yet in this frame.
		if k = movedUp(lines[y], prev, y, k); k > 0 {
			copy(cells.Lines[y], cells.Lines[y+k])
			cells.TouchLine(0, y, w)
			continue
		}
		uv.NewStyledString(lines[y]).Draw(cells, area) // clears the row first
	}
	return lines
}

// movedUp returns k > 0 when line was prev[y+k], trying the last line's
// k first, else 0.
func movedUp(line string, prev []string, y, k int) int {
	if k > 0 && y+k < len(prev) && prev[y+k] == line {
		return k
	}
	for j := y + 1; j < len(prev); j++ {
		if prev[j] == line {
			return j - y
		}
	}
	return 0
}

// endsReset reports whether a line leaves no text attribute or hyperlink
// to the next: it has no escape sequence, or its last SGR is a full reset
// and it has no OSC (a hyperlink's state would carry).
func endsReset(l string) bool {
	i := strings.LastIndex(l, "\x1b[")
	if i < 0 {
		return !strings.Contains(l, "\x1b")
	}
	if strings.Contains(l, "\x1b]") {
		return false
	}
	rest := l[i:]
	return strings.HasPrefix(rest, "\x1b[m") || strings.HasPrefix(rest, "\x1b[0m")
}

// write flushes the renderer into s.buf and writes it to out in one Write;
// frame says whether it is a frame (Stats counts those).
func (s *Screen) write(frame bool) {
	err := s.scr.Flush()
	n := 0
	if err == nil && s.buf.Len() > 0 {
		b := s.buf.Bytes()
		if frame && s.frameSyn {
			b = append(append([]byte(ansi.SetModeSynchronizedOutput), b...), ansi.ResetModeSynchronizedOutput...)
		}
		n, err = s.out.Write(b)
	}
	s.buf.Reset()
	s.mu.Lock()
	if frame {
		s.frames++
	}
	s.bytes += n
	if err != nil && s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// Close stops the drawing goroutine, draws the last view shown if it was
// not drawn yet, and then leaves the alternate screen and restores the
// terminal's modes (cursor, bracketed paste, keyboard, title). It returns
// the first write error. Calling it again does nothing.
func (s *Screen) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if started {
		close(s.stop)
		<-s.stopped
	}
	s.frame()
	if s.drawn {
		s.scr.MoveTo(0, s.cells.Height()-1)
		_ = s.scr.Flush()
		s.buf.WriteString(ansi.ResetModifyOtherKeys + ansi.PopKittyKeyboard(1) +
			ansi.ResetModeAltScreenSaveCursor + ansi.SetModeTextCursorEnable + ansi.ResetModeBracketedPaste)
		if s.title != "" {
			s.buf.WriteString(ansi.SetWindowTitle(""))
		}
		if s.wide {
			s.buf.WriteString(ansi.ResetModeUnicodeCore)
		}
		s.write(false)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// sameView reports whether two views draw the same: the fields a Screen
// uses.
func sameView(a, b *tea.View) bool {
	return a.Content == b.Content && a.WindowTitle == b.WindowTitle && a.AltScreen == b.AltScreen
}

// shouldQuery reports whether the terminal of env may be asked for modes
// 2026 and 2027: Bubble Tea's rule (v2.1.1's shouldQuerySynchronizedOutput),
// which leaves out Apple's Terminal and SSH sessions of unknown terminals.
func shouldQuery(env []string) bool {
	e := uv.Environ(env)
	termType := e.Getenv("TERM")
	termProg, okTermProg := e.LookupEnv("TERM_PROGRAM")
	_, okSSHTTY := e.LookupEnv("SSH_TTY")
	_, okWTSession := e.LookupEnv("WT_SESSION")
	return (!okTermProg && !okSSHTTY) ||
		okWTSession ||
		(okTermProg && !strings.Contains(termProg, "Apple") && !okSSHTTY) ||
		strings.Contains(termType, "ghostty") ||
		strings.Contains(termType, "wezterm") ||
		strings.Contains(termType, "alacritty") ||
		strings.Contains(termType, "kitty") ||
		strings.Contains(termType, "rio")
}
