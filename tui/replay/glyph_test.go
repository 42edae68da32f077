package replay

import (
	"fmt"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// The glyph audit (tuitest.AuditGlyphs) over the replay's screens: its
// timeline, its time prompt, its help and its window title.

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
		tuitest.AuditGlyphs(t, name("replay paused"), r.View().Content)
		r, _ = newTestReplay(w, h, Options{At: 100 * time.Second, Play: true, Speed: 4})
		rpress(r, "x")
		advance(r, 12)
		tuitest.AuditGlyphs(t, name("replay playing, experiments"), r.View().Content)
		rpress(r, "?")
		tuitest.AuditGlyphs(t, name("replay help"), r.View().Content)
		r, _ = newTestReplay(w, h, Options{})
		rpress(r, "t")
		tuitest.AuditGlyphs(t, name("replay time prompt"), r.View().Content)
		tuitest.AuditGlyphs(t, name("replay window title"), r.View().WindowTitle+" ")
	}
}
