// Package profile is the env profile picker (p), pushed on the cockpit's
// overlay stack: the profiles the server control offers, the one the
// next launch would use marked; enter picks one for the next launch
// (Control.SetProfile, which does no I/O), and the cockpit shows it in
// its header until a launch from here succeeds.
package profile

import (
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// ID is the picker's name on the overlay stack.
const ID = "profile"

// Control is what the picker reads and sets of the server control (the
// cockpit's ServerControl); none of it does I/O: it is called from
// Update.
type Control interface {
	// Profiles lists the env profiles.
	Profiles() []string
	// Request is the next launch's request: its Profile is the current
	// one ("" for none).
	Request() sessions.LaunchRequest
	// SetProfile chooses the env profile of the next launch.
	SetProfile(name string) error
}

// Host is what the picker needs of the cockpit; the root sets every
// field.
type Host struct {
	// Ctl lists and sets the profiles.
	Ctl Control
	// Running reports whether a server runs (the answer says L relaunches
	// it).
	Running func() bool
	// Picked takes the profile (sanitised) picked for the next launch.
	Picked func(name string)
	// Record is a tea.Cmd that records the key as the pick's cause (nil
	// when nothing is recorded).
	Record func(action string) tea.Cmd
	// Flash answers in the status line until the next key.
	Flash func(text string, tone style.Token)
}

// Picker is the profile picker: a component.Dialog. Use it by pointer
// (Open).
type Picker struct {
	h       Host
	names   []string
	current int // the profile the next launch would use; -1 when unknown
	cursor  int
}

// Open returns the picker on Control.Profiles, the cursor on the profile
// the next launch would use; nil, having said so, when no profile is
// configured. The caller pushes it.
func Open(h Host) *Picker {
	names := h.Ctl.Profiles()
	if len(names) == 0 {
		h.Flash("no env profiles configured", style.Warn)
		return nil
	}
	cur := h.Ctl.Request().Profile
	if cur == "" {
		cur = "none"
	}
	p := &Picker{h: h, names: names, current: slices.Index(names, cur)}
	p.cursor = max(p.current, 0)
	return p
}

// ID implements component.Dialog.
func (p *Picker) ID() string { return ID }

// Key implements component.Dialog: up, down, home and end move (k, j, g
// and G too), enter picks, esc (or q) leaves the profile unchanged.
func (p *Picker) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch msg.String() {
	case "esc", "ctrl+c", "q":
		p.h.Flash("profile unchanged", style.Dim)
		return nil, true
	case "up", "k":
		p.cursor = (p.cursor - 1 + len(p.names)) % len(p.names)
	case "down", "j", "tab":
		p.cursor = (p.cursor + 1) % len(p.names)
	case "home", "g":
		p.cursor = 0
	case "end", "G":
		p.cursor = len(p.names) - 1
	case "enter":
		name := p.names[p.cursor]
		if err := p.h.Ctl.SetProfile(name); err != nil {
			p.h.Flash("profile "+sanitize.String(name)+": "+style.ErrText(err), style.Crit)
			return nil, true
		}
		next := sanitize.String(name)
		p.h.Picked(next)
		hint := "L to launch"
		if p.h.Running() {
			hint = "L to relaunch"
		}
		p.h.Flash("profile "+next+" for the next launch - "+hint, style.OK)
		return p.h.Record("profile " + name), true
	}
	return nil, false
}

// View implements component.Dialog: as wide as the longest name, a
// window of the list around the cursor when it is taller than the
// screen.
func (p *Picker) View(st *style.Styles, w, h int) component.Box {
	if component.TooSmall(w, h) {
		return component.Box{} // no room for a box (component.Place draws none)
	}
	title := "env profile for the next launch"
	iw := len(title) + 4
	for _, n := range p.names {
		iw = max(iw, style.Width(sanitize.String(n))+len("> * ")+len("  (current)"))
	}
	iw = min(iw, w-4)
	return component.Box{Title: title, Frame: style.Accent, Body: p.render(st, iw, h-4), Width: iw}
}

// render is the picker's box content: a window of at most maxH lines
// around the cursor.
func (p *Picker) render(st *style.Styles, iw, maxH int) []string {
	n := len(p.names)
	rows := max(min(n, maxH), 1)
	top := style.Clamp(p.cursor-rows/2, 0, n-rows)
	var out []string
	for i := top; i < top+rows && i < n; i++ {
		mark, name := "  ", sanitize.String(p.names[i])
		if i == p.cursor {
			mark = "> "
		}
		cur := "  "
		if i == p.current {
			cur = "* "
		}
		line := style.Truncate(mark+cur+name, iw)
		switch {
		case i == p.cursor:
			line = st.Accent.Render(line)
		case i == p.current:
			line = st.Title.Render(line)
		}
		if i == p.current && style.Width(mark+cur+name)+len("  (current)") <= iw {
			line += st.Dim.Render("  (current)")
		}
		out = append(out, line)
	}
	return out
}

// Help implements component.Dialog.
func (p *Picker) Help() []component.Hint {
	return []component.Hint{{Key: "enter", Desc: "pick"}, {Key: "up/down", Desc: "move"}, {Key: "esc", Desc: "cancel"}}
}
