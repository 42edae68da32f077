package replay

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/tui"
	gitpanel "github.com/flightdeck-dev/flightdeck/tui/panels/git"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// fakeSource is a journal in memory: events at tuitest.T0 + their time, marks
// from their kinds, CatchUp as every event up to t (a fresh model fed
// them shows the screen at t).
type fakeSource struct {
	evs    []event.Event
	calls  int   // not synchronised: the race detector catches unserialised reads
	err    error // returned by Events and CatchUp when set
	events [][2]time.Duration
}

func newFakeSource(evs []event.Event) *fakeSource {
	evs = append([]event.Event(nil), evs...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At.Before(evs[j].At) })
	return &fakeSource{evs: evs}
}

func (s *fakeSource) Header() event.SessionHeader {
	return event.SessionHeader{Format: journal.FormatName, Version: 1, Created: tuitest.T0, Host: "root@gpu-box:22", Label: "demo"}
}

func (s *fakeSource) Start() time.Time { return tuitest.T0 }

func (s *fakeSource) Duration() time.Duration { return s.evs[len(s.evs)-1].At.Sub(tuitest.T0) }

func (s *fakeSource) Marks() []journal.Mark {
	var out []journal.Mark
	for _, e := range s.evs {
		t := e.At.Sub(tuitest.T0)
		switch p := e.Data.(type) {
		case event.ExperimentStart:
			out = append(out, journal.Mark{T: t, Kind: event.KindExperimentStart, Exp: p.ID, Text: p.Name})
		case event.ExperimentEnd:
			out = append(out, journal.Mark{T: t, Kind: event.KindExperimentEnd, Exp: p.Exp, Text: string(p.Trigger)})
		case event.Note:
			out = append(out, journal.Mark{T: t, Kind: event.KindNote, Exp: p.Exp, Text: p.Text})
		}
	}
	return out
}

func (s *fakeSource) Events(from, to time.Duration) ([]event.Event, error) {
	s.calls++
	s.events = append(s.events, [2]time.Duration{from, to})
	if s.err != nil {
		return nil, s.err
	}
	var out []event.Event
	for _, e := range s.evs {
		if t := e.At.Sub(tuitest.T0); t > from && t <= to {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *fakeSource) CatchUp(t time.Duration) ([]event.Event, error) {
	s.calls++
	if s.err != nil {
		return nil, s.err
	}
	return upTo(s.evs, t), nil
}

func upTo(evs []event.Event, t time.Duration) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.At.Sub(tuitest.T0) <= t {
			out = append(out, e)
		}
	}
	return out
}

var _ Source = (*fakeSource)(nil)

// replayEvents is a recorded session: connected, GPUs sampled every 5 s,
// the server ready, log lines, and the three experiments of tuitest.Session(),
// ending at 2:00.
func replayEvents() []event.Event {
	evs := []event.Event{tuitest.Connected()}
	for s := 0; s <= 120; s += 5 {
		g := tuitest.H200s(8)
		for i := range g.GPUs {
			g.GPUs[i].UtilGPUPct = tuitest.OK(float64(40 + s/3))
		}
		evs = append(evs, tuitest.Ev(time.Duration(s)*time.Second, g))
	}
	st := tuitest.ReadyStatus()
	st.Since = tuitest.At(2 * time.Second)
	evs = append(evs, tuitest.Ev(2*time.Second, st))
	for s := 3; s <= 120; s += 7 {
		evs = append(evs, tuitest.Ev(time.Duration(s)*time.Second, tuitest.DecodeLines(s, 3)))
	}
	evs = append(evs, tuitest.Session()...)
	evs = append(evs, tuitest.Ev(120*time.Second, event.ConnState{Host: "root@gpu-box:22", Conn: event.Connected, Since: tuitest.T0}))
	return evs
}

// newTestReplay is a replay of replayEvents at w x h, Init's reads done,
// ticks delivered by the test (advance).
func newTestReplay(w, h int, o Options) (*Model, *fakeSource) {
	src := newFakeSource(replayEvents())
	r := New(src, tui.Options{Theme: tui.ThemeDark}, o)
	r.tickCmd = func(gen int) tea.Cmd { return func() tea.Msg { return replayTickMsg{gen: gen} } }
	r.Update(tea.WindowSizeMsg{Width: w, Height: h})
	pump(r, r.Init())
	return r, src
}

// pump runs cmd and feeds every message back, as the program would,
// until none are left; ticks are left out (advance delivers them).
func pump(r *Model, cmd tea.Cmd) {
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, msg := range tuitest.Run(c) {
			if _, tick := msg.(replayTickMsg); tick {
				continue
			}
			_, next := r.Update(msg)
			queue = append(queue, next)
		}
	}
}

