package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/journal"
	"github.com/flightdeck-dev/flightdeck/probes/repo"
	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote/server"
)

// fakeLab records what the cockpit asks of the experiment control. Its
// answers do not publish events: tests send those, as the stream would.
type fakeLab struct {
	callLog
	mu   sync.Mutex
	keys [][2]string
	err  error // returned by every call when set
	next int   // the next experiment number
}

func (f *fakeLab) Keys() [][2]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][2]string(nil), f.keys...)
}

func (f *fakeLab) Start(_ context.Context, name, hyp string) (journal.ExperimentStart, error) {
	f.record(fmt.Sprintf("Start %q %q", name, hyp))
	if f.err != nil {
		return journal.ExperimentStart{}, f.err
	}
	f.next++
	return journal.ExperimentStart{ID: fmt.Sprintf("e%d", f.next), Name: name, Hypothesis: hyp, Trigger: journal.TriggerKey}, nil
}

func (f *fakeLab) End(_ context.Context, conclusion string) (journal.ExperimentEnd, error) {
	f.record(fmt.Sprintf("End %q", conclusion))
	if f.err != nil {
		return journal.ExperimentEnd{}, f.err
	}
	return journal.ExperimentEnd{Exp: "e1", Trigger: journal.TriggerKey, Conclusion: conclusion, Result: result(88.94, 87.1, 90.2, 24)}, nil
}

func (f *fakeLab) Update(_ context.Context, u journal.ExperimentUpdate) error {
	f.record(fmt.Sprintf("Update %s %q", u.Exp, u.Conclusion))
	return f.err
}

func (f *fakeLab) Note(_ context.Context, text string) (journal.Note, error) {
	f.record(fmt.Sprintf("Note %q", text))
	return journal.Note{Text: text}, f.err
}

func (f *fakeLab) Key(key, action string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, [2]string{key, action})
}

var _ ExperimentControl = (*fakeLab)(nil)

func result(median, lo, hi float64, n int) journal.Result {
	return journal.Result{Metric: "tok/s", N: n, Median: median, Lo: &lo, Hi: &hi, Confidence: 0.957, Dropped: 6}
}

// labScene is a connected cockpit with a fake lab, the server ready with
// profile nccl-ll-ring and HEAD a6d51c0.
func labScene(w, h int, o Options) (*Model, *fakeLab) {
	f := &fakeLab{}
	if o.Experiments == nil && !o.ReadOnly {
		o.Experiments = f
	}
	m := scene(w, h, 8, 200, o)
	st := readyStatus()
	st.Profile = "nccl-ll-ring"
	send(m, ev(4*time.Second, st), ev(4*time.Second, repo.Head{Short: "a6d51c0", Commit: "a6d51c0" + strings.Repeat("0", 33), Subject: "NCCL LL ring", Dirty: 1}))
	m.Update(ClockMsg{Now: gitNow})
	return m, f
}

