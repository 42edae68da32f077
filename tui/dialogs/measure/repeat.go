package measure

import (
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Repeat form fields, in order.
const (
	rfLaunches = iota
	rfSamples
	rfBench
)

// RepeatForm is the repeat form (R): how many more launches, how many
// steady tok/s samples each, and whether each launch is benchmarked too;
// enter starts the repeat (Runs.StartRepeat).
type RepeatForm struct {
	form
	ds *Dialogs
}

// OpenRepeat opens the repeat form with the defaults of
// sessions.RepeatConfig and returns its first command.
func (ds *Dialogs) OpenRepeat() tea.Cmd {
	f := &RepeatForm{ds: ds, form: form{fields: []field{
		ds.textField("more launches", "4", "4"),
		ds.textField("samples each", "10", "10 steady tok/s samples"),
		choiceField("bench each", []string{"no", "yes"}, 0),
	}}}
	ds.Push(f)
	return f.setFocus(rfLaunches)
}

// ID implements component.Dialog.
func (f *RepeatForm) ID() string { return RepeatID }

// Key implements component.Dialog: as the benchmark form's, enter starts.
func (f *RepeatForm) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	return answer(f.ds, &f.form, msg, "repeat",
		func() (sessions.RepeatConfig, string) { return repeatConfig(&f.form) },
		f.ds.Runs.RepeatWhy, f.ds.Runs.StartRepeat)
}

// View implements component.Dialog: the title names the experiment the
// repeat measures.
func (f *RepeatForm) View(st *style.Styles, w, h int) component.Box {
	title := "repeat"
	if id, name, ok := f.ds.Experiment(); ok {
		title = "repeat " + sanitize.String(id) + " " + sanitize.String(name)
	}
	_, bad := repeatConfig(&f.form)
	hints := []string{
		"Relaunches the current configuration N more times, waiting for that many steady tok/s samples each; every launch is one sample of the A/A (launch-to-launch) noise the compare view shows next to its verdicts.",
	}
	return f.box(st, w, h, title, hints, bad, "enter", "start", "tab", "field", "left/right", "choose", "esc", "cancel")
}

// Help implements component.Dialog.
func (f *RepeatForm) Help() []component.Hint {
	return []component.Hint{{Key: "enter", Desc: "start"}, {Key: "tab/up/down", Desc: "field"}, {Key: "left/right", Desc: "choose"}, {Key: "esc", Desc: "cancel"}}
}

// repeatConfig is the form's config, or why it is not valid.
func repeatConfig(f *form) (sessions.RepeatConfig, string) {
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
