package gpus

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The table's layout (which columns fit a width, how wide) and drawing.

// Which columns a narrow terminal loses, first to last, until the rest
// fits whole: a value cut short misleads ("Gen5x16" cut to "Gen5x1" reads
// as an x1 link), a missing column does not. The PCIe throughput goes
// first, then the process names (the count stays), then the model name,
// then the double spacing; dropOrder goes while the throttle list keeps
// room for its text; lastResort goes after the list is squeezed to its
// minimum (it is shortened at a reason boundary, see fitList). The index
// always stays.
var (
	dropOrder  = []col{colSM, colProcs, colPower, colP, colMem}
	lastResort = []col{colPCIe, colTemp, colThrottle, colUtil}
)

const (
	nameMaxW      = 16 // longest model name shown, cells
	throttleWantW = 20 // throttle text worth dropping the name for, cells
)

// tableLayout is which columns are shown and how wide they are.
type tableLayout struct {
	width int
	show  [numCols]bool
	w     [numCols]int
	sep   int
	short bool // the procs column shows its short form (the count)
	stale bool
	gen   int // styles generation
}

// computeLayout decides columns and widths for a terminal width: a column
// is as wide as its header, its minimum and its widest cell; the rx/tx
// and procs columns are there only when the samples carry them. When a
// row would not fit with the throttle text (up to throttleWantW cells),
// the rx/tx column goes first, then the process names (procs keeps the
// count), the model name, the double spacing, then the columns in
// dropOrder; then the throttle list is squeezed to its minimum and the
// columns in lastResort go. Every column shown fits whole.
func (t *Table) computeLayout(width int, gen int) tableLayout {
	l := tableLayout{width: width, sep: 2, stale: t.stale != nil, gen: gen}
	for c := range numCols {
		l.show[c] = true
		l.w[c] = max(colMin[c], len(colHead[c]), t.maxW[c])
	}
	l.w[colName] = min(l.w[colName], nameMaxW)
	l.show[colRxTx], l.show[colProcs] = t.hasRxTx, t.hasApps
	throttleW := max(colMin[colThrottle], min(t.maxW[colThrottle], throttleWantW))
	need := func() int {
		n, cols := 0, 0
		for c := range numCols {
			if l.show[c] {
				cols++
				if c == colThrottle {
					n += throttleW
				} else {
					n += l.w[c]
				}
			}
		}
		return n + l.sep*(cols-1)
	}
	if need() > width {
		l.show[colRxTx] = false
	}
	if need() > width && l.show[colProcs] {
		l.short = true
		l.w[colProcs] = max(colMin[colProcs], len(colHead[colProcs]), t.procsSW)
	}
	if need() > width {
		l.show[colName] = false
	}
	if need() > width {
		l.sep = 1
	}
	for _, c := range dropOrder {
		if need() <= width {
			break
		}
		l.show[c] = false
	}
	if need() > width {
		throttleW = colMin[colThrottle]
	}
	for _, c := range lastResort {
		if need() <= width {
			break
		}
		l.show[c] = false
	}
	used := 0
	for c := range colThrottle {
		if l.show[c] {
			used += l.w[c] + l.sep
		}
	}
	l.w[colThrottle] = max(0, width-used)
	return l
}

