package component

import (
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// TestCheatsheetColumns: groups sit side by side while they fit, wrap to
// a new band when they do not, and a key that cannot act is still listed.
func TestCheatsheetColumns(t *testing.T) {
	st := style.Plain()
	f := New("log", "f", "follow", "f")
	w := New("log", "w", "wrap", "w")
	w.Long = "wrap long lines"
	k := New("actions", "K", "kill", "K")
	k.Disabled = func() string { return "no server" }
	groups := []HelpGroup{{Name: "log", Bindings: []*Binding{&f, &w}}, {Name: "actions", Bindings: []*Binding{&k}}}
	strip := func(ls []string) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = style.StripSGR(l)
		}
		return out
	}
	styled := Cheatsheet(&st, groups, 80)
	if !strings.Contains(styled[1], st.Dim.Render("K  kill")) {
		t.Errorf("a key that cannot act is not dimmed: %q", styled[1])
	}
	wide := strip(styled)
	want := []string{"log                   actions", "f  follow             K  kill", "w  wrap long lines", ""}
	if strings.Join(wide, "\n") != strings.Join(want, "\n") {
		t.Errorf("80 cells:\n%q\nwant\n%q", wide, want)
	}
	narrow := strip(Cheatsheet(&st, groups, 24))
	want = []string{"log", "f  follow", "w  wrap long lines", "", "actions", "K  kill", ""}
	if strings.Join(narrow, "\n") != strings.Join(want, "\n") {
		t.Errorf("24 cells:\n%q\nwant\n%q", narrow, want)
	}
}

// TestWindowScrolls: a screen taller than the room shows a window and
// says what is left; one that fits is padded and keeps its top.
func TestWindowScrolls(t *testing.T) {
	st := style.Plain()
	lines := []string{"a", "b", "c", "d", "e"}
	rows, at, maxTop := Window(&st, lines, 9, 80, 3)
	rows[2] = style.StripSGR(rows[2])
	if at != 3 || maxTop != 3 || strings.Join(rows, "|") != "d|e|-- 4-5 of 5 lines, k or pgup scrolls back, esc closes --" {
		t.Errorf("clamped: %q at %d max %d", rows, at, maxTop)
	}
	rows, at, _ = Window(&st, lines, 0, 80, 3)
	rows[2] = style.StripSGR(rows[2])
	if at != 0 || rows[2] != "-- 1-2 of 5 lines, more below: j or pgdn, esc closes --" {
		t.Errorf("top: %q at %d", rows, at)
	}
	rows, at, maxTop = Window(&st, lines[:2], 4, 80, 3)
	if at != 4 || maxTop != 0 || strings.Join(rows, "|") != "a|b|" {
		t.Errorf("fits: %q at %d max %d", rows, at, maxTop)
	}
}
