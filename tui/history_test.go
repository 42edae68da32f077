package tui

// The host's history in the experiments panel: earlier sessions folded
// below this session's experiments, expanded with o, an earlier
// experiment marked as the baseline (the delta column and the header's
// delta against it) and compared with this session's.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
	cmpdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/compare"
)

// utc marks a test whose screen names the session rows' times of day
// (the local zone is UTC for the whole package: TestMain).
func utc(t *testing.T) {
	t.Helper()
	utcLocal(t)
}

// histJournal is a journal of host gpu-box for historyOf: its file name,
// creation time, the commit its experiments ran at and their tok/s.
type histJournal struct {
	name string
	at   time.Time
	head string
	toks []float64
}

// historyOf is the history of host gpu-box as sessions.LoadHistory loads
// it from real journals written with the journal package.
func historyOf(t testing.TB, js ...histJournal) event.History {
	t.Helper()
	dir := t.TempDir()
	for _, j := range js {
		var xs []ledger.Experiment
		for i, tok := range j.toks {
			xs = append(xs, ledgertest.Experiment("e"+string(rune('1'+i)), "nccl-ll-ring", j.head, tok))
		}
		path := filepath.Join(dir, "gpu-box", j.name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := ledgertest.WriteJournal(path, event.SessionHeader{Host: "gpu-box", Label: "demo", User: "ana", Created: j.at}, xs...); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, j.at, j.at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := history.Collect(dir, "gpu-box", history.Own{}, 0)
	if err != nil || len(h.Journals) != len(js) {
		t.Fatalf("history %+v %v", h, err)
	}
	return h
}

// hostHistory is last week's session at a6d51c0 (e1 89.4, e2 89.6 tok/s)
// and yesterday's at 3207427 (e1 82.1).
func hostHistory(t *testing.T) event.History {
	t0 := time.Date(2026, 11, 24, 10, 15, 0, 0, time.UTC)
	return historyOf(t,
		histJournal{"2026-11-24-101500-demo.jsonl", t0, ledgertest.HeadA, []float64{89.4, 89.6}},
		histJournal{"2026-11-30-093000-demo.jsonl", t0.Add(6*24*time.Hour - 45*time.Minute), ledgertest.HeadB, []float64{82.1}})
}

// historyScene is the scripted session's cockpit with the host's history
// loaded and the experiments panel open.
func historyScene(t *testing.T, w, h int) (*Model, *fakeMeasure) {
	t.Helper()
	utc(t)
	f := &fakeMeasure{}
	m, _ := labScene(w, h, Options{Measure: f})
	send(m, session()...)
	send(m, e3Fingerprint())
	send(m, event.Event{At: at(100 * time.Second), Data: hostHistory(t)})
	press(m, "x")
	return m, f
}

// down moves the cursor n rows down.
func down(m *Model, n int) {
	for range n {
		press(m, "down")
	}
}

func TestPanelHistory(t *testing.T) {
	m, f := historyScene(t, 120, 40)
	auditModel(t, "history", m)
	scr := plain(m)
	for _, s := range []string{
		"experiments  3 experiments, 3 earlier",
		"- 2026-11-30 09:30 demo  1 experiment  82.1 tok/s best",
		"+ 2026-11-24 10:15 demo  2 experiments  89.6 tok/s best",
	} {
		if !strings.Contains(scr, s) {
			t.Errorf("panel lacks %q:\n%s", s, scr)
		}
	}
	if strings.Contains(scr, "  e2  nccl-ll-ring @ a6d51c0") {
		t.Errorf("the older session is expanded:\n%s", scr)
	}
	// The older session's row: o expands it; B on its e1 marks the
	// qualified id.
	down(m, 3)
	press(m, "o")
	scr = plain(m)
	if !strings.Contains(scr, "- 2026-11-24 10:15 demo  2 experiments") || !strings.Contains(scr, "journal     2026-11-24-101500-demo") {
		t.Errorf("o did not expand the session:\n%s", scr)
	}
	press(m, "B")
	if !strings.Contains(m.Status(), "an earlier session's row") {
		t.Errorf("B on a session row: %q", m.Status())
	}
	down(m, 1)
	do(m, "B")
	if got := f.Calls(); len(got) != 1 || got[0] != `Baseline "2026-11-24-101500-demo:e1"` {
		t.Fatalf("B on an earlier experiment: %q", got)
	}
	send(m, ev(101*time.Second, event.Baseline{Exp: "2026-11-24-101500-demo:e1"}))
	scr = plain(m)
	for _, s := range []string{"delta vs 11-24:e1 (baseline)", "base", "-7.9%"} {
		if !strings.Contains(scr, s) {
			t.Errorf("with an earlier baseline, the panel lacks %q:\n%s", s, scr)
		}
	}
	if d := m.exp.BaselineDelta(m.exp.Ledger().Current()); d != "vs 11-24:e1 -31.1%" {
		t.Errorf("header delta %q", d)
	}
	// ... and the header's verdict word against it, as against one of
	// this session.
	if v := m.exp.BaselineVerdict(m.exp.Ledger().Current()); v == "" {
		t.Error("no header verdict against an earlier session's baseline")
	}
	// end goes to this session's newest experiment, not the oldest row.
	press(m, "home")
	press(m, "end")
	if scr := plain(m); !strings.Contains(scr, "\n> e3 ") {
		t.Errorf("end did not select e3:\n%s", scr)
	}
	// c on this session's open e3 compares it with the earlier baseline.
	press(m, "end")
	press(m, "home")
	down(m, 2)
	press(m, "c")
	if m.overlay.TopID() != cmpdialog.ID {
		t.Fatalf("c: no compare view (status %q)", m.Status())
	}
	if scr := plain(m); !strings.Contains(scr, "2026-11-24-101500-demo:e1") {
		t.Errorf("compare lacks the earlier baseline:\n%s", scr)
	}
}

// The history goldens: the newest session expanded (120x40), both
// folded (80x24), and an earlier session's experiment as the baseline
// (80x24 and 120x40).
func TestHistoryGolden(t *testing.T) {
	t.Run("expanded_120x40", func(t *testing.T) {
		m, _ := historyScene(t, 120, 40)
		golden.RequireEqual(t, plain(m))
	})
	t.Run("folded_80x24", func(t *testing.T) {
		m, _ := historyScene(t, 80, 24)
		down(m, 1)
		press(m, "o")
		golden.RequireEqual(t, plain(m))
	})
	for _, sz := range [][2]int{{80, 24}, {120, 40}} {
		t.Run("baseline_"+sizeName(sz), func(t *testing.T) {
			m, _ := historyScene(t, sz[0], sz[1])
			send(m, ev(101*time.Second, event.Baseline{Exp: "2026-11-30-093000-demo:e1"}))
			down(m, 2)
			golden.RequireEqual(t, plain(m))
		})
	}
}

func sizeName(sz [2]int) string { return fmt.Sprintf("%dx%d", sz[0], sz[1]) }

// TestCheckoutPickerShowsMeasuredRates: the checkout picker's log gives
// each commit the tok/s the host's history measured at it (the median of
// its launches, with n), "-" where none was.
func TestCheckoutPickerShowsMeasuredRates(t *testing.T) {
	utc(t)
	t0 := time.Date(2026, 11, 24, 10, 15, 0, 0, time.UTC)
	m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	send(m, event.Event{At: at(5 * time.Second), Data: historyOf(t,
		histJournal{"2026-11-24-101500-demo.jsonl", t0, hexID('a'), []float64{89.4, 89.6}},
		histJournal{"2026-11-30-093000-demo.jsonl", t0.Add(6 * 24 * time.Hour), hexID('3'), []float64{82.1}})})
	openGit(t, m)
	checkoutPicker(t, m, f)
	box := boxText(m)
	for _, want := range []string{
		"3207427 2h 82.1 tok/s n=1 Fix PCG MoE Error",
		"bba2fc4 5h - Tune NCCL ring for 8xH200",
		"a6d51c0 1d 89.5 tok/s n=2 Add EAGLE3 draft loader",
	} {
		if !strings.Contains(box, want) {
			t.Errorf("picker lacks %q:\n%s", want, box)
		}
	}
	golden.RequireEqual(t, plain(m))
}

// TestPanelOwnJournalHistory: appending to a journal (--journal
// SAME_FILE), the file's earlier experiments are listed as "earlier in this
// journal" with their plain ids, counted in the title, and the baseline
// the file held is this session's until it marks another.
func TestPanelOwnJournalHistory(t *testing.T) {
	utc(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gpu-box", "2026-11-30-093000-demo.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)
	// e0: the scripted session's ids start at e1 (a real appending
	// session numbers after the file's: sessions tests it).
	x := ledgertest.Experiment("e0", "nccl-ll-ring", ledgertest.HeadA, 89.4)
	if err := ledgertest.WriteJournal(path, event.SessionHeader{Host: "gpu-box", Label: "demo", Created: t0}, x); err != nil {
		t.Fatal(err)
	}
	w, err := journal.Append(path, event.SessionHeader{Host: "gpu-box", Created: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(event.Event{At: t0.Add(time.Hour + time.Second), Data: event.Baseline{Exp: "e0"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// This session appended at t0+2h: the history is what came before.
	h, err := history.Collect(dir, "gpu-box", history.Own{Path: path, Header: event.SessionHeader{Created: t0.Add(2 * time.Hour)}}, 0)
	if err != nil || len(h.Journals) != 1 || !h.Journals[0].Own {
		t.Fatalf("history %+v %v", h, err)
	}
	m, _ := labScene(120, 40, Options{Measure: &fakeMeasure{}})
	send(m, session()...)
	send(m, event.Event{At: at(100 * time.Second), Data: h})
	press(m, "x")
	scr := plain(m)
	for _, s := range []string{"experiments  3 experiments, 1 earlier  e3 open  delta vs e0 (baseline)",
		"- earlier in this journal  1 experiment  89.4 tok/s best", "    e0  nccl-ll-ring @ a6d51c0", "base"} {
		if !strings.Contains(scr, s) {
			t.Errorf("panel lacks %q:\n%s", s, scr)
		}
	}
	// This session's own mark replaces the file's.
	send(m, ev(101*time.Second, event.Baseline{Exp: "e2"}))
	if scr := plain(m); !strings.Contains(scr, "delta vs e2 (baseline)") {
		t.Errorf("after this session's mark:\n%s", scr)
	}
}

// BenchmarkViewExperimentsPanelWithHistory: a frame with the panel open
// over the scripted session and a host history of 20 earlier journals of
// 5 experiments each (the cap Collect loads), the newest expanded, its
// first experiment the baseline: the verdicts against it are cached per
// ledger change, so a frame recomputes none.
func BenchmarkViewExperimentsPanelWithHistory(b *testing.B) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var js []histJournal
	for i := range history.DefaultLimit {
		at := t0.Add(time.Duration(i) * 24 * time.Hour)
		js = append(js, histJournal{at.Format("2006-01-02-150405") + "-demo.jsonl", at, ledgertest.HeadA, []float64{89.4, 89.6, 89.1, 89.5, 89.3}})
	}
	h := historyOf(b, js...)
	m, _ := labScene(200, 60, Options{})
	send(m, session()...)
	send(m, event.Event{At: at(100 * time.Second), Data: h})
	send(m, event.Event{At: at(101 * time.Second), Data: event.Baseline{Exp: history.Qualify(h.Journals[0].Name, "e1")}})
	press(m, "x")
	if !strings.Contains(plain(m), "20 earlier") && !strings.Contains(plain(m), "100 earlier") {
		b.Fatalf("the panel lacks the history:\n%s", plain(m))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}

// TestPanelSelectionFollowsTheExperiment: rows inserted above the
// selected one (a new experiment of this session) leave the cursor on the
// experiment it was on, so space, B and c act on what is shown selected.
func TestPanelSelectionFollowsTheExperiment(t *testing.T) {
	m, _ := historyScene(t, 120, 40)
	down(m, 2) // e3 -> the newest earlier session's row -> its e1
	if scr := plain(m); !strings.Contains(scr, ">   e1  nccl-ll-ring @ 3207427") {
		t.Fatalf("not on the earlier e1:\n%s", scr)
	}
	send(m, event.Event{At: at(120 * time.Second), Data: event.ExperimentStart{ID: "e4", Name: "none @ a6d51c0", Trigger: event.TriggerKey}})
	if scr := plain(m); !strings.Contains(scr, ">   e1  nccl-ll-ring @ 3207427") || !strings.Contains(scr, "  e4  ") {
		t.Errorf("after e4 started the selection moved:\n%s", scr)
	}
	press(m, "space")
	if got := m.exp.Marked(); len(got) != 1 || got[0] != "2026-11-30-093000-demo:e1" {
		t.Errorf("space marked %q, want the earlier e1", got)
	}
}
