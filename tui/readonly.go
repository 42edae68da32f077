package tui

import (
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/experiments"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// What a mode that drives a read-only cockpit from a journal (tui/replay:
// a replay, or a follower of a journal being written) uses of it: its
// words and keys in the cockpit's header, help and footer (Options.Mode),
// and the few methods below. The cockpit knows the mode only by what
// Options.Mode says; it never imports it.

// Mode is what a read-only cockpit says it is, and the keys of what
// drives it (Options.Mode). The zero Mode says "replay" and has no keys.
type Mode struct {
	// Word names the mode in the header and the window title; "" is
	// "replay".
	Word string
	// Refusal begins the answer to a key that would act; "" is
	// "read-only replay".
	Refusal string
	// Keys are the mode's own keys as its help lists them (one entry
	// per pair), handled by the mode before the cockpit sees a key. The
	// help screen lists them first, in a column named by their group; a
	// read-only cockpit's footer shows those marked for it after ?, in
	// place of the actions. The cockpit reads them at every frame: the
	// mode may change their help (space: play or pause).
	Keys []*component.Binding
}

// Flash shows text on the status line in tone until the next key, as the
// cockpit answers a key that cannot act; an empty text clears it.
func (m *Model) Flash(text string, tone style.Token) { m.flash(text, tone) }

// KeyTaken reports whether the cockpit takes msg before a mode's own keys
// see it: the log filter is being typed, a dialog has the keys, or the
// experiments panel is open and msg is its mark key (space marks there,
// instead of playing).
func (m *Model) KeyTaken(msg tea.KeyPressMsg) bool {
	return m.log.Typing() || m.DialogOpen() || m.exp.Open && key.Matches(msg, m.exp.MarkKey.Binding)
}

// HelpKey handles msg while the help screen is open, as the cockpit does
// before its other keys: it scrolls the help or closes it, and reports
// true; false when the help is closed or msg is another key.
func (m *Model) HelpKey(msg tea.KeyPressMsg) bool { return m.showHelp && m.helpKey(msg) }

// HelpOpen reports whether the help screen is shown.
func (m *Model) HelpOpen() bool { return m.showHelp }

// DialogOpen reports whether a dialog on the overlay stack has the keys.
func (m *Model) DialogOpen() bool { return !m.overlay.Empty() }

// CarryView gives m what the user chose to look at in from, a model of
// the same journal at another time: the help and its scroll, the status
// line, the focused GPU table, the open panel (git, bisect) and the experiments panel's
// cursor and marks, the dismissed bench result and since banner, the tok/s axis, wrap and the log filter
// (being typed too). A replay carries them across a seek, which rebuilds
// the screen in a fresh model.
func (m *Model) CarryView(from *Model) {
	m.showHelp, m.gpus.Focused = from.showHelp, from.gpus.Focused
	m.helpTop, m.helpMax = from.helpTop, from.helpMax
	m.status, m.statusTone = from.status, from.statusTone
	m.git.Open = from.git.Open
	m.bis.Open = from.bis.Open
	m.exp.CarryView(from.exp)
	m.bench.CarryDismissed(from.bench)
	m.since.carryDismissed(from.since)
	m.log.Wrap = from.log.Wrap
	m.rate.SetAxis(from.rate.Axis())
	if from.log.Query != "" {
		m.log.SetFilter(from.log.Query)
	}
	m.log.TypeAs(from.log)
}

// InputStyles are the styles of the cockpit's text fields in the palette
// in use, for a mode's own prompt (the replay's time input).
func (m *Model) InputStyles() textinput.Styles { return m.inputStyles() }

// DriverRole is who drove the host as the last event.DriverState said
// (event.RoleNone before any).
func (m *Model) DriverRole() event.DriverRole { return m.drv.st.Role }

// Experiments is the experiments panel: its ledger (the experiment open
// at the cockpit's time), whether it is open, its marks. A mode reads it.
func (m *Model) Experiments() *experiments.Panel { return m.exp }

// Now is the cockpit's clock: the latest ClockMsg time (or event time).
func (m *Model) Now() time.Time { return m.now }
