package tui

// The launch form (L): its plan, a relaunch's question, the head move,
// dirty changes and the hypothesis it shows, plan errors; and the profile
// picker (p).

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/launch"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/profile"
)

// launchForm is the open launch form, nil when none is open.
func launchForm(m *Model) *launch.Form {
	f, _ := m.overlay.Find(launch.ID).(*launch.Form)
	return f
}

func TestLaunchFormShowsThePlan(t *testing.T) {
	m, f := controlled(200, 60, ptr(readyStatus()))
	press(m, "L")
	if m.overlay.TopID() != launch.ID {
		t.Fatal("L did not open the form")
	}
	if n, _, _ := f.counts(); n != 1 {
		t.Errorf("opening planned %d times", n)
	}
	if f.plans[0] != f.req {
		t.Errorf("first plan %+v, want the control's request %+v", f.plans[0], f.req)
	}
	scr := boxText(m)
	for _, want := range []string{
		"python3 -m sglang.launch_server --model-path /models/Llama-3.1-8B-Instruct --tp-size 8",
		"- NCCL_DEBUG=INFO", "< sglang > 1/3", "< none > 3/3",
	} {
		if !strings.Contains(scr, want) {
			t.Errorf("form lacks %q:\n%s", want, plain(m))
		}
	}
	if !strings.Contains(plain(m), "+- relaunch sglang pid 4123 ---") {
		t.Errorf("form title:\n%s", plain(m))
	}
	// The profile: down to it, right picks the next one and replans.
	press(m, "down", "right")
	if got := f.plans[len(f.plans)-1].Profile; got != "nccl-debug" {
		t.Errorf("right on profile planned %q", got)
	}
	press(m, "left")
	if got := f.plans[len(f.plans)-1].Profile; got != "none" {
		t.Errorf("left planned %q", got)
	}
	press(m, "left")
	if got := f.plans[len(f.plans)-1]; got.Profile != "nccl-ll-ring" || got.Model != f.req.Model || got.TP != 8 || got.Port != 30000 {
		t.Errorf("plan %+v", got)
	}
	scr = boxText(m)
	for _, want := range []string{"env NCCL_ALGO=Ring NCCL_NTHREADS=512 NCCL_PROTO=LL python3", "+ NCCL_PROTO=LL",
		"- NCCL_DEBUG=INFO", "~ NCCL_NTHREADS 256 -> 512"} {
		if !strings.Contains(scr, want) {
			t.Errorf("form lacks %q:\n%s", want, plain(m))
		}
	}
	if !painted(m, m.styles.OK, "+ NCCL_PROTO=LL") || !painted(m, m.styles.Crit, "- NCCL_DEBUG=INFO") {
		t.Error("env diff colours")
	}
	// Text fields: type into extra (shift+tab wraps from preset to the
	// hypothesis, the last field, then goes back to extra).
	press(m, "up", "shift+tab", "shift+tab")
	if launchForm(m).Focused() != "extra" {
		t.Fatalf("focus %q, want extra", launchForm(m).Focused())
	}
	typeText(m, "--mem-fraction-static 0.85 --quantization fp8")
	if got := f.plans[len(f.plans)-1].Extra; got != "--mem-fraction-static 0.85 --quantization fp8" {
		t.Errorf("extra planned %q", got)
	}
	// Keys go to the form, not the cockpit: q is text, not quit.
	if m.Quitting() || !strings.Contains(boxText(m), "--enable-metrics --mem-fraction-static 0.85 --quantization fp8") {
		t.Errorf("typing did not reach the command line:\n%s", plain(m))
	}
	// The rest of the screen keeps updating under the form.
	send(m, ev(4*time.Minute, linesOf("[2025-10-22 10:31:00 TP0] a line that arrived while the form was open")))
	if !strings.Contains(plain(m), "a line that arrived while the form") {
		t.Error("the log stopped under the form")
	}
	// A bad number is the form's own error; Plan is not asked.
	press(m, "up", "up")
	if launchForm(m).Focused() != "tp" {
		t.Fatalf("focus %q, want tp", launchForm(m).Focused())
	}
	n, _, _ := f.counts()
	typeText(m, "x")
	if n2, _, _ := f.counts(); n2 != n {
		t.Error("Plan called with a tp that is not a number")
	}
	if !strings.Contains(boxText(m), `cannot launch: tp: "8x" is not a whole number`) {
		t.Errorf("bad tp:\n%s", plain(m))
	}
	press(m, "enter")
	if launchForm(m) == nil || launchForm(m).Confirming() || !strings.HasPrefix(m.Status(), "cannot launch") {
		t.Errorf("enter with an error: confirming %v, status %q", launchForm(m) != nil && launchForm(m).Confirming(), m.Status())
	}
	press(m, "backspace")
	press(m, "esc")
	if m.DialogOpen() || launchForm(m) != nil {
		t.Error("esc did not close the form")
	}
	if _, launched, _ := f.counts(); launched != 0 {
		t.Error("launched without a confirmation")
	}
}