// render appends the header row and up to maxRows GPU rows to out
// (Panel.Render); focused words the scroll hint for the focused table.
func (t *Table) render(out []string, st *style.Styles, width, maxRows int, focused bool) []string {
	l := t.computeLayout(width, st.Gen)
	if l != t.layout {
		t.layout = l
		for i := range t.rows {
			t.rows[i].line = ""
		}
	}
	if len(t.rows) == 0 {
		msg := "GPU  waiting for the first GPU sample"
		if t.src != "" && t.src != "?" {
			msg += " from " + samplerName(t.src)
		}
		if len(t.failures) > 0 || t.stale != nil {
			msg = "GPU  no sample yet" // the banners above say why
		}
		return append(out, st.Dim.Render(ansi.Truncate(msg, width, "")))
	}
	visible := min(len(t.rows), max(maxRows, 1))

	var b strings.Builder
	for c := range numCols {
		if !l.show[c] {
			continue
		}
		if col(c) == colThrottle {
			b.WriteString(t.throttleHead(l.w[c]))
			break
		}
		b.WriteString(style.PadRight(colHead[c], l.w[c]+l.sep))
	}
	head := ansi.Truncate(b.String(), width, "")
	if visible == len(t.rows) {
		t.visible, t.top = visible, 0
		out = append(out, st.Title.Render(head))
		return t.renderRows(out, st, visible)
	}

	// The table scrolls: say which rows show and how many abnormal ones
	// do not, right of the headers, or when that does not fit (80
	// columns), on a row of its own in place of the last GPU row.
	room := width - style.Width(head) - 2
	top := t.top // scrollNote clamps it to the rows it is given
	note, hint, noteTone := t.scrollNote(visible, focused, st)
	switch {
	case len(note)+len(hint) <= room:
		note += hint
	case len(note) <= room:
	case visible >= 2:
		// One row fewer: the last rows can be shown again (End reaches
		// them), so clamp the top the user chose to these rows.
		visible--
		t.top = top
		note, hint, noteTone = t.scrollNote(visible, focused, st)
		out = append(out, st.Title.Render(head))
		out = t.renderRows(out, st, visible)
		return append(out, noteTone.Render(style.Truncate(note+hint, width)))
	default:
		// Too narrow for the note and no room for a row of it: the
		// headers give way to a short one, so that hidden GPUs are
		// never silent ("+7 GPUs", warning when an abnormal one is
		// among them).
		note = "+" + strconv.Itoa(len(t.rows)-visible) + " GPUs"
		if len(note)+1 > width {
			note = "+" + strconv.Itoa(len(t.rows)-visible)
		}
		head = ansi.Truncate(head, max(width-len(note)-1, 0), "")
		if len(note) > width {
			note = ""
		}
	}
	if note == "" {
		out = append(out, st.Title.Render(head))
	} else {
		out = append(out, st.Title.Render(head)+style.Spaces(width-style.Width(head)-len(note))+noteTone.Render(note))
	}
	return t.renderRows(out, st, visible)
}

// scrollNote is "GPU 0-36 of 72, 1 abnormal hidden" and its key hint for
// a table that shows visible rows (it also settles t.visible and t.top).
func (t *Table) scrollNote(visible int, focused bool, st *style.Styles) (note, hint string, tn style.Tone) {
	t.visible = visible
	t.top = style.Clamp(t.top, 0, len(t.rows)-visible)
	hidden := 0
	for i := range t.rows {
		if (i < t.top || i >= t.top+visible) && (t.rows[i].abnormal || t.rows[i].spanning()) {
			hidden++
		}
	}
	note = "GPU " + strconv.Itoa(t.rows[t.top].g.Index) + "-" + strconv.Itoa(t.rows[t.top+visible-1].g.Index) +
		" of " + strconv.Itoa(len(t.rows))
	tn = st.Dim
	if hidden > 0 {
		note += ", " + strconv.Itoa(hidden) + " abnormal hidden"
		tn = st.Warn
	}
	hint = ", tab to scroll"
	if focused {
		hint = ", j/k scroll"
	}
	return note, hint, tn
}

// renderRows appends the visible GPU rows from t.top.
func (t *Table) renderRows(out []string, st *style.Styles, visible int) []string {
	for i := t.top; i < t.top+visible; i++ {
		r := &t.rows[i]
		if r.line == "" {
			r.line = t.renderRow(r, st)
		}
		out = append(out, r.line)
	}
	return out
}

// The row message of a GPU nvidia-smi reads as "[GPU is lost]" or NVML
// returns ERROR_GPU_IS_LOST for (in flightdeck or the agent), and the
// forms that fit 80 columns after the index and name.
const (
	lostLong      = "LOST  nvidia-smi reads [GPU is lost]: reboot the system to recover this GPU"
	lostShort     = "LOST  [GPU is lost]: reboot the system to recover it"
	lostLongNVML  = "LOST  GPU is lost (NVML): reboot the system to recover this GPU"
	lostShortNVML = "LOST  GPU is lost (NVML): reboot to recover it"
)

// The row message of a GPU a sample lists in Missing: through NVML, its
// handle fails (nvmlDeviceGetHandleByIndex refuses it: the GPU fell off
// the bus or its driver state is broken); through nvidia-smi, its row did
// not come. Each is followed by the bus id last read, when one was.
const (
	handleLostLong  = "LOST  handle lost: NVML gives no handle for this GPU"
	handleLostShort = "LOST  handle lost"
	missingLong     = "LOST  missing from the latest sample"
)

