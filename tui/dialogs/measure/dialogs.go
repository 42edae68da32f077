// Package measure is the benchmark and repeat panel's dialogs, pushed on
// the cockpit's overlay stack: the benchmark form (b), the repeat form
// (R), and the question b, R or esc asks before stopping the run started
// here. The forms check their values on every draw and on enter (pure
// functions, no I/O), then hand the config to the panel they act for
// (Runs), which starts the run in a tea.Cmd.
package measure

import (
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The dialogs' IDs on the overlay stack.
const (
	// BenchID is the benchmark form.
	BenchID = "bench"
	// RepeatID is the repeat form.
	RepeatID = "repeat"
	// StopBenchID and StopRepeatID are the question asked before stopping
	// the benchmark or the repeat started here.
	StopBenchID  = "stop-bench"
	StopRepeatID = "stop-repeat"
)

// Runs is the panel the dialogs act for (tui/panels/bench.Panel): the
// benchmark's defaults, why a run cannot start now, starting a run (the
// tea.Cmd runs it), and stopping the run started here. None of it does
// I/O; what is "bench" or "repeat".
type Runs interface {
	// BenchDefaults prefills the benchmark form.
	BenchDefaults() event.BenchConfig
	// BenchWhy says why a benchmark cannot start now; "" when it can.
	// Enter asks again: the cockpit may have changed while the form was
	// open.
	BenchWhy() string
	// RepeatWhy says the same of a repeat.
	RepeatWhy() string
	// StartBench starts a benchmark of a checked config.
	StartBench(cfg event.BenchConfig) tea.Cmd
	// StartRepeat starts a repeat of a checked config.
	StartRepeat(cfg sessions.RepeatConfig) tea.Cmd
	// StopQuestion is the stop question's text, read as it is drawn.
	StopQuestion(what string) string
	// Stop stops the run (the question's y).
	Stop(what string) tea.Cmd
}

// Dialogs opens the benchmark and repeat dialogs (it is the panel's
// Dialogs) and holds what they need of the cockpit. The root sets every
// field once; use it by pointer.
type Dialogs struct {
	// Runs is the panel the dialogs act for.
	Runs Runs
	// Experiment is the open experiment's id and name, raw; ok is false
	// when none is open.
	Experiment func() (id, name string, ok bool)
	// Journal reports whether the session keeps a journal (a result can
	// go with an experiment).
	Journal func() bool
	// Flash answers in the status line until the next key.
	Flash func(text string, tone style.Token)
	// Push opens a dialog on top.
	Push func(component.Dialog)
	// Inputs are the text fields' styles.
	Inputs func() textinput.Styles
}

// AskStop asks to stop the run started here, what "bench" or "repeat":
// y stops it, any other key keeps it running.
func (ds *Dialogs) AskStop(what string) {
	id := StopBenchID
	if what == "repeat" {
		id = StopRepeatID
	}
	ds.Push(&Stop{Confirm: component.Confirm{
		Name: id, Title: "stop the " + what, Frame: style.Warn, MaxWidth: 64,
		Question: func() string { return ds.Runs.StopQuestion(what) },
		YesHelp:  "stop",
		Yes:      func() tea.Cmd { return ds.Runs.Stop(what) },
		No:       func() tea.Cmd { ds.Flash("still running", style.Dim); return nil },
	}})
}

// Stop is the question asked before a run started here is stopped: a
// component.Confirm (y stops, any other key keeps it running) whose box
// keeps its last lines, the y/N among them, on a short screen.
type Stop struct {
	component.Confirm
}

// View implements component.Dialog: the question, cut in its middle when
// the screen is too short for it.
func (s *Stop) View(st *style.Styles, w, h int) component.Box {
	if component.TooSmall(w, h) {
		return component.Box{}
	}
	b := s.Confirm.View(st, w, h)
	b.Body = component.FitLines(st, b.Body, component.BodyRows(h), 2, b.Width)
	return b
}

// Help implements component.Dialog.
func (s *Stop) Help() []component.Hint {
	return []component.Hint{{Key: "y", Desc: "stop"}, {Key: "n/esc", Desc: "keep running"}}
}
