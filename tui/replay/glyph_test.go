package replay

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
)

// The glyph audit of the cockpit's chrome (tui/glyph_test.go, where
// glyphRisk is tested), over the replay's screens: its timeline, its time
// prompt, its help and its window title.

// cjkEmoji measures runes as a terminal set for East Asian widths with
// emoji drawn wide: where a rune's width there differs from the plain
// width, terminals (and tmux, which keeps its own width table) disagree on
// how many cells it takes, and every cell after it on the row shifts.
var cjkEmoji = &runewidth.Condition{EastAsianWidth: true, StrictEmojiNeutral: false}

// glyphRisk says why r may not draw in exactly one cell in every terminal
// and in tmux, or "" when it does. Box drawing (U+2500-257F) and block
// elements (U+2580-259F) are East-Asian-Ambiguous but allowed: every
// terminal draws them in one cell unless told to widen ambiguous
// characters (which breaks every TUI's borders), and tmux draws its own
// pane borders with them as one cell. The sparkline uses the blocks.
func glyphRisk(r rune) string {
	switch {
	case r == '\n' || (r >= 0x20 && r < 0x7f):
		return ""
	case r >= 0x2500 && r <= 0x259f:
		return ""
	case r < 0x20 || (r >= 0x7f && r <= 0x9f):
		return "a control character"
	case runewidth.IsAmbiguousWidth(r):
		return "East-Asian-Ambiguous width"
	case runewidth.RuneWidth(r) != 1:
		return fmt.Sprintf("%d cells wide", runewidth.RuneWidth(r))
	case cjkEmoji.RuneWidth(r) != 1:
		return "an emoji (two cells where emoji are wide)"
	}
	return ""
}

// auditGlyphs fails t on every rune of screen that glyphRisk refuses,
// naming the screen, the line and the rune.
func auditGlyphs(t *testing.T, name, screen string) {
	t.Helper()
	if strings.TrimSpace(screen) == "" {
		t.Errorf("%s: empty screen", name)
		return
	}
	for i, line := range strings.Split(ansi.Strip(screen), "\n") {
		for _, r := range line {
			if why := glyphRisk(r); why != "" {
				t.Errorf("%s line %d: %q (U+%04X) is %s:\n%s", name, i+1, r, r, why, line)
			}
		}
	}
}

// TestReplayChromeHasNoAmbiguousGlyphs: the replay timeline paused at a
// mark, playing, its help and its time prompt refuse any rune that could
// take a different number of cells in another terminal or in tmux (the
// replay's part of tui's TestChromeHasNoAmbiguousGlyphs).
func TestReplayChromeHasNoAmbiguousGlyphs(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		w, h := sz[0], sz[1]
		name := func(s string) string { return fmt.Sprintf("%s %dx%d", s, w, h) }

		// The replay timeline: paused at a mark, playing, its help and
		// its time prompt.
		r, _ := newTestReplay(w, h, Options{})
		rpress(r, "]", "]", "]")
		auditGlyphs(t, name("replay paused"), r.View().Content)
		r, _ = newTestReplay(w, h, Options{At: 100 * time.Second, Play: true, Speed: 4})
		rpress(r, "x")
		advance(r, 12)
		auditGlyphs(t, name("replay playing, experiments"), r.View().Content)
		rpress(r, "?")
		auditGlyphs(t, name("replay help"), r.View().Content)
		r, _ = newTestReplay(w, h, Options{})
		rpress(r, "t")
		auditGlyphs(t, name("replay time prompt"), r.View().Content)
		auditGlyphs(t, name("replay window title"), r.View().WindowTitle+" ")
	}
}
