package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions"
	sbisect "github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	bisectdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/bisect"
	cmpdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/compare"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// fakeBisect records the bisects the cockpit asks for. BisectRange
// answers commits (or rangeErr); Bisect answers out (or err), or with
// wait set returns when its context ends.
type fakeBisect struct {
	callLog
	commits  []event.BisectCommit
	rangeErr error
	out      sbisect.Outcome
	err      error
	wait     bool
}

func (f *fakeBisect) BisectRange(_ context.Context, good, bad string) ([]event.BisectCommit, error) {
	f.record("Range " + git.ShortID(good) + ".." + git.ShortID(bad))
	return f.commits, f.rangeErr
}

func (f *fakeBisect) Bisect(ctx context.Context, cfg sessions.BisectConfig) (sbisect.Outcome, error) {
	f.record("Bisect " + git.ShortID(cfg.Good) + ".." + git.ShortID(cfg.Bad))
	if f.wait {
		<-ctx.Done()
		return sbisect.Outcome{}, ctx.Err()
	}
	return f.out, f.err
}

var _ BisectControl = (*fakeBisect)(nil)

// bisectScene is the lab scene with the scripted session (e1 at bba2fc4
// 82.3 tok/s, e3 at a6d51c0 about 61), e3's fingerprint and a fake
// bisect answering the fixture's range.
func bisectScene(w, h int) (*Model, *fakeBisect) {
	f := &fakeBisect{commits: tuitest.BisectCommits()}
	m, _ := labScene(w, h, Options{Measure: &fakeMeasure{}, Bisect: f, Control: newFake(), Git: newFakeGit()})
	send(m, session()...)
	send(m, e3Fingerprint())
	st := dirtyStatus()
	st.Operation = ""
	send(m, ev(150*time.Second, st))
	return m, f
}

// openCompare opens the compare view of e1 (first with a result) and e3
// (selected) from the experiments panel.
func openCompare(t *testing.T, m *Model) {
	t.Helper()
	press(m, "x")
	for _, msg := range run(press(m, "c")) {
		m.Update(msg)
	}
	if m.overlay.TopID() != cmpdialog.ID {
		t.Fatalf("no compare view: %q", m.Status())
	}
}

// startDialog is the bisect start dialog on top, nil when none is.
func startDialog(m *Model) *bisectdialog.Start {
	d, _ := m.overlay.Top().(*bisectdialog.Start)
	return d
}

// TestBisectPanelGolden: the panel at 80x24 (compact) and 200x60 while
// the fixture bisect runs, after it found the culprit, and cancelled.
func TestBisectPanelGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		end  string // the bisect-end's outcome; "" still running
	}{{"running", ""}, {"culprit", event.BisectCulprit}, {"cancelled", event.BisectCancelled}, {"not_single_step", event.BisectNotSingleStep}} {
		for _, sz := range [][2]int{{80, 24}, {200, 60}} {
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, sz[0], sz[1]), func(t *testing.T) {
				m, _ := labScene(sz[0], sz[1], Options{})
				send(m, tuitest.BisectEvents(200*time.Second)...)
				if c.end != "" {
					send(m, ev(400*time.Second, tuitest.BisectEnd(c.end)))
				}
				m.Update(ClockMsg{Now: at(420 * time.Second)})
				press(m, "i")
				if !m.bis.Open {
					t.Fatalf("i did not open the panel: %q", m.Status())
				}
				assertFits(t, m, sz[0], sz[1], c.name)
				tuitest.AuditGlyphs(t, c.name, plain(m))
				golden.RequireEqual(t, plain(m))
			})
		}
	}
}

