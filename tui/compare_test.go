package tui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	cmpdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/compare"
	gitpanel "github.com/flightdeck-dev/flightdeck/tui/panels/git"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// fakeMeasure records baseline marks and answers Range with rng; with
// block set, Range sends its context on block and returns when it ends.
type fakeMeasure struct {
	callLog
	rng   *event.CommitRange
	err   error
	block chan context.Context
}

func (f *fakeMeasure) Baseline(_ context.Context, id string) error {
	f.record(fmt.Sprintf("Baseline %q", id))
	return f.err
}

func (f *fakeMeasure) Range(ctx context.Context, from, to string) (*event.CommitRange, error) {
	f.record("Range " + from[:7] + ".." + to[:7])
	if f.block != nil {
		f.block <- ctx
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.rng, f.err
}

var _ MeasureControl = (*fakeMeasure)(nil)

// e3Fingerprint gives e3 (the open experiment of session()) its
// fingerprint: HEAD a6d51c0, the profile nccl-ll-ring, a clean tree.
func e3Fingerprint() event.Event {
	fp := event.Fingerprint{At: at(91 * time.Second), Hostname: "gpu-box", Kernel: "6.8.0-45-generic",
		Git:         &event.GitState{Repo: "/root/sglang", Head: "a6d51c0" + strings.Repeat("0", 33), Branch: "main", Subject: "NCCL LL ring"},
		CommandLine: "python -m sglang.launch_server --model-path /models/Llama-3.1-8B-Instruct --tp 8",
		Versions:    []event.Version{{Name: "driver", Value: "570.86.15"}, {Name: "cuda", Value: "12.8"}, {Name: "nccl", Value: "2.21.5"}, {Name: "sglang", Value: "0.4.6"}},
		GPUs:        h200s(8).GPUs}
	return ev(91*time.Second, event.ExperimentFingerprint{Exp: "e3", Fingerprint: fp})
}

func measureScene(w, h int) (*Model, *fakeMeasure) {
	f := &fakeMeasure{rng: &event.CommitRange{From: "bba2fc4", To: "a6d51c0", Ahead: []string{"a6d51c0 NCCL LL ring", "65b09bf Fix PCG MoE Error"},
		AheadTotal: 2, Files: []string{"python/sglang/srt/distributed/device_communicators/pynccl.py"}, FilesTotal: 1}}
	m, _ := labScene(w, h, Options{Measure: f})
	send(m, session()...)
	send(m, e3Fingerprint())
	return m, f
}

func TestPanelMarksAndCompares(t *testing.T) {
	m, f := measureScene(120, 40)
	press(m, "c")
	if m.DialogOpen() || m.Status() != gitpanel.NoRepoText {
		t.Errorf("c outside the panel is git's: top %q status %q", m.overlay.TopID(), m.Status())
	}
	m.Update(space())
	if m.Status() != gitpanel.NoRepoText {
		t.Errorf("space outside the panels: %q", m.Status())
	}
	press(m, "x")
	// Nothing marked, no baseline: the selected e3 against the first
	// experiment with a result; the range is read from git.
	cmd := press(m, "c")
	if m.overlay.TopID() != cmpdialog.ID || cmpView(m).A != "e1" || cmpView(m).B != "e3" {
		t.Fatalf("c: top %q status %q", m.overlay.TopID(), m.Status())
	}
	scr := plain(m)
	for _, s := range []string{"+- compare e1 vs e3", "A  e1 none @ bba2fc4 (first with a result)  started 10:27:10, killed after 35s",
		"B  e3 nccl-ll-ring @ a6d51c0 (selected)  started 10:28:30, open", "commits  bba2fc4..a6d51c0  reading git log ..."} {
		if !strings.Contains(scr, s) {
			t.Errorf("view lacks %q:\n%s", s, scr)
		}
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	if c := f.Calls(); len(c) != 1 || c[0] != "Range bba2fc4..a6d51c0" {
		t.Errorf("calls %q", c)
	}
	press(m, "end")
	scr = plain(m)
	for _, s := range []string{"commits  bba2fc4..a6d51c0  read from git on the host now", "2 commits in B, not in A", "+ a6d51c0 NCCL LL ring",
		"1 file touched", "python/sglang/srt/distributed/device_communicators/pynccl.py"} {
		if !strings.Contains(scr, s) {
			t.Errorf("range lacks %q:\n%s", s, scr)
		}
	}
	// An answer for an earlier view is dropped.
	m.Update(CompareRangeMsg{Seq: cmpView(m).Seq() - 1, Err: fmt.Errorf("stale")})
	if cmpView(m).RangeErr() != "" {
		t.Error("a stale range answer was applied")
	}
	press(m, "esc")
	if m.DialogOpen() || !m.exp.Open {
		t.Fatalf("esc: top %q panel %v", m.overlay.TopID(), m.exp.Open)
	}
	// Two marked: they are compared, older first.
	m.Update(space())
	press(m, "up")
	m.Update(space())
	if m.Status() != "marked e3 and e2: c compares them" || !strings.Contains(plain(m), ">*e2") || !strings.Contains(plain(m), " *e3") {
		t.Errorf("marks: %q\n%s", m.Status(), plain(m))
	}
	press(m, "up")
	m.Update(space())
	if m.Status() != "two are marked already (e3, e2): space on one unmarks it" {
		t.Errorf("third mark: %q", m.Status())
	}
	press(m, "c")
	if m.overlay.TopID() != cmpdialog.ID || cmpView(m).A != "e2" || cmpView(m).B != "e3" || cmpView(m).AWhy != "marked" {
		t.Fatalf("two marked: %+v", cmpView(m))
	}
	press(m, "esc", "down")
	m.Update(space()) // unmark e2
	if m.Status() != "unmarked e2" || len(m.exp.Marked()) != 1 {
		t.Errorf("unmark: %q %q", m.Status(), m.exp.Marked())
	}
	// B marks the baseline (the mark comes back as an event).
	press(m, "up")
	msgs := do(m, "B")
	if c := f.Calls(); c[len(c)-1] != `Baseline "e1"` || len(msgs) != 1 || !strings.HasPrefix(m.Status(), "e1 is the baseline") {
		t.Errorf("B: calls %q status %q", c, m.Status())
	}
	send(m, ev(200*time.Second, event.Baseline{Exp: "e1"}))
	if h := screenLines(m)[0]; !strings.HasSuffix(h, "e3 61.6 tok/s  vs e1 -25.2%") {
		t.Errorf("header: %q", h)
	}
	// The header's long form says the across-launch verdict too: the
	// same one as c and the reports (one launch a side, no A/A noise).
	if v := m.exp.BaselineVerdict(m.exp.Ledger().Current()); v != "no verdict" {
		t.Errorf("header's verdict %q", v)
	}
	// It is a field of its own, after the delta, where there is room.
	m.Update(tea.WindowSizeMsg{Width: 180, Height: 40})
	if h := screenLines(m)[0]; !strings.HasSuffix(h, " 61.6 tok/s  vs e1 -25.2%  no verdict") {
		t.Errorf("header at 180 columns: %q", h)
	}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	if !strings.Contains(plain(m), "delta vs e1 (baseline)") {
		t.Errorf("panel title:\n%s", plain(m))
	}
	// One marked (e3), the cursor on another (e1, the baseline): the two,
	// older first, whatever the baseline.
	press(m, "c")
	if m.overlay.TopID() != cmpdialog.ID || cmpView(m).A != "e1" || cmpView(m).B != "e3" || cmpView(m).AWhy != "selected" || cmpView(m).BWhy != "marked" ||
		m.Status() != "comparing e1 (selected) vs e3 (marked)" {
		t.Fatalf("marked vs cursor: %+v status %q", cmpView(m), m.Status())
	}
	press(m, "esc", "down")
	press(m, "c")
	if cmpView(m).A != "e2" || cmpView(m).B != "e3" || m.Status() != "comparing e2 (selected) vs e3 (marked)" {
		t.Fatalf("marked vs cursor e2: %+v status %q", cmpView(m), m.Status())
	}
	// The cursor on the marked one: it against the baseline.
	press(m, "esc", "down")
	press(m, "c")
	if cmpView(m).A != "e1" || cmpView(m).B != "e3" || cmpView(m).AWhy != "baseline" || cmpView(m).BWhy != "selected" ||
		m.Status() != "comparing e1 (baseline) vs e3 (selected)" {
		t.Fatalf("marked under the cursor vs baseline: %+v status %q", cmpView(m), m.Status())
	}
	if f := screenLines(m)[39]; f != "comparing e1 (baseline) vs e3 (selected)" {
		t.Errorf("footer %q", f)
	}
	press(m, "esc", "up", "up")
	// B on the baseline clears it.
	do(m, "B")
	if c := f.Calls(); c[len(c)-1] != `Baseline ""` || !strings.HasPrefix(m.Status(), "baseline cleared") {
		t.Errorf("B again: calls %q status %q", c, m.Status())
	}
	f.err = fmt.Errorf("no experiment e9\x1b[31m")
	do(m, "B")
	if m.Status() != "baseline not marked: no experiment e9" {
		t.Errorf("B error: %q", m.Status())
	}
}

// TestCompareRangeReadEndsWithTheView: closing the compare view cancels
// the context of its live range read, so MeasureControl.Range returns;
// its late answer is dropped, and a view opened after it reads afresh.
func TestCompareRangeReadEndsWithTheView(t *testing.T) {
	for _, closeKey := range []string{"esc", "c", "q"} {
		m, f := measureScene(120, 40)
		f.block = make(chan context.Context)
		press(m, "x")
		cmd := press(m, "c")
		if m.overlay.TopID() != cmpdialog.ID || cmd == nil || !cmpView(m).Reading() {
			t.Fatalf("c: top %q reading %v", m.overlay.TopID(), cmpView(m) != nil && cmpView(m).Reading())
		}
		answer := make(chan tea.Msg)
		go func() { answer <- cmd() }()
		ctx := <-f.block // Range is running
		if ctx.Err() != nil {
			t.Fatal("the read's context ended before the view closed")
		}
		press(m, closeKey)
		if m.DialogOpen() || m.Quitting() {
			t.Fatalf("%s: top %q quitting %v", closeKey, m.overlay.TopID(), m.Quitting())
		}
		if ctx.Err() == nil {
			t.Fatalf("%s: the range read was not cancelled", closeKey)
		}
		msg := <-answer
		if r, ok := msg.(CompareRangeMsg); !ok || !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("answer %#v", msg)
		}
		m.Update(msg)
		if cmpView(m).RangeErr() != "" || m.DialogOpen() || m.Status() != "" {
			t.Errorf("%s: the closed view's answer was applied: rangeErr %q top %q status %q", closeKey, cmpView(m).RangeErr(), m.overlay.TopID(), m.Status())
		}
		// Opened again, it reads afresh under a new context; its answer
		// lands.
		f.block = nil
		for _, msg := range run(press(m, "c")) {
			m.Update(msg)
		}
		if cmpView(m).Reading() || cmpView(m).RangeErr() != "" || cmpView(m).Diff().Range == nil || cmpView(m).Holding() {
			t.Errorf("%s: reopened: reading %v err %q range %v", closeKey, cmpView(m).Reading(), cmpView(m).RangeErr(), cmpView(m).Diff().Range)
		}
	}
}

func TestNothingToCompareSaysWhy(t *testing.T) {
	m, _ := labScene(100, 30, Options{Measure: &fakeMeasure{}})
	press(m, "x", "c")
	if m.Status() != "no experiments yet: e starts one" {
		t.Errorf("no experiments: %q", m.Status())
	}
	send(m, ev(10*time.Second, event.ExperimentStart{ID: "e1", Name: "a", Trigger: event.TriggerKey}))
	press(m, "c")
	if m.DialogOpen() || m.Status() != "nothing to compare: mark two experiments (space), or a baseline (B)" {
		t.Errorf("one experiment, no result: %q", m.Status())
	}
	send(m, ev(20*time.Second, event.Baseline{Exp: "e1"}))
	press(m, "c")
	if m.Status() != "e1 is the baseline: select another experiment, or mark two (space)" {
		t.Errorf("the baseline selected: %q", m.Status())
	}
	// A replay compares what was recorded, and never marks a baseline.
	r := newSized(100, 30, Options{ReadOnly: true})
	send(r, session()...)
	press(r, "x", "B")
	if r.Status() != "read-only replay: a baseline would change the journal" {
		t.Errorf("replay B: %q", r.Status())
	}
	if cmd := press(r, "c"); cmd != nil || r.overlay.TopID() != cmpdialog.ID {
		t.Errorf("replay c: top %q cmd %v status %q", r.overlay.TopID(), cmd != nil, r.Status())
	}
}

// constructedDiff is a Diff as compare.Compare builds it for e1 (none @
// bba2fc4) against e3 (nccl-ll-ring @ a6d51c0), with launches, noise, a
// recorded range and every kind of row.
func constructedDiff() *compare.Diff {
	e1 := &ledger.Experiment{ID: "e1", Name: "none @ bba2fc4", Started: at(10 * time.Second), Ended: at(45 * time.Second), EndedBy: event.TriggerRelaunch,
		Fingerprint: &event.Fingerprint{Git: &event.GitState{Head: "bba2fc4" + strings.Repeat("0", 33)}}}
	e3 := &ledger.Experiment{ID: "e3", Name: "nccl-ll-ring @ a6d51c0", Started: at(90 * time.Second), Ended: at(150 * time.Second), EndedBy: event.TriggerKill,
		Fingerprint: &event.Fingerprint{Git: &event.GitState{Head: "a6d51c0" + strings.Repeat("0", 33)}}}
	e4 := &ledger.Experiment{ID: "e4"}
	e5 := &ledger.Experiment{ID: "e5"}
	lo := func(v float64) *float64 { return &v }
	sum := func(m, l, h float64, n int) ledger.Summary {
		return ledger.Summary{N: n, Median: m, Lo: lo(l), Hi: lo(h)}
	}
	return &compare.Diff{A: e1, B: e3, LaunchesA: []*ledger.Experiment{e1, e4}, LaunchesB: []*ledger.Experiment{e3, e5},
		Results: []compare.ResultRow{
			{Metric: "tok/s (server log)", Unit: "tok/s", A: sum(62.4, 62.1, 62.9, 24), B: sum(88.9, 88.1, 89.6, 22),
				Launches: compare.Comparison{N1: 5, N2: 5, P: 0.008, Significant: true, HasDelta: true, DeltaPct: 42.4}, Verdict: compare.Verdict{Word: compare.WordFaster, Method: compare.MethodMannWhitney, P: 0.008, N1: 5, N2: 5, HasDelta: true, DeltaPct: 42.4},
				Noise: 1.2, HasNoise: true},
			{Metric: "output tok/s (bench)", Unit: "tok/s", A: ledger.Summary{N: 1, Median: 61.9}, B: ledger.Summary{N: 1, Median: 87.5},
				Launches: compare.Comparison{N1: 1, N2: 1, P: 1}, Verdict: compare.Verdict{Word: compare.WordNone, Why: "1+1 launches; A/A noise unknown — R repeats a launch", P: 1, N1: 1, N2: 1}},
			{Metric: "TTFT median", Unit: "ms", LowerIsBetter: true, A: sum(23.8, 23.1, 24.4, 32), B: sum(25.9, 25.1, 26.2, 32),
				Launches: compare.Comparison{N1: 5, N2: 5, P: 0.032, Significant: true}, Verdict: compare.Verdict{Word: compare.WordWorse, Method: compare.MethodMannWhitney, P: 0.032, N1: 5, N2: 5}, Noise: 12.5, HasNoise: true, WithinNoise: true},
			{Metric: "E2E median", Unit: "ms", LowerIsBetter: true, A: sum(2045, 2031, 2061, 32), B: sum(1441, 1430, 1450, 32),
				Launches: compare.Comparison{N1: 5, N2: 6, P: 0.41}, Verdict: compare.Verdict{Word: compare.WordSame, Method: compare.MethodMannWhitney, P: 0.41, N1: 5, N2: 6}},
		},
		Fields: []compare.FieldRow{
			{Group: "commit", Name: "HEAD", A: "bba2fc4 Tune NCCL ring", B: "a6d51c0 NCCL LL ring", Changed: true},
			{Group: "env", Name: "NCCL_PROTO", A: "", B: "LL", Changed: true},
			{Group: "env", Name: "NCCL_ALGO", A: "Tree\x1b[31m", B: "Ring", Changed: true},
			{Group: "versions", Name: "torch", A: "2.5.1", B: "", Unknown: true},
			{Group: "flags", Name: "--tp-size", A: "8", B: "8"},
			{Group: "versions", Name: "driver", A: "570.86.15", B: "570.86.15"},
			{Group: "gpu", Name: "GPU 0 SM clock", A: "1980 MHz", B: "1980 MHz"},
			{Group: "host", Name: "hostname", A: "gpu-box", B: "gpu-box"},
		},
		Range: &event.CommitRange{Ahead: []string{"a6d51c0 NCCL LL ring", "65b09bf Fix PCG MoE Error"}, AheadTotal: 53,
			Behind: []string{"1f0e2d3 Revert tuning"}, BehindTotal: 1, Files: []string{"python/sglang/srt/distributed/device_communicators/pynccl.py"}, FilesTotal: 1},
		RangeNote: "recorded at e3's start",
		Noise:     []compare.NoiseRow{{Config: "none @ bba2fc4", Launches: 5, Metric: "tok/s (server log)", Spread: 1.2, Lo: 61.8, Hi: 63.1}},
	}
}

// TestCompareViewAcceptLength: the EAGLE accept length is a row of its
// own, its values with two decimals, its verdict in the words of a
// diagnostic (shorter, dim: neither good nor bad by itself).
func TestCompareViewAcceptLength(t *testing.T) {
	m, _ := labScene(140, 50, Options{})
	d := constructedDiff()
	d.Results = []compare.ResultRow{d.Results[0], {Metric: compare.MetricAccept, Unit: compare.UnitTokens,
		A: ledger.Summary{N: 1, Median: 3.104}, B: ledger.Summary{N: 1, Median: 1.988},
		Launches: compare.Comparison{N1: 5, N2: 5, P: 0.008, Significant: true, HasDelta: true, DeltaPct: -36.2},
		Verdict:  compare.Verdict{Word: compare.WordShorter, Method: compare.MethodMannWhitney, P: 0.008, N1: 5, N2: 5, HasDelta: true, DeltaPct: -36.2}}}
	openDiff(m, d)
	for _, s := range []string{
		"EAGLE accept length (tokens)  3.10 n=1                1.99 n=1                -36.0%  shorter -36.2% across launches (p=0.008 n=5+5)",
	} {
		if !strings.Contains(plain(m), s) {
			t.Errorf("view lacks %q:\n%s", s, plain(m))
		}
	}
	if !painted(m, m.styles.Dim, "shorter -36.2% across launches (p=0.008 n=5+5)") {
		t.Error("the accept-length verdict is not dim")
	}
}

// openDiff opens the compare view on d.
func openDiff(m *Model, d *compare.Diff) {
	m.cmp.Show(d, d.A.ID, d.B.ID, "baseline", "selected")
}

// cmpView is the compare view opened last (open, or closed since), nil
// before the first.
func cmpView(m *Model) *cmpdialog.View { return m.cmp.Last() }

func TestCompareViewSections(t *testing.T) {
	m, _ := labScene(140, 50, Options{})
	openDiff(m, constructedDiff())
	scr := plain(m)
	for _, s := range []string{
		"results               A e1                    B e3                     delta",
		"tok/s (server log)    62.4 [62.1, 62.9] n=24  88.9 [88.1, 89.6] n=22  +42.5%",
		"    faster +42.4% across launches (p=0.008 n=5+5), A/A noise +-1.2%",
		"output tok/s (bench)  61.9 n=1                87.5 n=1                +41.4%",
		"    no verdict: 1+1 launches; A/A noise unknown - R repeats a launch",
		"TTFT median (ms)      23.8 [23.1, 24.4] n=32  25.9 [25.1, 26.2] n=32   +8.8%  worse (p=0.032 n=5+5), within A/A noise +-12.5%",
		"E2E median (ms)       2045 [2031, 2061] n=32  1441 [1430, 1450] n=32  -29.5%  no significant difference (p=0.410 n=5+6)",
		"fingerprint  3 changed, 1 known on one side only, 4 unchanged",
		"~ commit    HEAD", "~ env       NCCL_PROTO      (unset)", "? versions  torch           2.5.1", "? (not captured)",
		"4 unchanged - a shows them",
		"commits  bba2fc4..a6d51c0  recorded at e3's start", "53 commits in B, not in A", "+ 65b09bf Fix PCG MoE Error", "... 51 more",
		"1 commit in A, not in B (B is behind)", "- 1f0e2d3 Revert tuning",
		"A/A noise  launch to launch, same configuration", "none @ bba2fc4  5 launches  tok/s (server log) +-1.2% (61.8 to 63.1)",
		"launches of each configuration: e1, e4 vs e3, e5",
	} {
		if !strings.Contains(scr, s) {
			t.Errorf("view lacks %q:\n%s", s, scr)
		}
	}
	if strings.Contains(scr, "p=1.000") {
		t.Error("a row without a verdict shows the test's p")
	}
	if strings.Contains(m.View().Content, "\x1b[31m") {
		t.Error("a recorded escape reached the screen")
	}
	toned := func(tn style.Tone, text string) bool {
		on, _, _ := strings.Cut(tn.Render("x"), "x")
		return strings.Contains(m.View().Content, on+text)
	}
	if !toned(m.styles.Warn, "~ env       NCCL_PROTO") || !toned(m.styles.Dim, "? versions  torch") ||
		!painted(m, m.styles.OK, "faster +42.4% across launches (p=0.008 n=5+5), A/A noise +-1.2%") ||
		!painted(m, m.styles.Warn, "worse (p=0.032 n=5+5), within A/A noise +-12.5%") ||
		!painted(m, m.styles.Dim, "no significant difference (p=0.410 n=5+6)") {
		t.Error("tones: changed rows and verdicts are not highlighted")
	}
	// a shows the unchanged rows; it says how to fold them again.
	press(m, "a")
	if scr := plain(m); !strings.Contains(scr, "  flags     --tp-size       8") || !strings.Contains(scr, "a folds the unchanged rows") {
		t.Errorf("a:\n%s", scr)
	}
}

func TestCompareViewScrollsAndFits(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {40, 12}, {200, 60}, {20, 6}} {
		m, _ := labScene(sz[0], sz[1], Options{})
		openDiff(m, constructedDiff())
		for _, keys := range [][]string{nil, {"down"}, {"pgdown"}, {"end"}, {"a", "end"}, {"home"}} {
			press(m, keys...)
			assertFits(t, m, sz[0], sz[1], fmt.Sprint(keys))
		}
	}
	m, _ := labScene(80, 24, Options{})
	openDiff(m, constructedDiff())
	press(m, "end")
	if !strings.Contains(plain(m), "none @ bba2fc4  5 launches") || cmpView(m).Top() == 0 {
		t.Errorf("end did not reach the noise:\n%s", plain(m))
	}
	press(m, "home")
	if cmpView(m).Top() != 0 {
		t.Errorf("home: top %d", cmpView(m).Top())
	}
	if f := screenLines(m)[23]; f != "up/down/pgup/pgdn scroll  a show unchanged  b bisect  esc close" {
		t.Errorf("footer %q", f)
	}
}