func TestRelaunchAsksThenLaunchesThePlan(t *testing.T) {
	m, f := controlled(80, 24, ptr(readyStatus()))
	press(m, "L", "down", "left") // profile nccl-ll-ring
	want := f.plans[len(f.plans)-1]
	if cmd := press(m, "enter"); cmd != nil {
		t.Fatal("enter with a running server launched without asking")
	}
	if !strings.Contains(boxText(m), "Relaunch: kills sglang pid 4123, waits for GPU memory, then launches. y/N") {
		t.Errorf("no relaunch question:\n%s", plain(m))
	}
	// n goes back to the form.
	press(m, "n")
	if launchForm(m) == nil || launchForm(m).Confirming() {
		t.Fatal("n did not return to the form")
	}
	press(m, "enter")
	cmd := press(m, "y")
	if cmd == nil || m.DialogOpen() {
		t.Fatal("y did not start the launch")
	}
	if _, launched, _ := f.counts(); launched != 0 {
		t.Fatal("Launch ran inside Update")
	}
	if launchUnavailable(m) != "a launch is in progress" || killUnavailable(m) != "a launch is in progress" {
		t.Error("K/L during a launch")
	}
	msgs := run(cmd)
	if _, launched, _ := f.counts(); launched != 1 || f.launched[0].Request != want || !strings.Contains(f.launched[0].CommandLine, "NCCL_PROTO=LL") {
		t.Fatalf("launched %+v, want the plan of %+v", f.launched, want)
	}
	m.Update(msgs[0])
	if m.Status() != "launched: /root/.flightdeck/logs/sglang-20251022-103000.log" {
		t.Errorf("after launch: %q", m.Status())
	}
}

func TestLaunchWithoutServerStartsAtOnce(t *testing.T) {
	m, f := controlled(80, 24, &event.ServerStatus{Phase: event.PhaseKilled, Server: "sglang", Profile: "none", Since: t0, Exit: -1})
	press(m, "L")
	cmd := press(m, "enter")
	if cmd == nil || m.DialogOpen() {
		t.Fatal("enter without a server should launch at once")
	}
	run(cmd)
	if _, launched, _ := f.counts(); launched != 1 {
		t.Errorf("launched %d", launched)
	}
	// Without any status yet the cockpit cannot tell: it asks.
	m2, _ := controlled(80, 24, nil)
	press(m2, "L")
	if cmd := press(m2, "enter"); cmd != nil || !strings.Contains(boxText(m2), "Launch: kills the running server first, if there is one") {
		t.Errorf("unknown state: launched without asking:\n%s", plain(m2))
	}
}

func TestLaunchPlanErrorShown(t *testing.T) {
	m, f := controlled(80, 24, ptr(readyStatus()))
	f.planErr = errors.New("profiles.fast (line 12): NCCL_PROTO\x1b[31m: value has a newline")
	press(m, "L")
	scr := boxText(m)
	if !strings.Contains(scr, "cannot launch: profiles.fast (line 12): NCCL_PROTO: value has a newline") {
		t.Errorf("plan error not shown:\n%s", plain(m))
	}
	if !painted(m, m.styles.Crit, "cannot launch:") {
		t.Error("plan error not red")
	}
	if strings.Contains(m.View().Content, "\x1b[31m:") {
		t.Error("plan error unsanitised")
	}
	if cmd := press(m, "enter"); cmd != nil || launchForm(m).Confirming() {
		t.Error("enter with a plan error")
	}
}

