package tui

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/measure"
	"github.com/flightdeck-dev/flightdeck/tui/panels/bench"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The benchmark and repeat panel (tui/panels/bench) and its dialogs (the
// forms and the stop question, tui/dialogs/measure) tied to the cockpit:
// why its keys cannot act for the rest of the cockpit, the answers of its
// commands, and quitting when a repeat stopped for it has ended.

// BenchResultMsg is the answer of a benchmark started with b: its result,
// or why it could not run. The screen's result box comes from the
// event.BenchDone event, not from this message.
type BenchResultMsg = bench.ResultMsg

// RepeatResultMsg is the answer of a repeat started with R: nil when
// every launch was measured, else why it stopped.
type RepeatResultMsg = bench.RepeatResultMsg

// wireBench ties the benchmark and repeat panel and the dialogs it opens
// to the model.
func (m *Model) wireBench() {
	p := m.bench
	p.Bench, p.Repeat, p.Replay = m.opts.Bench, m.opts.Repeat, m.opts.ReadOnly
	p.Refused = func(does string) string {
		if why := m.refusal(does); why != "" {
			return why
		}
		if m.bisRun.running {
			return "a bisect is running: " + does + " and spoil its measurements (X cancels it)"
		}
		return ""
	}
	p.Busy = m.busyText
	p.Offline = func() string { return notConnected(m) }
	p.Server = func() (known, running bool) { return m.srv.hasSt, m.srv.running() }
	p.Experiment = func() bool { return m.exp.Ledger().Current() != nil }
	p.Flash = m.flash
	p.Record = m.recorder
	p.RecordCmd = m.recordCmd
	p.Ctx = func() context.Context { return m.ctx }
	p.Dialogs = &measure.Dialogs{
		Runs: p,
		Experiment: func() (id, name string, ok bool) {
			if cur := m.exp.Ledger().Current(); cur != nil {
				return cur.ID, cur.Name, true
			}
			return "", "", false
		},
		Journal: func() bool { return m.exp.Ctl != nil },
		Flash:   m.flash,
		Push: func(d component.Dialog) {
			m.showHelp = false
			m.overlay.Push(d)
		},
		Inputs: m.inputStyles,
	}
}

// benchResult applies the answer of a benchmark started here; a stop
// question still open is moot.
func (m *Model) benchResult(r BenchResultMsg) {
	m.bench.BenchResult(r)
	m.overlay.Remove(measure.StopBenchID)
}

// applyBench folds a benchmark event from the stream into the panel.
func (m *Model) applyBench(p any) {
	switch p := p.(type) {
	case event.BenchStarted:
		m.bench.Started(p)
	case event.BenchProgress:
		m.bench.Progressed(p)
	case event.BenchDone:
		m.bench.Finished(p)
	}
}

// askStop asks to stop the benchmark ("bench") or the repeat ("repeat")
// started here.
func (m *Model) askStop(what string) { m.bench.Dialogs.AskStop(what) }

// repeatResult applies the answer of a repeat started here (a stop
// question still open is moot); after a confirmed quit it returns the
// command that quits, unless a git or server action holds it back.
func (m *Model) repeatResult(r RepeatResultMsg) tea.Cmd {
	quit := m.bench.RepeatResult(r)
	m.overlay.Remove(measure.StopRepeatID)
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
