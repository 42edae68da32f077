package component

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Confirm is the y/N question a dangerous binding asks before it acts: y
// runs Yes, any other key runs No (when set) and closes it.
type Confirm struct {
	// Name is the dialog's ID ("kill", "take-over").
	Name string
	// Title is in the box's top edge; Frame its token (Crit for a kill).
	Title string
	Frame style.Token
	// Question is what is asked, read each time the box is drawn (it may
	// name what changed meanwhile), "  y/N" after it; MaxWidth bounds the
	// box's inner width (64 when 0).
	Question func() string
	MaxWidth int
	// YesHelp is what y does, for the footer ("kill").
	YesHelp string
	// Yes runs on y; No on any other key. Both run inside Update: they may
	// change the model and return the command that does the work.
	Yes func() tea.Cmd
	No  func() tea.Cmd
}

// ID implements Dialog.
func (c *Confirm) ID() string { return c.Name }

// Key implements Dialog: y confirms, anything else cancels.
func (c *Confirm) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	if msg.String() == "y" {
		if c.Yes == nil {
			return nil, true
		}
		return c.Yes(), true
	}
	if c.No == nil {
		return nil, true
	}
	return c.No(), true
}

// View implements Dialog.
func (c *Confirm) View(st *style.Styles, w, _ int) Box {
	mw := c.MaxWidth
	if mw == 0 {
		mw = 64
	}
	iw := min(w-4, mw)
	return Box{Title: c.Title, Frame: c.Frame, Body: YesNo(st, c.Question(), iw), Width: iw}
}

// Help implements Dialog.
func (c *Confirm) Help() []Hint {
	return []Hint{{"y", c.YesHelp}, {"n/esc", "cancel"}}
}

// YesNo is a y/N question wrapped to w cells, the y/N drawn as a key.
func YesNo(st *style.Styles, question string, w int) []string {
	q := style.Wrap(question+"  y/N", w)
	last := len(q) - 1
	q[last] = strings.TrimSuffix(q[last], "y/N") + st.Key.Render("y/N")
	return q
}
