package component

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Frame frames body (styled lines, each at most iw cells) in a box iw+4
// cells wide, the title in its top edge.
func Frame(st *style.Styles, frame style.Tone, title string, body []string, iw int) []string {
	bw := iw + 4
	t := ""
	if title != "" {
		t = " " + style.Truncate(title, max(bw-6, 0)) + " "
	}
	out := make([]string, 0, len(body)+2)
	out = append(out, frame.Render("+-")+st.Title.Render(t)+frame.Render(strings.Repeat("-", max(bw-3-style.Width(t), 0))+"+"))
	for _, l := range body {
		l = style.TruncateStyled(l, iw)
		out = append(out, frame.Render("|")+" "+l+style.Spaces(iw-ansi.StringWidth(l))+" "+frame.Render("|"))
	}
	return append(out, frame.Render("+"+strings.Repeat("-", bw-2)+"+"))
}

// Splice draws the box lines over lines from row y, column x; lines
// outside the box are unchanged.
func Splice(lines, boxLines []string, x, y int) {
	for i, b := range boxLines {
		r := y + i
		if r < 0 || r >= len(lines) {
			continue
		}
		base := lines[r]
		left := ansi.Truncate(base, x, "")
		lw := ansi.StringWidth(left)
		right := ansi.TruncateLeft(base, x+ansi.StringWidth(b), "")
		var s strings.Builder
		s.WriteString(left)
		if lw < x {
			s.WriteString(style.Spaces(x - lw))
		}
		s.WriteString(ansi.ResetStyle)
		s.WriteString(b)
		if right != "" {
			s.WriteString(ansi.ResetStyle)
			s.WriteString(right)
		}
		lines[r] = s.String()
	}
}
