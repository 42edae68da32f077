package experiment

import (
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// fakePanel records the calls the forms hand it.
type fakePanel struct {
	ledger ledger.Ledger
	doing  string
	calls  []string
}

func (f *fakePanel) Ledger() *ledger.Ledger              { return &f.ledger }
func (f *fakePanel) Provisional() event.ExperimentResult { return f.ledger.Provisional() }
func (f *fakePanel) Doing() string                       { return f.doing }
func (f *fakePanel) Writable() bool                      { return true }
func (f *fakePanel) Dismiss()                            { f.calls = append(f.calls, "dismiss") }
func (f *fakePanel) WriteNote(text string) tea.Cmd       { return f.call("note " + text) }
func (f *fakePanel) EndExperiment(id, c string) tea.Cmd  { return f.call("end " + id + " " + c) }
func (f *fakePanel) Conclude(id, c string) tea.Cmd       { return f.call("conclude " + id + " " + c) }
func (f *fakePanel) StartExperiment(n, h, s string) tea.Cmd {
	return f.call("start " + n + "|" + h + "|" + s)
}
func (f *fakePanel) call(s string) tea.Cmd                                       { f.calls = append(f.calls, s); return nil }
func (f *fakePanel) WarmingUp(*ledger.Experiment, event.ExperimentResult) string { return "" }

var _ Panel = (*fakePanel)(nil)

// forms are the forms over a fake panel, on a stack; flashes go to *said.
func forms(said *string) (*Dialogs, *fakePanel, *component.Stack) {
	p, s := &fakePanel{}, &component.Stack{}
	return &Dialogs{Panel: p, Push: s.Push, Flash: func(text string, _ style.Token) { *said = text },
		Inputs: func() textinput.Styles { return textinput.DefaultStyles(true) }}, p, s
}

func key(s *component.Stack, keys ...string) {
	for _, k := range keys {
		msg := tea.KeyPressMsg{Code: rune(k[0]), Text: k}
		switch k {
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "tab":
			msg = tea.KeyPressMsg{Code: tea.KeyTab}
		}
		s.Key(msg)
	}
}

// TestFormsHandTheirTextToThePanel: enter hands what was typed to the
// panel's call and closes the form; an empty note or conclusion closes it
// saying nothing was saved; esc says what was not done; a call in flight
// keeps the form open.
func TestFormsHandTheirTextToThePanel(t *testing.T) {
	var said string
	ds, p, s := forms(&said)
	ds.OpenExperiment("none @ a6d51c0")
	if s.TopID() != StartID {
		t.Fatalf("top %q", s.TopID())
	}
	key(s, "tab", "L", "L", "enter")
	if !s.Empty() || strings.Join(p.calls, ";") != "start |LL|none @ a6d51c0" {
		t.Errorf("start: open %v calls %q", !s.Empty(), p.calls)
	}
	ds.OpenNote()
	key(s, "enter")
	if !s.Empty() || said != "empty note: nothing saved" || len(p.calls) != 1 {
		t.Errorf("empty note: %q %q", said, p.calls)
	}
	ds.OpenNote()
	p.doing = "saving a note"
	key(s, "x", "enter")
	if s.TopID() != NoteID || said != "saving a note ...: try again when it ends" {
		t.Errorf("busy: top %q %q", s.TopID(), said)
	}
	p.doing = ""
	key(s, "enter")
	if !s.Empty() || p.calls[len(p.calls)-1] != "note x" {
		t.Errorf("note: %q", p.calls)
	}
	ds.OpenConclude("e1")
	key(s, "esc")
	if !s.Empty() || said != "conclusion skipped" || p.calls[len(p.calls)-1] != "dismiss" {
		t.Errorf("esc: %q %q", said, p.calls)
	}
}

// TestEditLeavesAnUnchangedConclusion: the conclusion form opened with w
// holds the conclusion so far; enter on it unchanged writes nothing.
func TestEditLeavesAnUnchangedConclusion(t *testing.T) {
	var said string
	ds, p, s := forms(&said)
	ds.OpenEdit(&ledger.Experiment{ID: "e2", Conclusion: "keep it", Started: time.Unix(0, 0)})
	f, ok := s.Top().(*Form)
	if !ok || f.Exp() != "e2" || f.Value(0) != "keep it" {
		t.Fatalf("form %+v", s.Top())
	}
	if f.Answered(event.ExperimentUpdate{Exp: "e2", Conclusion: "x"}) {
		t.Error("an exp-update answered an edit")
	}
	key(s, "enter")
	if !s.Empty() || said != "conclusion not changed" || len(p.calls) != 0 {
		t.Errorf("unchanged: %q %q", said, p.calls)
	}
}
