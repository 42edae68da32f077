package replay

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/journal/journaltest"
	"github.com/flightdeck-dev/flightdeck/tui"
)

// demoDay is journaltest.DemoDayFile: a 24 h journal of the demo's workload.
var demoDay = journaltest.DemoDayFile

// BenchmarkReplayFirstFrame is `flightdeck replay` of a 24 h journal of
// the demo's workload up to its first frame: open and index the file,
// rebuild the screen at the position (CatchUp) and draw it, at the start
// and an hour before the end (an experiment open all day: every tok/s
// point is caught up).
func BenchmarkReplayFirstFrame(b *testing.B) {
	path, err := demoDay()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		at   time.Duration
	}{{"start", 0}, {"end", 23 * time.Hour}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				j, err := journal.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				r := New(j, tui.Options{}, Options{At: c.at})
				r.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
				msg := r.seek(r.pos)()
				if m, ok := msg.(replaySeekMsg); !ok || m.err != nil || (c.at > 0 && len(m.events) == 0) {
					b.Fatalf("seek gave %T %v", msg, msg)
				}
				r.Update(msg)
				if v := r.View(); v.Content == "" {
					b.Fatal("no frame")
				}
				j.Close()
			}
		})
	}
}