// The compare goldens: a constructed Diff at 120x40 and 80x24 (its first
// page), and compare.Compare over the scripted session at 100x30.
func TestCompareGolden(t *testing.T) {
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("diff_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m, _ := labScene(sz[0], sz[1], Options{})
			openDiff(m, constructedDiff())
			golden.RequireEqual(t, plain(m))
		})
	}
	t.Run("session_100x30", func(t *testing.T) {
		m, _ := measureScene(100, 30)
		press(m, "x")
		press(m, "up")
		m.Update(space())
		press(m, "down")
		m.Update(space())
		for _, msg := range run(press(m, "c")) {
			m.Update(msg)
		}
		golden.RequireEqual(t, plain(m))
	})
}

// TestSharedFormatting: the cockpit's counts read as the journal's
// (compare.FormatLaunches), and its one plural handles -es words (its
// deltas: experiments.TestDeltaText).
func TestSharedFormatting(t *testing.T) {
	for _, c := range []struct {
		n          int
		what, want string
	}{
		{1, "commit", "1 commit"}, {2, "commit", "2 commits"}, {0, "file", "0 files"},
		{2, "stash", "2 stashes"}, {1, "stash", "1 stash"}, {3, "launch", "3 launches"}, {2, "box", "2 boxes"},
	} {
		if got := style.Plural(c.n, c.what); got != c.want {
			t.Errorf("plural(%d, %q) = %q, want %q", c.n, c.what, got, c.want)
		}
		if c.what == "launch" && compare.FormatLaunches(c.n) != style.Plural(c.n, "launch") {
			t.Errorf("launches: journal %q, cockpit %q", compare.FormatLaunches(c.n), style.Plural(c.n, "launch"))
		}
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{88.44, "88.4"}, {1446.2, "1446"}, {0.4123, "0.412"}, {0, "0.0"}, {math.NaN(), "-"}, {math.Inf(1), "-"}} {
		if got := report.FormatNum(c.v); got != c.want {
			t.Errorf("report.FormatNum(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