func TestProfilePicker(t *testing.T) {
	m, f := controlled(80, 24, ptr(readyStatus()))
	press(m, "p")
	if m.overlay.TopID() != profile.ID {
		t.Fatal("p did not open the picker")
	}
	scr := plain(m)
	if !strings.Contains(scr, "> * none  (current)") || !strings.Contains(scr, "nccl-ll-ring") {
		t.Errorf("picker:\n%s", scr)
	}
	press(m, "esc")
	if m.DialogOpen() || len(f.picked) != 0 {
		t.Error("esc picked")
	}
	press(m, "p", "up", "enter")
	if len(f.picked) != 1 || f.picked[0] != "nccl-ll-ring" {
		t.Fatalf("picked %v", f.picked)
	}
	if m.Status() != "profile nccl-ll-ring for the next launch - L to relaunch" {
		t.Errorf("flash %q", m.Status())
	}
	if h := screenLines(m)[0]; !strings.HasSuffix(h, "  profile -> nccl-ll-ring  HEAD bba2fc4") {
		t.Errorf("header %q", h)
	}
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 24})
	if h := screenLines(m)[0]; !strings.Contains(h, "  profile none -> nccl-ll-ring  ") {
		t.Errorf("wide header %q", h)
	}
	// The pick stays until a launch from here succeeds.
	f.req.Profile = "nccl-ll-ring" // what sessions.Control.Request does after SetProfile
	press(m, "L", "enter")
	m.Update(run(press(m, "y"))[0])
	send(m, ev(5*time.Minute, event.ServerStatus{Phase: event.PhaseLaunching, Server: "sglang", Profile: "nccl-ll-ring", Since: at(5 * time.Minute), LaunchedAt: at(5 * time.Minute), Exit: -1}))
	if h := screenLines(m)[0]; strings.Contains(h, "->") || !strings.Contains(h, "profile nccl-ll-ring") {
		t.Errorf("header after the launch %q", h)
	}
}

// TestLaunchFormShowsHeadMove: the launch form says when HEAD moved since
// the last launched experiment (its fingerprint's commit), not only the
// env diff: the change this tool exists to catch.
func TestLaunchFormShowsHeadMove(t *testing.T) {
	fp := func(head string) event.ExperimentFingerprint {
		return event.ExperimentFingerprint{Exp: "e1", Fingerprint: event.Fingerprint{Git: &event.GitState{Head: head}}}
	}
	for _, c := range []struct {
		launched, now, want string
	}{
		{"a6d51c005def07f605f0dd44ce0da458e97c7d62", "65b09bf", "a6d51c0 -> 65b09bf (HEAD moved since the last launch)"},
		{"a6d51c005def07f605f0dd44ce0da458e97c7d62", "a6d51c0", "same commit as the last launch (a6d51c0)"},
	} {
		m, _ := controlled(120, 40, ptr(readyStatus()))
		send(m, ev(5*time.Second, event.ExperimentStart{ID: "e1", Name: "x", Trigger: event.TriggerLaunch}),
			ev(6*time.Second, fp(c.launched)), ev(7*time.Second, event.RepoHead{Short: c.now, Commit: c.now}))
		press(m, "L")
		if scr := plain(m); !strings.Contains(scr, "commit vs the last launch") || !strings.Contains(scr, c.want) {
			t.Errorf("now %s: the form lacks %q:\n%s", c.now, c.want, scr)
		}
	}
	// No launched experiment with a fingerprint: nothing to compare.
	m, _ := controlled(120, 40, ptr(readyStatus()))
	press(m, "L")
	if strings.Contains(plain(m), "commit vs the last launch") {
		t.Errorf("a comparison without a launch:\n%s", plain(m))
	}
}

