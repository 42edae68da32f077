package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/tui"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// followFixture is a journal being written by a journal.Writer and a
// follower of it at w x h, its catch-up done; the test delivers the poll
// ticks (tick).
type followFixture struct {
	t    *testing.T
	path string
	w    *journal.Writer
	j    *journal.Journal
	r    *Model
}

func newFollowFixture(t *testing.T, w, h int, evs ...event.Event) *followFixture {
	t.Helper()
	f := &followFixture{t: t, path: filepath.Join(t.TempDir(), "live.jsonl")}
	var err error
	f.w, err = journal.Create(f.path, event.SessionHeader{Created: tuitest.T0, Host: "root@gpu-box:22", Label: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.w.Close() })
	f.write(evs...)
	if f.j, err = journal.Open(f.path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.j.Close() })
	f.r = New(f.j, tui.Options{Theme: tui.ThemeDark}, Options{Follow: true})
	f.r.fol.tickCmd = func() tea.Cmd { return nil }
	f.r.Update(tea.WindowSizeMsg{Width: w, Height: h})
	pump(f.r, f.r.Init())
	return f
}

// write appends evs to the journal and writes them to the file (no
// fsync: what the recorder does every 250 ms).
func (f *followFixture) write(evs ...event.Event) {
	f.t.Helper()
	for _, e := range evs {
		if err := f.w.Write(e); err != nil {
			f.t.Fatal(err)
		}
	}
	if err := f.w.Flush(false); err != nil {
		f.t.Fatal(err)
	}
}

// tick delivers one poll tick at wall-clock time now and runs the poll.
func (f *followFixture) tick(now time.Time) {
	_, cmd := f.r.Update(followTickMsg{At: now})
	pump(f.r, cmd)
}

func logLine(d time.Duration, text string) event.Event {
	return tuitest.Ev(d, event.LogLines{Path: "/data/logs/sglang.log", Lines: []event.LogLine{{Offset: int64(d / time.Millisecond), Text: []byte(text)}}})
}

func startEvents() []event.Event {
	return []event.Event{tuitest.Connected(), tuitest.Ev(time.Second, tuitest.H200s(2)), logLine(2*time.Second, "first line before the follower started"),
		tuitest.Ev(3*time.Second, event.Note{Text: "a note before"})}
}

// TestFollowCatchesUpThenPlaysWhatIsAppended: the follower starts at the
// journal's end with the screen rebuilt from the start, then shows a log
// line and a note written afterwards as soon as its poll runs, and an
// event written with an earlier time than the last one (two probes'
// clocks) too.
func TestFollowCatchesUpThenPlaysWhatIsAppended(t *testing.T) {
	f := newFollowFixture(t, 100, 30, startEvents()...)
	r := f.r
	if !r.Following() || !r.Live() || r.Position() != 3*time.Second || r.Playing() {
		t.Fatalf("following %v live %v at %v playing %v", r.Following(), r.Live(), r.Position(), r.Playing())
	}
	screen := rplain(r)
	if !strings.Contains(screen, "first line before the follower started") {
		t.Errorf("catch-up misses the log:\n%s", screen)
	}
	if !strings.HasPrefix(screen, "flightdeck  follow  demo  root@gpu-box:22") {
		t.Errorf("header %q", strings.SplitN(screen, "\n", 2)[0])
	}
	if v := r.View(); v.WindowTitle != "flightdeck follow demo root@gpu-box:22" {
		t.Errorf("window title %q", v.WindowTitle)
	}
	tl := timelineOf(r)
	if !strings.HasPrefix(tl, "live   0:00:03/0:00:03") || !strings.HasSuffix(tl, "LIVE") || len(tl) != 100 {
		t.Errorf("timeline %q", tl)
	}

	f.write(logLine(5*time.Second, "appended while following"), tuitest.Ev(6*time.Second, event.Note{Text: "try NCCL_ALGO=Ring"}))
	if strings.Contains(rplain(r), "appended while following") {
		t.Fatal("shown before the poll")
	}
	f.tick(tuitest.T0.Add(6500 * time.Millisecond))
	if !strings.Contains(rplain(r), "appended while following") {
		t.Errorf("the appended line is not shown after a poll:\n%s", rplain(r))
	}
	if r.Position() != 6*time.Second || !r.Live() {
		t.Errorf("at %v live %v, want 0:00:06 live", r.Position(), r.Live())
	}
	var notes []string
	for _, mk := range r.marks {
		if mk.Kind == event.KindNote {
			notes = append(notes, mk.Text)
		}
	}
	if strings.Join(notes, "|") != "a note before|try NCCL_ALGO=Ring" {
		t.Errorf("note marks %q", notes)
	}
	// The driver's note, as it comes, is on the status line.
	if want := "note " + tuitest.T0.Add(6*time.Second).Local().Format("15:04:05") + ": try NCCL_ALGO=Ring"; r.inner.Status() != want {
		t.Errorf("status %q, want %q", r.inner.Status(), want)
	}

	// Earlier than the last event: its running-max time is the edge the
	// last poll read up to.
	f.write(logLine(5500*time.Millisecond, "late sample from a slow probe"), logLine(6*time.Second, "same time as the edge"))
	f.tick(tuitest.T0.Add(6750 * time.Millisecond))
	screen = rplain(r)
	for _, want := range []string{"late sample from a slow probe", "same time as the edge", "appended while following"} {
		if n := strings.Count(screen, want); n != 1 {
			t.Errorf("%q shown %d times, want once:\n%s", want, n, screen)
		}
	}
	// The clock is the wall clock while live: ages grow while quiet.
	if !r.inner.Now().Equal(tuitest.T0.Add(6750 * time.Millisecond)) {
		t.Errorf("clock %v", r.inner.Now())
	}
}

