package tui

import (
	"context"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/journal"
)

// Experiments in the cockpit: e starts or ends one, n writes a note, x
// opens the experiments panel (experiments_panel.go). What the screen
// shows comes only from events (exp-start, exp-fingerprint, exp-update,
// exp-end, note, tok-rate ...) folded into a journal.Ledger, so a replayed
// journal shows the same; Options.Experiments only starts the changes.

// ExperimentControl starts and ends experiments and writes notes;
// *sessions.Lab implements it. Start, End, Update and Note do I/O (they
// write the journal, Start captures the fingerprint in the background) and
// run only inside a tea.Cmd; they publish their events on the stream (which
// is what the screen shows) and also return them for the key's answer.
type ExperimentControl interface {
	// Start opens an experiment named name ("" lets it choose "<profile> @
	// <short commit>") with an optional hypothesis. It fails when one is
	// open already.
	Start(ctx context.Context, name, hypothesis string) (journal.ExperimentStart, error)
	// End closes the open experiment with an optional conclusion and
	// returns it with its result; it fails when none is open.
	End(ctx context.Context, conclusion string) (journal.ExperimentEnd, error)
	// Update changes an experiment's name, hypothesis or conclusion after
	// the fact (the conclusion of one that ended by itself).
	Update(ctx context.Context, u journal.ExperimentUpdate) error
	// Note writes a timestamped note, tied to the open experiment if any.
	Note(ctx context.Context, text string) (journal.Note, error)
	// Key records a key that caused an action ("y", "kill sglang pid
	// 4123"). It must not block for long: it is called from tea.Cmds.
	Key(key, action string)
}

// ExperimentStartedMsg is the answer of a Start made with e.
type ExperimentStartedMsg struct {
	Start journal.ExperimentStart
	Err   error
}

// ExperimentEndedMsg is the answer of an End made with e.
type ExperimentEndedMsg struct {
	End journal.ExperimentEnd
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
	Note journal.Note
	Err  error
}

// Experiment overlays, after the git ones (gitoverlay.go).
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

	ledger  journal.Ledger
	gen     int // counts ledger changes; the provisional result is cached per gen
	provGen int
	prov    journal.Result

	jst   journal.Status // the recorder's latest status, sanitised
	hasJ  bool
	doing string // the call in flight: "starting an experiment"; "" when none

	// pending is an experiment that ended by a kill, relaunch or exit with
	// no conclusion while another overlay had the keys: its conclusion
	// prompt opens when that one closes.
	pending string

	// The overlay's state.
	form *expForm

	// The panel (x).
	open    bool
	cursor  int  // index into the ledger's experiments
	touched bool // the user moved the cursor: until then it follows the newest
	top     int  // first row shown
	height  int  // rows at the last render (the page size)
}

// expForm is an experiment overlay's fields.
type expForm struct {
	exp    string // the experiment it ends or concludes ("" for a start or a note)
	inputs []textinput.Model
	labels []string
	focus  int
}

// provisional is the open experiment's result so far, recomputed only
// when the ledger changed since the last call.
func (x *expState) provisional() journal.Result {
	if x.provGen != x.gen {
		x.prov, x.provGen = x.ledger.Provisional(), x.gen
	}
	return x.prov
}

// setJournal stores the recorder's status, sanitised.
func (x *expState) setJournal(s journal.Status) {
	s.Path, s.Err = sanitizeString(s.Path), sanitizeString(s.Err)
	x.jst, x.hasJ = s, true
}

// noJournalText is e's and n's answer without an ExperimentControl.
const noJournalText = "no journal: experiments and notes need one (drop --no-journal)"

// expUnavailable is why e or n cannot act; what names it for a replay.
func expUnavailable(what string) func(*Model) string {
	return func(m *Model) string {
		switch {
		case m.opts.ReadOnly:
			return "read-only replay: " + what + " would change the journal"
		case m.exp.ctl == nil:
			return noJournalText
		case m.exp.doing != "":
			return m.exp.doing + " ..."
		}
		return ""
	}
}

