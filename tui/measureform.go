package tui

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The bench (b) and repeat (R) forms share one shape: a column of fields,
// each a choice (left/right) or a short text input, a line of hints, why
// enter cannot start yet, and the keys. The values are checked by pure
// functions (benchConfig, repeatConfig) on every render and on enter.

// formField is one field of a measure form.
type formField struct {
	label   string
	choices []string // non-nil: a choice made with left/right
	idx     int      // the chosen index of choices
	input   textinput.Model
}

// measureForm is the bench or repeat overlay's fields and focus.
type measureForm struct {
	fields []formField
	focus  int
}

// choiceField is a field choosing one of choices, idx chosen.
func choiceField(label string, choices []string, idx int) formField {
	return formField{label: label, choices: choices, idx: style.Clamp(idx, 0, len(choices)-1)}
}

// textField is a text field holding value, placeholder shown when empty.
func (m *Model) textField(label, value, placeholder string) formField {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = placeholder
	in.CharLimit = 32 // numbers and durations
	in.SetStyles(m.inputStyles())
	in.SetValue(value)
	in.CursorEnd()
	return formField{label: label, input: in}
}

// text is a text field's value, trimmed; choice is a choice field's.
func (f *measureForm) text(i int) string { return strings.TrimSpace(f.fields[i].input.Value()) }

func (f *measureForm) choice(i int) string {
	ff := &f.fields[i]
	if len(ff.choices) == 0 {
		return ""
	}
	return ff.choices[ff.idx]
}

func (f *measureForm) setFocus(i int) tea.Cmd {
	f.focus = (i + len(f.fields)) % len(f.fields)
	var cmd tea.Cmd
	for j := range f.fields {
		ff := &f.fields[j]
		if ff.choices != nil {
			continue
		}
		if j == f.focus {
			cmd = ff.input.Focus()
		} else {
			ff.input.Blur()
		}
	}
	return cmd
}

// formAction is what a key did to a measure form.
type formAction uint8

const (
	formKept   formAction = iota // the key changed a field or the focus
	formSubmit                   // enter
	formCancel                   // esc or ctrl+c
)

// key applies a key press to the form.
func (f *measureForm) key(msg tea.KeyPressMsg) (formAction, tea.Cmd) {
	k := msg.String()
	switch k {
	case "esc", "ctrl+c":
		return formCancel, nil
	case "enter":
		return formSubmit, nil
	case "tab", "down":
		return formKept, f.setFocus(f.focus + 1)
	case "shift+tab", "up":
		return formKept, f.setFocus(f.focus - 1)
	}
	ff := &f.fields[f.focus]
	if ff.choices != nil {
		switch k {
		case "left", "h":
			ff.idx = (ff.idx - 1 + len(ff.choices)) % len(ff.choices)
		case "right", "l", "space":
			ff.idx = (ff.idx + 1) % len(ff.choices)
		}
		return formKept, nil
	}
	var cmd tea.Cmd
	ff.input, cmd = ff.input.Update(msg)
	return formKept, cmd
}

// paste sends a paste to the focused text field.
func (f *measureForm) paste(msg tea.PasteMsg) tea.Cmd {
	ff := &f.fields[f.focus]
	if ff.choices != nil {
		return nil
	}
	var cmd tea.Cmd
	ff.input, cmd = ff.input.Update(msg)
	return cmd
}