func TestFollowSaysWhenTheWriterIsQuiet(t *testing.T) {
	f := newFollowFixture(t, 100, 30, startEvents()...)
	f.tick(tuitest.T0.Add(7 * time.Second)) // 4 s after the last event
	if tl := timelineOf(f.r); strings.Contains(tl, "no new events") || !strings.HasSuffix(tl, "LIVE") {
		t.Errorf("timeline %q", tl)
	}
	f.tick(tuitest.T0.Add(15 * time.Second))
	if tl := timelineOf(f.r); !strings.HasSuffix(tl, "no new events for 12s  LIVE") {
		t.Errorf("timeline %q", tl)
	}
	f.write(logLine(16*time.Second, "back"))
	f.tick(tuitest.T0.Add(16 * time.Second))
	if tl := timelineOf(f.r); strings.Contains(tl, "no new events") {
		t.Errorf("timeline %q after an event", tl)
	}
	f.tick(tuitest.T0.Add(16*time.Second + 5*time.Minute + 3*time.Second))
	if tl := timelineOf(f.r); !strings.Contains(tl, "no new events for 5m03s") {
		t.Errorf("timeline %q", tl)
	}
}

// TestFollowKeysNeverAct: the keys that act in the cockpit say "follow:
// read-only" and do nothing; the view keys work.
func TestFollowKeysNeverAct(t *testing.T) {
	f := newFollowFixture(t, 120, 30, startEvents()...)
	r := f.r
	for _, k := range []string{"K", "L", "p", "e", "n", "b", "R"} {
		rpress(r, k)
		if st := r.inner.Status(); !strings.HasPrefix(st, "follow: read-only") {
			t.Errorf("%s: status %q, want it to say follow: read-only", k, st)
		}
		if r.inner.DialogOpen() {
			t.Errorf("%s opened a form", k)
		}
		if !strings.Contains(rplain(r), "follow: read-only") {
			t.Errorf("%s: the footer does not say it", k)
		}
	}
	rpress(r, "x")
	if !r.inner.Experiments().Open {
		t.Error("x does not open the experiments panel")
	}
	rpress(r, "x", "w")
	if !r.inner.Wrapping() {
		t.Error("w does not wrap the log")
	}
	rpress(r, "?")
	help := rplain(r)
	if !strings.Contains(help, "back to the live end") {
		t.Errorf("help does not say how to return to live:\n%s", help)
	}
	if !r.Live() {
		t.Error("a view key left the live end")
	}
}

