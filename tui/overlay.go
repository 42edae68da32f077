package tui

import (
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Modal overlays are ASCII boxes ("+- title --+", "| ... |") spliced over
// the screen between the header and the footer, so the rest of the screen
// keeps updating around them. Box drawing characters are ambiguous-width
// (two cells in some CJK terminal setups), so the frame is plain ASCII.

// modalBox renders the open overlay for a w x h screen: its lines and
// where they go. The body area is the rows between header and footer.
func (m *Model) modalBox(w, h int) (lines []string, x, y int) {
	st := &m.styles
	avail := h - 2 // header and footer stay
	if avail < 3 || w < 8 {
		return nil, 0, 0
	}
	var iw int
	var body []string
	var title string
	frame := st.Accent
	switch m.modal {
	case modalLaunch:
		title = "launch"
		if m.srv.running() {
			title = "relaunch " + m.srv.who()
		}
		iw = min(w-4, 116)
		body = m.renderLaunch(iw, avail-2)
	case modalProfile:
		title = "env profile for the next launch"
		iw = len(title) + 4
		for _, n := range m.picker.names {
			iw = max(iw, style.Width(sanitize.String(n))+len("> * ")+len("  (current)"))
		}
		iw = min(iw, w-4)
		body = m.renderPicker(iw, avail-2)
	default:
		return nil, 0, 0
	}
	if iw < 1 {
		return nil, 0, 0
	}
	lines = component.Frame(st, frame, title, body, iw)
	if len(lines) > avail {
		lines = append(lines[:avail-1:avail-1], lines[len(lines)-1])
	}
	x = (w - (iw + 4)) / 2
	y = 1 + (avail-len(lines))/2
	return lines, max(x, 0), y
}

// modalHelp is the footer while an overlay has the keys.
func (m *Model) modalHelp() [][2]string {
	switch m.modal {
	case modalLaunch:
		if m.form.confirming {
			verb := "launch"
			if m.srv.running() {
				verb = "relaunch"
			}
			return [][2]string{{"y", verb}, {"n/esc", "back to the form"}}
		}
		return [][2]string{{"enter", "launch"}, {"tab/up/down", "field"}, {"left/right", "choose"}, {"esc", "cancel"}}
	case modalProfile:
		return [][2]string{{"enter", "pick"}, {"up/down", "move"}, {"esc", "cancel"}}
	}
	return nil
}
