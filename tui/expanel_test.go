package tui

// The experiments panel (x): its rows and details, in a replay, at every
// size and in goldens; the conclusion banner, concluding from the panel,
// and the warm-up.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	expdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/experiment"
)

func TestExperimentsPanel(t *testing.T) {
	m, _ := labScene(120, 40, Options{})
	press(m, "x")
	if !m.exp.Open || !strings.Contains(plain(m), "no experiments yet: e starts one") {
		t.Fatalf("empty panel:\n%s", plain(m))
	}
	send(m, session()...)
	scr := plain(m)
	for _, s := range []string{"experiments  3 experiments  e3 open  delta vs e1",
		"e1  none @ bba2fc4", "82.3 [81.9, 82.9]", "base", "killed",
		"e2  nccl-ll-ring @ bba2fc4", "bba2fc4+", "88.9 [88.1, 89.6]", "+8.0%", "relaunched",
		"> e3  nccl-ll-ring @ a6d51c0", "open"} {
		if !strings.Contains(scr, s) {
			t.Errorf("panel lacks %q:\n%s", s, scr)
		}
	}
	// The cursor follows the newest until moved; the details follow it.
	press(m, "up")
	scr = plain(m)
	for _, s := range []string{"> e2", "hypothesis  LL protocol with ring cuts all-reduce latency at TP=8",
		"conclusion  LL+ring is 8% faster: keep it", "dirty patch 3f2a9c1e0b12 (12.1 KiB)", "1 stash",
		"torch failed (timed out after 10s)", "8x NVIDIA H200  SM 1980 MHz  mem 3201 MHz  PCIe Gen5 x16  P0",
		"notes       10:28:10 NCCL_DEBUG shows LL in use", "errors      torch: timed out after 10s"} {
		if !strings.Contains(scr, s) {
			t.Errorf("details lack %q:\n%s", s, scr)
		}
	}
	// The log keys say why they cannot act; esc and x close it; g swaps.
	press(m, "f")
	if !strings.Contains(m.Status(), "experiments panel is open") {
		t.Errorf("f: %q", m.Status())
	}
	press(m, "esc")
	if m.exp.Open {
		t.Error("esc did not close the panel")
	}
	press(m, "x", "x")
	if m.exp.Open {
		t.Error("x did not close the panel")
	}
}

func TestExperimentsPanelWorksInReplay(t *testing.T) {
	m := newSized(100, 30, Options{ReadOnly: true})
	send(m, session()...)
	press(m, "x")
	if !strings.Contains(plain(m), "e3  nccl-ll-ring @ a6d51c0") {
		t.Errorf("read-only panel:\n%s", plain(m))
	}
	press(m, "e")
	if m.Status() != "read-only replay: an experiment would change the journal" {
		t.Errorf("e in a replay: %q", m.Status())
	}
}

func TestExperimentScreensFit(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {40, 12}, {200, 60}, {20, 6}} {
		m, _ := labScene(sz[0], sz[1], Options{})
		send(m, session()...)
		for _, keys := range [][]string{{"x"}, {"x", "up", "up"}, {"e"}, {"n"}} {
			press(m, keys...)
			assertFits(t, m, sz[0], sz[1], fmt.Sprint(keys))
			press(m, "esc", "esc")
		}
	}
}

