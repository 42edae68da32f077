package gpu

import (
	"fmt"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"strconv"
)

// Parser turns one line of `nvidia-smi --query-gpu=<fields>
// --format=csv,noheader,nounits` (driver ≥ 450) into a GPU. Cells may also
// carry their units ("53 %", "123.00 W"), as without "nounits". Build it
// with the field list the query used. A Parser is not safe for concurrent
// use: it keeps a small table of the strings it has seen (GPU names, bus
// ids) so that steady-state parsing does not allocate.
type Parser struct {
	fields   []string
	cols     []column
	template event.GPU // every field Absent
	intern   map[string]string
	// recent holds, per column and GPU index (mod recentPerCol), the last
	// string seen there: a GPU's name and bus id repeat every tick, so
	// one comparison usually finds them without a map lookup.
	recent []string
}

const recentPerCol = 64

// column is what one CSV column holds.
type column struct {
	name string // header name without unit
	spec int    // index into fieldSpecs, -1 for an unmapped column
	slot slot
	kind cellKind
	unit string
}

// maxInterned bounds the Parser's string table; it is emptied when full
// (a host has a few dozen distinct strings, so this only guards against a
// stream of ever-changing garbage).
const maxInterned = 1024

// NewParser returns a Parser for rows whose columns are fields, in order.
// Names may carry a unit suffix as in a header ("memory.used [MiB]"); names
// flightdeck does not map are skipped. It returns an error when fields lack
// "index", or name one GPU field twice.
func NewParser(fields []string) (*Parser, error) {
	p := &Parser{
		fields: append([]string(nil), fields...),
		cols:   makeColumns(fields),
		intern: make(map[string]string, 64),
	}
	p.recent = make([]string, len(p.cols)*recentPerCol)
	seen := make(map[slot]bool, len(p.cols))
	hasIndex := false
	for _, c := range p.cols {
		if c.slot == slotNone {
			continue
		}
		if seen[c.slot] {
			return nil, fmt.Errorf("gpu: field %q is queried twice (or under two names)", c.name)
		}
		seen[c.slot] = true
		hasIndex = hasIndex || c.slot == slotIndex
	}
	if !hasIndex {
		return nil, fmt.Errorf("gpu: field list %v lacks \"index\"", fields)
	}
	p.template = event.AbsentGPU(-1) // PCIe rx/tx are NVML only: never in a --query-gpu row
	return p, nil
}

func makeColumns(fields []string) []column {
	cols := make([]column, len(fields))
	for i, f := range fields {
		name := headerName(f)
		c := column{name: name, spec: -1}
		if si, ok := specByName[name]; ok {
			s := &fieldSpecs[si]
			c.spec, c.slot, c.kind, c.unit = si, s.slot, s.kind, s.unit
		}
		cols[i] = c
	}
	return cols
}

// setSlot stores a parsed cell in g's field that s names; only the
// argument that matches the slot's kind is used.
func setSlot(g *event.GPU, s slot, r event.Reading, t event.Text, m event.ClockEvents) {
	switch s {
	case slotName:
		g.Name = t
	case slotBusID:
		g.BusID = t
	case slotUUID:
		g.UUID = t
	case slotUtilGPU:
		g.UtilGPUPct = r
	case slotUtilMem:
		g.UtilMemPct = r
	case slotMemUsed:
		g.MemUsedMiB = r
	case slotMemTotal:
		g.MemTotalMiB = r
	case slotPowerDraw:
		g.PowerDrawW = r
	case slotPowerLimit:
		g.PowerLimitW = r
	case slotTemp:
		g.TempC = r
	case slotSMClock:
		g.SMClockMHz = r
	case slotMemClock:
		g.MemClockMHz = r
	case slotSMClockMax:
		g.SMClockMax = r
	case slotFan:
		g.FanPct = r
	case slotPState:
		g.PState = t
	case slotPCIeGenCur:
		g.PCIeGenCurrent = r
	case slotPCIeGenMax:
		g.PCIeGenMax = r
	case slotPCIeWidthCur:
		g.PCIeWidthCurrent = r
	case slotPCIeWidthMax:
		g.PCIeWidthMax = r
	case slotClockEvents:
		g.ClockEvents = m
	case slotPersistence:
		g.Persistence = t
	case slotECC:
		g.ECCMode = t
	case slotMIG:
		g.MIGMode = t
	}
}

