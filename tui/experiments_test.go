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

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	expdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/experiment"
	"github.com/flightdeck-dev/flightdeck/tui/panels/experiments"
)

// fakeLab records what the cockpit asks of the experiment control. Its
// answers do not publish events: tests send those, as the stream would.
type fakeLab struct {
	callLog
	mu   sync.Mutex
	keys [][2]string
	err  error // returned by every call when set
	next int   // the next experiment number
	// hypotheses are the hypotheses given with Update, in order.
	hypotheses []string
}

func (f *fakeLab) Keys() [][2]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][2]string(nil), f.keys...)
}

func (f *fakeLab) StartExperiment(_ context.Context, name, hyp string) (event.ExperimentStart, error) {
	f.record(fmt.Sprintf("Start %q %q", name, hyp))
	if f.err != nil {
		return event.ExperimentStart{}, f.err
	}
	f.next++
	return event.ExperimentStart{ID: fmt.Sprintf("e%d", f.next), Name: name, Hypothesis: hyp, Trigger: event.TriggerKey}, nil
}

func (f *fakeLab) EndExperiment(_ context.Context, conclusion string) (event.ExperimentEnd, error) {
	f.record(fmt.Sprintf("End %q", conclusion))
	if f.err != nil {
		return event.ExperimentEnd{}, f.err
	}
	return event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerKey, Conclusion: conclusion, Result: result(88.94, 87.1, 90.2, 24)}, nil
}

func (f *fakeLab) UpdateExperiment(_ context.Context, u event.ExperimentUpdate) error {
	f.record(fmt.Sprintf("Update %s %q", u.Exp, u.Conclusion))
	if u.Hypothesis != "" {
		f.hypotheses = append(f.hypotheses, u.Hypothesis)
	}
	return f.err
}

func (f *fakeLab) Note(_ context.Context, text string) (event.Note, error) {
	f.record(fmt.Sprintf("Note %q", text))
	return event.Note{Text: text}, f.err
}

func (f *fakeLab) Key(key, action string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, [2]string{key, action})
}

var _ ExperimentControl = (*fakeLab)(nil)

// expForm is the experiment form on top of the overlay stack, nil when
// none is.
func expForm(m *Model) *expdialog.Form {
	f, _ := m.overlay.Top().(*expdialog.Form)
	return f
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
	send(m, ev(4*time.Second, st), ev(4*time.Second, event.RepoHead{Short: "a6d51c0", Commit: "a6d51c0" + strings.Repeat("0", 33), Subject: "NCCL LL ring", Dirty: 1}))
	m.Update(ClockMsg{Now: gitNow})
	return m, f
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
			if m.Status() != want || m.DialogOpen() {
				t.Errorf("read-only=%v %s: %q (top %q), want %q", o.ReadOnly, k, m.Status(), m.overlay.TopID(), want)
			}
		}
	}
}

