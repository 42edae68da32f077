package tui

import (
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// profilePicker is the p overlay: the env profiles, the current one
// marked, enter picks one for the next launch.
type profilePicker struct {
	names   []string
	current int // the profile the next launch would use; -1 when unknown
	cursor  int
}

// openPicker opens the picker on Control.Profiles, the cursor on the
// profile the next launch would use (Control.Request's).
func (m *Model) openPicker() {
	names := m.ctl.Profiles()
	if len(names) == 0 {
		m.flash("no env profiles configured", style.Warn)
		return
	}
	cur := m.ctl.Request().Profile
	if cur == "" {
		cur = "none"
	}
	p := &profilePicker{names: names, current: slices.Index(names, cur)}
	p.cursor = max(p.current, 0)
	m.picker, m.modal = p, modalProfile
}

// pickerKey handles a key while the picker is open.
func (m *Model) pickerKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	p := m.picker
	switch msg.String() {
	case "esc", "ctrl+c", "q":
		m.modal, m.picker = modalNone, nil
		m.flash("profile unchanged", style.Dim)
	case "up", "k":
		p.cursor = (p.cursor - 1 + len(p.names)) % len(p.names)
	case "down", "j", "tab":
		p.cursor = (p.cursor + 1) % len(p.names)
	case "home", "g":
		p.cursor = 0
	case "end", "G":
		p.cursor = len(p.names) - 1
	case "enter":
		m.modal, m.picker = modalNone, nil
		name := p.names[p.cursor]
		if err := m.ctl.SetProfile(name); err != nil {
			m.flash("profile "+sanitize.String(name)+": "+errText(err), style.Crit)
			return m, nil
		}
		m.srv.next = sanitize.String(name)
		next := "L to launch"
		if m.srv.running() {
			next = "L to relaunch"
		}
		m.flash("profile "+m.srv.next+" for the next launch - "+next, style.OK)
		return m, m.recordCmd("profile " + name)
	}
	return m, nil
}

// renderPicker is the picker's box content: a window of at most maxH
// lines around the cursor.
func (m *Model) renderPicker(iw, maxH int) []string {
	st := &m.styles
	p := m.picker
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
