package component

import (
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Para is a paragraph of a dialog's body: plain sanitised text in a tone,
// indented, wrapped to the box or (Cut) one line cut to it.
type Para struct {
	Text   string
	Tone   style.Token
	Indent int
	Cut    bool // one line, cut to the width, instead of wrapped
}

// Paras draws paragraphs at w cells, each in its tone.
func Paras(st *style.Styles, ps []Para, w int) []string {
	var out []string
	for _, p := range ps {
		t := st.Tone(p.Tone)
		pad := style.Spaces(p.Indent)
		if p.Cut {
			out = append(out, pad+t.Render(style.Truncate(p.Text, w-p.Indent)))
			continue
		}
		for _, l := range style.Wrap(p.Text, w-p.Indent) {
			out = append(out, pad+t.Render(l))
		}
	}
	return out
}

// Prompt is a dialog's key help inside its box, "y/enter checkout  esc
// back" (pairs of a key and what it does), cut to w cells.
func Prompt(st *style.Styles, w int, kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(st.Key.Render(kv[i]) + " " + st.Dim.Render(kv[i+1]))
	}
	return style.TruncateStyled(b.String(), w)
}

// FitLines keeps at most maxH of a dialog's body lines: the last keep
// lines (its prompt) stay, the middle is cut with a note of w cells at
// most.
func FitLines(st *style.Styles, lines []string, maxH, keep, w int) []string {
	if len(lines) <= maxH || maxH <= 0 {
		return lines
	}
	keep = min(keep, maxH)
	head := max(maxH-keep-1, 0)
	cut := len(lines) - head - keep
	out := append([]string{}, lines[:head]...)
	if maxH-keep > 0 {
		out = append(out, st.Dim.Render(style.Truncate("... "+style.Plural(cut, "more line")+" (a taller terminal shows them)", w)))
	}
	return append(out, lines[len(lines)-keep:]...)
}

// JoinWords joins a and b with a space, or gives the one that is not empty.
func JoinWords(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " " + b
}

// Paren is " (a, b)" of the parts that are not empty, "" when all are.
func Paren(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return ""
	}
	return " (" + strings.Join(keep, ", ") + ")"
}

// FocusInput focuses inputs[i] and blurs the others (all of them when i is
// out of range), and returns the focused field's cursor-blink command.
func FocusInput(inputs []textinput.Model, i int) tea.Cmd {
	var cmd tea.Cmd
	for j := range inputs {
		if j == i {
			cmd = inputs[j].Focus()
		} else {
			inputs[j].Blur()
		}
	}
	return cmd
}
