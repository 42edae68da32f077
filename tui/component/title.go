package component

import (
	"strings"

	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// HintWidth is the width of a footer's key hint (keyHint) with the two
// spaces that part it from the next.
func HintWidth(key, desc string) int { return style.Width(key) + 1 + style.Width(desc) + 2 }

// TitlePart is a piece of a title line and its tone.
type TitlePart struct {
	Text string
	Tone style.Tone
}

// TitleRule is a section's title line, w cells at most: its name, a path
// (dim), the tail parts, then a rule of dashes to the edge.
func TitleRule(st *style.Styles, w int, name, path string, tail []TitlePart) string {
	var b strings.Builder
	n := 0
	put := func(s string, t style.Tone) {
		if n >= w || s == "" {
			return
		}
		s = style.Truncate(s, w-n)
		b.WriteString(t.Render(s))
		n += style.Width(s)
	}
	put(name, st.Title)
	put(path, st.Dim)
	for _, p := range tail {
		put(p.Text, p.Tone)
	}
	if n+2 <= w {
		put(" "+strings.Repeat("-", w-n-1), st.Dim)
	}
	return b.String()
}
