package tui

import (
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/panels/bench"
	"github.com/flightdeck-dev/flightdeck/tui/style"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions"
)

// RepeatResultMsg is the answer of a repeat started with R: nil when
// every launch was measured, else why it stopped.
type RepeatResultMsg = bench.RepeatResultMsg

// Repeat form fields, in order.
const (
	rfLaunches = iota
	rfSamples
	rfBench
)

// openRepeat opens the repeat form with the defaults of RepeatConfig.
func (m *Model) openRepeat() tea.Cmd {
	m.showHelp = false
	f := &measureForm{fields: []formField{
		m.textField("more launches", "4", "4"),
		m.textField("samples each", "10", "10 steady tok/s samples"),
		choiceField("bench each", []string{"no", "yes"}, 0),
	}}
	m.repForm = f
	m.modal = modalRepeat
	return f.setFocus(rfLaunches)
}

// repeatConfig is the form's config, or why it is not valid.
func repeatConfig(f *measureForm) (sessions.RepeatConfig, string) {
	n, bad := wholeNumber(f.fields[rfLaunches].label, f.text(rfLaunches), 4, 1, 100)
	if bad != "" {
		return sessions.RepeatConfig{}, bad
	}
	// Fewer steady samples than a comparison counts as a launch would
	// make every repeated launch worthless to the verdict.
	s, bad := wholeNumber(f.fields[rfSamples].label, f.text(rfSamples), 10, ledger.MinLaunchSamples, 100000)
	if bad != "" {
		return sessions.RepeatConfig{}, bad
	}
	return sessions.RepeatConfig{N: n, MinSamples: s, Bench: f.choice(rfBench) == "yes"}, ""
}

// repeatKey handles a key while the repeat form is open.
func (m *Model) repeatKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	return measureFormKey(m, msg, &m.repForm, "repeat",
		func() (sessions.RepeatConfig, string) { return repeatConfig(m.repForm) },
		m.bench.RepeatWhy, m.bench.StartRepeat)
}

// repeatResult applies the answer of a repeat started here (a stop
// question still open is moot); after a confirmed quit it returns the
// command that quits, unless a git or server action holds it back.
func (m *Model) repeatResult(r RepeatResultMsg) tea.Cmd {
	quit := m.bench.RepeatResult(r)
	if m.modal == modalStop && m.stopWhat == "repeat" {
		m.modal = modalNone // the question is moot
	}
	if !quit {
		return nil
	}
	switch {
	case m.git.Doing() != "":
		// A git action cut short leaves the tree half-changed: quit when
		// it ends, as q does while one runs.
		m.git.QuitWhen = true
		m.flash("the repeat stopped; "+gitQuitText, style.Warn)
		return nil
	case m.srv.busy != actionNone:
		m.quitArmed = true
		m.flash("the repeat stopped; "+controlUnavailable(m, "")+"; quitting cancels it - q again to quit", style.Warn)
		return nil
	}
	m.quitting = true
	return tea.Quit
}

// repeatQuit answers a confirmed quit (a second q, or ctrl+c) while a
// repeat started here runs: the panel stops it, and the cockpit quits
// when it has (repeatResult); pressed again, it quits now.
func (m *Model) repeatQuit() tea.Cmd {
	now, cmd := m.bench.StopToQuit()
	if now {
		m.quitting = true
		return tea.Quit
	}
	return cmd
}

// repeatBox is the repeat form's title and content for inner width iw.
func (m *Model) repeatBox(iw int) (string, []string) {
	title := "repeat"
	if cur := m.exp.ledger.Current(); cur != nil {
		title = "repeat " + sanitize.String(cur.ID) + " " + sanitize.String(cur.Name)
	}
	_, bad := repeatConfig(m.repForm)
	hints := []string{
		"Relaunches the current configuration N more times, waiting for that many steady tok/s samples each; every launch is one sample of the A/A (launch-to-launch) noise the compare view shows next to its verdicts.",
	}
	return title, m.renderForm(m.repForm, iw, hints, bad, "enter", "start", "tab", "field", "left/right", "choose", "esc", "cancel")
}
