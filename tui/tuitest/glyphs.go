package tuitest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
)

// cjkEmoji measures runes as a terminal set for East Asian widths with
// emoji drawn wide: where a rune's width there differs from the plain
// width, terminals (and tmux, which keeps its own width table) disagree on
// how many cells it takes, and every cell after it on the row shifts.
var cjkEmoji = &runewidth.Condition{EastAsianWidth: true, StrictEmojiNeutral: false}

// GlyphRisk says why r may not draw in exactly one cell in every terminal
// and in tmux, or "" when it does. Box drawing (U+2500-257F) and block
// elements (U+2580-259F) are East-Asian-Ambiguous but allowed: every
// terminal draws them in one cell unless told to widen ambiguous
// characters (which breaks every TUI's borders), and tmux draws its own
// pane borders with them as one cell. The sparkline uses the blocks.
func GlyphRisk(r rune) string {
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

// AuditGlyphs fails t on every rune of screen (escape sequences stripped)
// that GlyphRisk refuses, naming the screen, the line and the rune; an
// empty screen fails too.
func AuditGlyphs(t testing.TB, name, screen string) {
	t.Helper()
	if strings.TrimSpace(screen) == "" {
		t.Errorf("%s: empty screen", name)
		return
	}
	for i, line := range strings.Split(ansi.Strip(screen), "\n") {
		for _, r := range line {
			if why := GlyphRisk(r); why != "" {
				t.Errorf("%s line %d: %q (U+%04X) is %s:\n%s", name, i+1, r, r, why, line)
			}
		}
	}
}

// BarsInTone counts the bar glyphs (▁ to █, U+2581–U+2588) of row, a
// rendered line with its escape codes, that are drawn in the tone whose
// SGR sequence opens with sgr (style.Tone.SGR): e.g. the sparkline's bars
// marked under the baseline.
func BarsInTone(row, sgr string) int {
	n := 0
	for _, seg := range strings.Split(row, ansi.ResetStyle) {
		i := strings.LastIndex(seg, "\x1b[")
		if i < 0 || !strings.HasPrefix(seg[i:], sgr) {
			continue
		}
		for _, r := range seg[i+len(sgr):] {
			if r >= 0x2581 && r <= 0x2588 {
				n++
			}
		}
	}
	return n
}