// session is a scripted session of three experiments, as the lab and the
// log follower publish it: e1 the baseline (killed), e2 nccl-ll-ring
// (relaunched, concluded, with a note), e3 the regressing commit, open,
// its tok/s samples after ready.
func session() []event.Event {
	fp := func(head, profile string, patch int) journal.Fingerprint {
		return journal.Fingerprint{At: t0, Hostname: "gpu-box", Kernel: "6.8.0-45-generic",
			Git: &journal.GitState{Repo: "/root/sglang", Head: head + strings.Repeat("0", 40-len(head)), Branch: "main", Subject: "Tune NCCL ring",
				PatchSHA256: "3f2a9c1e0b12" + strings.Repeat("a", 52), PatchBytes: patch, Stashes: []string{"stash@{0}: On main: x"}},
			Launch:      &server.LaunchInfo{Preset: "sglang", Profile: profile, Argv: []string{"python", "-m", "sglang.launch_server", "--tp", "8"}},
			CommandLine: "python -m sglang.launch_server --model-path /models/Llama-3.1-8B-Instruct --tp 8",
			Versions: []journal.Version{{Name: "driver", Value: "570.86.15"}, {Name: "cuda", Value: "12.8"}, {Name: "nccl", Value: "2.21.5"},
				{Name: "torch", Err: "timed out after 10s"}, {Name: "sglang", Value: "0.4.6"}},
			GPUs:   h200s(8).GPUs,
			Errors: []string{"torch: timed out after 10s"}}
	}
	var evs []event.Event
	add := func(d time.Duration, p event.Payload) { evs = append(evs, ev(d, p)) }
	rates := func(from time.Duration, base float64, n int) {
		for i := range n {
			add(from+time.Duration(i)*time.Second, serverlog.Rate{TokPerSec: base + float64(i%5)*0.3, Ranks: 1})
		}
	}
	ready := func(d time.Duration, profile string) {
		st := readyStatus()
		st.Profile, st.Since = profile, at(d)
		add(d, st)
	}
	add(10*time.Second, journal.ExperimentStart{ID: "e1", Name: "none @ bba2fc4", Hypothesis: "baseline on main", Trigger: journal.TriggerLaunch,
		Launch: &server.LaunchInfo{Preset: "sglang", Profile: "none"}})
	add(11*time.Second, journal.ExperimentFingerprint{Exp: "e1", Fingerprint: fp("bba2fc4", "none", 0)})
	ready(20*time.Second, "none")
	rates(21*time.Second, 82, 20)
	add(45*time.Second, journal.ExperimentEnd{Exp: "e1", Trigger: journal.TriggerKill, Result: result(82.3, 81.9, 82.9, 14)})
	add(47*time.Second, journal.ExperimentUpdate{Exp: "e1", Conclusion: "baseline"})
	add(50*time.Second, journal.ExperimentStart{ID: "e2", Name: "nccl-ll-ring @ bba2fc4", Trigger: journal.TriggerLaunch,
		Hypothesis: "LL protocol with ring cuts all-reduce latency at TP=8", Launch: &server.LaunchInfo{Preset: "sglang", Profile: "nccl-ll-ring"}})
	add(51*time.Second, journal.ExperimentFingerprint{Exp: "e2", Fingerprint: fp("bba2fc4", "nccl-ll-ring", 12345)})
	ready(60*time.Second, "nccl-ll-ring")
	rates(61*time.Second, 88.8, 20)
	add(70*time.Second, journal.Note{Text: "NCCL_DEBUG shows LL in use", Exp: "e2"})
	add(85*time.Second, journal.ExperimentEnd{Exp: "e2", Trigger: journal.TriggerRelaunch, Result: result(88.9, 88.1, 89.6, 14)})
	add(86*time.Second, journal.ExperimentUpdate{Exp: "e2", Conclusion: "LL+ring is 8% faster: keep it"})
	add(90*time.Second, journal.ExperimentStart{ID: "e3", Name: "nccl-ll-ring @ a6d51c0", Trigger: journal.TriggerLaunch,
		Launch: &server.LaunchInfo{Preset: "sglang", Profile: "nccl-ll-ring"}})
	ready(100*time.Second, "nccl-ll-ring")
	rates(101*time.Second, 61, 20)
	return evs
}

func TestExperimentKeysWithoutJournal(t *testing.T) {
	for _, o := range []Options{{}, {ReadOnly: true}} {
		m := newSized(80, 24, o)
		for k, what := range map[string]string{"e": "an experiment", "n": "a note"} {
			press(m, k)
			want := noJournalText
			if o.ReadOnly {
				want = "read-only replay: " + what + " would change the journal"
			}
			if m.Status() != want || m.modal != modalNone {
				t.Errorf("read-only=%v %s: %q (modal %d), want %q", o.ReadOnly, k, m.Status(), m.modal, want)
			}
		}
	}
}

