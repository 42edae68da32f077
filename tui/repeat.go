package tui

import (
	"context"
	"errors"
	"strconv"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/style"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions"
)

// The repeat in the cockpit: R opens a small form (more launches, steady
// samples per launch, bench each launch), enter runs RepeatControl.Run in
// a tea.Cmd under a context R (or esc) cancels after asking. Its progress
// comes from event.RepeatProgress events, drawn as a banner under the
// header ("repeat 2/5: warming up 3/10").

// RepeatResultMsg is the answer of a repeat started with R: nil when every
// launch was measured, else why it stopped.
type RepeatResultMsg struct{ Err error }

// repeatState is the repeat's side of the model.
type repeatState struct {
	ctl     RepeatControl // Options.Repeat; nil: R says why it cannot run
	form    *measureForm
	cancel  context.CancelFunc // the repeat started here; nil when none runs
	running bool
	stopped bool // its stop was asked
	// quitWhen: a confirmed quit stopped it; the cockpit quits when Run
	// returns (its relaunch finishes under its own deadline first).
	quitWhen bool
	prog     event.RepeatProgress
	hasProg  bool // a repeat is in progress by the stream
}

// Repeat form fields, in order.
const (
	rfLaunches = iota
	rfSamples
	rfBench
)

// repeatUnavailable is why R cannot start a repeat; "" when it can (R
// while one runs from here asks to stop it instead).
func repeatUnavailable(m *Model) string {
	switch {
	case m.opts.ReadOnly:
		return m.roPrefix() + ": a repeat would relaunch the server"
	case m.watching():
		return m.watchingWhy()
	case m.rep.ctl == nil:
		return "repeat not available here: it needs server control and a journal"
	case m.rep.running:
		return ""
	case m.rep.hasProg:
		return "a repeat is running"
	case m.srv.busy == actionKill:
		return "a kill is in progress"
	case m.srv.busy == actionLaunch:
		return "a launch is in progress"
	case m.bench.running:
		return "a benchmark is running: wait for it, or b stops it"
	}
	if why := notConnected(m); why != "" {
		return why
	}
	if !m.srv.running() {
		return "no server running: L launches one"
	}
	if m.exp.Ledger().Current() == nil {
		return "no open experiment: a launch from here starts one (or e)"
	}
	return ""
}

// openRepeat opens the repeat form with the defaults of RepeatConfig.
func (m *Model) openRepeat() tea.Cmd {
	m.showHelp = false
	f := &measureForm{fields: []formField{
		m.textField("more launches", "4", "4"),
		m.textField("samples each", "10", "10 steady tok/s samples"),
		choiceField("bench each", []string{"no", "yes"}, 0),
	}}
	m.rep.form = f
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
	return measureFormKey(m, msg, &m.rep.form, "repeat",
		func() (sessions.RepeatConfig, string) { return repeatConfig(m.rep.form) },
		repeatUnavailable, m.startRepeat)
}

// startRepeat runs cfg in a tea.Cmd under a context R (or esc) cancels.
func (m *Model) startRepeat(cfg sessions.RepeatConfig) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	ctl := m.rep.ctl
	m.rep.cancel, m.rep.running, m.rep.stopped = cancel, true, false
	what := "repeat " + strconv.Itoa(cfg.N) + " launches, " + strconv.Itoa(cfg.MinSamples) + " samples each"
	if cfg.Bench {
		what += ", bench each"
	}
	rec := m.recorder(what)
	return func() tea.Msg {
		defer cancel()
		rec()
		return RepeatResultMsg{Err: ctl.Repeat(ctx, cfg)}
	}
}