// missingText is the message of a row missing from the latest sample, with
// its bus id when known, in the longest form that fits w cells with room
// for the row's Xid.
func missingText(r *gpuRow, w int) string {
	forms := []string{missingLong}
	if r.handleLost {
		forms = []string{handleLostLong, handleLostShort}
	}
	w -= xidW(r)
	if r.g.BusID.Status == event.CellOK && r.g.BusID.S != "" {
		bus := " (bus " + r.g.BusID.S + ")"
		for _, f := range forms {
			if style.Width(f+bus) <= w {
				return f + bus
			}
		}
	}
	for _, f := range forms {
		if style.Width(f) <= w {
			return f
		}
	}
	return forms[len(forms)-1]
}

// lostText is the message of a row whose GPU reads lost, worded by the
// sampler of its latest sample, long when it fits w cells with room for
// the row's Xid.
func lostText(r *gpuRow, w int) string {
	long, short := lostLong, lostShort
	if nvmlMode(r.src) {
		long, short = lostLongNVML, lostShortNVML
	}
	if style.Width(long)+xidW(r) <= w {
		return long
	}
	return short
}

// throttleHead is the last column's title in w cells: "throttle", or
// when a row holds an Xid (which leads that column's text, "Xid
// 79,sw-power"), "Xid/throttle", so that an Xid does not read as a
// throttle reason ("Xid" alone when that is all that fits).
func (t *Table) throttleHead(w int) string {
	for i := range t.rows {
		if t.rows[i].xid.text != "" {
			if w < len("Xid/throttle") {
				return "Xid"
			}
			return "Xid/throttle"
		}
	}
	return colHead[colThrottle]
}

func (t *Table) renderRow(r *gpuRow, st *style.Styles) string {
	l := &t.layout
	var b strings.Builder
	b.Grow(l.width + 64)
	paint := func(c cell) string {
		tn := c.tone
		if l.stale && tn == style.Text {
			tn = style.Dim // old values, but what was abnormal stays marked
		}
		return st.Tone(tn).Render(c.text)
	}
	left := l.width
	for c := range numCols {
		if !l.show[c] || left <= 0 {
			continue
		}
		x := r.cells[c]
		if c == colProcs && l.short {
			x = r.procsS
		}
		if r.spanning() && c > colName {
			// The GPU vanished from nvidia-smi's output, NVML gives no
			// handle for it, or its cells read "[GPU is lost]": say so
			// once across the value columns rather than as LOST in every
			// cell or as its last values.
			x = cell{"", style.Crit}
			switch {
			case r.lostWhy != "":
				x.text = "LOST  " + r.lostWhy
			case r.missing:
				x.text = missingText(r, left)
			default:
				x.text = lostText(r, left)
			}
			if r.xid.text != "" {
				// What the driver said comes first: "LOST  Xid 79  ...".
				x.text = "LOST  " + r.xid.text + "  " + strings.TrimPrefix(x.text, "LOST  ")
			}
			b.WriteString(paint(cell{style.Truncate(x.text, left), x.tone}))
			break
		}
		if (r.lostWhy != "" || r.handleLost) && c == colIdx {
			x.tone = style.Crit
		}
		if col(c) == colThrottle {
			b.WriteString(paint(cell{fitList(x.text, left), x.tone}))
			break
		}
		if left <= l.w[c] {
			// The last column shown: the layout made it fit whole.
			b.WriteString(paint(cell{style.Truncate(x.text, left), x.tone}))
			break
		}
		txt := style.Truncate(x.text, l.w[c])
		b.WriteString(paint(cell{txt, x.tone}))
		pad := l.w[c] - style.Width(txt) + l.sep
		b.WriteString(style.Spaces(pad))
		left -= l.w[c] + l.sep
	}
	return strings.TrimRight(b.String(), " ")
}

// fitList shortens a comma-separated list (the throttle reasons) to at
// most w cells at an item boundary, saying how many items it leaves out:
// "hw-slow,sw-thermal,hw-thermal" at 12 cells is "hw-slow,+2", at 8 "+3".
// It returns "" when not even that fits.
func fitList(s string, w int) string {
	if style.Width(s) <= w {
		return s
	}
	items := strings.Split(s, ",")
	for k := len(items) - 1; k >= 1; k-- {
		short := strings.Join(items[:k], ",") + ",+" + strconv.Itoa(len(items)-k)
		if style.Width(short) <= w {
			return short
		}
	}
	if short := "+" + strconv.Itoa(len(items)); len(short) <= w {
		return short
	}
	return ""
}
