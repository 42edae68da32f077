package experiment

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/experiments"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Form is one experiment form (its ID says which): its fields and their
// labels, the focused one, and the experiment it ends or concludes. Tab,
// up and down move between the fields, enter submits, esc cancels; other
// keys and pasted text go to the focused field.
type Form struct {
	ds     *Dialogs
	id     string // StartID, EndID, ConcludeID or NoteID
	exp    string // the experiment it ends or concludes ("" for a start or a note)
	inputs []textinput.Model
	labels []string
	focus  int
	// name is the start form's default name, shown dimmed in the empty
	// name field and used when enter finds it empty.
	name string
	// edit: the conclusion form was opened with w in the panel (it writes
	// or replaces the conclusion of an experiment that ended); was is the
	// conclusion it had.
	edit bool
	was  string
}

// ID implements component.Dialog.
func (f *Form) ID() string { return f.id }

// Exp is the id of the experiment the form ends or concludes, "" for a
// start or a note.
func (f *Form) Exp() string { return f.exp }

// Value is field i's text, trimmed.
func (f *Form) Value(i int) string { return strings.TrimSpace(f.inputs[i].Value()) }

// Input is field i (0: the first).
func (f *Form) Input(i int) *textinput.Model { return &f.inputs[i] }

// Focused is the focused field.
func (f *Form) Focused() *textinput.Model { return &f.inputs[f.focus] }

// SetStyles restyles the fields (the palette changed).
func (f *Form) SetStyles(s textinput.Styles) {
	for i := range f.inputs {
		f.inputs[i].SetStyles(s)
	}
}

// Answered reports whether u, an exp-update with a conclusion, answers
// this form: it is the conclusion prompt of u's experiment, not an edit,
// and nothing is typed yet (the form then goes).
func (f *Form) Answered(u event.ExperimentUpdate) bool {
	return u.Conclusion != "" && f.id == ConcludeID && f.exp == u.Exp && !f.edit && f.Value(0) == ""
}

func (f *Form) setFocus(i int) tea.Cmd {
	f.focus = (i + len(f.inputs)) % len(f.inputs)
	return component.FocusInput(f.inputs, f.focus)
}

// Key implements component.Dialog: esc (or ctrl+c) cancels, saying what
// was not done; tab, down, shift+tab and up move between the fields;
// enter submits; other keys are text.
func (f *Form) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch msg.String() {
	case "esc", "ctrl+c":
		what := map[string]string{StartID: "experiment not started", EndID: "experiment not ended",
			ConcludeID: "conclusion skipped", NoteID: "note not saved"}[f.id]
		if f.edit {
			what = "conclusion not changed"
		}
		f.ds.Flash(what, style.Dim)
		return nil, true
	case "tab", "down":
		return f.setFocus(f.focus + 1), false
	case "shift+tab", "up":
		return f.setFocus(f.focus - 1), false
	case "enter":
		return f.submit()
	}
	return f.input(msg, msg.Text), false
}

// Paste implements component.Paster: pasted text goes to the focused
// field.
func (f *Form) Paste(msg tea.PasteMsg) tea.Cmd {
	return f.input(msg, msg.Content)
}

// input sends a key or a paste adding text to the focused field; when the
// field's limit cut what was added, the status line says so ("note cut to
// 4000 characters").
func (f *Form) input(msg tea.Msg, text string) tea.Cmd {
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
		f.ds.Flash(f.labels[f.focus]+what+strconv.Itoa(in.CharLimit)+" characters", style.Warn)
	}
	return cmd
}