// TestFollowSeekBackAndReturn: left leaves the live end (new events then
// only grow the timeline), G returns to it with what arrived meanwhile;
// space pauses at the live end and plays back to it.
func TestFollowSeekBackAndReturn(t *testing.T) {
	evs := startEvents()
	for s := 4; s <= 30; s += 2 {
		evs = append(evs, tuitest.Ev(time.Duration(s)*time.Second, tuitest.H200s(2)))
	}
	f := newFollowFixture(t, 100, 30, evs...)
	r := f.r
	rpress(r, "left")
	if r.Live() || r.Position() != 20*time.Second {
		t.Fatalf("after left: live %v at %v", r.Live(), r.Position())
	}
	if tl := timelineOf(r); !strings.HasSuffix(tl, "behind 0:00:10 (G: live)") || !strings.HasPrefix(tl, "paused") {
		t.Errorf("timeline %q", tl)
	}
	f.write(logLine(31*time.Second, "while looking back"))
	f.tick(tuitest.T0.Add(31 * time.Second))
	if r.Position() != 20*time.Second || strings.Contains(rplain(r), "while looking back") {
		t.Errorf("not live, yet moved to %v", r.Position())
	}
	if tl := timelineOf(r); !strings.Contains(tl, "0:00:20/0:00:31") {
		t.Errorf("the timeline did not grow: %q", tl)
	}
	rpress(r, "G")
	if !r.Live() || r.Position() != 31*time.Second || !strings.Contains(rplain(r), "while looking back") {
		t.Errorf("after G: live %v at %v\n%s", r.Live(), r.Position(), rplain(r))
	}
	rpress(r, "space")
	if r.Live() {
		t.Error("space did not pause")
	}
	f.write(logLine(32*time.Second, "while paused"))
	f.tick(tuitest.T0.Add(32 * time.Second))
	if strings.Contains(rplain(r), "while paused") {
		t.Error("paused, yet played")
	}
	rpress(r, "right") // to the end: live again
	if !r.Live() || !strings.Contains(rplain(r), "while paused") {
		t.Errorf("right to the end: live %v\n%s", r.Live(), rplain(r))
	}
	// Playing back from the past reaches the end and goes live.
	rpress(r, "left", "+", "+", "+", "+", "+", "+", "space")
	if !r.Playing() {
		t.Fatal("space does not play")
	}
	for range 5 {
		_, cmd := r.Update(replayTickMsg{gen: r.playGen})
		pump(r, cmd)
	}
	if !r.Live() || r.Playing() {
		t.Errorf("played to the end: live %v playing %v", r.Live(), r.Playing())
	}
}

// TestFollowJournalShrinksOrIsReplaced: the screen says so; no panic.
func TestFollowJournalShrinksOrIsReplaced(t *testing.T) {
	f := newFollowFixture(t, 120, 30, startEvents()...)
	// Replaced: a new file at the path; the old one is still followed.
	f.tick(tuitest.T0.Add(4 * time.Second)) // the first poll notes the file
	tmp := f.path + ".new"
	if err := os.WriteFile(tmp, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		t.Fatal(err)
	}
	f.write(logLine(5*time.Second, "still written to the old file"))
	f.tick(tuitest.T0.Add(5 * time.Second))
	tl := timelineOf(f.r)
	if !strings.Contains(tl, "the journal file was replaced") || !strings.Contains(rplain(f.r), "still written to the old file") {
		t.Errorf("timeline %q\n%s", tl, rplain(f.r))
	}

	g := newFollowFixture(t, 120, 30, startEvents()...)
	if err := os.Truncate(g.path, 40); err != nil {
		t.Fatal(err)
	}
	g.tick(tuitest.T0.Add(5 * time.Second))
	if tl := timelineOf(g.r); !strings.Contains(tl, "follow stopped: journal") || !strings.Contains(tl, "shrank") || g.r.Live() {
		t.Errorf("timeline %q live %v", tl, g.r.Live())
	}
	g.tick(tuitest.T0.Add(6 * time.Second)) // no more polls, no panic
	rpress(g.r, "G", "space", "right")
}

func TestNextEdge(t *testing.T) {
	e := func(ms int) event.Event { return tuitest.Ev(time.Duration(ms)*time.Millisecond, event.Note{}) }
	for _, tc := range []struct {
		name            string
		evs             []event.Event
		edge            time.Duration
		seen            int
		fresh, wantSeen int
		wantEdge        time.Duration
	}{
		{"nothing new", []event.Event{e(100), e(90)}, 100 * time.Millisecond, 2, 0, 2, 100 * time.Millisecond},
		{"later events", []event.Event{e(100), e(200), e(300), e(250)}, 100 * time.Millisecond, 1, 3, 2, 300 * time.Millisecond},
		{"an earlier time after the edge", []event.Event{e(100), e(50), e(60)}, 100 * time.Millisecond, 1, 2, 3, 100 * time.Millisecond},
		{"an event that no longer decodes", []event.Event{e(100)}, 100 * time.Millisecond, 2, 0, 2, 100 * time.Millisecond},
		{"from the start", []event.Event{e(0), e(0)}, 0, 0, 2, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fresh, edge, seen := nextEdge(tc.evs, tuitest.T0, tc.edge, tc.seen)
			if len(fresh) != tc.fresh || edge != tc.wantEdge || seen != tc.wantSeen {
				t.Errorf("nextEdge = %d fresh, edge %v, seen %d; want %d, %v, %d", len(fresh), edge, seen, tc.fresh, tc.wantEdge, tc.wantSeen)
			}
		})
	}
}

