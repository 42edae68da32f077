package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// tokRow is the stripped tok/s row of m's screen.
func tokRow(m *Model) string {
	for _, l := range screenLines(m) {
		if strings.HasPrefix(l, "tok/s") {
			return l
		}
	}
	return ""
}

// The marked baseline reaches the sparkline: its median on the row, the
// default axis around it, the bars under it in the Warn tone (bold
// without colours); z cycles the axis, the scale on the row follows, and
// the footer and the help list the key.
func TestSparklineBaselineAndAxisKey(t *testing.T) {
	for _, o := range []Options{{}, {NoColor: true}} {
		m := newSized(200, 40, o)
		send(m, session()...)
		if row := tokRow(m); strings.Contains(row, "base ") || !strings.Contains(row, "(run median -10%..+7.5%)") {
			t.Errorf("no baseline marked: %q", row)
		}
		send(m, ev(130*time.Second, event.Baseline{Exp: "e2"}))
		row := tokRow(m)
		// e2's median is 88.9: the axis is -10 % to +7.5 % of it.
		if !strings.HasSuffix(row, "base 88.9  axis 80.0-95.6 (baseline -10%..+7.5%)") {
			t.Errorf("baseline e2: %q", row)
		}
		// e1 (82 tok/s: -7.8 %, two levels under e2's) and e3 (61) are
		// under the baseline: their 20 bars each are marked; e2's (88.8
		// to 90) are not.
		if n := warnBarsOf(m); n != 40 {
			t.Errorf("NoColor=%v: %d bars in the Warn tone, want e1's and e3's 40: %q", o.NoColor, n, row)
		}
		if !strings.Contains(row, strings.Repeat("▂", 20)+strings.Repeat("▅", 20)+strings.Repeat("▁", 20)) {
			t.Errorf("e1, e2, e3 around the baseline: %q", row)
		}
		for _, c := range []struct{ suffix, flash string }{
			{"axis 61.0-90.0 (auto)", "axis of the tok/s bars: auto, the window's min to max"},
			{"axis 0-90.0 (from 0)", "axis of the tok/s bars: from zero, 0 to the window's max"},
			{"axis 80.0-95.6 (baseline -10%..+7.5%)", "axis of the tok/s bars: around the baseline"},
		} {
			press(m, "z")
			if row := tokRow(m); !strings.HasSuffix(row, c.suffix) {
				t.Errorf("after z: %q, want the suffix %q", row, c.suffix)
			}
			if !strings.HasPrefix(m.Status(), c.flash) {
				t.Errorf("after z: status %q", m.Status())
			}
		}
		press(m, "esc")
		if ls := screenLines(m); !strings.Contains(ls[len(ls)-1], "z axis  q quit") {
			t.Errorf("footer lacks z: %q", ls[len(ls)-1])
		}
		tuitest.AuditGlyphs(t, "sparkline", m.View().Content)
	}
}

// warnBarsOf counts the tok/s row's glyphs drawn in the Warn tone.
func warnBarsOf(m *Model) int {
	for _, l := range strings.Split(m.View().Content, "\n") {
		if strings.HasPrefix(ansi.Strip(l), "tok/s") {
			return tuitest.BarsInTone(l, m.styles.Warn.SGR())
		}
	}
	return -1
}

// z changes only the view: a replay (read-only) takes it, lists it in its
// footer, and a seek (a fresh model, CarryView) keeps the axis chosen.
func TestAxisKeyInAReplay(t *testing.T) {
	m := newSized(200, 40, Options{ReadOnly: true})
	send(m, session()...)
	press(m, "z")
	if row := tokRow(m); !strings.HasSuffix(row, "(auto)") || strings.HasPrefix(m.Status(), "read-only") {
		t.Errorf("z in a replay: %q, status %q", row, m.Status())
	}
	press(m, "esc")
	if ls := screenLines(m); !strings.Contains(ls[len(ls)-1], "z axis") {
		t.Errorf("replay footer lacks z: %q", ls[len(ls)-1])
	}
	seek := newSized(200, 40, Options{ReadOnly: true})
	send(seek, session()[:40]...)
	seek.CarryView(m)
	if row := tokRow(seek); !strings.HasSuffix(row, "(auto)") {
		t.Errorf("after a seek: %q", row)
	}
}