// TestBisectPanelShows: what the panel says, whatever the width; i and
// esc close it; it replaces the git and the experiments panels.
func TestBisectPanelShows(t *testing.T) {
	m, _ := labScene(120, 40, Options{})
	press(m, "i")
	if !strings.Contains(plain(m), "no bisect yet") {
		t.Errorf("before any bisect:\n%s", plain(m))
	}
	press(m, "i")
	send(m, tuitest.BisectEvents(200*time.Second)...)
	if l := screenLines(m)[1]; l != "bisect b1: 4 left, 3207427 measuring 7/10, ETA 6m00s  (i shows it)" {
		t.Errorf("banner %q", l)
	}
	press(m, "i")
	if l := screenLines(m)[1]; strings.HasPrefix(l, "bisect b1") {
		t.Errorf("banner over the open panel: %q", l)
	}
	scr := plain(m)
	for _, s := range []string{"bisect b1  bba2fc4..a6d51c0  9 commits  tok/s  running",
		"3207427 launch 3: measuring 7/10  ETA 6m00s", "65b09bf", "Fix PCG MoE Error", "1+1 failed"} {
		if !strings.Contains(scr, s) {
			t.Errorf("panel lacks %q:\n%s", s, scr)
		}
	}
	press(m, "esc")
	if m.bis.Open {
		t.Error("esc left the panel open")
	}
	press(m, "i")
	press(m, "x")
	if m.bis.Open || !m.exp.Open {
		t.Errorf("x: bisect %v experiments %v", m.bis.Open, m.exp.Open)
	}
	press(m, "i")
	if !m.bis.Open || m.exp.Open {
		t.Errorf("i over x: bisect %v experiments %v", m.bis.Open, m.exp.Open)
	}
	// Remote text is sanitised.
	st := tuitest.BisectStart()
	st.ID = "b2"
	st.Commits[4].Subject = "Fix \x1b[31mPCG\x1b[0m MoE"
	send(m, ev(500*time.Second, st), ev(501*time.Second, event.BisectLaunch{ID: "b2", Commit: st.Commits[4].ID, Value: 70}))
	if v := m.View().Content; strings.Contains(v, "\x1b[31mPCG") {
		t.Errorf("unsanitised subject on screen: %q", v)
	}
	// Another bisect's records are ignored.
	send(m, ev(502*time.Second, event.BisectLaunch{ID: "b1", Commit: st.Commits[4].ID, Value: 1}))
	if c := m.bis.State().Commit(st.Commits[4].ID); len(c.Samples) != 1 {
		t.Errorf("samples %v", c.Samples)
	}
}