// The experiments goldens: the panel with the scripted session at 100x30
// (plain and colour), the end form, and the conclusion prompt at 80x24.
func TestExperimentsGolden(t *testing.T) {
	panel := func() *Model {
		m, _ := labScene(100, 30, Options{})
		send(m, session()...)
		press(m, "x", "up")
		return m
	}
	t.Run("panel_100x30", func(t *testing.T) { golden.RequireEqual(t, plain(panel())) })
	t.Run("panel_100x30_colour", func(t *testing.T) { golden.RequireEqual(t, panel().View().Content) })
	t.Run("end_80x24", func(t *testing.T) {
		m, _ := labScene(80, 24, Options{})
		send(m, session()...)
		press(m, "e")
		golden.RequireEqual(t, plain(m))
	})
	t.Run("conclude_80x24", func(t *testing.T) {
		m, _ := labScene(80, 24, Options{})
		evs := session()
		for i, e := range evs {
			if u, ok := e.Data.(event.ExperimentUpdate); ok && u.Exp == "e2" {
				evs = evs[:i] // up to e2's end by relaunch, before its conclusion
				break
			}
		}
		send(m, evs...)
		press(m, "e")
		if m.overlay.TopID() != expdialog.ConcludeID {
			t.Fatal("no conclusion prompt")
		}
		golden.RequireEqual(t, plain(m))
	})
	// The start form: the default name a dimmed placeholder.
	t.Run("start_80x24_colour", func(t *testing.T) {
		m, _ := labScene(80, 24, Options{})
		press(m, "e")
		golden.RequireEqual(t, m.View().Content)
	})
	// The banner of an experiment ended by a relaunch, at 120 columns.
	t.Run("banner_120x30", func(t *testing.T) {
		m, _ := labScene(120, 30, Options{})
		evs := session()
		for i, e := range evs {
			if u, ok := e.Data.(event.ExperimentUpdate); ok && u.Exp == "e2" {
				evs = evs[:i]
				break
			}
		}
		send(m, evs...)
		golden.RequireEqual(t, plain(m))
	})
	// w in the panel on e2: its conclusion to edit.
	t.Run("conclude_edit_100x30", func(t *testing.T) {
		m := panel()
		press(m, "w")
		golden.RequireEqual(t, plain(m))
	})
	// A hand-started experiment 7 s in: warming up, not a warning.
	t.Run("warmup_100x30", func(t *testing.T) {
		m, _ := labScene(100, 30, Options{})
		start := gitNow.Add(time.Second)
		evs := EventsMsg{{At: start, Data: event.ExperimentStart{ID: "e1", Name: "none @ a6d51c0", Trigger: event.TriggerKey}}}
		for i := range 6 {
			evs = append(evs, event.Event{At: start.Add(time.Duration(i+1) * time.Second), Data: event.TokRate{TokPerSec: 80, Ranks: 1}})
		}
		m.Update(evs)
		m.Update(ClockMsg{Now: start.Add(7 * time.Second)})
		press(m, "x")
		golden.RequireEqual(t, plain(m))
	})
}

// BenchmarkViewExperimentsPanel: a frame with the panel open over the
// scripted session, the open experiment's provisional result cached.
func BenchmarkViewExperimentsPanel(b *testing.B) {
	m, _ := labScene(200, 60, Options{})
	send(m, session()...)
	press(m, "x")
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}

