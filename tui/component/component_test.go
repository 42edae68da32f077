package component

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/style"
)

func press(k string) tea.KeyPressMsg {
	if len(k) == 1 {
		return tea.KeyPressMsg{Code: rune(k[0]), Text: k}
	}
	return tea.KeyPressMsg{Code: tea.KeyEscape}
}

// TestConfirmAsksThenActs: y runs Yes, any other key No, and either closes
// the question; its box and footer say what y does.
func TestConfirmAsksThenActs(t *testing.T) {
	st := style.Plain()
	var said []string
	var s Stack
	ask := func() {
		s.Push(&Confirm{Name: "kill", Title: "kill the server", Frame: style.Crit, Question: func() string { return "Kill sglang pid 7?" },
			YesHelp: "kill", Yes: func() tea.Cmd { said = append(said, "yes"); return nil }, No: func() tea.Cmd { said = append(said, "no"); return nil }})
	}
	ask()
	if s.TopID() != "kill" {
		t.Fatalf("top %q", s.TopID())
	}
	b := s.Top().View(&st, 80, 24)
	if b.Title != "kill the server" || b.Frame != style.Crit || len(b.Body) != 1 || !strings.HasPrefix(b.Body[0], "Kill sglang pid 7? ") || b.Width != 64 {
		t.Errorf("box %+v", b)
	}
	if h := s.Top().Help(); len(h) != 2 || h[0] != (Hint{"y", "kill"}) {
		t.Errorf("help %+v", h)
	}
	if _, ok := s.Key(press("n")); !ok || !s.Empty() {
		t.Fatal("n did not close the question")
	}
	ask()
	s.Key(press("y"))
	if !s.Empty() || strings.Join(said, " ") != "no yes" {
		t.Errorf("after n then y: said %v, %d open", said, len(s.dialogs))
	}
	if _, ok := s.Key(press("y")); ok {
		t.Error("an empty stack took a key")
	}
}

// opener is a dialog that opens another in its place when it closes.
type opener struct {
	s    *Stack
	next Dialog
}

func (o *opener) ID() string { return "opener" }
func (o *opener) Key(tea.KeyPressMsg) (tea.Cmd, bool) {
	o.s.Push(o.next)
	return nil, true
}
func (o *opener) View(*style.Styles, int, int) Box { return Box{} }
func (o *opener) Help() []Hint                     { return nil }

// TestStackKeepsWhatADialogOpens: a dialog that opens another as it closes
// leaves that one on top; Find and Remove find and close one by name from
// anywhere.
func TestStackKeepsWhatADialogOpens(t *testing.T) {
	var s Stack
	next := &Confirm{Name: "confirm", Question: func() string { return "?" }}
	s.Push(&Confirm{Name: "below", Question: func() string { return "?" }})
	s.Push(&opener{s: &s, next: next})
	s.Key(press("x"))
	if s.Top() != Dialog(next) || len(s.dialogs) != 2 {
		t.Fatalf("top %q of %d, want the opened confirm over below", s.TopID(), len(s.dialogs))
	}
	if s.Find("below") == nil || s.Find("opener") != nil {
		t.Error("find: below is open under the confirm, the opener closed")
	}
	if !s.Remove("below") || s.Remove("below") || s.TopID() != "confirm" || s.Find("below") != nil {
		t.Errorf("remove: top %q", s.TopID())
	}
	s.Pop()
	if !s.Empty() || s.TopID() != "" || s.Top() != nil {
		t.Error("pop left a dialog")
	}
	// A question asked over another closes both as it answers.
	s.Push(&Confirm{Name: "picker", Question: func() string { return "?" }})
	s.Push(&Confirm{Name: "question", Question: func() string { return "?" }, Yes: func() tea.Cmd { s.Remove("picker"); return nil }})
	if _, ok := s.Key(press("y")); !ok || !s.Empty() {
		t.Errorf("y over the picker left %q", s.TopID())
	}
}

