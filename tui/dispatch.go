package tui

// The key dispatch: the filter prompt, the help, the dialog on top, then
// one walk over the bindings (the cockpit's and each panel's) to act.

import (
	"slices"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/bench"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// key handles a key press: the filter input first, then bindings.
func (m *Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := &m.keys
	if m.log.Typing() {
		// The filter prompt takes every key, so typing never runs as
		// commands (logtail.Panel.Type).
		return m, m.log.Type(msg)
	}
	m.status, m.statusTone = "", style.Warn
	m.drv.note = ""
	m.pressed = msg.String()
	if cmd, ok := m.overlay.Key(msg); ok {
		return m, cmd
	}
	armed := m.quitArmed
	m.quitArmed = false
	if m.showHelp && m.helpKey(msg) {
		return m, nil
	}
	if msg.String() == "esc" {
		switch {
		case m.showHelp:
			m.showHelp = false
		case m.bench.Showing():
			m.bench.Dismiss() // the result box
		case m.git.Open:
			m.git.Close()
		case m.exp.Open:
			m.exp.Open = false
		case m.bis.Open:
			m.bis.Open = false
		case m.since.Showing(m.now) && !(m.since.Quiet() && m.git.Moved()):
			m.since.Dismiss() // since your last session here
		case m.git.Moved():
			// The HEAD-moved banner: a live alert goes before the
			// one-line "nothing changed" notice, which goes by itself.
			m.git.Acknowledge()
		case m.exp.Pending() != "":
			m.exp.Dismiss() // the conclusion banner is dismissed
		case m.bench.BenchRun.Running:
			m.askStop("bench")
		case m.bench.RepeatRun.Running:
			m.askStop("repeat")
		case m.log.Filter != "":
			m.log.ClearFilter()
		case m.srv.failed != "":
			m.srv.failed = ""
		}
		return m, nil
	}
	if key.Matches(msg, k.Quit.Binding) && m.git.Doing() != "" {
		// Quitting cancels the action's context: a git action cut short
		// leaves the tree half-changed. q (or ctrl+c) quits when it ends;
		// a second one at once.
		return m, m.gitQuit()
	}
	if key.Matches(msg, k.Quit.Binding) && m.bench.RepeatRun.Running && (armed || m.bench.QuitWhen || msg.String() == "ctrl+c") {
		// A repeat cut short mid-relaunch leaves the server killed: stop
		// it and quit when it returns; pressed again, quit now.
		return m, m.repeatQuit()
	}
	if key.Matches(msg, k.Quit.Binding) && msg.String() != "ctrl+c" && (m.srv.busy != actionNone || m.bench.RepeatRun.Running) && !armed {
		// A kill or relaunch cut short leaves the server half-stopped.
		// Ask once.
		m.quitArmed = true
		if m.srv.busy == actionNone {
			m.flash(bench.RepeatArmText, style.Warn)
			return m, nil
		}
		m.flash(controlUnavailable(m, "")+"; quitting cancels it - q again to quit", style.Warn)
		return m, nil
	}
	if key.Matches(msg, k.Quit.Binding) && msg.String() != "ctrl+c" && m.opts.ServesHost && m.watching() && !armed {
		m.quitArmed = true
		m.flash("this demo serves the simulated host that "+m.holderText(false)+" drives: quitting ends it for everyone - q again to quit", style.Warn)
		return m, nil
	}
	if key.Matches(msg, k.Quit.Binding) && msg.String() != "ctrl+c" && m.bisRun.running && !armed {
		// Quitting cancels the bisect with the program's context: ask
		// once; X cancels it and waits for the checkout to be restored.
		m.quitArmed = true
		m.flash("a bisect is running: quitting cancels it (X cancels and waits for the checkout to be restored) - q again to quit", style.Warn)
		return m, nil
	}
	if key.Matches(msg, k.Quit.Binding) && msg.String() != "ctrl+c" && m.bench.BenchRun.Running && !armed {
		// Quitting stops the benchmark (it is recorded as cancelled):
		// ask once, as b does.
		m.quitArmed = true
		m.flash("a benchmark is running: quitting stops it - q again to quit", style.Warn)
		return m, nil
	}
	for _, b := range m.matchOrder() {
		if !key.Matches(msg, b.Binding) || !m.exp.Open && slices.Contains(m.exp.Exclusive(), b) {
			continue // w, space and c are the panel's; elsewhere they are the log's and git's
		}
		if why := b.Why(); why != "" {
			m.status = why
			return m, nil
		}
		return m.act(b)
	}
	return m, nil
}

// act performs an available binding.
func (m *Model) act(b *component.Binding) (tea.Model, tea.Cmd) {
	if p := m.panelOf(b); p != nil {
		return m, p.Act(b)
	}
	k := &m.keys
	page := m.focused().Page()
	switch b {
	case &k.Quit:
		m.quitting = true
		return m, tea.Quit
	case &k.TakeOver:
		m.showHelp = false
		m.confirmTakeOver()
	case &k.Kill:
		m.showHelp = false
		m.confirmKill()
	case &k.Launch:
		m.showHelp = false
		return m, m.openLaunch()
	case &k.Profile:
		m.showHelp = false
		m.openPicker()
	case &k.Git:
		return m, m.toggleGit()
	case &k.Experiments:
		m.toggleExperiments()
	case &k.Axis:
		a := m.rate.Axis().Next()
		m.rate.SetAxis(a)
		m.flash("axis of the tok/s bars: "+a.Describe(), style.Dim)
	case &k.Since:
		m.showHelp = false
		m.overlay.Push(newSinceDialog(*m.since.c, m.now))
	case &k.Redial:
		return m, m.redialNow()
	case &k.Experiment:
		if id := m.exp.Pending(); id != "" && m.exp.Ledger().Find(id) != nil {
			m.showHelp = false
			return m, m.expForms.OpenConclude(id)
		}
		if m.bisRun.running {
			m.flash("a bisect is running: each of its launches is an experiment it starts and ends itself (X cancels it)", style.Warn)
			return m, nil
		}
		if m.bench.RepeatRun.Running {
			// Each launch of a repeat is its experiment: ending one by
			// hand would stop the repeat, starting one would split it.
			m.flash("a repeat is running: it starts and ends its experiments itself (R stops it)", style.Warn)
			return m, nil
		}
		return m, m.expForms.OpenExperiment(m.defaultExpName())
	case &k.Note:
		return m, m.expForms.OpenNote()
	case &k.Help:
		m.showHelp, m.helpTop = !m.showHelp, 0
	case &k.Up:
		m.focused().Move(-1)
	case &k.Down:
		m.focused().Move(1)
	case &k.PageUp:
		m.focused().Move(-page)
	case &k.PageDown:
		m.focused().Move(page)
	case &k.Bottom:
		m.focused().End()
	case &k.Top:
		m.focused().Home()
	}
	return m, nil
}

// panels are the cockpit's parts that own their keys (component.Panel):
// the four components and the benchmark's.
func (m *Model) panels() []component.Panel {
	return []component.Panel{m.log, m.gpus, m.git, m.exp, m.bench, m.bis}
}

// panelOf is the panel whose binding b is, nil for the cockpit's own.
func (m *Model) panelOf(b *component.Binding) component.Panel {
	for _, p := range m.panels() {
		for _, pb := range p.Bindings() {
			if pb == b {
				return p
			}
		}
	}
	return nil
}

// focused is the component the scrolling keys move: the GPU table when
// tab gave it the focus and it still scrolls (the terminal may have grown
// since), else the one in the log tail's place (body).
func (m *Model) focused() component.Component {
	if m.gpus.Focused && m.gpus.Scrolls() {
		return m.gpus
	}
	return m.body()
}

// body is the component in the log tail's place: the git panel when it
// is open, else the experiments panel when it is, else the log.
func (m *Model) body() component.Component {
	switch {
	case m.git.Open:
		return m.git
	case m.exp.Open:
		return m.exp
	case m.bis.Open:
		return m.bis
	}
	return m.log
}
