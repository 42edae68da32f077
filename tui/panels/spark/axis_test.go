package spark

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// Figures of the story the axis must not hide, against a baseline of 89
// tok/s: 10 figures at the baseline with ±0.3 tok/s of jitter, 4 of a 1 %
// dip, 6 at the baseline again, then 10 of an 8 % drop (the regressing
// commit's 81.9).
const (
	storyBase = 89.0
	storyDip  = storyBase * 0.99
	storyDrop = storyBase * 0.92
)

// The story's parts, as indexes of its figures.
const (
	dipFrom, dipTo   = 10, 14
	dropFrom, dropTo = 20, 30
)

func story() []float64 {
	var v []float64
	jitter := func(i int) float64 { return 0.3 * math.Sin(float64(i)) }
	for i := range dipFrom {
		v = append(v, storyBase+jitter(i))
	}
	for range dipTo - dipFrom {
		v = append(v, storyDip)
	}
	for i := range dropFrom - dipTo {
		v = append(v, storyBase+jitter(i))
	}
	for i := range dropTo - dropFrom {
		v = append(v, storyDrop+jitter(i))
	}
	return v
}

// storySeries is the story's figures (the first n), drawn on a with the
// baseline base (0: none), with an accept length (EAGLE) when n is
// negative (-n figures).
func storySeries(a Axis, base float64, n int) *Series {
	var s Series
	eagle := n < 0
	for _, v := range story()[:max(n, -n)] {
		s.Apply(event.TokRate{TokPerSec: v, AcceptLength: 2.31, HasAccept: eagle, Ranks: 8})
	}
	s.SetAxis(a)
	s.SetBaseline(base)
	return &s
}

// plainStyles is the NO_COLOR palette, of another generation than the
// colour one (a Series caches its row per generation, as the cockpit
// raises it when it changes the palette).
func plainStyles() style.Styles {
	st := style.Plain()
	st.Gen = 1
	return st
}