// rpress presses keys in the replay, pumping each one's commands.
func rpress(r *Model, keys ...string) {
	for _, k := range keys {
		msg := tuitest.KeyMsg(k)
		if k == "space" {
			msg = tuitest.Space()
		}
		_, cmd := r.Update(msg)
		pump(r, cmd)
	}
}

// advance delivers n play ticks.
func advance(r *Model, n int) {
	for range n {
		_, cmd := r.Update(replayTickMsg{gen: r.playGen})
		pump(r, cmd)
	}
}

func rplain(r *Model) string { return ansi.Strip(r.View().Content) }

// liveAt is the live cockpit at w x h fed the recorded events up to t,
// with the clock at t (read-only: a model as the journal tests build one).
func liveAt(w, h int, t time.Duration, readOnly bool) *tui.Model {
	m := newSized(w, h, tui.Options{Label: "demo", Host: "root@gpu-box:22", Theme: tui.ThemeDark, ReadOnly: readOnly})
	m.Update(tui.EventsMsg(upTo(newFakeSource(replayEvents()).evs, t)))
	m.Update(tui.ClockMsg{Now: tuitest.T0.Add(t)})
	return m
}

// sameBody checks that the replay's screen above its footer and timeline
// is the live cockpit's at the same time (one line shorter), but for the
// header, which says replay: that is a read-only model's.
func sameBody(t *testing.T, r *Model, w, h int) {
	t.Helper()
	got := strings.Split(rplain(r), "\n")
	want := strings.Split(plain(liveAt(w, h-1, r.Position(), false)), "\n")
	if len(got) != h || len(want) != h-1 {
		t.Fatalf("%d and %d lines", len(got), len(want))
	}
	if g, w := strings.Join(got[1:h-2], "\n"), strings.Join(want[1:h-2], "\n"); g != w {
		t.Errorf("replay at %v differs from live:\n%s\n---- live ----\n%s", r.Position(), g, w)
	}
	ro := strings.Split(plain(liveAt(w, h-1, r.Position(), true)), "\n")
	if !strings.HasPrefix(got[0], "flightdeck  replay  demo  ") || got[0] != ro[0] {
		t.Errorf("replay header %q, want %q", got[0], ro[0])
	}
}

func timelineOf(r *Model) string {
	ls := strings.Split(rplain(r), "\n")
	return ls[len(ls)-1]
}

func TestReplayStartsPausedAtZero(t *testing.T) {
	r, _ := newTestReplay(100, 30, Options{})
	if r.Playing() || r.Position() != 0 || r.Speed() != 1 || r.seeking {
		t.Errorf("playing %v pos %v speed %d seeking %v", r.Playing(), r.Position(), r.Speed(), r.seeking)
	}
	if tl := timelineOf(r); !strings.HasPrefix(tl, "paused 0:00:00/0:02:00  1x  #---") {
		t.Errorf("timeline %q", tl)
	}
	if !strings.Contains(rplain(r), "flightdeck  replay  demo  root@gpu-box:22") {
		t.Errorf("header from the journal:\n%s", rplain(r))
	}
	if v := r.View(); v.WindowTitle != "flightdeck replay demo root@gpu-box:22" {
		t.Errorf("window title %q", v.WindowTitle)
	}
	sameBody(t, r, 100, 30)
	// Options.At and Play.
	o := Options{At: 95 * time.Second, Play: true, Speed: 5}
	r, _ = newTestReplay(100, 30, o)
	if !r.Playing() || r.Position() != 95*time.Second || r.Speed() != 4 {
		t.Errorf("At/Play/Speed: playing %v pos %v speed %d", r.Playing(), r.Position(), r.Speed())
	}
	sameBody(t, r, 100, 30)
}

// TestReplayPlaysLikeLive: playing moves the position by 100 ms x speed a
// tick, and the screen is the live one at every step.
func TestReplayPlaysLikeLive(t *testing.T) {
	r, _ := newTestReplay(100, 30, Options{At: 40 * time.Second})
	rpress(r, "+", "+", "space")
	if !r.Playing() || r.Speed() != 4 {
		t.Fatalf("playing %v speed %d", r.Playing(), r.Speed())
	}
	for i := range 30 {
		advance(r, 1)
		if want := 40*time.Second + time.Duration(i+1)*400*time.Millisecond; r.Position() != want {
			t.Fatalf("tick %d: position %v, want %v", i, r.Position(), want)
		}
		if i%5 == 4 {
			sameBody(t, r, 100, 30)
		}
	}
	if got := r.inner.Now(); !got.Equal(tuitest.T0.Add(r.Position())) {
		t.Errorf("clock %v, want start + %v", got, r.Position())
	}
	rpress(r, "space")
	advance(r, 3)
	if r.Playing() || r.Position() != 52*time.Second {
		t.Errorf("paused: playing %v at %v", r.Playing(), r.Position())
	}
}

