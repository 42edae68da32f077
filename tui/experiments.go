package tui

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	cmpdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/compare"
	expdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/experiment"
	"github.com/flightdeck-dev/flightdeck/tui/panels/experiments"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Experiments in the cockpit: e starts or ends one, n writes a note (their
// forms: tui/dialogs/experiment), x opens the experiments panel
// (tui/panels/experiments), where w writes or replaces the selected
// experiment's conclusion, space marks experiments, B marks the baseline
// (MeasureControl.Baseline) and c opens the compare view
// (tui/dialogs/compare; a range the journal did not record is read with
// MeasureControl.Range). What the screen shows comes only from events
// (exp-start, exp-fingerprint, exp-update, exp-end, note, tok-rate ...)
// folded into the panel's ledger, so a replayed journal shows the same;
// Options.Experiments only starts the changes. This file ties the panel to
// the cockpit: why its keys cannot act, the server state its warm-up
// reads, the header's fields, and recording the key behind an action.

// ExperimentControl starts and ends experiments and writes notes (e, n),
// and records the key behind every action; *sessions.Lab implements it.
// See experiments.Control.
type ExperimentControl = experiments.Control

// ExperimentStartedMsg is the answer of a Start made with e.
type ExperimentStartedMsg = experiments.StartedMsg

// ExperimentEndedMsg is the answer of an End made with e.
type ExperimentEndedMsg = experiments.EndedMsg

// ExperimentUpdatedMsg is the answer of the conclusion typed for an
// experiment that ended by itself (or by a kill or relaunch).
type ExperimentUpdatedMsg = experiments.UpdatedMsg

// NoteSavedMsg is the answer of a Note made with n.
type NoteSavedMsg = experiments.NoteSavedMsg

// BaselineMsg is the answer of a baseline mark made with B.
type BaselineMsg = experiments.BaselineMsg

// CompareRangeMsg is the answer of the commit range the compare view
// asked for (MeasureControl.Range).
type CompareRangeMsg = cmpdialog.RangeMsg

// noJournalText is e's and n's answer without an ExperimentControl.
const noJournalText = experiments.NoJournalText

// wireExperiments ties the experiments panel to the model.
func (m *Model) wireExperiments() {
	p := m.exp
	p.Measure = m.opts.Measure
	p.Replay = m.opts.ReadOnly
	p.Watching = m.watching
	p.ReadOnly = func(what string) string { return m.refusal(what + " would change the journal") }
	p.Now = func() time.Time { return m.now }
	p.Server = func() experiments.ServerState {
		var s experiments.ServerState
		if m.srv.hasSt && (m.srv.st.Phase == event.PhaseLaunching || m.srv.st.Phase == event.PhaseLoading) {
			s.Loading, s.Since = true, m.srv.st.Since
		}
		s.Ready = m.readyAt()
		return s
	}
	p.Flash = m.flash
	p.Record = m.recorder
	p.Ctx = func() context.Context { return m.ctx }
	forms := &expdialog.Dialogs{
		Panel: p,
		Flash: m.flash,
		// A form opens over the screen, not over the help.
		Push:   func(d component.Dialog) { m.showHelp = false; m.overlay.Push(d) },
		Inputs: m.inputStyles,
	}
	m.expForms = forms
	p.Edit = forms.OpenEdit
	m.cmp = &cmpdialog.Views{
		Ctl:      m.opts.Measure,
		ReadOnly: m.opts.ReadOnly,
		Ctx:      p.Ctx,
		Flash:    m.flash,
		Push:     forms.Push,
		Bisect:   m.bisectFromCompare,
	}
	p.Compare = m.cmp.Open
}

// expUnavailable is why e or n cannot act; what names it for a replay.
func expUnavailable(what string) func(*Model) string {
	return func(m *Model) string {
		if why := m.exp.ReadOnly(what); why != "" {
			return why
		}
		switch {
		case m.exp.Ctl == nil:
			return noJournalText
		case m.exp.Doing() != "":
			return m.exp.Doing() + " ..."
		}
		return ""
	}
}

// expBindings sets the experiment keys' help.
func expBindings(k *KeyMap) {
	k.Experiment.Long = "start an experiment (name, hypothesis), or end the open one (conclusion)"
	k.Note.Long = "write a note into the journal (and the open experiment)"
	k.Experiments.Long = "experiments panel (tok/s)"
}

// toggleExperiments opens the panel (closing the git panel) or closes it.
func (m *Model) toggleExperiments() {
	if m.exp.Open {
		m.exp.Open = false
		return
	}
	m.exp.Open = true
	m.bis.Open = false
	m.showHelp = false
	if m.git.Open {
		m.git.Close()
	}
}

// recorder returns a func, run inside a tea.Cmd, that records the key
// being handled as the cause of action in the journal (a no-op without
// one).
func (m *Model) recorder(action string) func() {
	x, k := m.exp.Ctl, m.pressed
	if x == nil || m.opts.ReadOnly {
		return func() {}
	}
	action = sanitize.String(action)
	return func() { x.Key(k, action) }
}

// recordCmd is a tea.Cmd that only records the key (an action that does
// no I/O of its own, like a profile choice).
func (m *Model) recordCmd(action string) tea.Cmd {
	if m.exp.Ctl == nil || m.opts.ReadOnly {
		return nil
	}
	rec := m.recorder(action)
	return func() tea.Msg { rec(); return nil }
}

// expUpdated handles an exp-update event: a conclusion given for the
// experiment whose prompt is pending, or open and still empty, answers it.
func (m *Model) expUpdated(u event.ExperimentUpdate) {
	if u.Conclusion == "" {
		return
	}
	m.exp.Updated(u)
	if f, ok := m.overlay.Top().(*expdialog.Form); ok && f.Answered(u) {
		m.overlay.Pop()
	}
}

// rangeResult hands the answer of a compare view's range read to the
// open view (one closed since drops it: it is no longer on the stack).
func (m *Model) rangeResult(r CompareRangeMsg) {
	if v, ok := m.overlay.Find(cmpdialog.ID).(*cmpdialog.View); ok {
		v.Ranged(r)
	}
}

// readyAt is when the running server became ready, as far as known: by
// the latest event.ServerStatus when there is one (it supersedes the log, as
// in the header), else by the log's ready line; zero when not ready.
func (m *Model) readyAt() time.Time {
	switch {
	case m.srv.hasSt:
		if m.srv.st.Phase == event.PhaseReady {
			return m.srv.st.Since
		}
	case m.server.phase == serverReady:
		return m.server.since
	}
	return time.Time{}
}

// setJournal stores the recorder's status, sanitised.
func (m *Model) setJournal(s event.JournalStatus) {
	s.Path, s.Err = sanitize.String(s.Path), sanitize.String(s.Err)
	m.journal, m.hasJournal = s, true
}

// expSegs are the header's fields for experiments and the journal: the
// open experiment with its tok/s so far (exp, the last field), and the
// recorder's state (rec, after the connection: "rec", or its write error
// in warning tone with what is held in memory).
func (m *Model) expSegs() (exp, rec []seg) {
	var out []seg
	if cur := m.exp.Ledger().Current(); cur != nil {
		id, name := sanitize.String(cur.ID), sanitize.String(cur.Name)
		rate := ""
		if r := m.exp.Provisional(); r.N > 0 {
			rate = experiments.MedianText(r) + " tok/s"
		}
		// The live delta against the marked baseline follows the rate:
		// "e3 61.6 tok/s  vs e1 -25.2%", then the across-launch verdict's
		// word ("slower", "no verdict").
		long := component.JoinWords(component.JoinWords(id, name), rate)
		out = append(out, seg{text: long, short: component.JoinWords(id, rate), tone: style.Accent, prio: prioExp})
		// The delta and the verdict's word are fields of their own after
		// it, which give way before the experiment does (the word first).
		if d := m.exp.BaselineDelta(cur); d != "" {
			out = append(out, seg{text: d, tone: style.Accent, prio: prioDelta})
		}
		if v := m.exp.BaselineVerdict(cur); v != "" {
			out = append(out, seg{text: v, tone: style.Accent, prio: prioVerdict})
		}
	}
	exp, out = out, nil
	if m.hasJournal {
		j := &m.journal
		if j.Err == "" {
			out = append(out, seg{text: "rec", tone: style.Dim, prio: prioRec})
		} else {
			why := j.Err
			if i := strings.LastIndex(why, ": "); i >= 0 && i+2 < len(why) {
				why = why[i+2:] // "write /x.jsonl: no space left on device": the cause
			}
			var held []string
			if j.Pending > 0 {
				held = append(held, compare.FormatBytes(int64(j.Pending))+" held")
			}
			if j.Dropped > 0 {
				held = append(held, style.Plural(j.Dropped, "event")+" lost")
			}
			text := "journal: " + why
			if len(held) > 0 {
				text += " (" + strings.Join(held, ", ") + ")"
			}
			out = append(out, seg{text: text, short: "journal: " + why, tone: style.Warn, prio: prioJournal})
		}
	}
	return exp, out
}

// defaultExpName is "<profile> @ <short HEAD>" for the server running
// now, as the lab names the experiments a launch starts: the latest
// event.ServerStatus's env profile ("none" included; its preset when adopted
// with none recorded), "no server" when none runs, the server named by
// the log (or "experiment") without a event.ServerStatus. The profile picked
// with p for the next launch does not count: starting an experiment
// launches nothing.
func (m *Model) defaultExpName() string {
	p := "experiment"
	switch {
	case m.srv.hasSt:
		switch st := &m.srv.st; st.Phase {
		case event.PhaseNone, event.PhaseExited, event.PhaseKilled, "":
			p = "no server"
		default:
			p = firstOf(st.Profile, st.Preset, st.Server, "server")
		}
	case m.server.name != "":
		p = m.server.name
	}
	h := m.headShort
	if h == "" {
		h, _, _ = strings.Cut(m.head, " ")
	}
	if h == "" || h == "?" {
		return p
	}
	return p + " @ " + h
}

// firstOf is the first of ss that is not "".
func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
