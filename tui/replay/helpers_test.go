package replay

import (
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/tui"
)

// The cockpit driven from the replay's tests: a sized model, typed text
// and the stripped screen (the fixtures are tuitest's, shared with the
// cockpit's own tests, so a replayed screen is the cockpit's to the byte).

func newSized(w, h int, o tui.Options) *tui.Model {
	m := tui.New(o)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

func typeText(m *tui.Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// plain is the stripped screen.
func plain(m *tui.Model) string { return ansi.Strip(m.View().Content) }