// render draws the fields, the hints, the error (or nothing) and the keys
// in inner width iw.
func (m *Model) renderForm(f *measureForm, iw int, hints []string, bad string, keys ...string) []string {
	st := &m.styles
	lw := 0
	for _, ff := range f.fields {
		lw = max(lw, style.Width(ff.label))
	}
	lw++
	var out []string
	for i := range f.fields {
		ff := &f.fields[i]
		mark, lt := "  ", st.Dim
		if i == f.focus {
			mark, lt = "> ", st.Accent
		}
		head := lt.Render(mark + style.PadRight(ff.label, lw))
		vw := max(iw-2-lw, 1)
		var val string
		if ff.choices != nil {
			val = component.Chooser(st, ff.choices, ff.idx, vw, i == f.focus)
		} else {
			ff.input.SetWidth(max(vw-1, 1))
			val = style.TruncateStyled(ff.input.View(), vw)
		}
		out = append(out, head+val)
	}
	if len(hints) > 0 {
		out = append(out, "")
		for _, h := range hints {
			for _, l := range style.Wrap(h, iw) {
				out = append(out, st.Dim.Render(l))
			}
		}
	}
	if bad != "" {
		out = append(out, "")
		for _, l := range style.Wrap(bad, iw) {
			out = append(out, st.Crit.Render(l))
		}
	}
	return append(out, "", component.Prompt(&m.styles, iw, keys...))
}

// wholeNumber parses a form's whole number field: "" gives def; what is
// not a whole number in [lo, hi] is an error naming the field.
func wholeNumber(label, s string, def, lo, hi int) (int, string) {
	if s == "" {
		return def, ""
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, label + ": " + strconv.Quote(s) + " is not a whole number"
	}
	if v < lo || v > hi {
		return 0, label + ": " + strconv.Itoa(v) + " is out of range (" + strconv.Itoa(lo) + " to " + strconv.Itoa(hi) + ")"
	}
	return v, ""
}

// measureBox renders an issue-6 overlay for a w x h screen: its lines and
// where they go (the compare view takes the whole body area).
func (m *Model) measureBox(w, h int) (lines []string, x, y int) {
	st := &m.styles
	avail := h - 2
	if m.modal == modalCompare {
		return m.compareBox(w, avail)
	}
	if avail < 3 || w < 8 {
		return nil, 0, 0
	}
	iw := min(w-4, 76)
	var title string
	var body []string
	frame := st.Accent
	switch m.modal {
	case modalBench:
		title, body = m.benchFormBox(iw)
	case modalRepeat:
		title, body = m.repeatBox(iw)
	case modalStop:
		title, frame = "stop the "+m.stopWhat, st.Warn
		iw = min(w-4, 64)
		body = m.yesNo(m.bench.StopQuestion(m.stopWhat), iw)
	default:
		return nil, 0, 0
	}
	lines = component.Frame(st, frame, title, component.FitLines(&m.styles, body, avail-2, 2, iw), iw)
	return lines, max((w-(iw+4))/2, 0), 1 + (avail-len(lines))/2
}

// measureModalHelp is the footer while an issue-6 overlay has the keys.
func (m *Model) measureModalHelp() [][2]string {
	switch m.modal {
	case modalBench:
		return [][2]string{{"enter", "run"}, {"tab/up/down", "field"}, {"left/right", "choose"}, {"esc", "cancel"}}
	case modalRepeat:
		return [][2]string{{"enter", "start"}, {"tab/up/down", "field"}, {"left/right", "choose"}, {"esc", "cancel"}}
	case modalStop:
		return [][2]string{{"y", "stop"}, {"n/esc", "keep running"}}
	case modalCompare:
		return m.compareModalHelp()
	}
	return nil
}

// measureFormKey handles a key in the bench or repeat form (*form): esc
// closes it ("<what> not started"); enter reads the config with parse,
// then checks unavailable again (the state may have changed while the
// form was open), and closes the form and starts cfg, or says why not.
func measureFormKey[C any](m *Model, msg tea.KeyPressMsg, form **measureForm, what string,
	parse func() (C, string), unavailable func() string, start func(C) tea.Cmd) (tea.Model, tea.Cmd) {
	act, cmd := (*form).key(msg)
	switch act {
	case formCancel:
		m.modal, *form = modalNone, nil
		m.flash(what+" not started", style.Dim)
		return m, nil
	case formSubmit:
		cfg, bad := parse()
		if bad != "" {
			m.flash("cannot start: "+bad, style.Crit)
			return m, nil
		}
		if why := unavailable(); why != "" {
			m.flash(why, style.Warn)
			return m, nil
		}
		m.modal, *form = modalNone, nil
		return m, start(cfg)
	}
	return m, cmd
}