func TestExperimentStartForm(t *testing.T) {
	m, f := labScene(100, 30, Options{})
	press(m, "e")
	if m.modal != modalExpStart {
		t.Fatalf("e opened modal %d: %q", m.modal, m.Status())
	}
	if got := m.exp.form.inputs[0].Value(); got != "nccl-ll-ring @ a6d51c0" {
		t.Errorf("default name %q", got)
	}
	if !strings.Contains(plain(m), "+- start an experiment -") || !strings.Contains(boxText(m), "hypothesis") {
		t.Errorf("form:\n%s", plain(m))
	}
	press(m, "tab")
	typeText(m, "LL halves latency")
	msgs := do(m, "enter")
	if m.modal != modalNone {
		t.Error("enter left the form open")
	}
	if c := f.Calls(); len(c) != 1 || c[0] != `Start "nccl-ll-ring @ a6d51c0" "LL halves latency"` {
		t.Errorf("calls %q", c)
	}
	if k := f.Keys(); len(k) != 1 || k[0] != [2]string{"enter", "start experiment nccl-ll-ring @ a6d51c0"} {
		t.Errorf("keys %q", k)
	}
	if len(msgs) != 1 || m.Status() != "started e1 nccl-ll-ring @ a6d51c0 (x lists experiments)" {
		t.Errorf("answer %v, status %q", msgs, m.Status())
	}
	// Errors go to the status line.
	f.err = errors.New("an experiment is open already\x1b[31m")
	press(m, "e")
	do(m, "enter")
	if m.Status() != "experiment not started: an experiment is open already" || !painted(m, m.styles.Crit, m.Status()) {
		t.Errorf("error status %q", m.Status())
	}
	// esc cancels without a call.
	n := len(f.Calls())
	press(m, "e", "esc")
	if len(f.Calls()) != n || m.modal != modalNone || m.Status() != "experiment not started" {
		t.Errorf("esc: calls %q status %q", f.Calls(), m.Status())
	}
}

func TestExperimentEndForm(t *testing.T) {
	m, f := labScene(100, 30, Options{})
	evs := session()
	send(m, evs...)
	press(m, "e")
	if m.modal != modalExpEnd {
		t.Fatalf("e with e3 open: modal %d", m.modal)
	}
	var l journal.Ledger
	for _, e := range evs {
		l.Apply(e)
	}
	prov := l.Provisional()
	if prov.N == 0 {
		t.Fatal("the scripted session gives e3 no samples")
	}
	box := boxText(m)
	if !strings.Contains(plain(m), "+- end e3 nccl-ll-ring @ a6d51c0 -") || !strings.Contains(box, "so far "+resultText(prov)) {
		t.Errorf("end form:\n%s", plain(m))
	}
	typeText(m, "regressed: the commit broke LL")
	do(m, "enter")
	if c := f.Calls(); len(c) != 1 || c[0] != `End "regressed: the commit broke LL"` {
		t.Errorf("calls %q", c)
	}
	if k := f.Keys(); len(k) != 1 || k[0] != [2]string{"enter", "end experiment e3"} {
		t.Errorf("keys %q", k)
	}
	if m.Status() != "ended e1: 88.9 tok/s [87.1, 90.2] n=24" {
		t.Errorf("status %q", m.Status())
	}
}

func TestNote(t *testing.T) {
	m, f := labScene(80, 24, Options{})
	press(m, "n")
	if m.modal != modalNote {
		t.Fatalf("n: modal %d %q", m.modal, m.Status())
	}
	typeText(m, "bumped NCCL_NTHREADS")
	do(m, "enter")
	if c := f.Calls(); len(c) != 1 || c[0] != `Note "bumped NCCL_NTHREADS"` || m.Status() != "note saved" {
		t.Errorf("calls %q status %q", c, m.Status())
	}
	if k := f.Keys(); len(k) != 1 || k[0] != [2]string{"enter", "note"} {
		t.Errorf("keys %q", k)
	}
	// An empty note saves nothing; esc cancels.
	press(m, "n", "enter")
	press(m, "n")
	typeText(m, "x")
	press(m, "esc")
	if len(f.Calls()) != 1 {
		t.Errorf("calls %q", f.Calls())
	}
	// With an experiment open, the title names it.
	send(m, session()...)
	press(m, "n")
	if !strings.Contains(plain(m), "+- note on e3 -") {
		t.Errorf("note form:\n%s", plain(m))
	}
}