// expBindings sets the experiment keys' Unavailable funcs and help.
func expBindings(k *KeyMap) {
	k.Experiment.Unavailable = expUnavailable("an experiment")
	k.Experiment.Long = "start an experiment (name, hypothesis), or end the open one (conclusion)"
	k.Note.Unavailable = expUnavailable("a note")
	k.Note.Long = "write a note into the journal (and the open experiment)"
	k.Experiments.Long = "experiments panel (tok/s)"
}

// recorder returns a func, run inside a tea.Cmd, that records the key
// being handled as the cause of action in the journal (a no-op without
// one).
func (m *Model) recorder(action string) func() {
	x, k := m.exp.ctl, m.pressed
	if x == nil || m.opts.ReadOnly {
		return func() {}
	}
	action = sanitizeString(action)
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

// newInput is a text field for an experiment overlay.
func (m *Model) newInput(value, placeholder string) textinput.Model {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = placeholder
	in.CharLimit = 500
	in.SetStyles(m.inputStyles())
	in.SetValue(value)
	in.CursorEnd()
	return in
}

// openExperiment opens the start form, or the end form when one is open.
func (m *Model) openExperiment() tea.Cmd {
	m.showHelp = false
	if cur := m.exp.ledger.Current(); cur != nil {
		m.exp.form = &expForm{exp: cur.ID, labels: []string{"conclusion"},
			inputs: []textinput.Model{m.newInput("", "what did it show? (optional)")}}
		m.modal = modalExpEnd
		return m.exp.form.setFocus(0)
	}
	m.exp.form = &expForm{labels: []string{"name", "hypothesis"}, inputs: []textinput.Model{
		m.newInput(m.defaultExpName(), "a short name"),
		m.newInput("", "what do you expect, and why? (optional)"),
	}}
	m.modal = modalExpStart
	return m.exp.form.setFocus(0)
}

// defaultExpName is "<profile> @ <short HEAD>" from the latest
// server.Status and HEAD, as far as they are known.
func (m *Model) defaultExpName() string {
	p := ""
	if m.srv.hasSt {
		p = m.srv.st.Profile
		if p == "" {
			p = m.srv.st.Preset
		}
	}
	if m.srv.next != "" {
		p = m.srv.next
	}
	h := m.headShort
	if h == "" {
		h, _, _ = strings.Cut(m.head, " ")
	}
	switch {
	case p != "" && h != "":
		return p + " @ " + h
	case h != "":
		return "@ " + h
	}
	return p
}

// openNote opens the note form.
func (m *Model) openNote() tea.Cmd {
	m.showHelp = false
	m.exp.form = &expForm{labels: []string{"note"}, inputs: []textinput.Model{m.newInput("", "free text; enter saves")}}
	m.modal = modalNote
	return m.exp.form.setFocus(0)
}

// openConclude opens the conclusion prompt for experiment id, which
// ended without one.
func (m *Model) openConclude(id string) tea.Cmd {
	m.exp.pending = ""
	m.exp.form = &expForm{exp: id, labels: []string{"conclusion"},
		inputs: []textinput.Model{m.newInput("", "what did it show? (esc skips)")}}
	m.modal = modalExpConclude
	return m.exp.form.setFocus(0)
}

func (f *expForm) setFocus(i int) tea.Cmd {
	f.focus = (i + len(f.inputs)) % len(f.inputs)
	var cmd tea.Cmd
	for j := range f.inputs {
		if j == f.focus {
			cmd = f.inputs[j].Focus()
		} else {
			f.inputs[j].Blur()
		}
	}
	return cmd
}

func (f *expForm) value(i int) string { return strings.TrimSpace(f.inputs[i].Value()) }

func (m *Model) closeExpModal() {
	m.modal, m.exp.form = modalNone, nil
}

// expEnded handles an exp-end event: one ended by a kill, a relaunch or
// the server's exit without a conclusion gets the conclusion banner (e
// then writes it). Never in a replay.
func (m *Model) expEnded(e journal.ExperimentEnd) {
	if m.opts.ReadOnly || m.exp.ctl == nil || e.Conclusion != "" {
		return
	}
	switch e.Trigger {
	case journal.TriggerKill, journal.TriggerRelaunch, journal.TriggerExit:
		m.exp.pending = e.Exp
	}
}

// expUpdated handles an exp-update event: a conclusion given for the
// experiment whose prompt is pending, or open and still empty, answers it.
func (m *Model) expUpdated(u journal.ExperimentUpdate) {
	if u.Conclusion == "" {
		return
	}
	if m.exp.pending == u.Exp {
		m.exp.pending = ""
	}
	if m.modal == modalExpConclude && m.exp.form.exp == u.Exp && m.exp.form.value(0) == "" {
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
	if id == "" || m.opts.ReadOnly {
		return nil
	}
	e := m.exp.ledger.Find(id)
	if e == nil {
		return nil
	}
	head := join(sanitizeString(id), sanitizeString(e.Name)) + " ended"
	if e.EndedBy != "" {
		head += " (" + sanitizeString(string(e.EndedBy)) + ")"
	}
	if e.Result.N > 0 {
		head += ": " + resultText(e.Result)
	}
	forms := []string{
		head + "  (e: write its conclusion, esc: dismiss)",
		head + "  (e: conclusion)",
		sanitizeString(id) + " ended  (e: conclusion)",
	}
	text := forms[len(forms)-1]
	for _, f := range forms {
		if textWidth(f) <= w {
			text = f
			break
		}
	}
	return []banner{{text: text, tone: toneAccent}}
}

// expKey handles a key while an experiment overlay is open.
func (m *Model) expKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	f := m.exp.form
	switch msg.String() {
	case "esc", "ctrl+c":
		what := map[modal]string{modalExpStart: "experiment not started", modalExpEnd: "experiment not ended",
			modalExpConclude: "conclusion skipped", modalNote: "note not saved"}[m.modal]
		m.closeExpModal()
		m.flash(what, toneDim)
		return m, nil
	case "tab", "down":
		return m, f.setFocus(f.focus + 1)
	case "shift+tab", "up":
		return m, f.setFocus(f.focus - 1)
	case "enter":
		return m, m.expSubmit()
	}
	var cmd tea.Cmd
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(msg)
	return m, cmd
}

// expPaste sends a paste to the focused field.
func (m *Model) expPaste(msg tea.PasteMsg) tea.Cmd {
	f := m.exp.form
	var cmd tea.Cmd
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(msg)
	return cmd
}

// expSubmit runs the open overlay's call in a tea.Cmd.
func (m *Model) expSubmit() tea.Cmd {
	f := m.exp.form
	md := m.modal
	if m.exp.ctl == nil || m.opts.ReadOnly { // the overlays never open then; be safe
		m.closeExpModal()
		return nil
	}
	if md == modalExpConclude && f.value(0) == "" {
		m.closeExpModal()
		m.flash("conclusion skipped", toneDim)
		return nil
	}
	if md == modalNote && f.value(0) == "" {
		m.closeExpModal()
		m.flash("empty note: nothing saved", toneDim)
		return nil
	}
	if m.exp.doing != "" {
		m.flash(m.exp.doing+" ...: try again when it ends", toneWarn)
		return nil
	}
	m.closeExpModal()
	x, ctx := m.exp.ctl, m.ctx
	switch md {
	case modalExpStart:
		name, hyp := f.value(0), f.value(1)
		rec := m.recorder(join("start experiment", name))
		m.exp.doing = "starting an experiment"
		return func() tea.Msg {
			rec()
			s, err := x.Start(ctx, name, hyp)
			return ExperimentStartedMsg{Start: s, Err: err}
		}
	case modalExpEnd:
		conclusion := f.value(0)
		rec := m.recorder("end experiment " + f.exp)
		m.exp.doing = "ending " + sanitizeString(f.exp)
		return func() tea.Msg {
			rec()
			e, err := x.End(ctx, conclusion)
			return ExperimentEndedMsg{End: e, Err: err}
		}
	case modalExpConclude:
		u := journal.ExperimentUpdate{Exp: f.exp, Conclusion: f.value(0)}
		rec := m.recorder("conclude experiment " + f.exp)
		m.exp.doing = "saving the conclusion of " + sanitizeString(f.exp)
		return func() tea.Msg {
			rec()
			return ExperimentUpdatedMsg{Exp: u.Exp, Err: x.Update(ctx, u)}
		}
	case modalNote:
		text := f.value(0)
		rec := m.recorder("note")
		m.exp.doing = "saving a note"
		return func() tea.Msg {
			rec()
			n, err := x.Note(ctx, text)
			return NoteSavedMsg{Note: n, Err: err}
		}
	}
	return nil
}

// expResult applies the answer of an experiment call.
func (m *Model) expResult(msg tea.Msg) {
	m.exp.doing = ""
	switch r := msg.(type) {
	case ExperimentStartedMsg:
		if r.Err != nil {
			m.flash("experiment not started: "+errText(r.Err), toneCrit)
			return
		}
		m.flash("started "+join(sanitizeString(r.Start.ID), sanitizeString(r.Start.Name))+" (x lists experiments)", toneOK)
	case ExperimentEndedMsg:
		if r.Err != nil {
			m.flash("experiment not ended: "+errText(r.Err), toneCrit)
			return
		}
		m.flash("ended "+sanitizeString(r.End.Exp)+": "+resultText(r.End.Result), toneOK)
	case ExperimentUpdatedMsg:
		if r.Err != nil {
			m.flash("conclusion of "+sanitizeString(r.Exp)+" not saved: "+errText(r.Err), toneCrit)
			return
		}
		m.flash("conclusion of "+sanitizeString(r.Exp)+" saved", toneOK)
	case NoteSavedMsg:
		if r.Err != nil {
			m.flash("note not saved: "+errText(r.Err), toneCrit)
			return
		}
		m.flash("note saved", toneOK)
	}
}

// resultText is a result in one line: "88.9 tok/s [87.1, 90.2] n=24",
// "88.9 tok/s (n<6, no interval) n=4", "no tok/s samples".
func resultText(r journal.Result) string {
	if r.N == 0 {
		return "no tok/s samples"
	}
	return medianText(r) + " tok/s " + intervalText(r) + " n=" + strconv.Itoa(r.N)
}

// medianText is the median to one decimal.
func medianText(r journal.Result) string { return strconv.FormatFloat(r.Median, 'f', 1, 64) }

// intervalText is "[87.1, 90.2]", or why there is none: "(n<6)" when too
// few samples, "(+-inf)" otherwise. ASCII: "±" is ambiguous-width.
func intervalText(r journal.Result) string {
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
		id, name := sanitizeString(cur.ID), sanitizeString(cur.Name)
		rate := ""
		if r := m.exp.provisional(); r.N > 0 {
			rate = medianText(r) + " tok/s"
		}
		out = append(out, seg{text: join(join(id, name), rate), short: join(id, rate), tone: toneAccent, prio: prioExp})
	}
	exp, out = out, nil
	if m.exp.hasJ {
		j := &m.exp.jst
		if j.Err == "" {
			out = append(out, seg{text: "rec", tone: toneDim, prio: prioRec})
		} else {
			why := j.Err
			if i := strings.LastIndex(why, ": "); i >= 0 && i+2 < len(why) {
				why = why[i+2:] // "write /x.jsonl: no space left on device": the cause
			}
			var held []string
			if j.Pending > 0 {
				held = append(held, byteSize(int64(j.Pending))+" held")
			}
			if j.Dropped > 0 {
				held = append(held, plural(j.Dropped, "event")+" lost")
			}
			text := "journal: " + why
			if len(held) > 0 {
				text += " (" + strings.Join(held, ", ") + ")"
			}
			out = append(out, seg{text: text, short: "journal: " + why, tone: toneWarn, prio: prioJournal})
		}
	}
	return exp, out
}

