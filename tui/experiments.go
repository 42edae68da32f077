package tui

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Experiments in the cockpit: e starts or ends one, n writes a note (their
// overlays: experiments_forms.go), x opens the experiments panel
// (experiments_panel.go), where w writes or replaces the selected
// experiment's conclusion, space marks experiments, B marks the baseline
// and c compares (compare.go). What the screen shows comes only from events
// (exp-start, exp-fingerprint, exp-update, exp-end, note, tok-rate ...)
// folded into a ledger.Ledger, so a replayed journal shows the same;
// Options.Experiments only starts the changes.

// ExperimentControl starts and ends experiments and writes notes;
// *sessions.Lab implements it. Start, End, Update and Note do I/O (they
// write the journal, StartExperiment captures the fingerprint in the background) and
// run only inside a tea.Cmd; they publish their events on the stream (which
// is what the screen shows) and also return them for the key's answer.
type ExperimentControl interface {
	// StartExperiment opens an experiment named name ("" lets it choose
	// "<profile> @ <short commit>") with an optional hypothesis, ending the
	// open one first.
	StartExperiment(ctx context.Context, name, hypothesis string) (event.ExperimentStart, error)
	// EndExperiment closes the open experiment with an optional conclusion
	// and returns it with its result; it fails when none is open.
	EndExperiment(ctx context.Context, conclusion string) (event.ExperimentEnd, error)
	// UpdateExperiment changes an experiment's name, hypothesis or
	// conclusion after the fact (the conclusion of one that ended by
	// itself).
	UpdateExperiment(ctx context.Context, u event.ExperimentUpdate) error
	// Note writes a timestamped note, tied to the open experiment if any.
	Note(ctx context.Context, text string) (event.Note, error)
	// Key records a key that caused an action ("y", "kill sglang pid
	// 4123"). It must not block for long: it is called from tea.Cmds.
	Key(key, action string)
}

// ExperimentStartedMsg is the answer of a Start made with e.
type ExperimentStartedMsg struct {
	Start event.ExperimentStart
	Err   error
}

// ExperimentEndedMsg is the answer of an End made with e.
type ExperimentEndedMsg struct {
	End event.ExperimentEnd
	Err error
}

// ExperimentUpdatedMsg is the answer of the conclusion typed for an
// experiment that ended by itself (or by a kill or relaunch).
type ExperimentUpdatedMsg struct {
	Exp string // the experiment's id
	Err error
}

// NoteSavedMsg is the answer of a Note made with n.
type NoteSavedMsg struct {
	Note event.Note
	Err  error
}

// Experiment overlays, after the server's (control.go).
const (
	modalExpStart    modal = 200 + iota // e with none open: name and hypothesis
	modalExpEnd                         // e with one open: its tok/s so far and a conclusion
	modalExpConclude                    // an experiment ended by a kill, relaunch or exit: its conclusion
	modalNote                           // n: one line of text
)

// isExpModal reports whether md is one of the experiment overlays.
func isExpModal(md modal) bool { return md >= modalExpStart && md <= modalNote }

// expState is the experiments' side of the model.
type expState struct {
	ctl ExperimentControl // Options.Experiments; nil: no journal (or a replay)

	ledger  ledger.Ledger
	gen     int // counts ledger changes; the provisional result is cached per gen
	provGen int
	prov    event.ExperimentResult

	jst   event.JournalStatus // the recorder's latest status, sanitised
	hasJ  bool
	doing string // the call in flight: "starting an experiment"; "" when none

	// pending is an experiment that ended by a kill, relaunch or exit with
	// no conclusion, at pendingAt: its conclusion banner shows, and e opens
	// its conclusion prompt, until concludeWindow has passed (model time),
	// the next experiment ends, or esc dismisses it.
	pending   string
	pendingAt time.Time

	// The overlay's state.
	form *expForm

	// The panel (x).
	open    bool
	cursor  int  // index into the ledger's experiments
	touched bool // the user moved the cursor: until then it follows the newest
	top     int  // first row shown
	height  int  // rows at the last render (the page size)
	// marked are the experiments marked with space (ids, at most two, in
	// the order marked): c compares them.
	marked []string
}

// provisional is the open experiment's result so far, recomputed only
// when the ledger changed since the last call.
func (x *expState) provisional() event.ExperimentResult {
	if x.provGen != x.gen {
		x.prov, x.provGen = x.ledger.Provisional(), x.gen
	}
	return x.prov
}

// setJournal stores the recorder's status, sanitised.
func (x *expState) setJournal(s event.JournalStatus) {
	s.Path, s.Err = sanitize.String(s.Path), sanitize.String(s.Err)
	x.jst, x.hasJ = s, true
}

// noJournalText is e's and n's answer without an ExperimentControl.
const noJournalText = "no journal: experiments and notes need one (drop --no-journal)"

// expUnavailable is why e or n cannot act; what names it for a replay.
func expUnavailable(what string) func(*Model) string {
	return func(m *Model) string {
		switch {
		case m.opts.ReadOnly:
			return m.roPrefix() + ": " + what + " would change the journal"
		case m.watching():
			return m.watchingWhy()
		case m.exp.ctl == nil:
			return noJournalText
		case m.exp.doing != "":
			return m.exp.doing + " ..."
		}
		return ""
	}
}

// expBindings sets the experiment keys' help.
func expBindings(k *KeyMap) {
	k.Experiment.Long = "start an experiment (name, hypothesis), or end the open one (conclusion)"
	k.Note.Long = "write a note into the journal (and the open experiment)"
	k.Experiments.Long = "experiments panel (tok/s)"
	k.Conclude.Long = "x panel: write the conclusion"
}

// concludeUnavailable is why c cannot write the conclusion of the
// experiment selected in the panel.
func concludeUnavailable(m *Model) string {
	x := &m.exp
	switch {
	case !x.open:
		return "open the experiments panel first (x)"
	case m.opts.ReadOnly:
		return m.roPrefix() + ": a conclusion would change the journal"
	case m.watching():
		return m.watchingWhy()
	case x.ctl == nil:
		return noJournalText
	case x.doing != "":
		return x.doing + " ..."
	}
	i := x.sel()
	if i < 0 {
		return "no experiments yet: e starts one"
	}
	if e := &x.ledger.Experiments()[i]; e.Open() {
		return sanitize.String(e.ID) + " is still open: e ends it with a conclusion"
	}
	return ""
}

// recorder returns a func, run inside a tea.Cmd, that records the key
// being handled as the cause of action in the journal (a no-op without
// one).
func (m *Model) recorder(action string) func() {
	x, k := m.exp.ctl, m.pressed
	if x == nil || m.opts.ReadOnly {
		return func() {}
	}
	action = sanitize.String(action)
	return func() { x.Key(k, action) }
}

// recordCmd is a tea.Cmd that only records the key (an action that does
// no I/O of its own, like a profile choice).
func (m *Model) recordCmd(action string) tea.Cmd {
	if m.exp.ctl == nil || m.opts.ReadOnly {
		return nil
	}
	rec := m.recorder(action)
	return func() tea.Msg { rec(); return nil }
}

// concludeWindow is how long after an experiment ended by a kill,
// relaunch or exit its conclusion banner shows (and e writes its
// conclusion instead of starting the next experiment). Later, w in the
// experiments panel writes it.
const concludeWindow = 30 * time.Second

// expEnded handles an exp-end event at at: one ended by a kill, a
// relaunch or the server's exit without a conclusion gets the conclusion
// banner (e then writes it) for concludeWindow from at, or from the
// model's clock if that is later (an event behind the clock still shows
// it); any end replaces an earlier banner. Never in a replay.
func (m *Model) expEnded(e event.ExperimentEnd, at time.Time) {
	if m.opts.ReadOnly || m.exp.ctl == nil {
		return
	}
	m.exp.pending = ""
	if e.Conclusion != "" {
		return
	}
	switch e.Trigger {
	case event.TriggerKill, event.TriggerRelaunch, event.TriggerExit:
		m.exp.pending, m.exp.pendingAt = e.Exp, at
		if m.now.After(at) {
			m.exp.pendingAt = m.now
		}
	}
}

// expireBanner drops the conclusion banner once concludeWindow has passed
// since its experiment ended, by the model's clock.
func (m *Model) expireBanner() {
	if m.exp.pending != "" && !m.now.Before(m.exp.pendingAt.Add(concludeWindow)) {
		m.exp.pending = ""
	}
}

// expUpdated handles an exp-update event: a conclusion given for the
// experiment whose prompt is pending, or open and still empty, answers it.
func (m *Model) expUpdated(u event.ExperimentUpdate) {
	if u.Conclusion == "" {
		return
	}
	if m.exp.pending == u.Exp {
		m.exp.pending = ""
	}
	if m.modal == modalExpConclude && m.exp.form.exp == u.Exp && !m.exp.form.edit && m.exp.form.value(0) == "" {
		m.closeExpModal()
	}
}

// concludeBanner is the banner of an experiment that ended by a kill, a
// relaunch or the server's exit with no conclusion: its result, and that e
// writes the conclusion. It is a banner, not an overlay: an overlay opening
// by itself seconds after a relaunch would take keys typed for something
// else.
func (m *Model) concludeBanner(w int) []banner {
	id := m.exp.pending
	if id == "" || m.readOnly() {
		return nil
	}
	e := m.exp.ledger.Find(id)
	if e == nil {
		return nil
	}
	head := join(sanitize.String(id), sanitize.String(e.Name)) + " ended"
	if e.EndedBy != "" {
		head += " (" + sanitize.String(string(e.EndedBy)) + ")"
	}
	if e.Result.N > 0 {
		head += ": " + resultText(e.Result)
	}
	within := "(e within " + style.ShortDur(concludeWindow) + ": "
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
	return []banner{{text: text, tone: style.Accent}}
}

// expResult applies the answer of an experiment call.
func (m *Model) expResult(msg tea.Msg) {
	m.exp.doing = ""
	switch r := msg.(type) {
	case ExperimentStartedMsg:
		if r.Err != nil {
			m.flash("experiment not started: "+errText(r.Err), style.Crit)
			return
		}
		m.flash("started "+join(sanitize.String(r.Start.ID), sanitize.String(r.Start.Name))+" (x lists experiments)", style.OK)
	case ExperimentEndedMsg:
		if r.Err != nil {
			m.flash("experiment not ended: "+errText(r.Err), style.Crit)
			return
		}
		m.flash("ended "+sanitize.String(r.End.Exp)+": "+resultText(r.End.Result), style.OK)
	case ExperimentUpdatedMsg:
		if r.Err != nil {
			m.flash("conclusion of "+sanitize.String(r.Exp)+" not saved: "+errText(r.Err), style.Crit)
			return
		}
		m.flash("conclusion of "+sanitize.String(r.Exp)+" saved", style.OK)
	case NoteSavedMsg:
		if r.Err != nil {
			m.flash("note not saved: "+errText(r.Err), style.Crit)
			return
		}
		if utf8.RuneCountInString(r.Note.Text) >= textLimit {
			// The flash of the cut was replaced by later keys: say it again.
			m.flash("note saved, cut to "+strconv.Itoa(textLimit)+" characters", style.Warn)
			return
		}
		m.flash("note saved", style.OK)
	}
}

// warmingUp says why the open experiment e has no result yet when its
// samples so far all fell in the warm-up that the ledger's statistics leave
// out (ledger.SteadyState: the first ledger.WarmupTime, and at least the
// first ledger.WarmupSamples, after ready or after the experiment's start,
// whichever is later): "warming up: the first samples after ready are
// left out". "" when e is not open, has a result, or is past its warm-up.
func (m *Model) warmingUp(e *ledger.Experiment, r event.ExperimentResult) string {
	if !e.Open() || r.N > 0 {
		return ""
	}
	if m.srv.hasSt && (m.srv.st.Phase == event.PhaseLaunching || m.srv.st.Phase == event.PhaseLoading) && !m.srv.st.Since.Before(e.Started.Add(-time.Minute)) {
		// Just launched: no samples yet, and none is expected before ready.
		return "waiting for the server to be ready (samples count from then)"
	}
	ref, after := e.Started, " after the start"
	switch ready := m.readyAt(); {
	case ready.IsZero():
		after = "" // the ledger counts from the first sample
		ref = time.Time{}
	case ready.After(e.Started):
		ref, after = ready, " after ready"
	}
	inWindow := !ref.IsZero() && m.now.Before(ref.Add(ledger.WarmupTime))
	if !inWindow && (r.Dropped == 0 || r.Dropped > ledger.WarmupSamples && !ref.IsZero()) {
		return ""
	}
	return "warming up: the first samples" + after + " are left out"
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

// resultText is a result in one line: "88.9 tok/s [87.1, 90.2] n=24",
// "88.9 tok/s (n<6, no interval) n=4", "no tok/s samples".
func resultText(r event.ExperimentResult) string {
	if r.N == 0 {
		return "no tok/s samples"
	}
	return medianText(r) + " tok/s " + intervalText(r) + " n=" + strconv.Itoa(r.N)
}

// medianText is the median to one decimal.
func medianText(r event.ExperimentResult) string { return strconv.FormatFloat(r.Median, 'f', 1, 64) }

// intervalText is "[87.1, 90.2]", or why there is none: "(n<6)" when too
// few samples, "(+-inf)" otherwise. ASCII: "±" is ambiguous-width.
func intervalText(r event.ExperimentResult) string {
	switch {
	case r.Lo != nil && r.Hi != nil:
		return "[" + strconv.FormatFloat(*r.Lo, 'f', 1, 64) + ", " + strconv.FormatFloat(*r.Hi, 'f', 1, 64) + "]"
	case r.N < 6:
		return "(n<6)"
	}
	return "(+-inf)"
}

// expSegs are the header's fields for experiments and the journal: the
// open experiment with its tok/s so far (exp, the last field), and the
// recorder's state (rec, after the connection: "rec", or its write error
// in warning tone with what is held in memory).
func (m *Model) expSegs() (exp, rec []seg) {
	var out []seg
	if cur := m.exp.ledger.Current(); cur != nil {
		id, name := sanitize.String(cur.ID), sanitize.String(cur.Name)
		rate := ""
		if r := m.exp.provisional(); r.N > 0 {
			rate = medianText(r) + " tok/s"
		}
		// The live delta against the marked baseline goes with the rate,
		// in both forms: "e3 61.6 tok/s vs e1 -25.2%".
		rate = join(rate, m.baselineDelta(cur))
		out = append(out, seg{text: join(join(id, name), rate), short: join(id, rate), tone: style.Accent, prio: prioExp})
	}
	exp, out = out, nil
	if m.exp.hasJ {
		j := &m.exp.jst
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

// endedHow says how an experiment ended, for its state column and
// titles: "killed", "relaunched", "exited", "quit", "ended" (by e).
func endedHow(t event.Trigger) string {
	switch t {
	case "":
		return ""
	case event.TriggerKey:
		return "ended"
	case event.TriggerKill:
		return "killed"
	case event.TriggerRelaunch:
		return "relaunched"
	case event.TriggerExit:
		return "exited"
	case event.TriggerQuit:
		return "quit"
	case event.TriggerTakenOver:
		return "taken over"
	}
	return sanitize.String(string(t))
}
