package component

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Dialog is a part drawn in a box over the screen that takes the keys while
// it is open (on top of the Stack): a question, a form, a picker. The rest
// of the screen keeps updating around it.
type Dialog interface {
	// ID names the dialog ("kill", "take-over", "launch"): which one is
	// open, for the root and for tests.
	ID() string
	// Key handles a key press while the dialog is on top; close says it is
	// done (the Stack then drops it). The cmd runs in the program.
	Key(msg tea.KeyPressMsg) (cmd tea.Cmd, close bool)
	// View is the dialog's box for a screen of w x h cells, of which the
	// rows between the header and the footer are its room.
	View(st *style.Styles, w, h int) Box
	// Help is the footer's key hints while the dialog is open.
	Help() []Hint
}

// Paster is a Dialog with text fields: it takes pasted text too.
type Paster interface {
	Paste(msg tea.PasteMsg) tea.Cmd
}

// Box is what a Dialog draws: a title in the top edge, the frame's token,
// and its body, lines at most Width cells wide (styled).
type Box struct {
	Title string
	Frame style.Token
	Body  []string
	Width int
}

// Hint is one footer key hint: the key as shown and what it does.
type Hint struct{ Key, Desc string }

// Stack is the overlay stack: the dialogs open over the screen, oldest
// first; the top one takes the keys and is drawn.
type Stack struct{ dialogs []Dialog }

// Push opens d on top.
func (s *Stack) Push(d Dialog) { s.dialogs = append(s.dialogs, d) }

// Pop closes the top dialog, if any.
func (s *Stack) Pop() {
	if n := len(s.dialogs); n > 0 {
		s.dialogs[n-1] = nil
		s.dialogs = s.dialogs[:n-1]
	}
}

// Top is the dialog on top, nil when none is open.
func (s *Stack) Top() Dialog {
	if n := len(s.dialogs); n > 0 {
		return s.dialogs[n-1]
	}
	return nil
}

// TopID is the top dialog's ID, "" when none is open.
func (s *Stack) TopID() string {
	if d := s.Top(); d != nil {
		return d.ID()
	}
	return ""
}

// Remove closes the dialog named id wherever it is on the stack; it
// reports whether one was open.
func (s *Stack) Remove(id string) bool {
	for i, d := range s.dialogs {
		if d.ID() == id {
			s.dialogs = append(s.dialogs[:i], s.dialogs[i+1:]...)
			return true
		}
	}
	return false
}

// Find is the open dialog named id, wherever it is on the stack (the
// newest of that name); nil when none is.
func (s *Stack) Find(id string) Dialog {
	for i := len(s.dialogs) - 1; i >= 0; i-- {
		if s.dialogs[i].ID() == id {
			return s.dialogs[i]
		}
	}
	return nil
}

// Empty reports whether no dialog is open.
func (s *Stack) Empty() bool { return len(s.dialogs) == 0 }

// Key gives msg to the top dialog, closing it when it says so; handled is
// false when no dialog is open. The dialog is dropped before its cmd is
// returned, so a dialog it opens in its place (Push from its Key) stays,
// and one it closes (Remove from its Key: the dialog it was opened over)
// is gone.
func (s *Stack) Key(msg tea.KeyPressMsg) (cmd tea.Cmd, handled bool) {
	d := s.Top()
	if d == nil {
		return nil, false
	}
	cmd, done := d.Key(msg)
	if done {
		// Drop d itself, wherever it is now: it may have opened another
		// dialog above it, or closed one below.
		for i := len(s.dialogs) - 1; i >= 0; i-- {
			if s.dialogs[i] == d {
				s.dialogs = append(s.dialogs[:i], s.dialogs[i+1:]...)
				break
			}
		}
	}
	return cmd, true
}

// Paste gives msg to the top dialog when it takes pasted text; handled is
// false when none is open.
func (s *Stack) Paste(msg tea.PasteMsg) (cmd tea.Cmd, handled bool) {
	d := s.Top()
	if d == nil {
		return nil, false
	}
	if p, ok := d.(Paster); ok {
		return p.Paste(msg), true
	}
	return nil, true
}

// Draw splices the top dialog's box over lines (a w x h screen: the
// header row and the footer row stay visible), centred in the rows
// between them; a box taller than that room loses its last body rows.
func (s *Stack) Draw(st *style.Styles, lines []string, w, h int) {
	d := s.Top()
	if d == nil {
		return
	}
	b, x, y := Place(st, d.View(st, w, h), w, h)
	if len(b) > 0 {
		Splice(lines, b, x, y)
	}
}

// TooSmall reports a w x h screen with no room for a box: fewer than 8
// columns or 5 rows (Place draws none there).
func TooSmall(w, h int) bool { return w < 8 || h < 5 }

// BodyRows is the most body lines of a box on an h-row screen: the rows
// between the header and the footer, less the box's frame.
func BodyRows(h int) int { return h - 4 }

// Place frames b for a w x h screen and says where it goes: its lines,
// cut to the rows between the header and the footer (the last row, its
// bottom edge, kept), and the column and row of its top-left corner. nil
// when the screen is too small for a box.
func Place(st *style.Styles, b Box, w, h int) (lines []string, x, y int) {
	avail := h - 2
	if TooSmall(w, h) || b.Width < 1 {
		return nil, 0, 0
	}
	lines = Frame(st, st.Tone(b.Frame), b.Title, b.Body, b.Width)
	if len(lines) > avail {
		lines = append(lines[:avail-1:avail-1], lines[len(lines)-1])
	}
	return lines, max((w-(b.Width+4))/2, 0), 1 + (avail-len(lines))/2
}

// HintLine is a footer of hints: each key drawn as a key, its words dim,
// two spaces apart, as many as fit in width cells.
func HintLine(st *style.Styles, hints []Hint, width int) string {
	var b strings.Builder
	n := 0
	for _, h := range hints {
		pw := style.Width(h.Key) + 1 + style.Width(h.Desc)
		if n > 0 {
			pw += 2
		}
		if n+pw > width {
			break
		}
		if n > 0 {
			b.WriteString("  ")
		}
		b.WriteString(st.Key.Render(h.Key) + " " + st.Dim.Render(h.Desc))
		n += pw
	}
	return b.String()
}
