package component

import (
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// HelpGroup is one column of the cheatsheet: its title ("log", "view",
// "git", "actions", a mode's "replay") and its bindings, in order.
type HelpGroup struct {
	Name     string
	Bindings []*Binding
}

// Cheatsheet lays out the full help's keys from the bindings: a column
// per group, its title then one "key  description" line per binding (its
// Desc), dimmed when the key cannot act now (Why); the columns side by
// side, 4 cells apart, while they fit in w cells, else in a new band
// below, each band followed by a blank line. The lines are styled and not
// cut to w (a column wider than w is the caller's to cut).
func Cheatsheet(st *style.Styles, groups []HelpGroup, w int) []string {
	type column struct {
		lines []string // styled
		width int
	}
	var cols []column
	for _, g := range groups {
		kw := 0
		for _, b := range g.Bindings {
			kw = max(kw, style.Width(b.Help().Key))
		}
		c := column{lines: []string{st.Accent.Render(g.Name)}, width: len(g.Name)}
		for _, b := range g.Bindings {
			k := b.Help().Key
			plain := style.PadRight(k, kw) + "  " + b.Desc()
			c.width = max(c.width, style.Width(plain))
			if b.Why() != "" {
				c.lines = append(c.lines, st.Dim.Render(plain))
			} else {
				c.lines = append(c.lines, st.Key.Render(style.PadRight(k, kw))+"  "+b.Desc())
			}
		}
		cols = append(cols, c)
	}
	var out []string
	var band []column
	flush := func() {
		rows := 0
		for _, c := range band {
			rows = max(rows, len(c.lines))
		}
		for r := range rows {
			var b strings.Builder
			for i, c := range band {
				cell := ""
				if r < len(c.lines) {
					cell = c.lines[r]
				}
				b.WriteString(cell)
				if i < len(band)-1 {
					b.WriteString(style.Spaces(c.width - style.Width(style.StripSGR(cell)) + 4))
				}
			}
			out = append(out, strings.TrimRight(b.String(), " "))
		}
		out = append(out, "")
		band = band[:0]
	}
	bw := 0
	for _, c := range cols {
		if len(band) > 0 && bw+c.width > w {
			flush()
			bw = 0
		}
		band = append(band, c)
		bw += c.width + 4
	}
	if len(band) > 0 {
		flush()
	}
	return out
}

// Window fits a screen of lines (the full help) into h rows of w cells:
// all of them when they fit, else the h-1 from top (clamped) and a last
// row saying which lines show, what is left and how to scroll, padded with
// empty rows to h. It returns the rows, the top it used (top itself when
// everything fits), and the largest top there is (0 when everything fits).
func Window(st *style.Styles, lines []string, top, w, h int) (rows []string, at, maxTop int) {
	at = top
	if len(lines) > h && h >= 2 {
		maxTop = len(lines) - (h - 1)
		at = style.Clamp(top, 0, maxTop)
		hint := "-- " + strconv.Itoa(at+1) + "-" + strconv.Itoa(at+h-1) + " of " + strconv.Itoa(len(lines)) + " lines"
		if at < maxTop {
			hint += ", more below: j or pgdn"
		} else {
			hint += ", k or pgup scrolls back"
		}
		hint += ", esc closes --"
		lines = append(lines[at:at+h-1:at+h-1], st.Accent.Render(style.Truncate(hint, w)))
	}
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines, at, maxTop
}
