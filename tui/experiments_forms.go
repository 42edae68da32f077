package tui

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/experiments"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The experiment overlays: the start form (e with none open: a name, its
// default a placeholder, and a hypothesis), the end form (e with one open:
// its tok/s so far and a conclusion), the conclusion form (e while the
// conclusion banner shows, or c in the panel) and the note form (n). Their
// calls run in tea.Cmds; the answers come back as messages (expResult).

// Experiment overlays, after the server's (control.go).
const (
	modalExpStart    modal = 200 + iota // e with none open: name and hypothesis
	modalExpEnd                         // e with one open: its tok/s so far and a conclusion
	modalExpConclude                    // an experiment ended by a kill, relaunch or exit: its conclusion
	modalNote                           // n: one line of text
)

// isExpModal reports whether md is one of the experiment overlays.
func isExpModal(md modal) bool { return md >= modalExpStart && md <= modalNote }

// expForm is an experiment overlay's fields.
type expForm struct {
	exp    string // the experiment it ends or concludes ("" for a start or a note)
	inputs []textinput.Model
	labels []string
	focus  int
	// name is the start form's default name, shown dimmed in the empty
	// name field and used when enter finds it empty.
	name string
	// edit: the conclusion form was opened with c in the panel (it writes
	// or replaces the conclusion of an experiment that ended); was is the
	// conclusion it had.
	edit bool
	was  string
}

// newInput is a text field for an experiment overlay holding at most
// limit characters.
func (m *Model) newInput(value, placeholder string, limit int) textinput.Model {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = placeholder
	in.CharLimit = limit
	in.SetStyles(m.inputStyles())
	in.SetValue(value)
	in.CursorEnd()
	return in
}

// openExperiment opens the start form, or the end form when one is open.
func (m *Model) openExperiment() tea.Cmd {
	m.showHelp = false
	if cur := m.exp.Ledger().Current(); cur != nil {
		m.expForm = &expForm{exp: cur.ID, labels: []string{"conclusion"},
			inputs: []textinput.Model{m.newInput("", "what did it show? (optional)", experiments.TextLimit)}}
		m.modal = modalExpEnd
		return m.expForm.setFocus(0)
	}
	// The default name is a placeholder, not a value: typing replaces it,
	// enter on the empty field takes it.
	name := m.defaultExpName()
	m.expForm = &expForm{labels: []string{"name", "hypothesis"}, name: name, inputs: []textinput.Model{
		m.newInput("", name, experiments.NameLimit),
		m.newInput("", "what do you expect, and why? (optional)", experiments.TextLimit),
	}}
	m.modal = modalExpStart
	return m.expForm.setFocus(0)
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

// openNote opens the note form.
func (m *Model) openNote() tea.Cmd {
	m.showHelp = false
	m.expForm = &expForm{labels: []string{"note"}, inputs: []textinput.Model{m.newInput("", "free text; enter saves", experiments.TextLimit)}}
	m.modal = modalNote
	return m.expForm.setFocus(0)
}

// openConclude opens the conclusion prompt for experiment id, which
// ended without one.
func (m *Model) openConclude(id string) tea.Cmd {
	m.exp.Dismiss()
	m.expForm = &expForm{exp: id, labels: []string{"conclusion"},
		inputs: []textinput.Model{m.newInput("", "what did it show? (esc skips)", experiments.TextLimit)}}
	m.modal = modalExpConclude
	return m.expForm.setFocus(0)
}

// openEdit opens the conclusion form for e, the experiment selected in
// the panel (one that ended: the panel checked), holding its conclusion
// so far to edit.
func (m *Model) openEdit(e *ledger.Experiment) tea.Cmd {
	m.showHelp = false
	was := sanitize.String(e.Conclusion)
	m.expForm = &expForm{exp: e.ID, edit: true, was: was, labels: []string{"conclusion"},
		inputs: []textinput.Model{m.newInput(was, "what did it show?", experiments.TextLimit)}}
	m.modal = modalExpConclude
	return m.expForm.setFocus(0)
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
	m.modal, m.expForm = modalNone, nil
}

// expKey handles a key while an experiment overlay is open.
func (m *Model) expKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	f := m.expForm
	switch msg.String() {
	case "esc", "ctrl+c":
		what := map[modal]string{modalExpStart: "experiment not started", modalExpEnd: "experiment not ended",
			modalExpConclude: "conclusion skipped", modalNote: "note not saved"}[m.modal]
		if f.edit {
			what = "conclusion not changed"
		}
		m.closeExpModal()
		m.flash(what, style.Dim)
		return m, nil
	case "tab", "down":
		return m, f.setFocus(f.focus + 1)
	case "shift+tab", "up":
		return m, f.setFocus(f.focus - 1)
	case "enter":
		return m, m.expSubmit()
	}
	return m, m.expInput(msg, msg.Text)
}

// expPaste sends a paste to the focused field.
func (m *Model) expPaste(msg tea.PasteMsg) tea.Cmd {
	return m.expInput(msg, msg.Content)
}

// expInput sends a key or a paste adding text to the focused field; when
// the field's limit cut what was added, the status line says so ("note cut
// to 4000 characters").
func (m *Model) expInput(msg tea.Msg, text string) tea.Cmd {
	f := m.expForm
	in := &f.inputs[f.focus]
	before := utf8.RuneCountInString(in.Value())
	var cmd tea.Cmd
	*in, cmd = in.Update(msg)
	after := utf8.RuneCountInString(in.Value())
	if n := utf8.RuneCountInString(text); n > 0 && in.CharLimit > 0 && after >= in.CharLimit && before+n > in.CharLimit {
		what := " cut to "
		if _, typed := msg.(tea.KeyPressMsg); typed {
			what = " holds at most "
		}
		m.flash(f.labels[f.focus]+what+strconv.Itoa(in.CharLimit)+" characters", style.Warn)
	}
	return cmd
}