// byteSize is n bytes in decimal units: "512 B", "3.4 kB", "1.2 MB".
func byteSize(n int64) string {
	f := float64(n)
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1000*1000:
		return strconv.FormatFloat(f/1e3, 'f', 1, 64) + " kB"
	case n < 1000*1000*1000:
		return strconv.FormatFloat(f/1e6, 'f', 1, 64) + " MB"
	}
	return strconv.FormatFloat(f/1e9, 'f', 1, 64) + " GB"
}

// expModalBox is an experiment overlay's title, content and inner width
// for a w-cell screen with avail rows between header and footer.
func (m *Model) expModalBox(w, avail int) (title string, body []string, iw int) {
	st := &m.styles
	f := m.exp.form
	iw = min(w-4, 76)
	lw := 0
	for _, l := range f.labels {
		lw = max(lw, len(l))
	}
	lw += 2
	fields := func() []string {
		var out []string
		for i, l := range f.labels {
			lt := st.Dim
			if i == f.focus {
				lt = st.Accent
			}
			in := &f.inputs[i]
			in.SetWidth(max(iw-lw-1, 1))
			out = append(out, lt.Render(padRight(l, lw))+truncateStyled(in.View(), iw-lw))
		}
		return out
	}
	var ps []para
	var keys []string
	switch m.modal {
	case modalExpStart:
		title = "start an experiment"
		body = fields()
		ps = append(ps, para{text: "Records the fingerprint now: git HEAD and dirty patch, launch command and env, versions, GPU clocks and PCIe.", tone: toneDim})
		keys = []string{"enter", "start", "tab", "field", "esc", "cancel"}
	case modalExpEnd, modalExpConclude:
		e := m.exp.ledger.Find(f.exp)
		name := ""
		if e != nil {
			name = sanitizeString(e.Name)
		}
		id := sanitizeString(f.exp)
		var r journal.Result
		label := "so far"
		if m.modal == modalExpEnd {
			title = "end " + join(id, name)
			r = m.exp.provisional()
			keys = []string{"enter", "end", "esc", "cancel"}
		} else {
			title = join(id, name) + " ended"
			if e != nil {
				r = e.Result
				if how := endedHow(e.EndedBy); how != "" {
					title += " (" + how + ")"
				}
			}
			label = "result"
			keys = []string{"enter", "save", "esc", "skip"}
		}
		body = append(body, st.Dim.Render(padRight(label, lw))+resultText(r))
		if r.Dropped > 0 {
			body = append(body, st.Dim.Render(padRight("", lw)+strconv.Itoa(r.Dropped)+" warm-up or idle samples left out"))
		}
		body = append(body, "")
		body = append(body, fields()...)
	case modalNote:
		title = "note"
		if cur := m.exp.ledger.Current(); cur != nil {
			title = "note on " + sanitizeString(cur.ID)
		}
		body = fields()
		keys = []string{"enter", "save", "esc", "cancel"}
	}
	if len(ps) > 0 {
		body = append(body, "")
		body = append(body, m.renderParas(ps, iw)...)
	}
	body = append(body, "", m.prompt(iw, keys...))
	return title, m.fitLines(body, avail-2, 1, iw), iw
}

// expModalHelp is the footer while an experiment overlay has the keys.
func (m *Model) expModalHelp() [][2]string {
	switch m.modal {
	case modalExpStart:
		return [][2]string{{"enter", "start"}, {"tab/up/down", "field"}, {"esc", "cancel"}}
	case modalExpEnd:
		return [][2]string{{"enter", "end the experiment"}, {"esc", "cancel"}}
	case modalExpConclude:
		return [][2]string{{"enter", "save the conclusion"}, {"esc", "skip"}}
	}
	return [][2]string{{"enter", "save"}, {"esc", "cancel"}}
}

// endedHow says how an experiment ended, for its state column and
// titles: "killed", "relaunched", "exited", "quit", "ended" (by e).
func endedHow(t journal.Trigger) string {
	switch t {
	case "":
		return ""
	case journal.TriggerKey:
		return "ended"
	case journal.TriggerKill:
		return "killed"
	case journal.TriggerRelaunch:
		return "relaunched"
	case journal.TriggerExit:
		return "exited"
	case journal.TriggerQuit:
		return "quit"
	}
	return sanitizeString(string(t))
}