// TestLaunchFormHypothesis: a hypothesis typed in the launch form goes to
// the experiment the launch starts (the open one once Launch returns), in
// the launch's tea.Cmd; without one nothing is updated.
func TestLaunchFormHypothesis(t *testing.T) {
	for _, hyp := range []string{"LL protocol cuts all-reduce latency", ""} {
		f, lab := newFake(), &fakeLab{}
		m := scene(120, 40, 8, 200, Options{Control: f, Experiments: lab})
		send(m, ev(4*time.Second, readyStatus()))
		press(m, "L", "up") // preset wraps to the hypothesis, the last field
		if launchForm(m).Focused() != "hypothesis" {
			t.Fatalf("focus %q, want hypothesis", launchForm(m).Focused())
		}
		typeText(m, hyp)
		press(m, "enter")
		cmd := press(m, "y")
		if len(lab.Calls()) != 0 {
			t.Fatal("the hypothesis was sent inside Update")
		}
		m.Update(run(cmd)[0])
		var updates []string
		for _, c := range lab.Calls() {
			if strings.HasPrefix(c, "Update") {
				updates = append(updates, c)
			}
		}
		if hyp == "" && len(updates) != 0 || hyp != "" && (len(updates) != 1 || lab.hypotheses[len(lab.hypotheses)-1] != hyp) {
			t.Errorf("hypothesis %q: updates %q", hyp, updates)
		}
		if !strings.HasPrefix(m.Status(), "launched: ") {
			t.Errorf("status %q", m.Status())
		}
	}
}

// TestLaunchFormShowsDirtyChange: same commit, but the tracked files have
// uncommitted changes now that the last launch did not have (or the
// reverse): the form says so; untracked files do not count (the patch
// holds only tracked changes).
func TestLaunchFormShowsDirtyChange(t *testing.T) {
	const head = "a6d51c005def07f605f0dd44ce0da458e97c7d62"
	for _, c := range []struct {
		patch   int
		entries []string
		want    string
	}{
		{0, []string{" M python/pynccl.py"}, "same commit (a6d51c0), but 1 file with uncommitted changes now (it was clean)"},
		{532, nil, "same commit (a6d51c0), but no uncommitted changes now (it had some)"},
		{0, []string{"?? notes.txt"}, "same commit as the last launch (a6d51c0)"},
		{532, []string{"M  python/pynccl.py"}, "same commit (a6d51c0); uncommitted changes then and now"},
	} {
		m, _ := controlled(160, 40, ptr(readyStatus()))
		send(m, ev(5*time.Second, event.ExperimentStart{ID: "e1", Name: "x", Trigger: event.TriggerLaunch}),
			ev(6*time.Second, event.ExperimentFingerprint{Exp: "e1", Fingerprint: event.Fingerprint{Git: &event.GitState{Head: head, PatchBytes: c.patch}}}),
			ev(7*time.Second, event.RepoHead{Short: "a6d51c0", Commit: head, Dirty: len(c.entries), Entries: c.entries}))
		press(m, "L")
		if scr := plain(m); !strings.Contains(scr, c.want) {
			t.Errorf("patch %d, entries %q: the form lacks %q:\n%s", c.patch, c.entries, c.want, scr)
		}
	}
}

// TestLaunchFormSeveralPlanErrors: a plan error of several lines
// (errors.Join: one problem per line) shows each problem, "; " between
// them, not an escaped newline.
func TestLaunchFormSeveralPlanErrors(t *testing.T) {
	m, f := controlled(140, 40, ptr(readyStatus()))
	f.planErr = errors.Join(errors.New("placeholder {model} has no value"), errors.New("placeholder {tp} has no value"))
	press(m, "L")
	box := boxText(m)
	if strings.Contains(box, `\x0a`) || !strings.Contains(box, "{model} has no value; placeholder {tp} has no value") {
		t.Errorf("plan errors in the form:\n%s", box)
	}
	press(m, "enter")
	if st := m.Status(); strings.Contains(st, `\x0a`) || !strings.Contains(st, "; placeholder {tp}") {
		t.Errorf("status %q", st)
	}
}