// The follower goldens: live at the end of replayEvents with the writer
// quiet for 12 s (100x30), and 40 s behind after seeking back (80x24).
func TestFollowGolden(t *testing.T) {
	newFollow := func(w, h int) *Model {
		r := New(newFakeSource(replayEvents()), tui.Options{Theme: tui.ThemeDark}, Options{Follow: true})
		r.fol.tickCmd = func() tea.Cmd { return nil }
		r.tickCmd = func(gen int) tea.Cmd { return nil }
		r.Update(tea.WindowSizeMsg{Width: w, Height: h})
		pump(r, r.Init())
		return r
	}
	t.Run("live_quiet_100x30", func(t *testing.T) {
		r := newFollow(100, 30)
		_, cmd := r.Update(followTickMsg{At: tuitest.T0.Add(132 * time.Second)})
		pump(r, cmd)
		golden.RequireEqual(t, rplain(r))
	})
	t.Run("behind_80x24", func(t *testing.T) {
		r := newFollow(80, 24)
		rpress(r, "left", "left", "left", "left")
		golden.RequireEqual(t, rplain(r))
	})
}

// TestFollowSaysWhenTheDriverQuitsOrIsTakenOver: the followed cockpit's
// release of the driver lock (it quit) ends the session on the timeline
// instead of LIVE; a take-over of its host is said on the status line.
func TestFollowSaysWhenTheDriverQuitsOrIsTakenOver(t *testing.T) {
	me := event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123, Since: tuitest.T0}
	evs := append(startEvents(), tuitest.Ev(3*time.Second, event.DriverState{Role: event.RoleDriving, Holder: me}))
	f := newFollowFixture(t, 120, 30, evs...)
	r := f.r
	bob := event.DriverInfo{User: "bob", Machine: "desk", PID: 77, Since: tuitest.T0.Add(5 * time.Second)}
	f.write(tuitest.Ev(5*time.Second, event.DriverState{Role: event.RoleWatching, Holder: bob, Note: "bob@desk (pid 77) took over at 10:27:05"}))
	f.tick(tuitest.T0.Add(5500 * time.Millisecond))
	if st := r.inner.Status(); !strings.HasPrefix(st, "bob@desk (pid 77) took over: this journal's cockpit only watches now") {
		t.Errorf("status after the take-over: %q", st)
	}
	if tl := timelineOf(r); !strings.HasSuffix(tl, "LIVE") {
		t.Errorf("a watching cockpit's journal goes on: timeline %q", tl)
	}
	f.write(tuitest.Ev(7*time.Second, event.DriverState{Role: event.RoleDriving, Holder: me, Note: "bob@desk (pid 77) quit: you drive now"}))
	f.tick(tuitest.T0.Add(7500 * time.Millisecond))
	if st := r.inner.Status(); st != "this journal's cockpit drives again (bob@desk (pid 77) quit: you drive now)" {
		t.Errorf("status after the lock came back: %q", st)
	}
	f.write(tuitest.Ev(9*time.Second, event.DriverState{Role: event.RoleNone, Holder: me, Note: "released the lock"}))
	f.tick(tuitest.T0.Add(9500 * time.Millisecond))
	want := "ENDED " + tuitest.T0.Add(9*time.Second).Local().Format("15:04:05") + " (the driver quit)"
	if tl := timelineOf(r); !strings.HasSuffix(tl, want) {
		t.Errorf("timeline %q, want it to end with %q", tl, want)
	}

	// A journal whose driver had quit before the follower started ends
	// at once; a watcher's journal with an error is no take-over.
	ended := append(startEvents(), tuitest.Ev(3*time.Second, event.DriverState{Role: event.RoleDriving, Holder: me}),
		tuitest.Ev(4*time.Second, event.DriverState{Role: event.RoleNone, Note: driver.NoteReleased}))
	g := newFollowFixture(t, 120, 30, ended...)
	if tl := timelineOf(g.r); !strings.Contains(tl, "ENDED ") {
		t.Errorf("a finished session followed from its end: timeline %q", tl)
	}
	w := newFollowFixture(t, 120, 30, append(startEvents(), tuitest.Ev(3*time.Second, event.DriverState{Role: event.RoleWatching, Holder: bob}))...)
	w.write(tuitest.Ev(5*time.Second, event.DriverState{Role: event.RoleWatching, Holder: bob, Err: "connection to host lost"}))
	w.tick(tuitest.T0.Add(5500 * time.Millisecond))
	if st := w.r.inner.Status(); strings.Contains(st, "took over") {
		t.Errorf("a watcher's error read as a take-over: %q", st)
	}
}