// TestBisectStartFromCompare: b in the compare view of e1 (82.3 tok/s at
// bba2fc4) and e3 (about 61 at a6d51c0) opens the start dialog with good
// the faster e1's commit; its range is read in a tea.Cmd; enter runs the
// bisect.
func TestBisectStartFromCompare(t *testing.T) {
	m, f := bisectScene(80, 24)
	openCompare(t, m)
	cmd := press(m, "b")
	d := startDialog(m)
	if d == nil || d.Good != "bba2fc4"+strings.Repeat("0", 33) || d.Bad != "a6d51c0"+strings.Repeat("0", 33) || !d.Reading() {
		t.Fatalf("b: top %q status %q dialog %+v", m.overlay.TopID(), m.Status(), d)
	}
	if len(f.Calls()) != 0 {
		t.Errorf("the range was read in Update: %q", f.Calls())
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	if c := f.Calls(); len(c) != 1 || c[0] != "Range bba2fc4..a6d51c0" || len(d.Commits()) != 9 {
		t.Errorf("calls %q commits %d", c, len(d.Commits()))
	}
	assertFits(t, m, 80, 24, "start dialog")
	tuitest.AuditGlyphs(t, "start dialog", plain(m))
	golden.RequireEqual(t, plain(m))
	// A stale answer is dropped.
	m.Update(BisectRangeMsg{Seq: d.Seq() - 1, Err: errors.New("stale")})
	if len(d.Commits()) != 9 {
		t.Error("a stale range answer was applied")
	}
	msgs := do(m, "enter")
	if c := f.Calls(); len(c) != 2 || c[1] != "Bisect bba2fc4..a6d51c0" {
		t.Errorf("calls %q", c)
	}
	// The placeholder driver's answer: an error, shown in the status line
	// and the panel.
	if len(msgs) != 1 || !m.bis.Open || m.bisRun.running {
		t.Fatalf("answer %v open %v running %v", msgs, m.bis.Open, m.bisRun.running)
	}
	f.err = errors.New("bisect: not built yet\x1b[2J")
	press(m, "esc")
	openCompare(t, m)
	for _, msg := range run(press(m, "b")) {
		m.Update(msg)
	}
	do(m, "enter")
	if m.Status() != "bisect failed: bisect: not built yet" || !strings.Contains(plain(m), "bisect failed: bisect: not built yet") {
		t.Errorf("failure: status %q\n%s", m.Status(), plain(m))
	}
}

// TestBisectStartRefused: b needs two commits, tok/s on both sides, a
// BisectControl; esc closes the dialog without starting.
func TestBisectStartRefused(t *testing.T) {
	m, _ := labScene(80, 24, Options{Measure: &fakeMeasure{}})
	send(m, session()...)
	send(m, e3Fingerprint())
	openCompare(t, m)
	press(m, "b")
	if startDialog(m) != nil || !strings.HasPrefix(m.Status(), "bisect not available here") {
		t.Errorf("no control: %q", m.Status())
	}
	m, f := bisectScene(80, 24)
	press(m, "x", "up") // e2: the same commit as e1
	m.Update(space())
	press(m, "up")
	for _, msg := range run(press(m, "c")) {
		m.Update(msg)
	}
	press(m, "b")
	if startDialog(m) != nil || !strings.Contains(m.Status(), "nothing to bisect") {
		t.Errorf("same commit: top %q status %q", m.overlay.TopID(), m.Status())
	}
	m, f = bisectScene(80, 24)
	openCompare(t, m)
	press(m, "b")
	press(m, "esc")
	if m.overlay.TopID() != cmpdialog.ID || m.Status() != "bisect not started" || len(f.Calls()) != 0 {
		t.Errorf("esc: top %q status %q calls %q", m.overlay.TopID(), m.Status(), f.Calls())
	}
}

// TestBisectStartFromGit: I on a reflog entry of the git panel bisects
// from its commit (good) to HEAD (bad); off the reflog it says where to
// go.
func TestBisectStartFromGit(t *testing.T) {
	// The range from the reflog's bba2fc4 to HEAD 3207427.
	cs := tuitest.BisectCommits()[:4]
	cs[0].ID, cs[3].ID, cs[3].Subject = hexID('b'), hexID('3'), "Fix PCG MoE Error"
	f := &fakeBisect{commits: cs}
	st := dirtyStatus()
	st.Operation = ""
	m, _ := gitScene(80, 24, &st, Options{Bisect: f, Experiments: &fakeLab{}})
	openGit(t, m)
	press(m, "I")
	if startDialog(m) != nil || !strings.HasPrefix(m.Status(), "move the cursor to a reflog entry") {
		t.Errorf("I on a file: %q", m.Status())
	}
	// Files, stashes, then the reflog: its second entry (bba2fc4, before
	// the pull).
	for range len(st.Files) + len(st.Stashes) + 1 {
		press(m, "down")
	}
	cmd := press(m, "I")
	d := startDialog(m)
	if d == nil || d.Good != hexID('b') || d.Bad != hexID('3') {
		t.Fatalf("I: top %q status %q", m.overlay.TopID(), m.Status())
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	if c := f.Calls(); len(c) != 1 || c[0] != "Range bbbbbbb..3333333" {
		t.Errorf("calls %q", c)
	}
	golden.RequireEqual(t, plain(m))
	// The range's error is the dialog's.
	press(m, "esc")
	f.rangeErr = errors.New("fatal: bad revision 'bbbbbbb..3333333'")
	for _, msg := range run(press(m, "I")) {
		m.Update(msg)
	}
	if !strings.Contains(boxText(m), "range: fatal: bad revision") {
		t.Errorf("range error:\n%s", plain(m))
	}
}

// TestBisectRunningRefusesAndCancels: while a bisect runs from here the
// keys that would launch, kill, check out or measure say why; X asks,
// then cancels its context; the answer says the checkout was restored.
func TestBisectRunningRefusesAndCancels(t *testing.T) {
	m, f := bisectScene(120, 40)
	f.wait = true
	m.opts.Repeat = &fakeRepeat{}
	m.bench.Repeat = m.opts.Repeat
	openCompare(t, m)
	for _, msg := range run(press(m, "b")) {
		m.Update(msg)
	}
	cmd := press(m, "enter")
	if cmd == nil || !m.bisRun.running || !m.bis.Open {
		t.Fatalf("no bisect started: %q", m.Status())
	}
	send(m, tuitest.BisectEvents(200*time.Second)...)
	for _, c := range []struct{ key, want string }{
		{"L", bisectBusyText},
		{"K", bisectBusyText},
		{"p", "a bisect is running: its launches keep the profile it started with (X cancels it)"},
		{"e", "a bisect is running: each of its launches is an experiment it starts and ends itself (X cancels it)"},
		{"R", "a bisect is running: a repeat would relaunch the server and spoil its measurements (X cancels it)"},
		{"b", "a bisect is running: a benchmark would load the server and spoil its measurements (X cancels it)"},
	} {
		press(m, c.key)
		if m.Status() != c.want || m.DialogOpen() {
			t.Errorf("%s: %q (top %q), want %q", c.key, m.Status(), m.overlay.TopID(), c.want)
		}
	}
	press(m, "g")
	press(m, "c")
	if m.Status() != "a bisect is running: it checks out the commits it measures itself; a checkout would change them (X cancels it)" || m.DialogOpen() {
		t.Errorf("git c: %q", m.Status())
	}
	press(m, "g")
	// A second bisect, from the compare view.
	openCompare(t, m)
	press(m, "b")
	if startDialog(m) != nil || m.Status() != "a bisect is running already (i shows it, X cancels it)" {
		t.Errorf("second bisect: %q", m.Status())
	}
	press(m, "esc", "esc")
	// q asks once.
	press(m, "q")
	if m.Quitting() || !strings.HasPrefix(m.Status(), "a bisect is running: quitting cancels it") {
		t.Errorf("q: %v %q", m.Quitting(), m.Status())
	}
	press(m, "i")
	press(m, "X")
	if m.overlay.TopID() != dialogBisectCancel || !strings.Contains(boxText(m), "Cancel the bisect b1 (") {
		t.Fatalf("X:\n%s", plain(m))
	}
	press(m, "n")
	if m.Status() != "the bisect goes on" || !m.bisRun.running {
		t.Errorf("n: %q", m.Status())
	}
	press(m, "X")
	press(m, "y")
	if !m.bisRun.stopped || m.Status() != "cancelling the bisect: restoring the checkout ..." {
		t.Errorf("y: stopped %v %q", m.bisRun.stopped, m.Status())
	}
	press(m, "X")
	if m.Status() != "the bisect is being cancelled: the checkout is being restored" {
		t.Errorf("X again: %q", m.Status())
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	if m.bisRun.running || !strings.HasPrefix(m.Status(), "bisect cancelled: the checkout and dirty work were restored") {
		t.Errorf("answer: running %v %q", m.bisRun.running, m.Status())
	}
	send(m, ev(400*time.Second, tuitest.BisectEnd(event.BisectCancelled)))
	if !strings.Contains(plain(m), "restored: main at a6d51c0, dirty work restored") {
		t.Errorf("panel after the cancel:\n%s", plain(m))
	}
	// Nothing runs now: L acts again, X says so.
	press(m, "X")
	if m.Status() != "no bisect is running from here" {
		t.Errorf("X after: %q", m.Status())
	}
	if why := launchUnavailable(m); why == bisectBusyText {
		t.Errorf("L still refused: %q", why)
	}
}

// TestBisectKeysHelpAndFooter: i and X are in the help; the footer lists
// i once a bisect is known and X while one runs from here.
func TestBisectKeysHelpAndFooter(t *testing.T) {
	m, f := bisectScene(200, 40)
	f.wait = true
	if strings.Contains(screenLines(m)[39], "i bisect") {
		t.Errorf("footer before any bisect: %q", screenLines(m)[39])
	}
	press(m, "?")
	scr := wholeHelp(m)
	for _, s := range []string{"i    bisect panel: verdicts, ETA", "X  cancel bisect (asks first; restores the checkout and dirty work)", "I    bisect"} {
		if !strings.Contains(scr, s) {
			t.Errorf("help lacks %q:\n%s", s, scr)
		}
	}
	press(m, "esc")
	openCompare(t, m)
	for _, msg := range run(press(m, "b")) {
		m.Update(msg)
	}
	cmd := press(m, "enter")
	send(m, ev(200*time.Second, tuitest.BisectStart()))
	m.status = ""
	if l := screenLines(m)[39]; !strings.Contains(l, "i bisect") || !strings.Contains(l, "X cancel bisect") {
		t.Errorf("footer while running: %q", l)
	}
	m.bisRun.cancel()
	m.Update(BisectResultMsg{Err: context.Canceled})
	_ = cmd
}

// TestBisectReadOnly: a replay's X and b say why they cannot act.
func TestBisectReadOnly(t *testing.T) {
	m := newSized(80, 24, Options{ReadOnly: true})
	send(m, tuitest.BisectEvents(200*time.Second)...)
	press(m, "X")
	if !strings.HasPrefix(m.Status(), "read-only") {
		t.Errorf("X: %q", m.Status())
	}
	press(m, "i")
	if !m.bis.Open || !strings.Contains(plain(m), "bisect b1") {
		t.Errorf("i in a replay:\n%s", plain(m))
	}
	if why := m.bisectStartWhy(); !strings.HasPrefix(why, "read-only") {
		t.Errorf("start: %q", why)
	}
}

var _ tea.Msg = BisectResultMsg{}