// TestConclusionPrompt: an experiment ended by a kill, a relaunch or the
// server's exit without a conclusion gets a banner (never an overlay that
// opens by itself: it would take keys typed for something else); e then
// asks for the conclusion, esc dismisses the banner; a replay never asks.
func TestConclusionPrompt(t *testing.T) {
	end := func(trig journal.Trigger, conclusion string) event.Event {
		return ev(50*time.Second, journal.ExperimentEnd{Exp: "e1", Trigger: trig, Conclusion: conclusion, Result: result(82.3, 81.9, 82.9, 14)})
	}
	start := ev(10*time.Second, journal.ExperimentStart{ID: "e1", Name: "none @ bba2fc4", Trigger: journal.TriggerLaunch})
	const banner = "e1 none @ bba2fc4 ended (kill): 82.3 tok/s [81.9, 82.9] n=14  (e: write its conclusion, esc: dismiss)"
	for _, c := range []struct {
		trig       journal.Trigger
		conclusion string
		ask        bool
	}{
		{journal.TriggerKill, "", true}, {journal.TriggerRelaunch, "", true}, {journal.TriggerExit, "", true},
		{journal.TriggerKey, "", false}, {journal.TriggerQuit, "", false}, {journal.TriggerKill, "typed already", false},
	} {
		m, _ := labScene(120, 30, Options{})
		send(m, start, end(c.trig, c.conclusion))
		if m.modal != modalNone {
			t.Errorf("%s %q: an overlay opened by itself (modal %d)", c.trig, c.conclusion, m.modal)
		}
		if got := strings.Contains(plain(m), "(e: write its conclusion"); got != c.ask {
			t.Errorf("%s %q: banner %v:\n%s", c.trig, c.conclusion, got, plain(m))
		}
	}
	m, f := labScene(120, 30, Options{})
	send(m, start, end(journal.TriggerKill, ""))
	if !strings.Contains(plain(m), banner) {
		t.Errorf("banner:\n%s", plain(m))
	}
	press(m, "e")
	if b := boxText(m); m.modal != modalExpConclude || !strings.Contains(plain(m), "+- e1 none @ bba2fc4 ended (killed) -") || !strings.Contains(b, "result 82.3 tok/s [81.9, 82.9] n=14") {
		t.Errorf("prompt:\n%s", plain(m))
	}
	typeText(m, "baseline holds")
	do(m, "enter")
	if c := f.Calls(); len(c) != 1 || c[0] != `Update e1 "baseline holds"` || m.Status() != "conclusion of e1 saved" {
		t.Errorf("calls %q status %q", c, m.Status())
	}
	if strings.Contains(plain(m), "(e: write its conclusion") {
		t.Errorf("banner stays after the conclusion:\n%s", plain(m))
	}
	// esc dismisses the banner; e then starts or ends experiments again.
	m, f = labScene(120, 30, Options{})
	send(m, start, end(journal.TriggerExit, ""))
	press(m, "esc")
	if m.modal != modalNone || len(f.Calls()) != 0 || strings.Contains(plain(m), "(e: write its conclusion") {
		t.Errorf("esc: modal %d calls %q:\n%s", m.modal, f.Calls(), plain(m))
	}
	press(m, "e")
	if m.modal != modalExpStart {
		t.Errorf("e after dismissing: modal %d", m.modal)
	}
	// An overlay open when it ends keeps the keys; the banner waits.
	m, _ = labScene(120, 30, Options{})
	press(m, "n")
	send(m, start, end(journal.TriggerKill, ""))
	if m.modal != modalNote {
		t.Fatalf("the prompt took over the note form: modal %d", m.modal)
	}
	press(m, "esc")
	if m.modal != modalNone || !strings.Contains(plain(m), banner) {
		t.Errorf("after the note form closed: modal %d\n%s", m.modal, plain(m))
	}
	// A replay never asks.
	r := newSized(100, 30, Options{ReadOnly: true})
	send(r, start, end(journal.TriggerKill, ""))
	if r.modal != modalNone {
		t.Error("a replay asked for a conclusion")
	}
}

// TestKeysThatActAreRecorded: confirmed kills, launches, profile choices
// and git actions record their key inside the action's command.
func TestKeysThatActAreRecorded(t *testing.T) {
	lab := &fakeLab{}
	m, _ := controlled(100, 30, ptr(readyStatus()))
	m.exp.ctl = lab
	cmd := press(m, "K", "y")
	if len(lab.Keys()) != 0 {
		t.Error("the key was recorded in Update, before the command ran")
	}
	run(cmd)
	m.Update(KillResultMsg{Target: "sglang pid 4123"})
	run(press(m, "p", "enter"))
	send(m, ev(5*time.Second, server.Status{Phase: server.PhaseNone}))
	press(m, "L")
	run(press(m, "enter"))
	want := [][2]string{{"y", "kill sglang pid 4123"}, {"enter", "profile none"}, {"enter", "launch sglang profile none"}}
	got := lab.Keys()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("keys %q\nwant %q", got, want)
	}

	g, _ := gitScene(100, 30, ptr(dirtyStatus()), Options{Experiments: lab})
	openGit(t, g)
	press(g, "s")
	typeText(g, "wip")
	do(g, "enter")
	if k := lab.Keys(); k[len(k)-1] != [2]string{"enter", "git stash"} {
		t.Errorf("git keys %q", k)
	}
}

