package tui

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/panels/gpus"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The help screen (?): every binding, how GPUs are sampled, what the GPU
// table's NVML columns say; it scrolls when taller than the screen.

// fullHelp renders every binding, grouped, in columns when they fit; keys
// that cannot act now are dimmed.
func (m *Model) fullHelp(lines []string, w, h int) []string {
	st := &m.styles
	type entry struct{ key, desc, why string }
	var groups [][]entry
	names := helpGroups
	mode := m.opts.Mode.Keys // a read-only cockpit's mode's, first
	if len(mode) > 0 {
		names = append([]string{mode[0].Group}, helpGroups...)
	}
	for gi, g := range names {
		var es []entry
		list := m.all()
		if len(mode) > 0 && gi == 0 {
			list = mode
		}
		for _, b := range list {
			if b.Group != g {
				continue
			}
			e := entry{key: b.Help().Key, desc: b.Help().Desc}
			if b.Long != "" {
				e.desc = b.Long
			}
			e.why = b.Why()
			es = append(es, e)
		}
		groups = append(groups, es)
	}
	out := []string{st.Title.Render(style.Truncate("keys", w)) + st.Dim.Render(style.Truncate("  (esc closes; j/k scroll; dim keys cannot act now: press one for why)", w-4))}
	// The header cuts the sampler's reason short; here it is whole.
	out = append(out, m.gpus.SamplingHelp(st, w)...)
	// Each column: group title then "key  desc" lines.
	type column struct {
		lines []string // styled
		width int
	}
	var cols []column
	for gi, es := range groups {
		kw := 0
		for _, e := range es {
			kw = max(kw, style.Width(e.key))
		}
		c := column{lines: []string{st.Accent.Render(names[gi])}, width: len(names[gi])}
		for _, e := range es {
			plain := style.PadRight(e.key, kw) + "  " + e.desc
			c.width = max(c.width, style.Width(plain))
			if e.why != "" {
				c.lines = append(c.lines, st.Dim.Render(plain))
			} else {
				c.lines = append(c.lines, st.Key.Render(style.PadRight(e.key, kw))+"  "+e.desc)
			}
		}
		cols = append(cols, c)
	}
	// Lay columns side by side while they fit, else start a new band.
	var band []column
	flush := func() {
		rows := 0
		for _, c := range band {
			rows = max(rows, len(c.lines))
		}
		for r := range rows {
			var b strings.Builder
			for i, c := range band {
				cellTxt := ""
				if r < len(c.lines) {
					cellTxt = c.lines[r]
				}
				b.WriteString(cellTxt)
				if i < len(band)-1 {
					vis := 0
					if r < len(c.lines) {
						vis = style.Width(style.StripSGR(c.lines[r]))
					}
					b.WriteString(style.Spaces(c.width - vis + 4))
				}
			}
			out = append(out, strings.TrimRight(b.String(), " "))
		}
		out = append(out, "")
		band = band[:0]
	}
	bw := 0
	for _, c := range cols {
		if len(band) > 0 && bw+c.width > w {
			flush()
			bw = 0
		}
		band = append(band, c)
		bw += c.width + 4
	}
	if len(band) > 0 {
		flush()
	}
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
	m.helpMax = 0
	if len(out) > h && h >= 2 {
		m.helpMax = len(out) - (h - 1)
		top := style.Clamp(m.helpTop, 0, m.helpMax)
		m.helpTop = top
		hint := "-- " + strconv.Itoa(top+1) + "-" + strconv.Itoa(top+h-1) + " of " + strconv.Itoa(len(out)) + " lines"
		if top < m.helpMax {
			hint += ", more below: j or pgdn"
		} else {
			hint += ", k or pgup scrolls back"
		}
		hint += ", esc closes --"
		out = append(out[top:top+h-1:top+h-1], st.Accent.Render(style.Truncate(hint, w)))
	}
	if len(out) > h {
		out = out[:h]
	}
	for len(out) < h {
		out = append(out, "")
	}
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