func TestExperimentStartForm(t *testing.T) {
	m, f := labScene(100, 30, Options{})
	press(m, "e")
	if m.overlay.TopID() != expdialog.StartID {
		t.Fatalf("e opened %q: %q", m.overlay.TopID(), m.Status())
	}
	// The default name is a placeholder (dimmed), not a value.
	if in := expForm(m).Input(0); in.Value() != "" || in.Placeholder != "nccl-ll-ring @ a6d51c0" {
		t.Errorf("name %q, placeholder %q", in.Value(), in.Placeholder)
	}
	if !strings.Contains(plain(m), "+- start an experiment -") || !strings.Contains(boxText(m), "hypothesis") ||
		!strings.Contains(boxText(m), "name nccl-ll-ring @ a6d51c0") || !painted(m, m.styles.Dim, "ccl-ll-ring @ a6d51c0") {
		t.Errorf("form:\n%s", plain(m))
	}
	press(m, "tab")
	typeText(m, "LL halves latency")
	msgs := do(m, "enter")
	if m.DialogOpen() {
		t.Error("enter left the form open")
	}
	// The default name is the Lab's: an empty name is sent.
	if c := f.Calls(); len(c) != 1 || c[0] != `Start "" "LL halves latency"` {
		t.Errorf("calls %q", c)
	}
	if k := f.Keys(); len(k) != 1 || k[0] != [2]string{"enter", "start experiment nccl-ll-ring @ a6d51c0"} {
		t.Errorf("keys %q", k)
	}
	if len(msgs) != 1 || m.Status() != "started e1 (x lists experiments)" {
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
	if len(f.Calls()) != n || m.DialogOpen() || m.Status() != "experiment not started" {
		t.Errorf("esc: calls %q status %q", f.Calls(), m.Status())
	}
	// Typing replaces the default instead of appending to it.
	f.err = nil
	press(m, "e")
	typeText(m, "rerun")
	do(m, "enter")
	if c := f.Calls(); c[len(c)-1] != `Start "rerun" ""` {
		t.Errorf("typed name: calls %q", c)
	}
}

// TestDefaultExperimentName: the start form's default describes the
// server running now (its profile, "none" included), never the profile
// picked with p for the next launch.
func TestDefaultExperimentName(t *testing.T) {
	withStatus := func(f func(*event.ServerStatus)) func(*Model) {
		return func(m *Model) {
			st := readyStatus()
			f(&st)
			send(m, ev(5*time.Second, st))
		}
	}
	for _, c := range []struct {
		name  string
		setup func(*Model)
		want  string
	}{
		{"ready, profile none", withStatus(func(*event.ServerStatus) {}), "none @ a6d51c0"},
		{"ready, nccl-ll-ring", withStatus(func(s *event.ServerStatus) { s.Profile = "nccl-ll-ring" }), "nccl-ll-ring @ a6d51c0"},
		{"adopted: preset", withStatus(func(s *event.ServerStatus) { s.Profile = "" }), "sglang @ a6d51c0"},
		{"adopted: server", withStatus(func(s *event.ServerStatus) { s.Profile, s.Preset = "", "" }), "sglang @ a6d51c0"},
		{"loading", withStatus(func(s *event.ServerStatus) { s.Phase, s.Profile = event.PhaseLoading, "nccl-tree" }), "nccl-tree @ a6d51c0"},
		{"killed", withStatus(func(s *event.ServerStatus) { s.Phase = event.PhaseKilled }), "no server @ a6d51c0"},
		{"none", withStatus(func(s *event.ServerStatus) { *s = event.ServerStatus{Phase: event.PhaseNone} }), "no server @ a6d51c0"},
		{"p picks the next launch's profile", func(m *Model) {
			withStatus(func(*event.ServerStatus) {})(m)
			m.srv.next = "nccl-ll-ring"
		}, "none @ a6d51c0"},
		{"no status: the log's server", func(*Model) {}, "sglang @ a6d51c0"},
		{"unreadable repository", func(m *Model) {
			withStatus(func(*event.ServerStatus) {})(m)
			send(m, ev(6*time.Second, event.RepoUnreadable{}))
			m.headShort = ""
		}, "none"},
	} {
		m := scene(100, 30, 1, 0, Options{Experiments: &fakeLab{}})
		send(m, ev(4*time.Second, event.RepoHead{Short: "a6d51c0", Commit: "a6d51c0" + strings.Repeat("0", 33)}))
		c.setup(m)
		if got := m.defaultExpName(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	m := New(Options{Experiments: &fakeLab{}})
	if got := m.defaultExpName(); got != "experiment" {
		t.Errorf("nothing known: %q", got)
	}
	// Enter on the empty name field leaves the name to the Lab (whose
	// default the placeholder shows).
	m, f := labScene(100, 30, Options{})
	m.srv.next = "nccl-tree"
	press(m, "e")
	do(m, "enter")
	if c := f.Calls(); len(c) != 1 || c[0] != `Start "" ""` {
		t.Errorf("calls %q", c)
	}
}

// TestExperimentTextLimits: a name holds 200 characters, a note, a
// hypothesis or a conclusion 4000; what goes past is cut, and the status
// line says so.
func TestExperimentTextLimits(t *testing.T) {
	long := strings.Repeat("abcdefghij", 500) // 5000
	for _, c := range []struct {
		keys  []string
		label string
		limit int
	}{
		{[]string{"n"}, "note", 4000},
		{[]string{"e"}, "name", 200},
		{[]string{"e", "tab"}, "hypothesis", 4000},
	} {
		m, _ := labScene(100, 30, Options{})
		press(m, c.keys...)
		m.Update(tea.PasteMsg{Content: long[:c.limit-3]})
		if m.Status() != "" {
			t.Errorf("%s: a paste that fits flashed %q", c.label, m.Status())
		}
		m.Update(tea.PasteMsg{Content: "xyz"}) // fills it exactly
		if m.Status() != "" {
			t.Errorf("%s: a paste that fills it flashed %q", c.label, m.Status())
		}
		f := expForm(m)
		f.Focused().SetValue("")
		m.Update(tea.PasteMsg{Content: long})
		want := c.label + " cut to " + fmt.Sprint(c.limit) + " characters"
		if got := len([]rune(f.Focused().Value())); got != c.limit || m.Status() != want || !painted(m, m.styles.Warn, want) {
			t.Errorf("%s: %d characters kept, status %q", c.label, got, m.Status())
		}
		press(m, "z")
		if want := c.label + " holds at most " + fmt.Sprint(c.limit) + " characters"; m.Status() != want {
			t.Errorf("%s: typing at the limit: %q", c.label, m.Status())
		}
		if !m.DialogOpen() {
			t.Errorf("%s: the form closed", c.label)
		}
	}
	// The saved message says the note was cut: later keys replaced the
	// flash of the cut.
	m, _ := labScene(100, 30, Options{})
	m.Update(NoteSavedMsg{Note: event.Note{Text: strings.Repeat("x", experiments.TextLimit)}})
	if want := "note saved, cut to 4000 characters"; m.Status() != want {
		t.Errorf("saved at the limit: %q, want %q", m.Status(), want)
	}
	m.Update(NoteSavedMsg{Note: event.Note{Text: "short"}})
	if m.Status() != "note saved" {
		t.Errorf("saved: %q", m.Status())
	}
}

func TestExperimentEndForm(t *testing.T) {
	m, f := labScene(100, 30, Options{})
	evs := session()
	send(m, evs...)
	press(m, "e")
	if m.overlay.TopID() != expdialog.EndID {
		t.Fatalf("e with e3 open: top %q", m.overlay.TopID())
	}
	var l ledger.Ledger
	for _, e := range evs {
		l.Apply(e)
	}
	prov := l.Provisional()
	if prov.N == 0 {
		t.Fatal("the scripted session gives e3 no samples")
	}
	box := boxText(m)
	if !strings.Contains(plain(m), "+- end e3 nccl-ll-ring @ a6d51c0 -") || !strings.Contains(box, "so far "+experiments.ResultText(prov)) {
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
	if m.overlay.TopID() != expdialog.NoteID {
		t.Fatalf("n: top %q %q", m.overlay.TopID(), m.Status())
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
	end := func(trig event.Trigger, conclusion string) event.Event {
		return ev(50*time.Second, event.ExperimentEnd{Exp: "e1", Trigger: trig, Conclusion: conclusion, Result: result(82.3, 81.9, 82.9, 14)})
	}
	start := ev(10*time.Second, event.ExperimentStart{ID: "e1", Name: "none @ bba2fc4", Trigger: event.TriggerLaunch})
	const banner = "e1 none @ bba2fc4 ended (kill): 82.3 tok/s [81.9, 82.9] n=14  (e within 30s: write its conclusion, esc: dismiss)"
	for _, c := range []struct {
		trig       event.Trigger
		conclusion string
		ask        bool
	}{
		{event.TriggerKill, "", true}, {event.TriggerRelaunch, "", true}, {event.TriggerExit, "", true},
		{event.TriggerKey, "", false}, {event.TriggerQuit, "", false}, {event.TriggerKill, "typed already", false},
	} {
		m, _ := labScene(120, 30, Options{})
		send(m, start, end(c.trig, c.conclusion))
		if m.DialogOpen() {
			t.Errorf("%s %q: an overlay opened by itself (top %q)", c.trig, c.conclusion, m.overlay.TopID())
		}
		if got := strings.Contains(plain(m), ": write its conclusion"); got != c.ask {
			t.Errorf("%s %q: banner %v:\n%s", c.trig, c.conclusion, got, plain(m))
		}
	}
	m, f := labScene(120, 30, Options{})
	send(m, start, end(event.TriggerKill, ""))
	if !strings.Contains(plain(m), banner) {
		t.Errorf("banner:\n%s", plain(m))
	}
	press(m, "e")
	if b := boxText(m); m.overlay.TopID() != expdialog.ConcludeID || !strings.Contains(plain(m), "+- e1 none @ bba2fc4 ended (killed) -") || !strings.Contains(b, "result 82.3 tok/s [81.9, 82.9] n=14") {
		t.Errorf("prompt:\n%s", plain(m))
	}
	typeText(m, "baseline holds")
	do(m, "enter")
	if c := f.Calls(); len(c) != 1 || c[0] != `Update e1 "baseline holds"` || m.Status() != "conclusion of e1 saved" {
		t.Errorf("calls %q status %q", c, m.Status())
	}
	if strings.Contains(plain(m), ": write its conclusion") {
		t.Errorf("banner stays after the conclusion:\n%s", plain(m))
	}
	// esc dismisses the banner; e then starts or ends experiments again.
	m, f = labScene(120, 30, Options{})
	send(m, start, end(event.TriggerExit, ""))
	press(m, "esc")
	if m.DialogOpen() || len(f.Calls()) != 0 || strings.Contains(plain(m), ": write its conclusion") {
		t.Errorf("esc: top %q calls %q:\n%s", m.overlay.TopID(), f.Calls(), plain(m))
	}
	press(m, "e")
	if m.overlay.TopID() != expdialog.StartID {
		t.Errorf("e after dismissing: top %q", m.overlay.TopID())
	}
	// An overlay open when it ends keeps the keys; the banner waits.
	m, _ = labScene(120, 30, Options{})
	press(m, "n")
	send(m, start, end(event.TriggerKill, ""))
	if m.overlay.TopID() != expdialog.NoteID {
		t.Fatalf("the prompt took over the note form: top %q", m.overlay.TopID())
	}
	press(m, "esc")
	if m.DialogOpen() || !strings.Contains(plain(m), banner) {
		t.Errorf("after the note form closed: top %q\n%s", m.overlay.TopID(), plain(m))
	}
	// A replay never asks.
	r := newSized(100, 30, Options{ReadOnly: true})
	send(r, start, end(event.TriggerKill, ""))
	if r.DialogOpen() {
		t.Error("a replay asked for a conclusion")
	}
}

// TestKeysThatActAreRecorded: confirmed kills, launches, profile choices
// and git actions record their key inside the action's command.
func TestKeysThatActAreRecorded(t *testing.T) {
	lab := &fakeLab{}
	m, _ := controlled(100, 30, ptr(readyStatus()))
	m.exp.Ctl = lab
	cmd := press(m, "K", "y")
	if len(lab.Keys()) != 0 {
		t.Error("the key was recorded in Update, before the command ran")
	}
	run(cmd)
	m.Update(KillResultMsg{Target: "sglang pid 4123"})
	run(press(m, "p", "enter"))
	send(m, ev(5*time.Second, event.ServerStatus{Phase: event.PhaseNone}))
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
	var l ledger.Ledger
	for _, e := range evs {
		l.Apply(e)
	}
	want := "e3 nccl-ll-ring @ a6d51c0 " + experiments.MedianText(l.Provisional()) + " tok/s"
	if h := screenLines(m)[0]; !strings.Contains(h, want) {
		t.Errorf("header %q lacks %q", h, want)
	}
	send(m, ev(200*time.Second, event.JournalStatus{Path: "/j.jsonl", Bytes: 1 << 20}))
	if h := screenLines(m)[0]; !strings.Contains(h, "  connected  rec  ") {
		t.Errorf("header %q lacks rec", h)
	}
	send(m, ev(201*time.Second, event.JournalStatus{Path: "/j.jsonl", Err: "write /j.jsonl: no space left on device", Pending: 1234567, Dropped: 3}))
	full := "journal: no space left on device (1.2 MiB held, 3 events lost)"
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
	send(m, ev(202*time.Second, event.JournalStatus{Path: "/j.jsonl", Bytes: 2 << 20}))
	if h := screenLines(m)[0]; strings.Contains(h, "journal:") {
		t.Errorf("recovered: %q", h)
	}
}