// Fields returns the field list the Parser was built with.
func (p *Parser) Fields() []string { return append([]string(nil), p.fields...) }

// RowError reports a CSV row that could not be read as a GPU: wrong number
// of cells, or an index that is not a number. The caller drops the row.
type RowError struct {
	Line int    // 1-based input line number; 0 when not known (Parser.Parse)
	Text string // the row, sanitised and cut to 200 bytes
	Msg  string // what is wrong, e.g. "11 cells, want 24"
}

func (e *RowError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("gpu csv line %d: %s: %q", e.Line, e.Msg, e.Text)
	}
	return fmt.Sprintf("gpu csv row: %s: %q", e.Msg, e.Text)
}

func rowError(line []byte, msg string) *RowError {
	return &RowError{Text: cleanText(line, 200), Msg: msg}
}

// Parse parses one row. See ParseInto.
func (p *Parser) Parse(line []byte) (event.GPU, error) {
	var g event.GPU
	err := p.ParseInto(&g, line)
	return g, err
}

// ParseInto parses one row into *g. Numbers become Readings with Status OK;
// tokens ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]",
// "[GPU is lost]", "ERR!", "", "[Requested functionality has been
// deprecated]", other bracketed text) keep their Status and literal Raw; a
// non-number where a number belongs is Invalid with the cell as Raw. Fields
// not in the query are Absent. g.Lost is set when any cell reads
// "[GPU is lost]". On error (*RowError: wrong cell count or unparsable
// index) *g is left unchanged. Steady-state parsing does not allocate.
func (p *Parser) ParseInto(g *event.GPU, line []byte) error {
	line = trimEOL(line)
	out := p.template
	rest := line
	n := 0
	for more := true; more; n++ {
		var c []byte
		c, rest, more = nextCell(rest)
		if n >= len(p.cols) {
			n += countRest(rest, more)
			return rowError(line, strconv.Itoa(n+1)+" cells, want "+strconv.Itoa(len(p.cols)))
		}
		col := &p.cols[n]
		switch col.kind {
		case kindIndex:
			idx, ok := parseIndex(c)
			if !ok {
				return rowError(line, "index "+strconv.Quote(cleanText(c, 40))+" is not a number")
			}
			out.Index = idx
		case kindNumber:
			r := reading(c, col.unit)
			out.Lost = out.Lost || r.Status == event.CellLost
			setSlot(&out, col.slot, r, event.Text{}, event.ClockEvents{})
		case kindText:
			t := p.text(c, n, out.Index)
			out.Lost = out.Lost || t.Status == event.CellLost
			setSlot(&out, col.slot, event.Reading{}, t, event.ClockEvents{})
		case kindMask:
			m := mask(c)
			out.Lost = out.Lost || m.Status == event.CellLost
			out.ClockEvents = m
		default:
			if string(c) == tokLost {
				out.Lost = true
			}
		}
	}
	if n != len(p.cols) {
		return rowError(line, strconv.Itoa(n)+" cells, want "+strconv.Itoa(len(p.cols)))
	}
	*g = out
	return nil
}

// countRest counts the cells left after a row ran past its columns.
func countRest(rest []byte, more bool) int {
	n := 0
	for more {
		_, rest, more = nextCell(rest)
		n++
	}
	return n
}

// text parses a string cell of column col in the row of GPU idx (-1 when
// not known yet), reusing a previously seen string for the same bytes.
func (p *Parser) text(c []byte, col, idx int) event.Text {
	slot := -1
	if idx >= 0 {
		slot = col*recentPerCol + idx%recentPerCol
		if s := p.recent[slot]; s != "" && s == string(c) {
			return event.Text{S: s}
		}
	}
	if st, raw := token(c); st != event.CellOK {
		return event.Text{S: raw, Status: st}
	}
	if s, ok := p.intern[string(c)]; ok {
		if slot >= 0 {
			p.recent[slot] = s
		}
		return event.Text{S: s}
	}
	if !safeText(c) || len(c) > maxTextLen {
		return event.Text{S: cleanText(c, maxTextLen), Status: event.CellInvalid}
	}
	if len(p.intern) >= maxInterned {
		clear(p.intern)
	}
	s := string(c)
	p.intern[s] = s
	if slot >= 0 {
		p.recent[slot] = s
	}
	return event.Text{S: s}
}