// TestConclusionBannerExpires: the banner (and e's conclusion prompt)
// lasts 30 s of model time after the experiment ended, or until the next
// experiment ends; e then starts or ends experiments again.
func TestConclusionBannerExpires(t *testing.T) {
	end := gitNow.Add(10 * time.Second)
	setup := func() (*Model, *fakeLab) {
		m, f := labScene(120, 30, Options{})
		m.Update(EventsMsg{{At: end.Add(-20 * time.Second), Data: event.ExperimentStart{ID: "e1", Name: "none @ bba2fc4", Trigger: event.TriggerLaunch}},
			{At: end, Data: event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerKill, Result: result(82.3, 81.9, 82.9, 14)}}})
		return m, f
	}
	shown := func(m *Model) bool { return strings.Contains(plain(m), "e within 30s: write its conclusion") }
	for _, c := range []struct {
		after time.Duration
		shown bool
	}{{0, true}, {29 * time.Second, true}, {29*time.Second + 999*time.Millisecond, true}, {30 * time.Second, false}, {5 * time.Minute, false}} {
		m, _ := setup()
		m.Update(ClockMsg{Now: end.Add(c.after)})
		if shown(m) != c.shown {
			t.Errorf("%v after the end: banner %v, want %v", c.after, shown(m), c.shown)
		}
		press(m, "e")
		want := expdialog.ConcludeID
		if !c.shown {
			want = expdialog.StartID
		}
		if m.overlay.TopID() != want {
			t.Errorf("%v after the end: e opened %q, want %q", c.after, m.overlay.TopID(), want)
		}
	}
	// Any event's time counts as the clock too.
	m, _ := setup()
	send(m, ev(end.Add(31*time.Second).Sub(t0), event.JournalStatus{Path: "/j.jsonl"}))
	if shown(m) {
		t.Error("an event 31 s later left the banner")
	}
	// An end seen after the clock moved on still shows for 30 s.
	m, _ = labScene(120, 30, Options{})
	m.Update(ClockMsg{Now: gitNow.Add(time.Hour)})
	send(m, ev(20*time.Second, event.ExperimentStart{ID: "e1", Name: "x", Trigger: event.TriggerLaunch}),
		ev(50*time.Second, event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerExit}))
	if !shown(m) {
		t.Error("an end behind the clock showed no banner")
	}
	// The next experiment's end replaces it: by a key, none; by a kill,
	// its own.
	m, _ = setup()
	m.Update(EventsMsg{{At: end.Add(2 * time.Second), Data: event.ExperimentStart{ID: "e2", Name: "y", Trigger: event.TriggerKey}},
		{At: end.Add(5 * time.Second), Data: event.ExperimentEnd{Exp: "e2", Trigger: event.TriggerKey}}})
	if shown(m) || m.exp.Pending() != "" {
		t.Errorf("after e2 ended by e: banner %v, pending %q", shown(m), m.exp.Pending())
	}
	m, _ = setup()
	m.Update(EventsMsg{{At: end.Add(2 * time.Second), Data: event.ExperimentStart{ID: "e2", Name: "y", Trigger: event.TriggerLaunch}},
		{At: end.Add(5 * time.Second), Data: event.ExperimentEnd{Exp: "e2", Trigger: event.TriggerRelaunch}}})
	if !strings.Contains(plain(m), "e2 y ended (relaunch)") || strings.Contains(plain(m), "e1 none") {
		t.Errorf("after e2 was relaunched:\n%s", plain(m))
	}
	m.Update(ClockMsg{Now: end.Add(34 * time.Second)})
	if !shown(m) {
		t.Error("e2's banner went with e1's time")
	}
}