func TestReplaySpeeds(t *testing.T) {
	r, _ := newTestReplay(80, 24, Options{})
	var got []int
	for range 8 {
		rpress(r, "+")
		got = append(got, r.Speed())
	}
	for range 8 {
		rpress(r, "-")
		got = append(got, r.Speed())
	}
	if fmt.Sprint(got) != "[2 4 8 16 32 64 64 64 32 16 8 4 2 1 1 1]" {
		t.Errorf("speeds %v", got)
	}
}

func TestReplaySeekKeys(t *testing.T) {
	r, _ := newTestReplay(100, 30, Options{})
	steps := []struct {
		keys []string
		want time.Duration
		note string
	}{
		{[]string{"right"}, 10 * time.Second, ""},
		{[]string{"right", "right"}, 30 * time.Second, ""},
		{[]string{"left"}, 20 * time.Second, ""},
		{[]string{"]"}, 45 * time.Second, "0:00:45 e1 ended: kill"},
		{[]string{"]"}, 50 * time.Second, "0:00:50 e2 started: nccl-ll-ring @ bba2fc4"},
		{[]string{"]"}, 70 * time.Second, "0:01:10 note on e2: NCCL_DEBUG shows LL in use"},
		{[]string{"["}, 50 * time.Second, "0:00:50 e2 started"},
		{[]string{"["}, 45 * time.Second, ""},
		{[]string{"t", "1", ":", "3", "0", "enter"}, 90 * time.Second, ""},
		{[]string{"t", "7", "5", "enter"}, 75 * time.Second, ""},
		{[]string{"t", "x", "enter"}, 75 * time.Second, `t: "x": not a time: use h:mm:ss, mm:ss, seconds or a duration such as 90s`},
		{[]string{"t", "3", ":", "0", "0", "enter"}, 75 * time.Second, "t: 0:03:00 is past the end of the journal (0:02:00)"},
		{[]string{"t", "9", "esc"}, 75 * time.Second, ""},
		{[]string{"left", "left", "left", "left", "left", "left", "left", "left", "left"}, 0, ""},
		{[]string{"["}, 0, "no earlier mark"},
		{[]string{"t", "1", "1", "5", "enter", "right"}, 120 * time.Second, ""},
		{[]string{"]"}, 120 * time.Second, "no later mark"},
	}
	for _, s := range steps {
		rpress(r, s.keys...)
		if r.Position() != s.want {
			t.Errorf("%v: position %v, want %v", s.keys, r.Position(), s.want)
		}
		if s.note != "" && !strings.HasPrefix(r.inner.Status(), s.note) {
			t.Errorf("%v: status %q, want %q", s.keys, r.inner.Status(), s.note)
		}
		sameBody(t, r, 100, 30)
	}
}

// TestReplayDropsStaleAnswers: a seek's answer that a later seek
// superseded, and a read that a seek superseded, change nothing.
func TestReplayDropsStaleAnswers(t *testing.T) {
	r, _ := newTestReplay(100, 30, Options{})
	_, first := r.Update(tuitest.KeyMsg("right"))
	_, second := r.Update(tuitest.KeyMsg("right"))
	pump(r, second)
	if r.Position() != 20*time.Second {
		t.Fatalf("position %v", r.Position())
	}
	before := rplain(r)
	pump(r, first) // the answer for 10 s comes late
	if r.Position() != 20*time.Second || rplain(r) != before {
		t.Errorf("a superseded seek changed the screen: position %v", r.Position())
	}
	// A read in flight when a seek starts is dropped.
	rpress(r, "space")
	_, step := r.Update(replayTickMsg{gen: r.playGen})
	_, seek := r.Update(tuitest.KeyMsg("]"))
	pump(r, seek)
	pos := r.Position()
	pump(r, step)
	if r.Position() != pos || r.fetching {
		t.Errorf("a superseded read moved the position to %v (from %v)", r.Position(), pos)
	}
	sameBody(t, r, 100, 30)
}

