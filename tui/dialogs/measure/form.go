package measure

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The benchmark and repeat forms share one shape: a column of fields,
// each a choice (left/right) or a short text input, a line of hints, why
// enter cannot start yet, and the keys. The values are checked by pure
// functions (benchConfig, repeatConfig) on every draw and on enter.

// field is one field of a form.
type field struct {
	label   string
	choices []string // non-nil: a choice made with left/right
	idx     int      // the chosen index of choices
	input   textinput.Model
}

// form is a form's fields and focus.
type form struct {
	fields []field
	focus  int
}

// choiceField is a field choosing one of choices, idx chosen.
func choiceField(label string, choices []string, idx int) field {
	return field{label: label, choices: choices, idx: style.Clamp(idx, 0, len(choices)-1)}
}

// textField is a text field holding value, placeholder shown when empty.
func (ds *Dialogs) textField(label, value, placeholder string) field {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = placeholder
	in.CharLimit = 32 // numbers and durations
	in.SetStyles(ds.Inputs())
	in.SetValue(value)
	in.CursorEnd()
	return field{label: label, input: in}
}

// text is a text field's value, trimmed; choice is a choice field's.
func (f *form) text(i int) string { return strings.TrimSpace(f.fields[i].input.Value()) }

func (f *form) choice(i int) string {
	ff := &f.fields[i]
	if len(ff.choices) == 0 {
		return ""
	}
	return ff.choices[ff.idx]
}

func (f *form) setFocus(i int) tea.Cmd {
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

// Focused is the label of the field with the focus ("endpoint").
func (f *form) Focused() string { return f.fields[f.focus].label }

// SetInputStyles restyles the text fields (the palette changed).
func (f *form) SetInputStyles(is textinput.Styles) {
	for i := range f.fields {
		f.fields[i].input.SetStyles(is)
	}
}

// action is what a key did to a form.
type action uint8

const (
	kept   action = iota // the key changed a field or the focus
	submit               // enter
	cancel               // esc or ctrl+c
)

// key applies a key press to the form.
func (f *form) key(msg tea.KeyPressMsg) (action, tea.Cmd) {
	k := msg.String()
	switch k {
	case "esc", "ctrl+c":
		return cancel, nil
	case "enter":
		return submit, nil
	case "tab", "down":
		return kept, f.setFocus(f.focus + 1)
	case "shift+tab", "up":
		return kept, f.setFocus(f.focus - 1)
	}
	ff := &f.fields[f.focus]
	if ff.choices != nil {
		switch k {
		case "left", "h":
			ff.idx = (ff.idx - 1 + len(ff.choices)) % len(ff.choices)
		case "right", "l", "space":
			ff.idx = (ff.idx + 1) % len(ff.choices)
		}
		return kept, nil
	}
	var cmd tea.Cmd
	ff.input, cmd = ff.input.Update(msg)
	return kept, cmd
}

// Paste implements component.Paster: pasted text goes to the focused
// text field.
func (f *form) Paste(msg tea.PasteMsg) tea.Cmd {
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
func (f *form) render(st *style.Styles, iw int, hints []string, bad string, keys ...string) []string {
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
	return append(out, "", component.Prompt(st, iw, keys...))
}

// box is a form's box for a w x h screen: its body, fitted to the rows
// between the header and the footer (the keys kept).
func (f *form) box(st *style.Styles, w, h int, title string, hints []string, bad string, keys ...string) component.Box {
	if component.TooSmall(w, h) {
		return component.Box{}
	}
	iw := min(w-4, 76)
	body := f.render(st, iw, hints, bad, keys...)
	return component.Box{Title: title, Frame: style.Accent, Body: component.FitLines(st, body, component.BodyRows(h), 2, iw), Width: iw}
}

// answer handles a key in a form: esc closes it ("<what> not started");
// enter reads the config with parse, then asks why again (the cockpit may
// have changed while the form was open), and closes the form and starts
// cfg, or says why not.
func answer[C any](ds *Dialogs, f *form, msg tea.KeyPressMsg, what string,
	parse func() (C, string), why func() string, start func(C) tea.Cmd) (tea.Cmd, bool) {
	act, cmd := f.key(msg)
	switch act {
	case cancel:
		ds.Flash(what+" not started", style.Dim)
		return nil, true
	case submit:
		cfg, bad := parse()
		if bad != "" {
			ds.Flash("cannot start: "+bad, style.Crit)
			return nil, false
		}
		if why := why(); why != "" {
			ds.Flash(why, style.Warn)
			return nil, false
		}
		return start(cfg), true
	}
	return cmd, false
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
