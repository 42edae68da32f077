package gpus

import (
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/panels/logtail"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Xids (event.Xid): on their GPU's row (xidMark) and as a line of the log
// (xidLine, grouped by xidLog).

const (
	// XidAppHold is how long, in data time (event times and SetNow),
	// a GPU's row keeps a non-critical Xid after the latest one. A
	// server launch clears them sooner.
	XidAppHold = 10 * time.Minute
	// MaxXidIndex and MaxXidBusMarks bound the marks, so that an agent
	// naming ever new GPUs cannot grow the table: an Xid names its GPU by
	// an index below MaxXidIndex (NVML indices run from 0 to the GPU
	// count, far below it), or, when it names no index, by one of at most
	// MaxXidBusMarks bus ids. Past them, an Xid is only a log line. The
	// bounds depend on the Xids alone, never on which GPUs samples showed
	// so far (a replay that seeks has not seen them all).
	MaxXidIndex    = 128
	MaxXidBusMarks = 64
	// xidGroupWindow: identical Xids (same GPU, same code) within it of
	// the first of a group share one log line with a count.
	xidGroupWindow = time.Second
	// MaxXidGroups bounds the open groups; past it, an Xid that would
	// open one gets a line of its own.
	MaxXidGroups = 256
)

// xidMark is the Xids one GPU reported. A critical one (gpu.XidMeaning)
// stays on its row for the rest of the session: NVML reports an Xid when
// it happens, never that it is over, and a GPU that reads healthy again
// after a double-bit ECC error or a pending row remap still needs a reset
// before its results can be trusted. A non-critical one (an application
// fault, or Xid 45, which force-killing a server logs on every GPU) is
// about the process that ran: it clears at the next server launch, or
// XidAppHold after the GPU's latest non-critical Xid. The row shows the
// latest critical code if there is one, else the latest non-critical one,
// and how many more Xids it holds.
type xidMark struct {
	index int    // NVML index, -1 when the event named none
	bus   string // normalised bus id, "" when the event named none

	crit  uint64 // the latest critical code
	critN int    // critical Xids this session

	app     uint64    // the latest non-critical code
	appN    int       // non-critical Xids since the last clear
	appLast time.Time // data time of the latest non-critical Xid
}

// appShown reports whether the non-critical Xids still show at now.
func (x *xidMark) appShown(now time.Time) bool {
	return x.appN > 0 && now.Sub(x.appLast) < XidAppHold
}

// text is the row's cell at now: "Xid 79", or "Xid 79 +2" after two more
// Xids of any code; empty when nothing shows.
func (x *xidMark) text(now time.Time) cell {
	n := x.critN
	if x.appShown(now) {
		n += x.appN
	}
	if n == 0 {
		return cell{}
	}
	code, tn := x.app, style.Warn
	if x.critN > 0 {
		code, tn = x.crit, style.Crit
	}
	t := "Xid " + strconv.FormatUint(code, 10)
	if n > 1 {
		// "+2": two more Xids of any code (the log has each); "x2" in the
		// log means the same code twice.
		t += " +" + strconv.Itoa(n-1)
	}
	return cell{t, tn}
}

// names reports whether the mark is about row r's GPU: by index when the
// event gave one, else by bus id.
func (x *xidMark) names(r *gpuRow) bool {
	if x.index >= 0 {
		return r.g.Index == x.index
	}
	return x.bus != "" && gpu.NormBusID(r.g.BusID.S) == x.bus
}

// applyXid records an Xid reported at data time at on its GPU's row (see
// xidMark).
func (t *Table) applyXid(x event.Xid, at time.Time) {
	_, crit := gpu.XidMeaning(x.Code)
	idx, bus := x.Index, gpu.NormBusID(sanitize.String(x.BusID))
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
		if idx >= MaxXidIndex || idx < 0 && t.busMarks() >= MaxXidBusMarks {
			return
		}
		t.xids = append(t.xids, xidMark{index: idx, bus: bus})
		m = &t.xids[len(t.xids)-1]
	}
	if crit {
		m.crit = x.Code
		m.critN++
	} else {
		// Only event times decide the count, so that a replay that seeks
		// (journal.CatchUp) counts as playing through did.
		if m.appN > 0 && at.Sub(m.appLast) >= XidAppHold {
			m.appN = 0
		}
		m.app = x.Code
		m.appN++
		if at.After(m.appLast) || m.appN == 1 {
			m.appLast = at
		}
	}
	t.refillXids()
}

// busMarks counts the marks that name their GPU by bus id alone.
func (t *Table) busMarks() int {
	n := 0
	for i := range t.xids {
		if t.xids[i].index < 0 {
			n++
		}
	}
	return n
}

// ClearAppXids forgets the non-critical Xids of every GPU: a server was
// launched, and they were about the processes before it.
func (t *Table) ClearAppXids() {
	if len(t.xids) == 0 {
		return
	}
	kept := t.xids[:0]
	for _, m := range t.xids {
		m.appN = 0
		if m.critN > 0 {
			kept = append(kept, m)
		}
	}
	clear(t.xids[len(kept):])
	t.xids = kept
	t.refillXids()
}