// repeatResult applies the answer of a repeat; after a confirmed quit it
// returns the command that quits.
func (m *Model) repeatResult(r RepeatResultMsg) tea.Cmd {
	stopped, quit, launches := m.rep.stopped, m.rep.quitWhen, m.rep.prog.N
	m.rep.cancel, m.rep.running, m.rep.stopped, m.rep.quitWhen = nil, false, false, false
	m.rep.hasProg = false
	if m.modal == modalStop && m.stopWhat == "repeat" {
		m.modal = modalNone // the question is moot
	}
	switch {
	case r.Err == nil && launches > 0 && launches < compare.MinLaunches:
		m.flash("repeat done: it made "+strconv.Itoa(launches)+" launches; a verdict needs "+strconv.Itoa(compare.MinLaunches)+" of each configuration (x, c says how many there are)", style.Warn)
	case r.Err == nil:
		m.flash("repeat done: x, then c compares against the series", style.OK)
	case stopped && errors.Is(r.Err, context.Canceled):
		m.flash("repeat stopped", style.Warn)
	default:
		m.flash("repeat failed: "+errText(r.Err), style.Crit)
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

// repeatArmText is the answer to a first q while a repeat runs.
const repeatArmText = "a repeat is running: q again stops it, then quits once its relaunch is done"

// repeatQuitText is the answer to a confirmed quit while a repeat runs.
const repeatQuitText = "stopping the repeat: waiting for the relaunch to finish (q again quits now)"

// repeatQuit answers a confirmed quit (a second q, or ctrl+c) while a
// repeat started here runs: quitting at once would cancel a relaunch
// halfway and strand the server killed, so it stops the repeat and quits
// when RepeatControl.Run returns (repeatResult); pressed again, it quits
// now.
func (m *Model) repeatQuit() tea.Cmd {
	if m.rep.quitWhen {
		m.quitting = true
		return tea.Quit
	}
	m.rep.quitWhen = true
	m.flash(repeatQuitText, style.Warn)
	if m.rep.stopped || m.rep.cancel == nil {
		return nil // stopping already
	}
	m.rep.cancel()
	m.rep.stopped = true
	return m.recordCmd("stop repeat (quit)")
}

// applyRepeat folds a repeat's progress event.
func (m *Model) applyRepeat(p event.RepeatProgress) {
	switch p.Phase {
	case sessions.RepeatDone, sessions.RepeatStopped, sessions.RepeatFailed:
		m.rep.hasProg = false
		return
	}
	for _, f := range []*string{&p.Series, &p.Exp, &p.Phase, &p.Err} {
		*f = sanitize.String(*f)
	}
	m.rep.prog, m.rep.hasProg = p, true
}

// repeatBanner is the repeat's line under the header: "repeat 2/5 of e1:
// warming up 3/10  (R stops)".
func (m *Model) repeatBanner() []banner {
	if !m.rep.hasProg {
		return nil
	}
	p := &m.rep.prog
	head := "repeat " + strconv.Itoa(p.I) + "/" + strconv.Itoa(p.N)
	text := head
	if p.Series != "" {
		text += " of " + p.Series
	}
	phase := p.Phase
	if p.Need > 0 && (p.Phase == sessions.RepeatMeasuring || p.Phase == sessions.RepeatWarmingUp) {
		phase += " " + strconv.Itoa(p.Samples) + "/" + strconv.Itoa(p.Need)
	}
	text += ": " + phase
	short := head + ": " + phase
	if p.Exp != "" {
		text += " (" + p.Exp + ")"
	}
	switch {
	case m.rep.quitWhen:
		text += "  (stopping to quit; q quits now)"
	case m.rep.running:
		text += "  (R stops)"
	}
	return []banner{{text: text, short: short, tone: style.Accent}}
}

// repeatBox is the repeat form's title and content for inner width iw.
func (m *Model) repeatBox(iw int) (string, []string) {
	title := "repeat"
	if cur := m.exp.Ledger().Current(); cur != nil {
		title = "repeat " + sanitize.String(cur.ID) + " " + sanitize.String(cur.Name)
	}
	_, bad := repeatConfig(m.rep.form)
	hints := []string{
		"Relaunches the current configuration N more times, waiting for that many steady tok/s samples each; every launch is one sample of the A/A (launch-to-launch) noise the compare view shows next to its verdicts.",
	}
	return title, m.renderForm(m.rep.form, iw, hints, bad, "enter", "start", "tab", "field", "left/right", "choose", "esc", "cancel")
}