func TestHeaderShowsExperimentAndJournal(t *testing.T) {
	m, _ := labScene(200, 30, Options{})
	evs := session()
	send(m, evs...)
	var l journal.Ledger
	for _, e := range evs {
		l.Apply(e)
	}
	want := "e3 nccl-ll-ring @ a6d51c0 " + medianText(l.Provisional()) + " tok/s"
	if h := screenLines(m)[0]; !strings.Contains(h, want) {
		t.Errorf("header %q lacks %q", h, want)
	}
	send(m, ev(200*time.Second, journal.Status{Path: "/j.jsonl", Bytes: 1 << 20}))
	if h := screenLines(m)[0]; !strings.Contains(h, "  connected  rec  ") {
		t.Errorf("header %q lacks rec", h)
	}
	send(m, ev(201*time.Second, journal.Status{Path: "/j.jsonl", Err: "write /j.jsonl: no space left on device", Pending: 1234567, Dropped: 3}))
	full := "journal: no space left on device (1.2 MB held, 3 events lost)"
	if h := screenLines(m)[0]; !strings.Contains(h, full) || !painted(m, m.styles.Warn, full) {
		t.Errorf("header %q lacks %q in warning tone", h, full)
	}
	// Narrow: the journal's trouble stays, the experiment goes first.
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	h := screenLines(m)[0]
	if !strings.Contains(h, "journal: no space left on device") || strings.Contains(h, "e3 nccl") {
		t.Errorf("80 columns: %q", h)
	}
	// A write that succeeds again clears it.
	send(m, ev(202*time.Second, journal.Status{Path: "/j.jsonl", Bytes: 2 << 20}))
	if h := screenLines(m)[0]; strings.Contains(h, "journal:") {
		t.Errorf("recovered: %q", h)
	}
}

func TestExperimentsPanel(t *testing.T) {
	m, _ := labScene(120, 40, Options{})
	press(m, "x")
	if !m.exp.open || !strings.Contains(plain(m), "no experiments yet: e starts one") {
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
		"conclusion  LL+ring is 8% faster: keep it", "dirty patch 3f2a9c1e0b12 (12.3 kB)", "1 stash",
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
	if m.exp.open {
		t.Error("esc did not close the panel")
	}
	press(m, "x", "x")
	if m.exp.open {
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
			ls := screenLines(m)
			if len(ls) != sz[1] {
				t.Errorf("%v %v: %d lines", sz, keys, len(ls))
			}
			for i, l := range ls {
				if w := ansiWidth(l); w > sz[0] {
					t.Errorf("%v %v: line %d is %d wide: %q", sz, keys, i, w, l)
				}
			}
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
			if u, ok := e.Data.(journal.ExperimentUpdate); ok && u.Exp == "e2" {
				evs = evs[:i] // up to e2's end by relaunch, before its conclusion
				break
			}
		}
		send(m, evs...)
		press(m, "e")
		if m.modal != modalExpConclude {
			t.Fatal("no conclusion prompt")
		}
		golden.RequireEqual(t, plain(m))
	})
}

func TestResultText(t *testing.T) {
	lo, hi := 87.14, 90.25
	for _, c := range []struct {
		r    journal.Result
		want string
	}{
		{journal.Result{}, "no tok/s samples"},
		{journal.Result{N: 4, Median: 88.94}, "88.9 tok/s (n<6) n=4"},
		{journal.Result{N: 8, Median: 88.94}, "88.9 tok/s (+-inf) n=8"},
		{journal.Result{N: 24, Median: 88.94, Lo: &lo, Hi: &hi}, "88.9 tok/s [87.1, 90.2] n=24"},
	} {
		if got := resultText(c.r); got != c.want {
			t.Errorf("resultText(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 12345: "12.3 kB", 1234567: "1.2 MB", 3e9: "3.0 GB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
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