// TestConcludeFromPanel: w in the experiments panel writes or replaces
// the selected experiment's conclusion, for one that ended; never in a
// replay; outside the panel w stays the log's wrap.
func TestConcludeFromPanel(t *testing.T) {
	m, f := labScene(120, 40, Options{})
	send(m, session()...)
	press(m, "w")
	if m.DialogOpen() || !m.Wrapping() {
		t.Errorf("w outside the panel: top %q status %q wrap %v", m.overlay.TopID(), m.Status(), m.Wrapping())
	}
	press(m, "w")
	press(m, "x")
	if f := screenLines(m)[39]; f != "? help  up/down select  spc mark  c compare  B baseline  w conclusion  e experiment  n note  x/esc close  q quit" {
		t.Errorf("panel footer %q", f)
	}
	press(m, "w")
	if m.DialogOpen() || m.Status() != "e3 is still open: e ends it with a conclusion" {
		t.Errorf("c on the open e3: top %q status %q", m.overlay.TopID(), m.Status())
	}
	press(m, "up", "w")
	if m.overlay.TopID() != expdialog.ConcludeID || expForm(m).Exp() != "e2" || expForm(m).Value(0) != "LL+ring is 8% faster: keep it" {
		t.Fatalf("c on e2: top %q form %+v", m.overlay.TopID(), expForm(m))
	}
	if !strings.Contains(plain(m), "+- conclusion of e2 nccl-ll-ring @ bba2fc4 -") || !strings.Contains(boxText(m), "enter save esc cancel") {
		t.Errorf("form:\n%s", plain(m))
	}
	// Unchanged: nothing is written.
	do(m, "enter")
	if len(f.Calls()) != 0 || m.Status() != "conclusion not changed" {
		t.Errorf("unchanged: calls %q status %q", f.Calls(), m.Status())
	}
	press(m, "w")
	typeText(m, " on H200")
	do(m, "enter")
	if c := f.Calls(); len(c) != 1 || c[0] != `Update e2 "LL+ring is 8% faster: keep it on H200"` || m.Status() != "conclusion of e2 saved" {
		t.Errorf("calls %q status %q", c, m.Status())
	}
	if k := f.Keys(); len(k) != 1 || k[0] != [2]string{"enter", "conclude experiment e2"} {
		t.Errorf("keys %q", k)
	}
	press(m, "w", "esc")
	if m.DialogOpen() || m.Status() != "conclusion not changed" || len(f.Calls()) != 1 {
		t.Errorf("esc: top %q status %q", m.overlay.TopID(), m.Status())
	}
	// A killed experiment with no conclusion gets one.
	press(m, "up", "w")
	if m.overlay.TopID() != expdialog.ConcludeID || expForm(m).Exp() != "e1" {
		t.Fatalf("c on e1: top %q", m.overlay.TopID())
	}
	press(m, "esc")
	// The help lists it.
	press(m, "?")
	if !strings.Contains(plain(m), "w    x panel: write the conclusion") {
		t.Errorf("help:\n%s", plain(m))
	}
	// A replay refuses.
	r := newSized(120, 40, Options{ReadOnly: true})
	send(r, session()...)
	press(r, "x", "up", "w")
	if r.DialogOpen() || r.Status() != "read-only replay: a conclusion would change the journal" {
		t.Errorf("replay: top %q status %q", r.overlay.TopID(), r.Status())
	}
}

// TestWarmUpIsNotAWarning: while the open experiment's samples all fall
// in the warm-up, the panel and the end form say so instead of warning of
// no samples.
func TestWarmUpIsNotAWarning(t *testing.T) {
	rates := func(m *Model, from time.Time, n int) {
		var evs EventsMsg
		for i := range n {
			evs = append(evs, event.Event{At: from.Add(time.Duration(i) * time.Second), Data: event.TokRate{TokPerSec: 80 + float64(i%3), Ranks: 1}})
		}
		m.Update(evs)
	}
	// A hand start on a ready server: the warm-up counts from the start.
	m, _ := labScene(120, 40, Options{})
	start := gitNow.Add(time.Second)
	m.Update(event.Event{At: start, Data: event.ExperimentStart{ID: "e1", Name: "none @ a6d51c0", Trigger: event.TriggerKey}})
	rates(m, start.Add(time.Second), 6)
	m.Update(ClockMsg{Now: start.Add(7 * time.Second)})
	press(m, "x")
	scr := plain(m)
	if !strings.Contains(scr, "tok/s       warming up: the first samples after the start are left out") || strings.Contains(scr, "warning: no samples") ||
		strings.Contains(scr, "no tok/s samples") {
		t.Errorf("hand start, 7 s in:\n%s", scr)
	}
	press(m, "e")
	if !strings.Contains(boxText(m), "so far warming up: the first samples after the start are left out") {
		t.Errorf("end form:\n%s", plain(m))
	}
	press(m, "esc")
	// Past the warm-up the result shows.
	rates(m, start.Add(7*time.Second), 10)
	m.Update(ClockMsg{Now: start.Add(17 * time.Second)})
	if scr := plain(m); strings.Contains(scr, "warming up") || !strings.Contains(scr, "tok/s       81.0 tok/s") {
		t.Errorf("hand start, 17 s in:\n%s", scr)
	}
	// A start with its launch: the warm-up counts from ready.
	m, _ = labScene(120, 40, Options{})
	st := readyStatus()
	st.Phase, st.Since, st.PID = event.PhaseLaunching, start, 0
	m.Update(EventsMsg{{At: start, Data: event.ExperimentStart{ID: "e1", Name: "none @ a6d51c0", Trigger: event.TriggerLaunch}},
		{At: start, Data: st}})
	// Still loading: no samples yet, and none expected.
	m.Update(ClockMsg{Now: start.Add(2 * time.Second)})
	press(m, "x")
	if scr := plain(m); !strings.Contains(scr, "waiting for the server to be ready (samples count from then)") || strings.Contains(scr, "warning: no samples") {
		t.Errorf("launch start, loading:\n%s", scr)
	}
	press(m, "x")
	ready := start.Add(30 * time.Second)
	st.Phase, st.Since, st.PID = event.PhaseReady, ready, 4124
	m.Update(event.Event{At: ready, Data: st})
	rates(m, ready.Add(time.Second), 5)
	m.Update(ClockMsg{Now: ready.Add(6 * time.Second)})
	press(m, "x")
	if scr := plain(m); !strings.Contains(scr, "warming up: the first samples after ready are left out") || strings.Contains(scr, "warning: no samples") {
		t.Errorf("launch start, 6 s after ready:\n%s", scr)
	}
	// With no samples at all, there is nothing to warm up: it says so.
	m, _ = labScene(120, 40, Options{})
	m.Update(event.Event{At: start, Data: event.ExperimentStart{ID: "e1", Name: "x", Trigger: event.TriggerKey}})
	m.Update(ClockMsg{Now: start.Add(time.Minute)})
	press(m, "x")
	if scr := plain(m); !strings.Contains(scr, "no tok/s samples so far") || !strings.Contains(scr, "warning: no samples") {
		t.Errorf("no samples:\n%s", scr)
	}
}

