package component

import (
	"strconv"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Chooser draws a form's choice among list in w cells: "< name >  2/3",
// the arrows drawn as keys while the field has the focus, "(none
// configured)" when the list is empty or idx is -1. Names are sanitised.
func Chooser(st *style.Styles, list []string, idx, w int, focused bool) string {
	if idx < 0 || len(list) == 0 {
		return st.Dim.Render(style.Truncate("(none configured)", w))
	}
	pos := "  " + strconv.Itoa(idx+1) + "/" + strconv.Itoa(len(list))
	name := sanitize.String(list[idx])
	name = style.Truncate(name, max(w-4-len(pos), 1))
	arrows := st.Dim
	if focused {
		arrows = st.Key
	}
	s := arrows.Render("< ") + name + arrows.Render(" >") + st.Dim.Render(pos)
	return style.TruncateStyled(s, w)
}
