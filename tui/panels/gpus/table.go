package gpus

import (
	"sort"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// col is a column of the table, in the order drawn.
type col int

const (
	colIdx col = iota
	colName
	colUtil
	colMem
	colPower
	colTemp
	colSM
	colP
	colPCIe
	colRxTx  // PCIe rx/tx throughput, MiB/s: only when sampled (NVML with PCIe on)
	colProcs // processes: only when the latest sample lists them (NVML)
	colThrottle
	numCols
)

var colHead = [numCols]string{"GPU", "name", "util", "mem GiB", "power W", "temp", "SM MHz", "P", "PCIe", "rx/tx MiB/s", "procs", "throttle"}

// colMin are the narrowest widths a column gets (cells), so the table does
// not jitter as values change from "9%" to "100%".
var colMin = [numCols]int{3, 4, 4, 11, 7, 4, 6, 3, 7, 7, 5, 8}

// gpuRow is one GPU's latest sample, its formatted cells and its rendered
// line (cached until the data or the layout changes).
type gpuRow struct {
	g        event.GPU
	procs    procSummary // from the latest sample holding this GPU
	cells    [numCols]cell
	procsS   cell // the procs column's short form (the count)
	abnormal bool
	missing  bool // absent from the latest sample
	// handleLost: the latest sample, through NVML (here or in the agent),
	// lists the GPU in Missing: NVML gives no handle for it. The row keeps
	// the index, name and bus id last read, if any.
	handleLost bool
	lostWhy    string // a failure naming this GPU's bus id, e.g. "gpu-lost: GPU is lost"
	xid        cell   // "Xid 79 +1" when the GPU reported Xids (see xidMark), else empty
	src        string // the sampler (event.GPUSourceMode) when its latest sample came, "" unknown
	line       string // rendered; "" when it must be redrawn
}

// spanning reports a row drawn as one message across the value columns
// (missing, lost, or named by a failure) instead of its cells.
func (r *gpuRow) spanning() bool { return r.missing || r.g.Lost || r.lostWhy != "" }

// gpuFailure is one distinct nvidia-smi failure, deduplicated by class and
// bus id (the same line repeats every interval).
type gpuFailure struct {
	f     event.GPUFailure
	bus   string // normalised bus id, "" when the message names none
	src   string // the sampler that reported it last (event.GPUSourceMode), "" unknown
	at    time.Time
	count int
}

// Table is the GPU table: one row per GPU by nvidia-smi index from the
// latest samples, the sampler's failures and stale reports (the banners
// above it, Banners), the Xid marks on the rows, and which rows show when
// they do not all fit (it scrolls). Its zero value is an empty table.
type Table struct {
	rows     []gpuRow // sorted by index
	byIdx    map[int]int
	failures []gpuFailure
	xids     []xidMark // one per GPU with an Xid to show, in order of the first; bounded (MaxXidIndex, MaxXidBusMarks)
	xidDue   time.Time // when the next non-critical Xid leaves its row; zero when none shows
	now      time.Time // data time (SetNow), for the Xid marks
	stale    *event.GPUStale
	staleAt  time.Time
	staleSrc string // the sampler when the stale report came
	// src is how GPUs are sampled now (event.GPUSourceMode, sanitised): the
	// latest event.GPUSource's mode (Panel.SetSource), "" before any (a
	// journal recorded before them, which nvidia-smi sampled). The table's
	// own words follow it (waiting for a first sample); what a sample,
	// failure or stale report says is worded by the sampler that sent it.
	src     string
	last    time.Time // time of the latest sample
	maxW    [numCols]int
	procsSW int  // widest short procs cell
	hasRxTx bool // a shown row has PCIe throughput sampled (not Absent)
	hasApps bool // the latest sample lists processes (Apps not nil)
	layout  tableLayout
	top     int // first visible row when the table scrolls
	visible int // rows shown by the last render
	samples int
}

// cleanText sanitises a remote string cell (name, bus id).
func cleanText(t event.Text) event.Text {
	t.S = sanitize.String(t.S)
	return t
}

// ApplySample applies a sample reported at time at (the sample's own
// time when it has one): its GPUs' rows are filled (sanitised), a GPU it
// no longer lists reads missing, a GPU it lists in Missing keeps its row
// or gets one (its handle fails: the host has it, nothing could be read),
// and a failure is over once the GPU it names reports again (a whole-host
// one at the next sample that lists GPUs).
func (t *Table) ApplySample(s event.GPUSample, at time.Time) {
	if t.byIdx == nil {
		t.byIdx = map[int]int{}
	}
	if !s.At.IsZero() {
		at = s.At
	}
	t.samples++
	t.last = at
	t.stale = nil
	t.hasApps = s.Apps != nil
	present := make(map[int]bool, len(s.GPUs))
	for i := range s.GPUs {
		g := s.GPUs[i]
		g.Name, g.BusID, g.UUID = cleanText(g.Name), cleanText(g.BusID), cleanText(g.UUID)
		g.PState, g.Persistence = cleanText(g.PState), cleanText(g.Persistence)
		present[g.Index] = true
		r := &t.rows[t.rowFor(g.Index)]
		ps := summarizeProcs(s.Apps, &g)
		if r.g != g || r.procs != ps || r.missing || r.src != t.src {
			r.g, r.procs, r.src = g, ps, t.src
			r.missing, r.handleLost = false, false
			t.fill(r)
		}
	}
	// Through NVML, Missing is the GPUs whose handle NVML refuses; through
	// nvidia-smi, those whose row did not come (a row read before is kept).
	listed := make(map[int]bool, len(s.Missing))
	for _, idx := range s.Missing {
		if present[idx] || listed[idx] {
			continue
		}
		listed[idx] = true
		if _, ok := t.byIdx[idx]; !ok {
			r := &t.rows[t.rowFor(idx)]
			r.g, r.src = event.AbsentGPU(idx), t.src
			t.fill(r)
		}
	}
	handle := nvmlMode(t.src)
	for i := range t.rows {
		r := &t.rows[i]
		if present[r.g.Index] {
			continue
		}
		if hl := handle && listed[r.g.Index]; !r.missing || r.handleLost != hl {
			r.missing, r.handleLost = true, hl
			r.abnormal = true
			r.line = ""
		}
	}
	// A failure is over once the GPU it names reports again, or, for a
	// whole-host failure, once any sample arrives.
	kept := t.failures[:0]
	for _, f := range t.failures {
		if len(s.GPUs) > 0 && (f.bus == "" || t.healthyBus(f.bus)) {
			continue
		}
		kept = append(kept, f)
	}
	t.failures = kept
	t.matchFailures()
	t.measure()
}

// rowFor is the position of GPU index's row, a new one (missing, so that
// the caller fills it) when the table has none.
func (t *Table) rowFor(index int) int {
	if pos, ok := t.byIdx[index]; ok {
		return pos
	}
	t.rows = append(t.rows, gpuRow{missing: true})
	t.rows[len(t.rows)-1].g.Index = index
	sort.Slice(t.rows, func(a, b int) bool { return t.rows[a].g.Index < t.rows[b].g.Index })
	for j := range t.rows {
		t.byIdx[t.rows[j].g.Index] = j
	}
	return t.byIdx[index]
}

// fill formats row r's cells from its sample and its Xids: the Xid leads
// the throttle column ("Xid 79,sw-power", so a squeezed list keeps it) and
// colours the index, which every layout shows.
func (t *Table) fill(r *gpuRow) {
	r.cells = gpuCells(&r.g)
	if r.g.Name.Status == event.CellAbsent && r.missing {
		r.cells[colName] = cell{"?", style.Dim} // never read: its handle failed from the start
	}
	r.cells[colProcs], r.procsS = procsCells(r.procs, &r.g)
	r.xid = t.xidCell(r)
	if r.xid.text != "" {
		th := &r.cells[colThrottle]
		if th.text == "-" {
			*th = r.xid
		} else {
			*th = cell{r.xid.text + "," + th.text, worse(th.tone, r.xid.tone)}
		}
		r.cells[colIdx].tone = worse(r.cells[colIdx].tone, r.xid.tone)
	}
	r.abnormal = abnormal(&r.cells) || r.missing
	r.line = ""
}

func (t *Table) healthyBus(bus string) bool {
	for i := range t.rows {
		r := &t.rows[i]
		if !r.missing && gpu.NormBusID(r.g.BusID.S) == bus && !r.g.ShowsLost() {
			return true
		}
	}
	return false
}

// ApplyFailure records a sampler failure reported at at, sanitised: one
// banner per class and bus id (counted as it repeats), and the row whose
// bus id it names reads lost.
func (t *Table) ApplyFailure(f event.GPUFailure, at time.Time) {
	f.Line = sanitize.String(f.Line)
	f.Reason = sanitize.String(f.Reason)
	f.BusID = sanitize.String(f.BusID)
	f.Class = event.GPUFailureClass(sanitize.String(string(f.Class)))
	bus := gpu.NormBusID(f.BusID)
	for i := range t.failures {
		if t.failures[i].f.Class == f.Class && t.failures[i].bus == bus {
			t.failures[i].f, t.failures[i].at, t.failures[i].src = f, at, t.src
			t.failures[i].count++
			t.matchFailures()
			return
		}
	}
	t.failures = append(t.failures, gpuFailure{f: f, bus: bus, src: t.src, at: at, count: 1})
	t.matchFailures()
}

// matchFailures marks the rows whose bus id a failure names, and
// re-measures when that changes which rows span.
func (t *Table) matchFailures() {
	changed := false
	for i := range t.rows {
		r := &t.rows[i]
		why := ""
		for _, f := range t.failures {
			if f.bus != "" && f.bus == gpu.NormBusID(r.g.BusID.S) {
				why = string(f.f.Class)
				if f.f.Reason != "" {
					why += ": " + f.f.Reason
				}
				break
			}
		}
		if why != r.lostWhy {
			r.lostWhy = why
			r.line = ""
			changed = true
		}
	}
	if changed {
		t.measure()
	}
}

// ApplyStale records that the samples stopped (reported at at): a banner
// says so and the rows are dimmed, until the next sample.
func (t *Table) ApplyStale(s event.GPUStale, at time.Time) {
	s.Reason = sanitize.String(s.Reason)
	t.stale = &s
	t.staleAt = at
	t.staleSrc = t.src
}

// measure records the widest cell of every column. Spanning rows do not
// count past the name: their cells are not drawn, and LOST/LOST would
// otherwise widen the power column of every other row.
func (t *Table) measure() {
	var m [numCols]int
	sw, rxtx := 0, false
	for i := range t.rows {
		r := &t.rows[i]
		last := numCols
		if r.spanning() {
			last = colName + 1
		} else {
			sw = max(sw, len(r.procsS.text))
			rxtx = rxtx || r.g.PCIeRxKBs.Status != event.CellAbsent || r.g.PCIeTxKBs.Status != event.CellAbsent
		}
		for c := range last {
			w := len(r.cells[c].text)
			if c == colName || c == colProcs {
				w = style.Width(r.cells[c].text)
			}
			m[c] = max(m[c], w)
		}
	}
	m[colName] = min(m[colName], nameMaxW)
	t.maxW, t.procsSW, t.hasRxTx = m, sw, rxtx
}

// Len is how many GPU rows the table holds.
func (t *Table) Len() int { return len(t.rows) }

// GPU is the latest sample of GPU index (sanitised); false when no sample
// listed it.
func (t *Table) GPU(index int) (event.GPU, bool) {
	pos, ok := t.byIdx[index]
	if !ok {
		return event.GPU{}, false
	}
	return t.rows[pos].g, true
}

// Scrolls reports whether the last render left rows out: only then has
// tab (and j/k, pgup/pgdn) anything to move.
func (t *Table) Scrolls() bool { return t.visible < len(t.rows) }

// Page is how many rows pgup/pgdn move: the rows shown less one.
func (t *Table) Page() int { return max(t.visible-1, 1) }

// Move moves the rows shown by delta (negative is up), within the table.
func (t *Table) Move(delta int) {
	t.top = style.Clamp(t.top+delta, 0, max(0, len(t.rows)-max(t.visible, 1)))
}

// Home shows the first rows.
func (t *Table) Home() { t.top = 0 }

// End shows the last rows.
func (t *Table) End() { t.Move(len(t.rows)) }
