package gpus

import (
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/tui/style"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// TestScrollReachesTheLastRow: End, and j pressed past the end, show the
// last GPU, whether the "GPU a-b of n" note fits right of the headers
// (wide) or takes a row of its own (80 columns and less); Home shows the
// first again.
func TestScrollReachesTheLastRow(t *testing.T) {
	st := style.Plain()
	for _, c := range []struct {
		n, width, rows int
	}{{16, 80, 12}, {8, 60, 7}, {8, 80, 5}, {16, 200, 12}, {8, 40, 2}} {
		p := NewPanel()
		p.ApplySample(tuitest.H200s(c.n), tuitest.T0)
		p.Focused = true
		p.SetSize(c.width, c.rows)
		view := func() string { return ansi.Strip(strings.Join(p.View(nil, &st), "\n")) }
		last := c.n - 1
		lastRow := func(s string) bool {
			for _, l := range strings.Split(s, "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), strconv.Itoa(last)+" ") {
					return true
				}
			}
			return false
		}
		first := view()
		if lastRow(first) {
			t.Fatalf("%+v: the last GPU shows before scrolling:\n%s", c, first)
		}
		p.End()
		if s := view(); !lastRow(s) {
			t.Errorf("%+v: End does not show GPU %d:\n%s", c, last, s)
		}
		p.Home()
		view()
		for range c.n + 3 {
			p.Move(1)
			view()
		}
		if s := view(); !lastRow(s) || !strings.Contains(s, "of "+strconv.Itoa(c.n)) {
			t.Errorf("%+v: j past the end does not show GPU %d:\n%s", c, last, s)
		}
		p.Home()
		if s := view(); !strings.Contains(s, "GPU 0-") {
			t.Errorf("%+v: Home:\n%s", c, s)
		}
	}
}

// TestNarrowOneRowSaysWhatIsHidden: a table too narrow for the "GPU a-b
// of n" note and too short for a row of it (40 columns, one GPU row)
// still says how many GPUs it hides, in the headers' place, and never
// overflows the width.
func TestNarrowOneRowSaysWhatIsHidden(t *testing.T) {
	st := style.Plain()
	for _, width := range []int{40, 30, 12, 3} {
		p := NewPanel()
		p.ApplySample(tuitest.H200s(8), tuitest.T0)
		p.SetSize(width, 1)
		lines := p.View(nil, &st)
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > width {
				t.Errorf("width %d: line %d is %d wide: %q", width, i, w, ansi.Strip(l))
			}
		}
		head := ansi.Strip(lines[0])
		want := "+7 GPUs"
		if width < len(want)+1 {
			want = "+7"
		}
		if !strings.HasSuffix(head, want) {
			t.Errorf("width %d: header %q does not end with %q", width, head, want)
		}
	}
}