// barsOf are the glyph levels of a row's bars, in order (gaps left out).
func barsOf(t *testing.T, row string) []int {
	t.Helper()
	var out []int
	for _, r := range ansi.Strip(row) {
		if r >= 0x2581 && r <= 0x2588 {
			out = append(out, int(r-0x2581))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no bars in %q", row)
	}
	return out
}

// The sparkline in each axis mode with a baseline, at 120 and 80
// columns: stripped, in colour (the bars under the baseline in the Warn
// tone), without colours (bold), and stripped without a baseline (the
// run's median is the reference). Regenerate with go test -update.
func TestAxisGolden(t *testing.T) {
	for _, a := range []Axis{AxisBaseline, AxisAuto, AxisZero} {
		for _, w := range []int{120, 80} {
			t.Run(a.String()+"_"+strconv.Itoa(w), func(t *testing.T) {
				s := storySeries(a, storyBase, dropTo)
				dark, plain := style.Default(true), plainStyles()
				var b strings.Builder
				for _, row := range []string{ansi.Strip(s.Render(&dark, w)), s.Render(&dark, w), s.Render(&plain, w)} {
					b.WriteString(row + "\n")
					tuitest.AuditGlyphs(t, a.String(), row)
					if got := style.Width(ansi.Strip(row)); got > w {
						t.Errorf("%d cells", got)
					}
				}
				s.SetBaseline(0)
				b.WriteString(ansi.Strip(s.Render(&dark, w)) + "\n")
				golden.RequireEqual(t, b.String())
			})
		}
	}
}

// In the default mode the 1 % dip is not the lowest glyph (it stays
// within a level of the baseline's figures) and the 8 % drop is clearly
// lower: at least three levels under the baseline's figures and two under
// the dip's. Without a baseline, the run's median is the reference: the
// dip still stays within a level.
func TestDefaultAxisShowsTheDropNotTheDip(t *testing.T) {
	if Axis(0) != AxisBaseline {
		t.Fatal("the default axis is not around the baseline")
	}
	st := style.Plain()
	check := func(what string, lv []int, drop bool) {
		t.Helper()
		lowest := 7
		for _, l := range lv {
			lowest = min(lowest, l)
		}
		at := append(append([]int{}, lv[:dipFrom]...), lv[dipTo:dropFrom]...)
		for _, d := range lv[dipFrom:dipTo] {
			if d == 0 || !drop && d == lowest && d < slicesMax(at) {
				t.Errorf("%s: the dip draws as the lowest glyph: %v", what, lv)
			}
			for _, a := range at {
				if a-d > 1 {
					t.Errorf("%s: the dip is %d levels under the baseline's figures: %v", what, a-d, lv)
				}
			}
			if !drop {
				continue
			}
			for _, l := range lv[dropFrom:dropTo] {
				if d-l < 2 {
					t.Errorf("%s: the drop is %d levels under the dip: %v", what, d-l, lv)
				}
				for _, a := range at {
					if a-l < 3 {
						t.Errorf("%s: the drop is %d levels under the baseline's figures: %v", what, a-l, lv)
					}
				}
			}
		}
	}
	lv := barsOf(t, storySeries(Axis(0), storyBase, dropTo).Render(&st, 200))
	if len(lv) != dropTo {
		t.Fatalf("%d bars: %v", len(lv), lv)
	}
	check("baseline 89", lv, true)
	check("no baseline", barsOf(t, storySeries(Axis(0), 0, dropFrom).Render(&st, 200)), false)
}

func slicesMax(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// The scale on the row follows the mode, and the key's cycle comes back.
func TestAxisText(t *testing.T) {
	st := style.Plain()
	for _, c := range []struct {
		a    Axis
		base float64
		want string
	}{
		{AxisBaseline, 89, "base 89.0  axis 80.1-95.7 (baseline -10%..+7.5%)"},
		{AxisAuto, 89, "base 89.0  axis 81.6-89.3 (auto)"},
		{AxisZero, 89, "base 89.0  axis 0-89.3 (from 0)"},
		{AxisZero, 95, "base 95.0  axis 0-95.0 (from 0)"}, // the baseline fits under the top
		{AxisBaseline, 0, "median 88.7  axis 79.8-95.4 (run median -10%..+7.5%)"},
	} {
		row := ansi.Strip(storySeries(c.a, c.base, dropTo).Render(&st, 200))
		if !strings.HasSuffix(row, c.want) {
			t.Errorf("%s base %v: %q, want the suffix %q", c.a, c.base, row, c.want)
		}
	}
	a := AxisBaseline
	for _, want := range []Axis{AxisAuto, AxisZero, AxisBaseline} {
		if a = a.Next(); a != want {
			t.Errorf("next: %s, want %s", a, want)
		}
	}
}

// The bars under the baseline by more than LowBy are in the Warn tone,
// bold without colours; none are without a baseline.
func TestBarsUnderTheBaselineStandOut(t *testing.T) {
	for _, st := range []style.Styles{style.Default(true), plainStyles()} {
		s := storySeries(AxisBaseline, storyBase, dropTo)
		if got := tuitest.BarsInTone(s.Render(&st, 200), st.Warn.SGR()); got != dropTo-dropFrom {
			t.Errorf("plain=%v: %d bars in the Warn tone, want the drop's %d: %q", st.Plain, got, dropTo-dropFrom, s.Render(&st, 200))
		}
		s.SetBaseline(0)
		if got := tuitest.BarsInTone(s.Render(&st, 200), st.Warn.SGR()); got != 0 {
			t.Errorf("plain=%v: %d bars marked without a baseline", st.Plain, got)
		}
	}
}

// Narrow rows give way in order: what the axis is, the accept length,
// the median, the baseline, the axis; the bars keep at least minBars.
func TestAxisRowGivesWay(t *testing.T) {
	st := style.Plain()
	s := storySeries(AxisBaseline, storyBase, -dropTo)
	for _, c := range []struct {
		w         int
		has, lack []string
	}{
		{200, []string{"median", "accept", "base", "axis", "(baseline"}, nil},
		{100, []string{"median", "accept", "base", "axis"}, []string{"(baseline"}},
		{80, []string{"median", "accept", "base", "axis"}, []string{"(baseline"}},
		{60, []string{"base", "axis"}, []string{"median", "accept"}},
		{50, []string{"axis"}, []string{"median", "accept", "base"}},
	} {
		row := ansi.Strip(s.Render(&st, c.w))
		for _, w := range c.has {
			if !strings.Contains(row, w) {
				t.Errorf("%d: %q lacks %q", c.w, row, w)
			}
		}
		for _, w := range c.lack {
			if strings.Contains(row, w) {
				t.Errorf("%d: %q has %q", c.w, row, w)
			}
		}
		if n := len(barsOf(t, row)); n < minBars {
			t.Errorf("%d: %d bars", c.w, n)
		}
	}
}
