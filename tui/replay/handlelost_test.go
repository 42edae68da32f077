package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// A GPU whose handle fails is journaled (the sample's Missing) and
// replayed: a follower that catches up at the journal's end, and one that
// plays what is appended, show its row LOST with the name and bus id an
// earlier sample read, and one never read LOST too.
func TestReplayShowsAGPUWhoseHandleFails(t *testing.T) {
	lost := func(d time.Duration, missing ...int) event.Event {
		s := tuitest.H200s(4)
		kept := s.GPUs[:0]
		for _, g := range s.GPUs {
			if g.Index != missing[0] && (len(missing) < 2 || g.Index != missing[1]) {
				kept = append(kept, g)
			}
		}
		s.GPUs, s.Missing, s.At = kept, missing, tuitest.At(d)
		return tuitest.Ev(d, s)
	}
	agent := tuitest.Ev(time.Second, event.GPUSource{Mode: event.SourceAgent, Detail: "agent 0.8.0"})
	f := newFollowFixture(t, 120, 30, tuitest.Connected(), agent, lost(2*time.Second, 1), lost(3*time.Second, 1))
	row := func(idx string) string {
		t.Helper()
		for _, l := range strings.Split(rplain(f.r), "\n") {
			if fs := strings.Fields(l); len(fs) > 1 && fs[0] == idx {
				return l
			}
		}
		t.Fatalf("no row for GPU %s:\n%s", idx, rplain(f.r))
		return ""
	}
	if r := row("1"); !strings.Contains(r, "LOST  handle lost: NVML gives no handle for this GPU") {
		t.Errorf("caught up: GPU 1 row %q", r)
	}
	// Played: GPU 3, read before, loses its handle too.
	f.write(lost(4*time.Second, 1, 3))
	f.tick(tuitest.T0.Add(4500 * time.Millisecond))
	if r := row("3"); !strings.Contains(r, "H200") || !strings.Contains(r, "LOST  handle lost: NVML gives no handle for this GPU (bus 00000000:48:00.0)") {
		t.Errorf("played: GPU 3 row %q", r)
	}
	if r := row("1"); !strings.Contains(r, "LOST  handle lost") {
		t.Errorf("played: GPU 1 row %q", r)
	}
}