// TestPanelSaysWhichRowsShow: at 80x24 fifteen experiments do not fit;
// the panel's title says which rows show, and follows the cursor.
func TestPanelSaysWhichRowsShow(t *testing.T) {
	m, _ := labScene(80, 24, Options{})
	for i := 1; i <= 15; i++ {
		id := fmt.Sprintf("e%d", i)
		send(m, ev(time.Duration(10*i)*time.Second, event.ExperimentStart{ID: id, Name: "try " + id, Trigger: event.TriggerKey}),
			ev(time.Duration(10*i+5)*time.Second, event.ExperimentEnd{Exp: id, Trigger: event.TriggerKey}))
	}
	press(m, "x")
	title := func() string {
		for _, l := range screenLines(m) {
			if strings.HasPrefix(l, "experiments") {
				return l
			}
		}
		return ""
	}
	rows := func() (ids []string) {
		for _, l := range screenLines(m) {
			if len(l) > 2 && l[2] == 'e' && strings.ContainsAny(l[:2], " >*") {
				ids = append(ids, strings.Fields(l[2:])[0]) // a row: "> e15  try e15 ..."
			}
		}
		return ids
	}
	// The newest is selected: the window ends with it.
	ids := rows()
	if len(ids) == 0 || len(ids) >= 15 || ids[len(ids)-1] != "e15" {
		t.Fatalf("rows %q:\n%s", ids, plain(m))
	}
	want := fmt.Sprintf("experiments  %d-15/15 experiments", 16-len(ids))
	if tl := title(); !strings.HasPrefix(tl, want+" ") {
		t.Errorf("title %q, want %q", tl, want)
	}
	press(m, "home")
	if tl := title(); !strings.HasPrefix(tl, fmt.Sprintf("experiments  1-%d/15 experiments ", len(ids))) || rows()[0] != "e1" {
		t.Errorf("home: title %q rows %q", tl, rows())
	}
	// All rows fitting: the count alone.
	m2, _ := labScene(100, 30, Options{})
	send(m2, session()...)
	press(m2, "x")
	for _, l := range screenLines(m2) {
		if strings.HasPrefix(l, "experiments") && !strings.HasPrefix(l, "experiments  3 experiments ") {
			t.Errorf("all shown: %q", l)
		}
	}
}