// SetNow advances the table's data time; a non-critical Xid whose hold
// ends by now leaves its row.
func (t *Table) SetNow(now time.Time) {
	if now.After(t.now) {
		t.now = now
	}
	if !t.xidDue.IsZero() && !t.now.Before(t.xidDue) {
		t.refillXids()
	}
}

// refillXids redraws the rows after a change of the marks (or of what
// they show at t.now), and notes when the next non-critical one expires.
func (t *Table) refillXids() {
	t.xidDue = time.Time{}
	for i := range t.xids {
		if m := &t.xids[i]; m.appShown(t.now) {
			if due := m.appLast.Add(XidAppHold); t.xidDue.IsZero() || due.Before(t.xidDue) {
				t.xidDue = due
			}
		}
	}
	for i := range t.rows {
		r := &t.rows[i]
		if c := t.xidCell(r); c != r.xid {
			t.fill(r)
		}
	}
	t.measure()
}

// xidCell is what row r's GPU shows of its Xids at t.now.
func (t *Table) xidCell(r *gpuRow) cell {
	for i := range t.xids {
		if t.xids[i].names(r) {
			return t.xids[i].text(t.now)
		}
	}
	return cell{}
}

// xidW is the width the Xid adds to a spanning row's message.
func xidW(r *gpuRow) int {
	if r.xid.text == "" {
		return 0
	}
	return len(r.xid.text) + 2
}

// xidLine is the log panel's line for n identical Xids (n ≥ 1), the
// first reported at data time at: "[2026-11-30 08:34:47] flightdeck: GPU
// 3 (00000000:83:00.0) Xid 79: GPU has fallen off the bus", or with n =
// 37 "... Xid 13 x37: graphics engine exception ...", from the events'
// own fields and times only (a replay that seeks sees the same line), and
// whether the code is critical.
func xidLine(x event.Xid, n int, at time.Time) (string, bool) {
	meaning, crit := gpu.XidMeaning(x.Code)
	var b strings.Builder
	b.Grow(128)
	writeStamp(&b, at)
	b.WriteString(xidWho(x))
	b.WriteString("Xid " + strconv.FormatUint(x.Code, 10))
	if n > 1 {
		b.WriteString(" x" + strconv.Itoa(n))
	}
	b.WriteString(": " + meaning)
	return b.String(), crit
}

// xidWho is the line's head naming the GPU: "flightdeck: GPU 3
// (00000000:83:00.0) ". Two Xids with the same head and code are the
// same to the log (see xidLog).
func xidWho(x event.Xid) string {
	x.BusID = sanitize.String(x.BusID)
	if x.Index < 0 && x.BusID == "" {
		return "flightdeck: a GPU NVML did not name: "
	}
	return "flightdeck: " + x.GPUName() + " "
}

// xidLog groups identical Xids (same GPU head, same code) reported within
// xidGroupWindow of the group's first into one log line with a count:
// Xid 13, 31 and 43 can come hundreds a second. Whether an Xid joins a
// group depends only on the Xid events, in order, and their times (never
// on the log lines between them), so a replay that seeks (journal.CatchUp
// keeps every Xid) groups them as playing through did.
type xidLog struct {
	groups map[xidKey]*xidGroup
}

type xidKey struct {
	who  string
	code uint64
}

type xidGroup struct {
	first time.Time // data time of the group's first Xid
	seq   int64     // its log line
	n     int
}

// add writes Xid x, reported at data time at, to log: a new line, or the
// count of its group's line. A group's line that has left the ring takes
// the count with it (a line is only gone after a whole ring of later
// lines).
func (l *xidLog) add(log *logtail.Tail, x event.Xid, at time.Time) {
	key := xidKey{who: xidWho(x), code: x.Code}
	if g, ok := l.groups[key]; ok && at.Sub(g.first) < xidGroupWindow {
		g.n++
		text, _ := xidLine(x, g.n, g.first)
		log.SetOwn(g.seq, text)
		return
	}
	text, crit := xidLine(x, 1, at)
	kind := logtail.LineOwnWarn
	if crit {
		kind = logtail.LineOwnCrit
	}
	seq := log.AddOwn(text, kind)
	if l.groups == nil {
		l.groups = map[xidKey]*xidGroup{}
	}
	if len(l.groups) >= MaxXidGroups {
		for k, g := range l.groups {
			if at.Sub(g.first) >= xidGroupWindow {
				delete(l.groups, k)
			}
		}
	}
	if _, ok := l.groups[key]; ok || len(l.groups) < MaxXidGroups {
		l.groups[key] = &xidGroup{first: at, seq: seq, n: 1}
	}
}

// writeStamp writes the time prefix of flightdeck's own log lines to b,
// as SGLang and vLLM begin theirs: "[2026-11-30 08:34:47] ", the data
// time in its own location (live events carry the local clock, and a
// journal's are read back in local time, so a replay shows what was seen
// live); nothing for the zero time.
func writeStamp(b *strings.Builder, at time.Time) {
	if at.IsZero() {
		return
	}
	var buf [32]byte
	b.Write(at.AppendFormat(buf[:0], "[2006-01-02 15:04:05] "))
}
