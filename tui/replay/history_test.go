package replay

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// TestReplayResolvesAnEarlierBaseline: a replayed journal whose baseline
// mark names an earlier journal's experiment shows it resolved when the
// host's history is given (the panel lists it, the deltas are against
// it), and says it is not at hand when it is not; the history survives a
// seek's rebuild.
func TestReplayResolvesAnEarlierBaseline(t *testing.T) {
	mark := tuitest.Ev(100*time.Second, event.Baseline{Exp: "2026-11-24-101500-demo:e1"})
	hist := &event.History{Journals: []event.HistoryJournal{{Name: "2026-11-24-101500-demo", Header: event.SessionHeader{Host: "gpu-box", Label: "demo", Created: tuitest.T0.Add(-7 * 24 * time.Hour)},
		Events: []event.Event{
			tuitest.Ev(-7*24*time.Hour, event.ExperimentStart{ID: "2026-11-24-101500-demo:e1", Name: "nccl-ll-ring @ a6d51c0"}),
			tuitest.Ev(-7*24*time.Hour+time.Minute, event.ExperimentEnd{Exp: "2026-11-24-101500-demo:e1", Result: event.ExperimentResult{N: 7, Median: 89.4}}),
		}}}}
	for _, tc := range []struct {
		hist *event.History
		want string
	}{
		{hist, "delta vs 11-24:e1 (baseline)"},
		{nil, "delta vs 2026-11-24-101500-demo:e1, not at hand (baseline)"},
	} {
		src := newFakeSource(append(replayEvents(), mark))
		r := New(src, tui.Options{Theme: tui.ThemeDark}, Options{History: tc.hist, At: 2 * time.Minute})
		r.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
		pump(r, r.Init())
		rpress(r, "x", "left", "right")
		scr := ansi.Strip(r.View().Content)
		if !strings.Contains(scr, tc.want) {
			t.Errorf("history %v: replay lacks %q:\n%s", tc.hist != nil, tc.want, scr)
		}
		if tc.hist != nil && !strings.Contains(scr, "2026-11-24 10:15") && !strings.Contains(scr, "1 experiment  89.4 tok/s best") {
			t.Errorf("the earlier session is not listed:\n%s", scr)
		}
	}
}