// expSubmit runs the open overlay's call in a tea.Cmd.
func (m *Model) expSubmit() tea.Cmd {
	f := m.expForm
	md := m.modal
	if !m.exp.Writable() { // the overlays never open then; be safe
		m.closeExpModal()
		return nil
	}
	if md == modalExpConclude && f.edit && (f.value(0) == "" || f.value(0) == f.was) {
		m.closeExpModal()
		m.flash("conclusion not changed", style.Dim)
		return nil
	}
	if md == modalExpConclude && f.value(0) == "" {
		m.closeExpModal()
		m.flash("conclusion skipped", style.Dim)
		return nil
	}
	if md == modalNote && f.value(0) == "" {
		m.closeExpModal()
		m.flash("empty note: nothing saved", style.Dim)
		return nil
	}
	if m.exp.Doing() != "" {
		m.flash(m.exp.Doing()+" ...: try again when it ends", style.Warn)
		return nil
	}
	m.closeExpModal()
	switch md {
	case modalExpStart:
		// An empty name leaves it to the Lab, whose default the
		// placeholder shows (and which it completes once the fingerprint
		// has read the commit).
		name, hyp := f.value(0), f.value(1)
		shown := name
		if shown == "" {
			shown = f.name
		}
		return m.exp.StartExperiment(name, hyp, shown)
	case modalExpEnd:
		return m.exp.EndExperiment(f.exp, f.value(0))
	case modalExpConclude:
		return m.exp.Conclude(f.exp, f.value(0))
	case modalNote:
		return m.exp.WriteNote(f.value(0))
	}
	return nil
}

// expModalBox is an experiment overlay's title, content and inner width
// for a w-cell screen with avail rows between header and footer.
func (m *Model) expModalBox(w, avail int) (title string, body []string, iw int) {
	st := &m.styles
	f := m.expForm
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
			out = append(out, lt.Render(style.PadRight(l, lw))+style.TruncateStyled(in.View(), iw-lw))
		}
		return out
	}
	var ps []component.Para
	var keys []string
	switch m.modal {
	case modalExpStart:
		title = "start an experiment"
		body = fields()
		ps = append(ps, component.Para{Text: "Records the fingerprint now: git HEAD and dirty patch, launch command and env, versions, GPU clocks and PCIe.", Tone: style.Dim})
		keys = []string{"enter", "start", "tab", "field", "esc", "cancel"}
	case modalExpEnd, modalExpConclude:
		e := m.exp.Ledger().Find(f.exp)
		name := ""
		if e != nil {
			name = sanitize.String(e.Name)
		}
		id := sanitize.String(f.exp)
		var r event.ExperimentResult
		label := "so far"
		if m.modal == modalExpEnd {
			title = "end " + join(id, name)
			r = m.exp.Provisional()
			keys = []string{"enter", "end", "esc", "cancel"}
		} else {
			title = join(id, name) + " ended"
			if f.edit {
				title = "conclusion of " + join(id, name)
			}
			if e != nil {
				r = e.Result
				if how := experiments.EndedHow(e.EndedBy); how != "" && !f.edit {
					title += " (" + how + ")"
				}
			}
			label = "result"
			keys = []string{"enter", "save", "esc", "skip"}
			if f.edit {
				keys = []string{"enter", "save", "esc", "cancel"}
			}
		}
		res := experiments.ResultText(r)
		if e != nil && m.modal == modalExpEnd {
			if warm := m.exp.WarmingUp(e, r); warm != "" {
				res = warm
			}
		}
		body = append(body, st.Dim.Render(style.PadRight(label, lw))+res)
		if r.Dropped > 0 {
			body = append(body, st.Dim.Render(style.PadRight("", lw)+strconv.Itoa(r.Dropped)+" warm-up or idle samples left out"))
		}
		body = append(body, "")
		body = append(body, fields()...)
	case modalNote:
		title = "note"
		if cur := m.exp.Ledger().Current(); cur != nil {
			title = "note on " + sanitize.String(cur.ID)
		}
		body = fields()
		keys = []string{"enter", "save", "esc", "cancel"}
	}
	if len(ps) > 0 {
		body = append(body, "")
		body = append(body, component.Paras(&m.styles, ps, iw)...)
	}
	body = append(body, "", component.Prompt(&m.styles, iw, keys...))
	return title, component.FitLines(&m.styles, body, avail-2, 1, iw), iw
}

// expModalHelp is the footer while an experiment overlay has the keys.
func (m *Model) expModalHelp() [][2]string {
	switch m.modal {
	case modalExpStart:
		return [][2]string{{"enter", "start"}, {"tab/up/down", "field"}, {"esc", "cancel"}}
	case modalExpEnd:
		return [][2]string{{"enter", "end the experiment"}, {"esc", "cancel"}}
	case modalExpConclude:
		if m.expForm != nil && m.expForm.edit {
			return [][2]string{{"enter", "save the conclusion"}, {"esc", "cancel"}}
		}
		return [][2]string{{"enter", "save the conclusion"}, {"esc", "skip"}}
	}
	return [][2]string{{"enter", "save"}, {"esc", "cancel"}}
}
