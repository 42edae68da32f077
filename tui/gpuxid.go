package tui

import (
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
)

// Xids (gpu.Xid): on their GPU's row (xidMark) and as a line of the log
// (xidLine).

// xidMark is the Xids one GPU reported this session. They stay on its
// row for the rest of the session: NVML reports an Xid when it happens,
// never that it is over, and a GPU that reads healthy again after a
// double-bit ECC error or a pending row remap still needs a reset before
// its results can be trusted. The row shows the latest critical code if
// there is one, else the latest, and how many Xids there were in all.
type xidMark struct {
	index int    // NVML index, -1 when the event named none
	bus   string // normalised bus id, "" when the event named none
	code  uint64 // the code shown
	crit  bool   // code is critical (gpu.XidMeaning)
	count int
}

// text is the row's cell: "Xid 79", or "Xid 79 x3" after three Xids.
func (x *xidMark) text() cell {
	t := "Xid " + strconv.FormatUint(x.code, 10)
	if x.count > 1 {
		t += " x" + strconv.Itoa(x.count)
	}
	if x.crit {
		return cell{t, toneCrit}
	}
	return cell{t, toneWarn}
}

// names reports whether the mark is about row r's GPU: by index when the
// event gave one, else by bus id.
func (x *xidMark) names(r *gpuRow) bool {
	if x.index >= 0 {
		return r.g.Index == x.index
	}
	return x.bus != "" && gpu.NormBusID(r.g.BusID.S) == x.bus
}

// applyXid records an Xid on its GPU's row (see xidMark).
func (t *gpuTable) applyXid(x gpu.Xid) {
	_, crit := gpu.XidMeaning(x.Code)
	idx, bus := x.Index, gpu.NormBusID(sanitizeString(x.BusID))
	if idx < 0 {
		idx = -1
	}
	var m *xidMark
	for i := range t.xids {
		if k := &t.xids[i]; k.index == idx && (idx >= 0 || k.bus == bus) {
			m = k
			break
		}
	}
	if m == nil {
		if idx < 0 && bus == "" {
			return // no GPU named: the log line is all there is to show
		}
		t.xids = append(t.xids, xidMark{index: idx, bus: bus})
		m = &t.xids[len(t.xids)-1]
	}
	m.count++
	if crit || !m.crit {
		m.code, m.crit = x.Code, crit
	}
	for i := range t.rows {
		if m.names(&t.rows[i]) {
			t.fill(&t.rows[i])
		}
	}
	t.measure()
}

// xidW is the width the Xid adds to a spanning row's message.
func xidW(r *gpuRow) int {
	if r.xid.text == "" {
		return 0
	}
	return len(r.xid.text) + 2
}

// xidLine is the log panel's line for an Xid: "flightdeck: GPU 3
// (00000000:83:00.0) Xid 79: GPU has fallen off the bus", from the
// event's own fields only (a replay that seeks sees the same line), and
// whether the code is critical.
func xidLine(x gpu.Xid) (string, bool) {
	meaning, crit := gpu.XidMeaning(x.Code)
	bus := sanitizeString(x.BusID)
	var b strings.Builder
	b.WriteString("flightdeck: ")
	switch {
	case x.Index >= 0 && bus != "":
		b.WriteString("GPU " + strconv.Itoa(x.Index) + " (" + bus + ") ")
	case x.Index >= 0:
		b.WriteString("GPU " + strconv.Itoa(x.Index) + " ")
	case bus != "":
		b.WriteString("GPU " + bus + " ")
	default:
		b.WriteString("a GPU NVML did not name: ")
	}
	b.WriteString("Xid " + strconv.FormatUint(x.Code, 10) + ": " + meaning)
	return b.String(), crit
}