// TestReplayReadsOneAtATime: reads from two commands in flight at once
// (a play step and a seek) are serialised; the race detector checks it.
func TestReplayReadsOneAtATime(t *testing.T) {
	r, src := newTestReplay(80, 24, Options{})
	rpress(r, "space")
	_, step := r.Update(replayTickMsg{gen: r.playGen})
	_, seek := r.Update(tuitest.KeyMsg("right"))
	var wg sync.WaitGroup
	for _, c := range []tea.Cmd{step, seek} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tuitest.Run(c)
		}()
	}
	wg.Wait()
	if src.calls < 3 {
		t.Errorf("%d reads", src.calls)
	}
}

func TestReplayPausesAtTheEnd(t *testing.T) {
	r, _ := newTestReplay(80, 24, Options{At: 118 * time.Second, Play: true})
	advance(r, 25)
	if r.Playing() || r.Position() != 120*time.Second || r.inner.Status() != "end of the journal" {
		t.Errorf("playing %v at %v, status %q", r.Playing(), r.Position(), r.inner.Status())
	}
	// space at the end plays from the start.
	rpress(r, "space")
	if !r.Playing() || r.Position() != 0 {
		t.Errorf("space at the end: playing %v at %v", r.Playing(), r.Position())
	}
}

func TestReplayReadErrorPauses(t *testing.T) {
	r, src := newTestReplay(80, 24, Options{})
	rpress(r, "space")
	src.err = errors.New("journal: read /j.jsonl: input/output error")
	advance(r, 1)
	if r.Playing() || !strings.HasPrefix(r.inner.Status(), "replay: journal: read /j.jsonl: input/output error") {
		t.Errorf("playing %v, status %q", r.Playing(), r.inner.Status())
	}
	rpress(r, "right")
	if !strings.Contains(r.inner.Status(), "seek to 0:00:10") {
		t.Errorf("seek error: %q", r.inner.Status())
	}
}

// TestReplayRefusesActions: keys that would act say so; the view keys
// work; q quits.
func TestReplayRefusesActions(t *testing.T) {
	r, _ := newTestReplay(100, 30, Options{At: 100 * time.Second})
	for k, want := range map[string]string{
		"K": "read-only replay: kill would change the host", "L": "read-only replay: launch would change the host",
		"p": "read-only replay: a profile change would change the host", "e": "read-only replay: an experiment would change the journal",
		"n": "read-only replay: a note would change the journal", "b": "read-only replay: a benchmark would load the server",
		"R": "read-only replay: a repeat would relaunch the server",
		"g": gitpanel.NoRepoText,
	} {
		rpress(r, k)
		if r.inner.Status() != want || r.inner.DialogOpen() {
			t.Errorf("%s: %q", k, r.inner.Status())
		}
	}
	// The panel, help, filter and scrolling work, and survive a seek.
	rpress(r, "x")
	if !strings.Contains(rplain(r), "> e3  nccl-ll-ring @ a6d51c0") {
		t.Errorf("x:\n%s", rplain(r))
	}
	rpress(r, "left")
	if !r.inner.Experiments().Open {
		t.Error("a seek closed the experiments panel")
	}
	rpress(r, "esc", "/")
	typeText(r.inner, "decode")
	rpress(r, "space") // typed into the filter, not play
	if r.Playing() || r.inner.Filter() != "decode " {
		t.Errorf("space while filtering: playing %v, filter %q", r.Playing(), r.inner.Filter())
	}
	rpress(r, "enter", "left")
	if r.inner.Filter() != "decode " {
		t.Errorf("a seek lost the filter: %q", r.inner.Filter())
	}
	var cmd tea.Cmd
	_, cmd = r.Update(tuitest.KeyMsg("q"))
	if !tuitest.IsQuit(cmd) || !r.Quitting() {
		t.Error("q did not quit")
	}
}

func TestReplayHelpAndFooter(t *testing.T) {
	r, _ := newTestReplay(120, 40, Options{})
	ls := strings.Split(rplain(r), "\n")
	if f := ls[len(ls)-2]; f != "? help  spc play  +/- speed  [/] mark  t time  x experiments  / filter  f follow  w wrap  z axis  q quit" {
		t.Errorf("footer %q", f)
	}
	rpress(r, "?")
	scr := rplain(r)
	if !strings.Contains(scr, "q    quit     ") || strings.Contains(scr, "server keeps running") {
		t.Errorf("help's q:\n%s", scr)
	}
	for _, s := range []string{"replay", "spc         play or pause", "+/-         faster or slower: 1x 2x 4x ... 64x",
		"left/right  seek back or forward 10 s", "[/]         previous or next experiment start or end, or note", "t           jump to a time"} {
		if !strings.Contains(scr, s) {
			t.Errorf("help lacks %q:\n%s", s, scr)
		}
	}
}

