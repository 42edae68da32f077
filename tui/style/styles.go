// Package style is how the cockpit paints text: the palette's tones by
// meaning (Styles, and Token to name one without holding it) and fitting
// plain and styled text into terminal cells (Width, Truncate, Wrap, …),
// fast for ASCII, and the short words of values (Plural, Age, ErrText).
// Panels never name a colour; they pick a token.
package style

import (
	"image/color"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// Tone is one semantic style: a foreground colour plus attributes. Render is
// a string concatenation with a precomputed SGR prefix (about 30 ns), where
// lipgloss.Style.Render costs about 2 µs per call; the GPU table paints
// hundreds of cells per frame.
type Tone struct {
	Fg      color.Color // nil: the terminal's default foreground
	Bold    bool
	Faint   bool
	Reverse bool

	open string // SGR sequence built by compile; "" means unstyled
}

func (t Tone) compile() Tone {
	var s ansi.Style
	if t.Bold {
		s = s.Bold()
	}
	if t.Faint {
		s = s.Faint()
	}
	if t.Reverse {
		s = s.Reverse(true)
	}
	if t.Fg != nil {
		s = s.ForegroundColor(t.Fg)
	}
	t.open = ""
	if len(s) > 0 {
		t.open = s.String()
	}
	return t
}

// SGR is the escape sequence the tone opens with, "" when it is unstyled:
// what a test looks for in a rendered screen.
func (t Tone) SGR() string { return t.open }

// Render wraps s in the tone's SGR sequence. An empty s stays empty.
func (t Tone) Render(s string) string {
	if t.open == "" || s == "" {
		return s
	}
	return t.open + s + ansi.ResetStyle
}

// Style returns the tone as a lipgloss style, for composition with lipgloss
// layout helpers.
func (t Tone) Style() lipgloss.Style {
	st := lipgloss.NewStyle().Bold(t.Bold).Faint(t.Faint).Reverse(t.Reverse)
	if t.Fg != nil {
		st = st.Foreground(t.Fg)
	}
	return st
}

// Styles holds every style the cockpit uses, by meaning. Panels never name
// a colour; they pick a token.
type Styles struct {
	Text   Tone // plain values
	Dim    Tone // labels, units, stale rows, separators
	Accent Tone // the app name, section titles, the filter prompt
	Title  Tone // column headers
	OK     Tone // healthy state: connected, ready
	Warn   Tone // abnormal but working: P-state, PCIe, throttle, temperature, reconnecting
	Crit   Tone // broken: lost GPU, failures, failed connection
	Spark  Tone // sparkline bars
	Key    Tone // key names in help

	// Dark reports which background the palette was made for.
	Dark bool
	// Plain reports a palette without colours (NO_COLOR).
	Plain bool
	// Gen is the palette's generation: the cockpit raises it each time it
	// changes the palette (a theme, the terminal's background), so that
	// what caches styled text (the GPU rows, the sparkline) draws again.
	Gen int
}

// Default returns the palette for a dark (isDark) or light terminal
// background. Colours are 24-bit; Bubble Tea downsamples them to what the
// terminal supports when it writes the frame, and OK, Warn and Crit stay
// green, yellow and red in 256 and in 16 colours (TestPaletteSurvivesDownsampling).
func Default(isDark bool) Styles {
	ld := lipgloss.LightDark(isDark)
	c := func(light, dark string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(dark)) }
	// Warn is yellow rather than amber: amber (#ffaf00, #af5f00) becomes
	// red in 16 colours (ansi.Convert16), the same as Crit.
	s := Styles{
		Text:   Tone{},
		Dim:    Tone{Fg: c("#8a8a8a", "#7a7a7a")},
		Accent: Tone{Fg: c("#005fd7", "#5fafff"), Bold: true},
		Title:  Tone{Fg: c("#4e4e4e", "#a8a8a8"), Bold: true},
		OK:     Tone{Fg: c("#008700", "#5fd75f")},
		Warn:   Tone{Fg: c("#878700", "#d7d700"), Bold: true},
		Crit:   Tone{Fg: c("#d70000", "#ff5f5f"), Bold: true},
		Spark:  Tone{Fg: c("#0087af", "#5fd7ff")},
		Key:    Tone{Fg: c("#5f5f87", "#afafd7"), Bold: true},
		Dark:   isDark,
	}
	return s.compile()
}

// Plain returns a palette without colours for NO_COLOR terminals:
// abnormal values still stand out through bold and reverse video.
func Plain() Styles {
	s := Styles{
		Dim:    Tone{Faint: true},
		Accent: Tone{Bold: true},
		Title:  Tone{Bold: true},
		Warn:   Tone{Bold: true},
		Crit:   Tone{Bold: true, Reverse: true},
		Key:    Tone{Bold: true},
		Dark:   true,
		Plain:  true,
	}
	return s.compile()
}

func (s Styles) compile() Styles {
	for _, t := range []*Tone{&s.Text, &s.Dim, &s.Accent, &s.Title, &s.OK, &s.Warn, &s.Crit, &s.Spark, &s.Key} {
		*t = t.compile()
	}
	return s
}

// Tone is the palette's tone for t (Text for an unknown token).
func (s *Styles) Tone(t Token) Tone {
	switch t {
	case Dim:
		return s.Dim
	case Warn:
		return s.Warn
	case Crit:
		return s.Crit
	case OK:
		return s.OK
	case Accent:
		return s.Accent
	case Title:
		return s.Title
	}
	return s.Text
}
