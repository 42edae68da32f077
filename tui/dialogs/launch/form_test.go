package launch

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// fakeControl plans a command line naming the request's preset, profile
// and model; a missing model is an error.
type fakeControl struct{ plans []sessions.LaunchRequest }

func (f *fakeControl) Request() sessions.LaunchRequest {
	return sessions.LaunchRequest{Preset: "sglang", Model: "/models/Llama", TP: 8, Port: 30000}
}
func (f *fakeControl) Presets() []string  { return []string{"sglang", "vllm"} }
func (f *fakeControl) Profiles() []string { return []string{"nccl-ll-ring", "none"} }
func (f *fakeControl) Plan(r sessions.LaunchRequest) (sessions.Plan, error) {
	f.plans = append(f.plans, r)
	if r.Model == "" {
		return sessions.Plan{Request: r}, errors.New("{model} has no value\n{tp} has no value\x1b[2J")
	}
	return sessions.Plan{Request: r, CommandLine: r.Preset + " " + r.Profile + " " + r.Model}, nil
}

// harness is a form on a stack with a server that runs (running) or not,
// recording what it launched and said.
type harness struct {
	ctl      *fakeControl
	stack    component.Stack
	running  bool
	said     []string
	launched []string
}

func open(t *testing.T) (*Form, *harness) {
	t.Helper()
	h := &harness{ctl: &fakeControl{}, running: true}
	launch := func(how string) func(sessions.Plan, string) tea.Cmd {
		return func(p sessions.Plan, hyp string) tea.Cmd {
			h.launched = append(h.launched, how+" "+p.CommandLine+" "+hyp)
			return func() tea.Msg { return nil }
		}
	}
	f, _ := Open(Host{
		Ctl:         h.ctl,
		Server:      func() (string, bool, bool) { return "sglang pid 4123", h.running, true },
		Unavailable: func() string { return "" },
		Note:        func() string { return "" },
		Commit:      func() (string, bool) { return "", false },
		Launch:      launch("launch"), Relaunch: launch("relaunch"),
		Flash:  func(s string, _ style.Token) { h.said = append(h.said, s) },
		Inputs: func() textinput.Styles { return textinput.DefaultStyles(true) },
	})
	h.stack.Push(f)
	return f, h
}

// TestRelaunchAsksInTheForm: enter over a running server asks in the
// form's box; n goes back to the form, y relaunches and closes it.
func TestRelaunchAsksInTheForm(t *testing.T) {
	st := style.Plain()
	f, h := open(t)
	if f.Focused() != "preset" || f.h.Ctl.(*fakeControl).plans[0].Profile != "none" {
		t.Fatalf("opened on %q, planned %+v", f.Focused(), h.ctl.plans)
	}
	h.stack.Key(tuitest.KeyMsg("enter"))
	if !f.Confirming() || f.Help()[0] != (component.Hint{Key: "y", Desc: "relaunch"}) {
		t.Fatalf("enter: confirming %v, help %+v", f.Confirming(), f.Help())
	}
	if b := f.View(&st, 80, 24); b.Title != "relaunch sglang pid 4123" || !strings.Contains(strings.Join(b.Body, " "), "Relaunch: kills sglang pid 4123") {
		t.Errorf("question: %q %q", b.Title, b.Body)
	}
	h.stack.Key(tuitest.KeyMsg("n"))
	if f.Confirming() || h.stack.TopID() != ID {
		t.Fatal("n did not go back to the form")
	}
	h.stack.Key(tuitest.KeyMsg("up")) // the hypothesis, the last field
	for _, r := range "faster" {
		h.stack.Key(tuitest.KeyMsg(string(r)))
	}
	h.stack.Key(tuitest.KeyMsg("enter"))
	if cmd, _ := h.stack.Key(tuitest.KeyMsg("y")); cmd == nil || !h.stack.Empty() || h.launched[0] != "relaunch sglang none /models/Llama faster" {
		t.Errorf("y: launched %q, %q open", h.launched, h.stack.TopID())
	}
	// No server: enter launches at once; ctrl+c while asked closes it.
	_, h = open(t)
	h.running = false
	h.stack.Key(tuitest.KeyMsg("enter"))
	if !h.stack.Empty() || h.launched[0] != "launch sglang none /models/Llama " {
		t.Errorf("no server: launched %q", h.launched)
	}
	_, h = open(t)
	h.stack.Key(tuitest.KeyMsg("enter"))
	h.stack.Key(tuitest.KeyMsg("ctrl+c"))
	if !h.stack.Empty() || len(h.launched) != 0 || len(h.said) != 0 {
		t.Errorf("ctrl+c while asked: launched %q said %q", h.launched, h.said)
	}
}

// TestPlanErrorKeepsTheForm: a plan's errors show one per "; ", and enter
// says why it cannot launch; esc cancels.
func TestPlanErrorKeepsTheForm(t *testing.T) {
	f, h := open(t)
	f.inputs[fieldModel].SetValue("")
	f.replan()
	h.stack.Key(tuitest.KeyMsg("enter"))
	if h.stack.TopID() != ID || f.Confirming() || h.said[0] != "cannot launch: {model} has no value; {tp} has no value" {
		t.Errorf("enter: said %q", h.said)
	}
	// A paste goes to a text field only: the preset's chooser has none.
	n := len(h.ctl.plans)
	if cmd := f.Paste(tea.PasteMsg{Content: "x"}); cmd != nil || len(h.ctl.plans) != n {
		t.Errorf("a paste into the preset chooser: %d plans, was %d", len(h.ctl.plans), n)
	}
	h.stack.Key(tuitest.KeyMsg("esc"))
	if !h.stack.Empty() || h.said[1] != "launch cancelled" {
		t.Errorf("esc: said %q", h.said)
	}
}

// TestTinyScreens: the form draws at any size without panicking, and no
// box where there is no room for one.
func TestTinyScreens(t *testing.T) {
	st := style.Plain()
	f, h := open(t)
	for _, confirming := range []bool{false, true} {
		if confirming {
			h.stack.Key(tuitest.KeyMsg("enter"))
		}
		tuitest.AuditDialogSizes(t, &st, fmt.Sprintf("launch form (confirming %v)", confirming), f,
			[][2]int{{0, 0}, {1, 1}, {7, 4}, {8, 5}, {9, 6}, {12, 7}, {20, 5}, {300, 100}})
	}
}
