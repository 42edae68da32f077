package screen

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"
)

// Target is where a Program is shown.
type Target struct {
	// Out receives the frames. nil is the process's terminal: os.Stdout,
	// with the keys read from os.Stdin (or /dev/tty when stdin is not a
	// terminal) in raw mode while the program runs, and the size followed
	// through SIGWINCH. Any other writer (a test's buffer) gets the bytes
	// as a terminal would.
	Out io.Writer
	// Env is the terminal's environment (TERM, and the colour detection's
	// variables); nil is os.Environ().
	Env []string
	// Width and Height are the size in cells to draw at when Out is not a
	// terminal, until the program reports one (tea.WindowSizeMsg); 0 is
	// 80×24.
	Width, Height int
	// Profile is the colour profile to draw in; colorprofile.Unknown
	// detects it from Out and Env as Bubble Tea does. A
	// tea.ColorProfileMsg changes it.
	Profile colorprofile.Profile
	// Later reports whether the view after msg may wait to be drawn
	// with the next views (Screen.ShowLater): a background message, such
	// as a batch of events, rather than a key. nil draws every view at
	// once.
	Later func(msg tea.Msg) bool
	// Coalesce is the longest a view after a Later message waits: it is
	// drawn with the next view after any other message, or Coalesce after
	// the first one held, whichever comes first (Screen.SetCoalesce).
	Coalesce time.Duration
}

// Program is a tea.Program whose views a Screen draws: the program runs
// with tea.WithoutRenderer (and tea.WithFPS(1): v2.1.1's ticker still wakes
// once a second to write the program's own queries) and m's views reach the
// screen after each Update.
type Program struct {
	*tea.Program
	screen *Screen
	model  *shown
	tty    *tty // nil unless Out is the terminal
}

// NewProgram returns a program for m shown on t. opts are Bubble Tea's
// options, applied after the screen's (tea.WithoutRenderer, tea.WithFPS,
// tea.WithOutput, tea.WithInput, tea.WithWindowSize, tea.WithEnvironment),
// so a caller's tea.WithInput or tea.WithWindowSize wins. It fails when
// the terminal cannot be opened or measured.
func NewProgram(m tea.Model, t Target, opts ...tea.ProgramOption) (*Program, error) {
	env := t.Env
	if env == nil {
		env = os.Environ()
	}
	w, h := t.Width, t.Height
	if w <= 0 || h <= 0 {
		w, h = 80, 24
	}
	out := t.Out
	var tt *tty
	if out == nil {
		var err error
		if tt, err = openTTY(); err != nil {
			return nil, err
		}
		out = tt.out
		if w, h, err = term.GetSize(tt.out.Fd()); err != nil {
			tt.close()
			return nil, fmt.Errorf("screen: the terminal's size: %w", err)
		}
	}
	profile := t.Profile
	if profile == colorprofile.Unknown {
		profile = colorprofile.Detect(out, env)
	}
	s := New(out, env, w, h, profile, tt == nil)
	s.HoldUntilSized() // the program sends its size (tea.WindowSizeMsg) as it starts
	if t.Later != nil {
		s.SetCoalesce(t.Coalesce)
	}
	sm := &shown{m: m, s: s, later: t.Later}
	base := []tea.ProgramOption{
		tea.WithoutRenderer(), tea.WithFPS(1), tea.WithOutput(out),
		tea.WithWindowSize(w, h), tea.WithEnvironment(env),
	}
	if t.Profile != colorprofile.Unknown {
		base = append(base, tea.WithColorProfile(t.Profile))
	}
	if tt != nil {
		base = append(base, tea.WithInput(tt.in))
	}
	p := &Program{Program: tea.NewProgram(sm, append(base, opts...)...), screen: s, model: sm, tty: tt}
	return p, nil
}

// Screen is the screen the program is drawn on.
func (p *Program) Screen() *Screen { return p.screen }

// Run runs the program until it ends and returns its final model (the
// one given to NewProgram, as its Update left it) and its error. On the
// terminal, the keyboard is in raw mode and resizes are followed while it
// runs; the screen's last frame is drawn and the terminal restored before
// Run returns, whatever the program's end (a quit, a kill, a panic it
// recovered). A screen's write error is returned when the program had
// none.
func (p *Program) Run() (tea.Model, error) {
	var stopWinch func()
	if p.tty != nil {
		if err := p.tty.raw(); err != nil {
			p.tty.close()
			return p.model.m, err
		}
		stopWinch = followSize(p.tty.out, p.Send)
	}
	p.screen.Start()
	_, err := p.Program.Run()
	serr := p.screen.Close()
	if stopWinch != nil {
		stopWinch()
	}
	if p.tty != nil {
		if rerr := p.tty.close(); err == nil {
			err = rerr
		}
	}
	if err == nil && serr != nil {
		err = fmt.Errorf("screen: writing to the terminal: %w", serr)
	}
	return p.model.m, err
}

// shown is the model the tea.Program runs: m's, with its size, colour
// profile and views passed to the screen. The size and profile go with
// the next view (Bubble Tea calls View after every Update), so the screen
// draws the view m laid out for them.
type shown struct {
	m             tea.Model
	s             *Screen
	width, height int                  // the latest size, 0 until one
	profile       colorprofile.Profile // the latest profile, Unknown until one
	later         func(tea.Msg) bool   // Target.Later
	held          bool                 // the view after this Update may wait
}

func (w *shown) Init() tea.Cmd { return w.m.Init() }

func (w *shown) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		w.width, w.height = msg.Width, msg.Height
	case tea.ColorProfileMsg:
		w.profile = msg.Profile
	case tea.ModeReportMsg:
		w.s.SetModes(msg)
	}
	w.held = w.later != nil && w.later(msg)
	var cmd tea.Cmd
	w.m, cmd = w.m.Update(msg)
	return w, cmd
}

// View hands m's view to the screen (which draws it if it changed, at
// once or, after a Later message, with the next views) and gives the
// program's disabled renderer an empty one.
func (w *shown) View() tea.View {
	w.s.ShowSized(w.m.View(), w.width, w.height, w.profile, w.held)
	return tea.View{}
}

// tty is the process's terminal: out for the frames, in for the keys.
type tty struct {
	in, out *os.File
	opened  bool        // in was opened here (/dev/tty) and is closed by close
	state   *term.State // in's mode before raw, nil until raw
}

func openTTY() (*tty, error) {
	if !term.IsTerminal(os.Stdout.Fd()) {
		return nil, errors.New("screen: standard output is not a terminal")
	}
	t := &tty{in: os.Stdin, out: os.Stdout}
	if !term.IsTerminal(os.Stdin.Fd()) {
		in, out, err := tea.OpenTTY()
		if err != nil {
			return nil, fmt.Errorf("screen: the keyboard: %w", err)
		}
		_ = out.Close()
		t.in, t.opened = in, true
	}
	return t, nil
}

// raw puts the keyboard's terminal in raw mode (until close).
func (t *tty) raw() error {
	st, err := term.MakeRaw(t.in.Fd())
	if err != nil {
		return fmt.Errorf("screen: raw mode: %w", err)
	}
	t.state = st
	return nil
}

// close restores the terminal's mode and closes what openTTY opened.
func (t *tty) close() error {
	var err error
	if t.state != nil {
		if rerr := term.Restore(t.in.Fd(), t.state); rerr != nil {
			err = fmt.Errorf("screen: restoring the terminal: %w", rerr)
		}
		t.state = nil
	}
	if t.opened {
		_ = t.in.Close()
		t.opened = false
	}
	return err
}