func TestReplayScreensFit(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {40, 10}, {200, 60}, {20, 4}, {1, 1}} {
		r, _ := newTestReplay(sz[0], sz[1], Options{At: 60 * time.Second})
		for _, keys := range [][]string{nil, {"t"}, {"esc", "x"}, {"space"}} {
			rpress(r, keys...)
			advance(r, 2)
			ls := strings.Split(rplain(r), "\n")
			if len(ls) != sz[1] {
				t.Errorf("%v %v: %d lines", sz, keys, len(ls))
			}
			for i, l := range ls {
				if w := ansi.StringWidth(l); w > sz[0] {
					t.Errorf("%v %v: line %d is %d wide: %q", sz, keys, i, w, l)
				}
			}
		}
	}
}

func TestTimelineBar(t *testing.T) {
	r, _ := newTestReplay(80, 24, Options{At: 60 * time.Second})
	// 120 s over 40 cells: 3 s a cell. Marks: [ at 10 s (cell 3), ] at 45 s
	// (15), [ at 50 s (16), n at 70 s (23), ] at 85 s (28), [ at 90 s (30).
	if got := ansi.Strip(r.bar(40)); got != "===[===========][===#--n----]-[---------" {
		t.Errorf("bar %q", got)
	}
	if tl := timelineOf(r); !strings.HasPrefix(tl, "paused 0:01:00/0:02:00  1x  ") || !strings.HasSuffix(tl, "  e2 nccl-ll-ring @ bba2fc4") {
		t.Errorf("timeline %q", tl)
	}
	rpress(r, "t")
	if tl := timelineOf(r); !strings.HasPrefix(tl, "jump to ") {
		t.Errorf("jump input %q", tl)
	}
}

// The replay goldens: paused at a mark (80x24) and playing at 4x with the
// experiments panel (100x30).
func TestReplayGolden(t *testing.T) {
	t.Run("paused_at_mark_80x24", func(t *testing.T) {
		r, _ := newTestReplay(80, 24, Options{})
		rpress(r, "]", "]", "]")
		golden.RequireEqual(t, rplain(r))
	})
	t.Run("playing_4x_100x30", func(t *testing.T) {
		r, _ := newTestReplay(100, 30, Options{At: 100 * time.Second, Play: true, Speed: 4})
		rpress(r, "x")
		advance(r, 12)
		golden.RequireEqual(t, rplain(r))
	})
	t.Run("playing_4x_100x30_colour", func(t *testing.T) {
		r, _ := newTestReplay(100, 30, Options{At: 100 * time.Second, Play: true, Speed: 4})
		advance(r, 12)
		golden.RequireEqual(t, r.View().Content)
	})
}

// TestReplayMarksAtOneInstant: an experiment's end by a relaunch and the
// next one's start, microseconds apart, are one stop for ] and [, named
// together.
func TestReplayMarksAtOneInstant(t *testing.T) {
	evs := []event.Event{tuitest.Connected(),
		tuitest.Ev(10*time.Second, event.ExperimentStart{ID: "e1", Name: "a", Trigger: event.TriggerLaunch}),
		tuitest.Ev(30*time.Second, event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerRelaunch}),
		tuitest.Ev(30*time.Second+300*time.Microsecond, event.ExperimentStart{ID: "e2", Name: "b", Trigger: event.TriggerLaunch}),
		tuitest.Ev(50*time.Second, event.Note{Text: "n", Exp: "e2"}),
		tuitest.Ev(60*time.Second, tuitest.H200s(1)),
	}
	r := New(newFakeSource(evs), tui.Options{Theme: tui.ThemeDark}, Options{})
	r.tickCmd = func(gen int) tea.Cmd { return func() tea.Msg { return replayTickMsg{gen: gen} } }
	r.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	pump(r, r.Init())
	for _, s := range []struct {
		key  string
		want time.Duration
		note string
	}{
		{"]", 10 * time.Second, "0:00:10 e1 started"},
		{"]", 30*time.Second + 300*time.Microsecond, "0:00:30 e1 ended: relaunch; 0:00:30 e2 started"},
		{"]", 50 * time.Second, "0:00:50 note on e2"},
		{"[", 30*time.Second + 300*time.Microsecond, "0:00:30 e1 ended"},
		{"[", 10 * time.Second, "0:00:10 e1 started"},
	} {
		rpress(r, s.key)
		if r.Position() != s.want || !strings.HasPrefix(r.inner.Status(), s.note) {
			t.Errorf("%s: position %v status %q, want %v %q", s.key, r.Position(), r.inner.Status(), s.want, s.note)
		}
	}
}
