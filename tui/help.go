package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/gpus"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The help screen (?): every binding, how GPUs are sampled, what the GPU
// table's NVML columns say; it scrolls when taller than the screen.

// fullHelp renders every binding, grouped, in columns when they fit; keys
// that cannot act now are dimmed.
func (m *Model) fullHelp(lines []string, w, h int) []string {
	st := &m.styles
	var groups []component.HelpGroup
	names := helpGroups
	mode := m.opts.Mode.Keys // a read-only cockpit's mode's, first
	if len(mode) > 0 {
		names = append([]string{mode[0].Group}, helpGroups...)
	}
	all := m.all()
	for gi, g := range names {
		list := all
		if len(mode) > 0 && gi == 0 {
			list = mode
		}
		hg := component.HelpGroup{Name: g}
		for _, b := range list {
			if b.Group == g {
				hg.Bindings = append(hg.Bindings, b)
			}
		}
		groups = append(groups, hg)
	}
	out := []string{st.Title.Render(style.Truncate("keys", w)) + st.Dim.Render(style.Truncate("  (esc closes; j/k scroll; dim keys cannot act now: press one for why)", w-4))}
	// The header cuts the sampler's reason short; here it is whole.
	out = append(out, m.gpus.SamplingHelp(st, w)...)
	out = append(out, component.Cheatsheet(st, groups, w)...)
	// Below the keys, what the GPU table's NVML columns say.
	out = append(out, gpus.ColumnsHelp(st, w)...)
	for i := range out {
		out[i] = style.TruncateStyled(out[i], w)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	// Taller than the room: a window from m.helpTop, its last row saying
	// what is left below and how to scroll.
	out, m.helpTop, m.helpMax = component.Window(st, out, m.helpTop, w, h)
	return append(lines, out...)
}

// helpKey handles a key while the help screen is open: it scrolls (the
// scrolling keys: j/k, arrows, pgup/pgdn, home, G/end) or closes (esc,
// ?, q; ctrl+c still quits). ok is false for any other key, which acts
// as it does without the help.
func (m *Model) helpKey(msg tea.KeyPressMsg) (ok bool) {
	k := &m.keys
	page := max(m.height-4, 1)
	switch {
	case msg.String() == "ctrl+c":
		return false
	case msg.String() == "esc", key.Matches(msg, k.Help.Binding), key.Matches(msg, k.Quit.Binding):
		m.showHelp, m.helpTop = false, 0
	case key.Matches(msg, k.Down.Binding):
		m.helpTop = min(m.helpTop+1, m.helpMax)
	case key.Matches(msg, k.Up.Binding):
		m.helpTop = max(m.helpTop-1, 0)
	case key.Matches(msg, k.PageDown.Binding):
		m.helpTop = min(m.helpTop+page, m.helpMax)
	case key.Matches(msg, k.PageUp.Binding):
		m.helpTop = max(m.helpTop-page, 0)
	case key.Matches(msg, k.Top.Binding):
		m.helpTop = 0
	case key.Matches(msg, k.Bottom.Binding):
		m.helpTop = m.helpMax
	default:
		return false
	}
	return true
}