// TestPlaceCentresBetweenHeaderAndFooter: a box is centred in the rows
// between the header and the footer, and one taller than them keeps its
// bottom edge.
func TestPlaceCentresBetweenHeaderAndFooter(t *testing.T) {
	st := style.Plain()
	lines, x, y := Place(&st, Box{Title: "t", Body: []string{"a", "b"}, Width: 10}, 40, 12)
	if len(lines) != 4 || x != (40-14)/2 || y != 1+(10-4)/2 || !strings.HasPrefix(lines[0], "+-") {
		t.Errorf("place: %d lines at %d,%d: %q", len(lines), x, y, lines)
	}
	body := make([]string, 30)
	lines, _, y = Place(&st, Box{Body: body, Width: 10}, 40, 12)
	if len(lines) != 10 || y != 1 || lines[len(lines)-1] != "+"+strings.Repeat("-", 12)+"+" {
		t.Errorf("tall box: %d lines at row %d, last %q", len(lines), y, lines[len(lines)-1])
	}
	if lines, _, _ := Place(&st, Box{Width: 10}, 40, 4); lines != nil {
		t.Error("a box on a 4-row screen")
	}
	screen := []string{"header", "....................", "....................", "....................", "footer"}
	s := Stack{}
	s.Push(&Confirm{Name: "c", Question: func() string { return "go?" }, MaxWidth: 12})
	s.Draw(&st, screen, 20, 5)
	if screen[0] != "header" || screen[4] != "footer" || !strings.Contains(screen[2], "go?") {
		t.Errorf("drawn: %q", screen)
	}
}

// TestHintLineFits: hints stop at the width, whole.
func TestHintLineFits(t *testing.T) {
	st := style.Plain()
	hs := []Hint{{"y", "kill"}, {"n/esc", "cancel"}}
	if got := style.StripSGR(HintLine(&st, hs, 80)); got != "y kill  n/esc cancel" {
		t.Errorf("wide: %q", got)
	}
	if got := style.StripSGR(HintLine(&st, hs, 12)); got != "y kill" {
		t.Errorf("narrow: %q", got)
	}
}

// TestBinding: the full help's words, why it cannot act, the footer mark.
func TestBinding(t *testing.T) {
	b := New("actions", "K", "kill", "K").InFooter()
	if !b.Short || b.Desc() != "kill" || b.Why() != "" || b.Keys()[0] != "K" {
		t.Errorf("binding %+v", b)
	}
	b.Long, b.Disabled = "kill the server", func() string { return "no server running" }
	if b.Desc() != "kill the server" || b.Why() != "no server running" {
		t.Errorf("desc %q, why %q", b.Desc(), b.Why())
	}
}

// TestChooser: the choice, its place in the list, cut to the width; an
// empty list says so.
func TestChooser(t *testing.T) {
	st := style.Plain()
	if got := style.StripSGR(Chooser(&st, []string{"sglang", "vllm\x1b[2J"}, 1, 40, true)); got != "< vllm >  2/2" {
		t.Errorf("chooser %q", got)
	}
	if got := style.StripSGR(Chooser(&st, nil, -1, 40, false)); got != "(none configured)" {
		t.Errorf("empty %q", got)
	}
	if got := style.StripSGR(Chooser(&st, []string{"sglang-eagle3"}, 0, 12, false)); style.Width(got) > 12 {
		t.Errorf("cut %q", got)
	}
}

func TestJoinWords(t *testing.T) {
	for _, c := range [][3]string{{"", "", ""}, {"e2", "", "e2"}, {"", "started", "started"}, {"e2", "started", "e2 started"}} {
		if got := JoinWords(c[0], c[1]); got != c[2] {
			t.Errorf("JoinWords(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

func TestParen(t *testing.T) {
	for _, c := range []struct {
		parts []string
		want  string
	}{{nil, ""}, {[]string{"", ""}, ""}, {[]string{"tp 8"}, " (tp 8)"}, {[]string{"tp 8", "", "dirty"}, " (tp 8, dirty)"}} {
		if got := Paren(c.parts...); got != c.want {
			t.Errorf("Paren(%q) = %q, want %q", c.parts, got, c.want)
		}
	}
}
