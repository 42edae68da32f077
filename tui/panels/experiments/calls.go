package experiments

import (
	"strconv"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// StartedMsg is the answer of a StartExperiment made with e.
type StartedMsg struct {
	Start event.ExperimentStart
	Err   error
}

// EndedMsg is the answer of an EndExperiment made with e.
type EndedMsg struct {
	End event.ExperimentEnd
	Err error
}

// UpdatedMsg is the answer of the conclusion typed for an experiment that
// ended by itself (or by a kill or relaunch), or rewritten with w.
type UpdatedMsg struct {
	Exp string // the experiment's id
	Err error
}

// NoteSavedMsg is the answer of a note written with n.
type NoteSavedMsg struct {
	Note event.Note
	Err  error
}

// BaselineMsg is the answer of a baseline mark made with B.
type BaselineMsg struct {
	Exp string // the experiment marked; "" when the mark was cleared
	Err error
}

// StartExperiment starts an experiment named name ("" leaves the name to
// the Control) with hypothesis hyp, in a tea.Cmd; shown is the name as the
// form showed it, for the key's record. Its answer is a StartedMsg.
func (p *Panel) StartExperiment(name, hyp, shown string) tea.Cmd {
	x, ctx := p.Ctl, p.ctx()
	rec := p.record(component.JoinWords("start experiment", shown))
	p.doing = "starting an experiment"
	return func() tea.Msg {
		rec()
		s, err := x.StartExperiment(ctx, name, hyp)
		return StartedMsg{Start: s, Err: err}
	}
}

// EndExperiment ends the open experiment, id, with conclusion, in a
// tea.Cmd. Its answer is an EndedMsg.
func (p *Panel) EndExperiment(id, conclusion string) tea.Cmd {
	x, ctx := p.Ctl, p.ctx()
	rec := p.record("end experiment " + id)
	p.doing = "ending " + sanitize.String(id)
	return func() tea.Msg {
		rec()
		e, err := x.EndExperiment(ctx, conclusion)
		return EndedMsg{End: e, Err: err}
	}
}

// Conclude writes experiment id's conclusion, in a tea.Cmd. Its answer
// is an UpdatedMsg.
func (p *Panel) Conclude(id, conclusion string) tea.Cmd {
	x, ctx := p.Ctl, p.ctx()
	u := event.ExperimentUpdate{Exp: id, Conclusion: conclusion}
	rec := p.record("conclude experiment " + id)
	p.doing = "saving the conclusion of " + sanitize.String(id)
	return func() tea.Msg {
		rec()
		return UpdatedMsg{Exp: u.Exp, Err: x.UpdateExperiment(ctx, u)}
	}
}

// WriteNote writes a note, in a tea.Cmd. Its answer is a NoteSavedMsg.
func (p *Panel) WriteNote(text string) tea.Cmd {
	x, ctx := p.Ctl, p.ctx()
	rec := p.record("note")
	p.doing = "saving a note"
	return func() tea.Msg {
		rec()
		n, err := x.Note(ctx, text)
		return NoteSavedMsg{Note: n, Err: err}
	}
}

// toggleBaseline marks the selected experiment as the baseline, or clears
// the mark when it is the baseline already (B), in a tea.Cmd.
func (p *Panel) toggleBaseline() tea.Cmd {
	e := p.selExp()
	id := e.ID
	if id == p.baselineID() {
		id = ""
	}
	ctl, ctx := p.Measure, p.ctx()
	what := "baseline " + e.ID
	if id == "" {
		what = "clear baseline"
	}
	rec := p.record(what)
	p.doing = "marking the baseline"
	return func() tea.Msg {
		rec()
		return BaselineMsg{Exp: id, Err: ctl.Baseline(ctx, id)}
	}
}

// Result applies the answer of an experiment call or a baseline mark
// (StartedMsg, EndedMsg, UpdatedMsg, NoteSavedMsg, BaselineMsg): the call
// is no longer in flight, and the status line says how it went.
func (p *Panel) Result(msg tea.Msg) {
	p.doing = ""
	switch r := msg.(type) {
	case StartedMsg:
		if r.Err != nil {
			p.flash("experiment not started: "+style.ErrText(r.Err), style.Crit)
			return
		}
		p.flash("started "+component.JoinWords(sanitize.String(r.Start.ID), sanitize.String(r.Start.Name))+" (x lists experiments)", style.OK)
	case EndedMsg:
		if r.Err != nil {
			p.flash("experiment not ended: "+style.ErrText(r.Err), style.Crit)
			return
		}
		p.flash("ended "+sanitize.String(r.End.Exp)+": "+ResultText(r.End.Result), style.OK)
	case UpdatedMsg:
		if r.Err != nil {
			p.flash("conclusion of "+sanitize.String(r.Exp)+" not saved: "+style.ErrText(r.Err), style.Crit)
			return
		}
		p.flash("conclusion of "+sanitize.String(r.Exp)+" saved", style.OK)
	case NoteSavedMsg:
		if r.Err != nil {
			p.flash("note not saved: "+style.ErrText(r.Err), style.Crit)
			return
		}
		if utf8.RuneCountInString(r.Note.Text) >= TextLimit {
			// The flash of the cut was replaced by later keys: say it again.
			p.flash("note saved, cut to "+strconv.Itoa(TextLimit)+" characters", style.Warn)
			return
		}
		p.flash("note saved", style.OK)
	case BaselineMsg:
		switch {
		case r.Err != nil:
			p.flash("baseline not marked: "+style.ErrText(r.Err), style.Crit)
		case r.Exp == "":
			p.flash("baseline cleared: deltas are against the first experiment with a result", style.OK)
		default:
			p.flash(sanitize.String(r.Exp)+" is the baseline: the header shows the open experiment's delta against it", style.OK)
		}
	}
}

// Pending is the experiment whose conclusion banner shows (e writes its
// conclusion), "" when none.
func (p *Panel) Pending() string { return p.pending }

// Dismiss drops the conclusion banner (esc, or its prompt opened).
func (p *Panel) Dismiss() { p.pending = "" }

// Ended handles an exp-end event at at: one ended by a kill, a relaunch
// or the server's exit without a conclusion gets the conclusion banner (e
// then writes it) for ConcludeWindow from at, or from the panel's clock if
// that is later (an event behind the clock still shows it); any end
// replaces an earlier banner. Never in a replay or without a Control.
func (p *Panel) Ended(e event.ExperimentEnd, at time.Time) {
	if p.Replay || p.Ctl == nil {
		return
	}
	p.pending = ""
	if e.Conclusion != "" {
		return
	}
	switch e.Trigger {
	case event.TriggerKill, event.TriggerRelaunch, event.TriggerExit:
		p.pending, p.pendingAt = e.Exp, at
		if now := p.now(); now.After(at) {
			p.pendingAt = now
		}
	}
}

// Expire drops the conclusion banner once ConcludeWindow has passed since
// its experiment ended, by the panel's clock.
func (p *Panel) Expire() {
	if p.pending != "" && !p.now().Before(p.pendingAt.Add(ConcludeWindow)) {
		p.pending = ""
	}
}

// Updated handles an exp-update event: a conclusion given for the
// experiment whose banner shows answers it.
func (p *Panel) Updated(u event.ExperimentUpdate) {
	if u.Conclusion != "" && p.pending == u.Exp {
		p.pending = ""
	}
}

// Banners is the conclusion banner of an experiment that ended by a kill,
// a relaunch or the server's exit with no conclusion: its result, and
// that e writes the conclusion, in the first of its forms that fits w
// cells. It is a banner, not an overlay: an overlay opening by itself
// seconds after a relaunch would take keys typed for something else. None
// while another cockpit drives, or in a replay.
func (p *Panel) Banners(w int) []component.Banner {
	id := p.pending
	if id == "" || p.Replay || p.watching() {
		return nil
	}
	e := p.ledger.Find(id)
	if e == nil {
		return nil
	}
	head := component.JoinWords(sanitize.String(id), sanitize.String(e.Name)) + " ended"
	if e.EndedBy != "" {
		head += " (" + sanitize.String(string(e.EndedBy)) + ")"
	}
	if e.Result.N > 0 {
		head += ": " + ResultText(e.Result)
	}
	within := "(e within " + style.ShortDur(ConcludeWindow) + ": "
	forms := []string{
		head + "  " + within + "write its conclusion, esc: dismiss)",
		head + "  " + within + "conclusion, esc: dismiss)",
		head + "  " + within + "conclusion)",
		sanitize.String(id) + " ended  " + within + "conclusion)",
		sanitize.String(id) + " ended  (e: conclusion)",
	}
	text := forms[len(forms)-1]
	for _, f := range forms {
		if style.Width(f) <= w {
			text = f
			break
		}
	}
	return []component.Banner{{Text: text, Tone: style.Accent}}
}

// WarmingUp says why the open experiment e has no result yet when its
// samples so far all fell in the warm-up that the ledger's statistics leave
// out (ledger.SteadyState: the first ledger.WarmupTime, and at least the
// first ledger.WarmupSamples, after ready or after the experiment's start,
// whichever is later): "warming up: the first samples after ready are
// left out". "" when e is not open, has a result (r), or is past its
// warm-up.
func (p *Panel) WarmingUp(e *ledger.Experiment, r event.ExperimentResult) string {
	if !e.Open() || r.N > 0 {
		return ""
	}
	var srv ServerState
	if p.Server != nil {
		srv = p.Server()
	}
	if srv.Loading && !srv.Since.Before(e.Started.Add(-time.Minute)) {
		// Just launched: no samples yet, and none is expected before ready.
		return "waiting for the server to be ready (samples count from then)"
	}
	ref, after := e.Started, " after the start"
	switch ready := srv.Ready; {
	case ready.IsZero():
		after = "" // the ledger counts from the first sample
		ref = time.Time{}
	case ready.After(e.Started):
		ref, after = ready, " after ready"
	}
	inWindow := !ref.IsZero() && p.now().Before(ref.Add(ledger.WarmupTime))
	if !inWindow && (r.Dropped == 0 || r.Dropped > ledger.WarmupSamples && !ref.IsZero()) {
		return ""
	}
	return "warming up: the first samples" + after + " are left out"
}