// submit hands the form's text to the panel's call, closing the form;
// nothing to save closes it saying so; a call in flight keeps it open.
func (f *Form) submit() (tea.Cmd, bool) {
	p := f.ds.Panel
	if !p.Writable() { // the forms never open then; be safe
		return nil, true
	}
	if f.id == ConcludeID && f.edit && (f.Value(0) == "" || f.Value(0) == f.was) {
		f.ds.Flash("conclusion not changed", style.Dim)
		return nil, true
	}
	if f.id == ConcludeID && f.Value(0) == "" {
		f.ds.Flash("conclusion skipped", style.Dim)
		return nil, true
	}
	if f.id == NoteID && f.Value(0) == "" {
		f.ds.Flash("empty note: nothing saved", style.Dim)
		return nil, true
	}
	if p.Doing() != "" {
		f.ds.Flash(p.Doing()+" ...: try again when it ends", style.Warn)
		return nil, false
	}
	switch f.id {
	case StartID:
		// An empty name leaves it to the Lab, whose default the
		// placeholder shows (and which it completes once the fingerprint
		// has read the commit).
		name, hyp := f.Value(0), f.Value(1)
		shown := name
		if shown == "" {
			shown = f.name
		}
		return p.StartExperiment(name, hyp, shown), true
	case EndID:
		return p.EndExperiment(f.exp, f.Value(0)), true
	case ConcludeID:
		return p.Conclude(f.exp, f.Value(0)), true
	case NoteID:
		return p.WriteNote(f.Value(0)), true
	}
	return nil, true
}

// View implements component.Dialog: the form's title, its result line
// (for an end or a conclusion), its fields and its keys, on a screen of w
// x h cells.
func (f *Form) View(st *style.Styles, w, h int) component.Box {
	if component.TooSmall(w, h) {
		return component.Box{}
	}
	avail := h - 2
	p := f.ds.Panel
	iw := min(w-4, 76)
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
	var title string
	var body []string
	var ps []component.Para
	var keys []string
	switch f.id {
	case StartID:
		title = "start an experiment"
		body = fields()
		ps = append(ps, component.Para{Text: "Records the fingerprint now: git HEAD and dirty patch, launch command and env, versions, GPU clocks and PCIe.", Tone: style.Dim})
		keys = []string{"enter", "start", "tab", "field", "esc", "cancel"}
	case EndID, ConcludeID:
		e := p.Ledger().Find(f.exp)
		name := ""
		if e != nil {
			name = sanitize.String(e.Name)
		}
		id := sanitize.String(f.exp)
		var r event.ExperimentResult
		label := "so far"
		if f.id == EndID {
			title = "end " + component.JoinWords(id, name)
			r = p.Provisional()
			keys = []string{"enter", "end", "esc", "cancel"}
		} else {
			title = component.JoinWords(id, name) + " ended"
			if f.edit {
				title = "conclusion of " + component.JoinWords(id, name)
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
		if e != nil && f.id == EndID {
			if warm := p.WarmingUp(e, r); warm != "" {
				res = warm
			}
		}
		body = append(body, st.Dim.Render(style.PadRight(label, lw))+res)
		if r.Dropped > 0 {
			body = append(body, st.Dim.Render(style.PadRight("", lw)+strconv.Itoa(r.Dropped)+" warm-up or idle samples left out"))
		}
		body = append(body, "")
		body = append(body, fields()...)
	case NoteID:
		title = "note"
		if cur := p.Ledger().Current(); cur != nil {
			title = "note on " + sanitize.String(cur.ID)
		}
		body = fields()
		keys = []string{"enter", "save", "esc", "cancel"}
	}
	if len(ps) > 0 {
		body = append(body, "")
		body = append(body, component.Paras(st, ps, iw)...)
	}
	body = append(body, "", component.Prompt(st, iw, keys...))
	return component.Box{Title: title, Frame: style.Accent, Body: component.FitLines(st, body, avail-2, 1, iw), Width: iw}
}

// Help implements component.Dialog.
func (f *Form) Help() []component.Hint {
	switch f.id {
	case StartID:
		return []component.Hint{{Key: "enter", Desc: "start"}, {Key: "tab/up/down", Desc: "field"}, {Key: "esc", Desc: "cancel"}}
	case EndID:
		return []component.Hint{{Key: "enter", Desc: "end the experiment"}, {Key: "esc", Desc: "cancel"}}
	case ConcludeID:
		if f.edit {
			return []component.Hint{{Key: "enter", Desc: "save the conclusion"}, {Key: "esc", Desc: "cancel"}}
		}
		return []component.Hint{{Key: "enter", Desc: "save the conclusion"}, {Key: "esc", Desc: "skip"}}
	}
	return []component.Hint{{Key: "enter", Desc: "save"}, {Key: "esc", Desc: "cancel"}}
}
