// Package experiment is the experiment forms, pushed on the cockpit's
// overlay stack: the start form (e with none open: a name, its default a
// placeholder, and a hypothesis), the end form (e with one open: its tok/s
// so far and a conclusion), the conclusion form (e while the conclusion
// banner shows, or w in the experiments panel) and the note form (n).
// Enter hands what was typed to the Panel they act for, whose calls run
// in tea.Cmds; their answers go back to it (experiments.Panel.Result).
//
// It imports tui/panels/experiments for how the panel writes an
// experiment (experiments.ResultText, experiments.EndedHow) and the
// journal's text limits, so that a form says what the panel's rows say;
// the panel opens the forms through func fields the root sets, and does
// not import this package.
package experiment

import (
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/experiments"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The forms' IDs on the overlay stack.
const (
	// StartID is the start form: a name and a hypothesis.
	StartID = "exp-start"
	// EndID is the end form of the open experiment: its tok/s so far and
	// a conclusion.
	EndID = "exp-end"
	// ConcludeID is the conclusion form of an experiment that ended: by a
	// kill, relaunch or exit (e while its banner shows), or any (w).
	ConcludeID = "exp-conclude"
	// NoteID is the note form: one line of text.
	NoteID = "exp-note"
)

// Panel is what the forms act for (experiments.Panel): the experiments,
// the call in flight, and the calls the forms start. Each call returns the
// tea.Cmd that makes it; ids are raw.
type Panel interface {
	// Ledger is the experiments folded from the events so far.
	Ledger() *ledger.Ledger
	// Provisional is the open experiment's result so far.
	Provisional() event.ExperimentResult
	// WarmingUp says why the open experiment e has no result r yet while
	// its samples fall in the warm-up, "" otherwise.
	WarmingUp(e *ledger.Experiment, r event.ExperimentResult) string
	// Doing is the call in flight, "" when none.
	Doing() string
	// Writable reports whether the calls may run (a journal, and this
	// cockpit drives).
	Writable() bool
	// Dismiss drops the conclusion banner.
	Dismiss()
	// StartExperiment starts an experiment named name ("" leaves it to the
	// journal; shown is the name the form showed) with hypothesis hyp.
	StartExperiment(name, hyp, shown string) tea.Cmd
	// EndExperiment ends the open experiment, id, with conclusion.
	EndExperiment(id, conclusion string) tea.Cmd
	// Conclude writes experiment id's conclusion.
	Conclude(id, conclusion string) tea.Cmd
	// WriteNote writes a note.
	WriteNote(text string) tea.Cmd
}

// Dialogs opens the experiment forms and holds what they need of the
// cockpit: the panel they act for, the flash, the stack they open on and
// the text fields' styles. The root sets every field once; use it by
// pointer.
type Dialogs struct {
	Panel Panel
	// Flash answers in the status line until the next key.
	Flash func(text string, tone style.Token)
	// Push opens a dialog on top.
	Push func(component.Dialog)
	// Inputs are the text fields' styles.
	Inputs func() textinput.Styles
}

// newInput is a text field for a form holding at most limit characters.
func (ds *Dialogs) newInput(value, placeholder string, limit int) textinput.Model {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = placeholder
	in.CharLimit = limit
	in.SetStyles(ds.Inputs())
	in.SetValue(value)
	in.CursorEnd()
	return in
}

// open pushes f with its first field focused.
func (ds *Dialogs) open(f *Form) tea.Cmd {
	f.ds = ds
	ds.Push(f)
	return f.setFocus(0)
}

// OpenExperiment opens the end form when an experiment is open, else the
// start form, whose name field shows defaultName as its placeholder.
func (ds *Dialogs) OpenExperiment(defaultName string) tea.Cmd {
	if cur := ds.Panel.Ledger().Current(); cur != nil {
		return ds.open(&Form{id: EndID, exp: cur.ID, labels: []string{"conclusion"},
			inputs: []textinput.Model{ds.newInput("", "what did it show? (optional)", experiments.TextLimit)}})
	}
	// The default name is a placeholder, not a value: typing replaces it,
	// enter on the empty field takes it.
	return ds.open(&Form{id: StartID, labels: []string{"name", "hypothesis"}, name: defaultName, inputs: []textinput.Model{
		ds.newInput("", defaultName, experiments.NameLimit),
		ds.newInput("", "what do you expect, and why? (optional)", experiments.TextLimit),
	}})
}

// OpenNote opens the note form.
func (ds *Dialogs) OpenNote() tea.Cmd {
	return ds.open(&Form{id: NoteID, labels: []string{"note"},
		inputs: []textinput.Model{ds.newInput("", "free text; enter saves", experiments.TextLimit)}})
}

// OpenConclude opens the conclusion prompt for experiment id, which ended
// without one; its banner goes.
func (ds *Dialogs) OpenConclude(id string) tea.Cmd {
	ds.Panel.Dismiss()
	return ds.open(&Form{id: ConcludeID, exp: id, labels: []string{"conclusion"},
		inputs: []textinput.Model{ds.newInput("", "what did it show? (esc skips)", experiments.TextLimit)}})
}

// OpenEdit opens the conclusion form for e, an experiment that ended (w
// in the panel), holding its conclusion so far to edit.
func (ds *Dialogs) OpenEdit(e *ledger.Experiment) tea.Cmd {
	was := sanitize.String(e.Conclusion)
	return ds.open(&Form{id: ConcludeID, exp: e.ID, edit: true, was: was, labels: []string{"conclusion"},
		inputs: []textinput.Model{ds.newInput(was, "what did it show?", experiments.TextLimit)}})
}
