package replay

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// The replay over the cockpit's parts: a recorded benchmark, the
// experiments panel's space, the help screen, the keys (moved with the
// replay from the cockpit's tests: bench, compare, help and first-frame).

// fakeBench is a benchmark control for a replay to drop: New never keeps
// one (a replay never loads the server).
type fakeBench struct{}

func (*fakeBench) BenchDefaults() event.BenchConfig { return event.BenchConfig{} }

func (*fakeBench) Bench(context.Context, event.BenchConfig) (*event.BenchResult, error) {
	return nil, errors.New("a replay ran a benchmark")
}

var _ tui.BenchControl = (*fakeBench)(nil)

// TestReplayOfRecordedBench: a journal's bench-start and bench-done
// (progress is never recorded) replayed: the start's line at a position
// between them, the result box after, the run listed with its experiment;
// b refuses.
func TestReplayOfRecordedBench(t *testing.T) {
	evs := replayEvents()
	b := tuitest.BenchEvents()
	started, done := b[0], b[3]
	started.At, done.At = tuitest.At(100*time.Second), tuitest.At(110*time.Second)
	evs = append(evs, started, done)
	src := newFakeSource(evs)
	r := New(src, tui.Options{Theme: tui.ThemeDark, Bench: &fakeBench{}}, Options{At: 105 * time.Second})
	r.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	pump(r, r.Init())
	if l := strings.Split(rplain(r), "\n")[1]; l != "bench b1 running on http://127.0.0.1:30000 via gpu-box (progress is not recorded)" {
		t.Errorf("at 1:45: %q", l)
	}
	rpress(r, "b")
	if r.inner.Status() != "read-only replay: a benchmark would load the server" {
		t.Errorf("b: %q", r.inner.Status())
	}
	rpress(r, "right")
	scr := rplain(r)
	if strings.Contains(scr, "bench b1 running") || !strings.Contains(scr, "+- bench b1 on e3: done: 1 of 32 failed -") {
		t.Errorf("at 1:55:\n%s", scr)
	}
	rpress(r, "esc", "x")
	if scr := rplain(r); strings.Contains(scr, "+- bench b1") || !strings.Contains(scr, "bench       b1 output 85.7 tok/s") {
		t.Errorf("panel:\n%s", scr)
	}
}

// TestReplaySpaceMarksInThePanel: in a replay, space plays outside the
// panel and marks in it.
func TestReplaySpaceMarksInThePanel(t *testing.T) {
	r, _ := newTestReplay(100, 30, Options{At: 100 * time.Second})
	rpress(r, "x", "space")
	if r.Playing() || len(r.inner.Experiments().Marked()) != 1 {
		t.Errorf("space in the panel: playing %v marked %q", r.Playing(), r.inner.Experiments().Marked())
	}
	rpress(r, "esc", "space")
	if !r.Playing() {
		t.Error("space outside the panel did not play")
	}
}

// In a replay the help scrolls too, and q closes it before it quits.
func TestReplayHelpScrolls(t *testing.T) {
	r, _ := newTestReplay(80, 24, Options{})
	rpress(r, "?")
	first := rplain(r)
	rpress(r, "j")
	if !r.inner.HelpOpen() || rplain(r) == first {
		t.Fatalf("j did not scroll the replay's help:\n%s", rplain(r))
	}
	rpress(r, "q")
	if r.inner.HelpOpen() || r.quitting {
		t.Errorf("q: help open %v, quitting %v", r.inner.HelpOpen(), r.quitting)
	}
	rpress(r, "q")
	if !r.quitting {
		t.Error("q with the help closed did not quit the replay")
	}
}

// TestReplayKeysHaveAPlainBinding: every one of the replay's eight keys
// can be typed as plain keys, as the cockpit's can
// (TestEveryKeyHasAPlainBinding in tui): nothing depends on tmux passing
// modified keys through or on escape-time.
func TestReplayKeysHaveAPlainBinding(t *testing.T) {
	rk := defaultKeys()
	tuitest.AuditPlainKeys(t, []*component.Binding{&rk.Play, &rk.Faster, &rk.Slower, &rk.Back, &rk.Forward, &rk.PrevMark, &rk.NextMark, &rk.JumpTo}, 8)
}

// TestReplayShowsTheBisect: a journal's bisect records (start, launches,
// end; progress is never recorded) replayed: the panel (i) shows the
// bisect running at a position between them and its culprit after, and
// stays open across a seek; X refuses.
func TestReplayShowsTheBisect(t *testing.T) {
	evs := replayEvents()
	for _, e := range tuitest.BisectEvents(100 * time.Second) {
		if _, screenOnly := e.Data.(event.BisectProgress); !screenOnly {
			evs = append(evs, e)
		}
	}
	evs = append(evs, tuitest.Ev(130*time.Second, tuitest.BisectEnd(event.BisectCulprit)))
	r := New(newFakeSource(evs), tui.Options{Theme: tui.ThemeDark}, Options{At: 120 * time.Second})
	r.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	pump(r, r.Init())
	rpress(r, "i")
	scr := rplain(r)
	if !strings.Contains(scr, "bisect b1  bba2fc4..a6d51c0  9 commits  tok/s  running") || !strings.Contains(scr, "65b09bf         Fix PCG MoE Error") {
		t.Fatalf("at 2:00:\n%s", scr)
	}
	rpress(r, "X")
	if !strings.HasPrefix(r.inner.Status(), "read-only") {
		t.Errorf("X: %q", r.inner.Status())
	}
	rpress(r, "right")
	scr = rplain(r)
	if !strings.Contains(scr, "tok/s  culprit") || !strings.Contains(scr, "culprit 65b09bf Fix PCG MoE Error") ||
		!strings.Contains(scr, "restored: main at a6d51c0, dirty work restored") {
		t.Errorf("at 2:10:\n%s", scr)
	}
}
