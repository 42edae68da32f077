package gpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/jsonappend"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// jsonKeyOrder is the order of the fixed keys in a WriteJSONL GPU record;
// other columns follow in input order under their header names.
var jsonKeyOrder = []string{
	"index", "name", "pci_bus_id", "util_gpu_pct", "util_mem_pct",
	"mem_used_mib", "mem_total_mib", "power_draw_w", "power_limit_w", "temp_c",
	"sm_clock_mhz", "mem_clock_mhz", "pstate", "pcie_gen_current",
	"pcie_width_current", "fan_speed_pct", "mig_mode",
}

// maxRowErrors is how many dropped rows a GarbledError describes one by one.
const maxRowErrors = 100

// GarbledError is returned by WriteJSONL when it dropped rows it could not
// read. Every good row was still written.
type GarbledError struct {
	Rows  []RowError // the first 100 dropped rows, in input order
	Count int        // how many rows were dropped in all
}

func (e *GarbledError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gpu csv: dropped %d garbled row", e.Count)
	if e.Count != 1 {
		b.WriteByte('s')
	}
	b.WriteString(" at line")
	if len(e.Rows) != 1 {
		b.WriteByte('s')
	}
	for i, r := range e.Rows {
		if i == 20 {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(r.Line))
	}
	if len(e.Rows) > 0 {
		b.WriteString("; first: ")
		b.WriteString(e.Rows[0].Error())
	}
	return b.String()
}

// WriteJSONL reads saved `nvidia-smi --query-gpu` output from r and writes
// JSON Lines to w (the format of `flightdeck parse gpu`):
//
//   - one object per GPU row, {"type":"gpu", "index":0, "name":…,
//     "pci_bus_id":…, "util_gpu_pct":…, "util_mem_pct":…, "mem_used_mib":…,
//     "mem_total_mib":…, "power_draw_w":…, "power_limit_w":…, "temp_c":…,
//     "sm_clock_mhz":…, "mem_clock_mhz":…, "pstate":…, "pcie_gen_current":…,
//     "pcie_width_current":…, "fan_speed_pct":…, "mig_mode":…, then every
//     other column under its header name without the unit
//     ("clocks_event_reasons.active", "temperature.memory", …)}. Values are
//     JSON numbers when valid (units stripped: MiB, W, °C, MHz, %) and
//     otherwise the literal token string ("[N/A]", "N/A", "[Not
//     Supported]", "ERR!", "" …); text columns are strings, bitmasks stay
//     hex strings. Keys of fields that were not in the input are omitted.
//     Strings and numbers are written as encoding/json writes them
//     (remote/jsonappend, without HTML escaping).
//   - one object per whole-command failure: {"type":"failure",
//     "failure_class":"gpu-lost", "pci_bus_id":"0000:01:00.0" or null,
//     "reason":… (when the message gives one), "needs_reboot":bool,
//     "nvml_library_version":… (when given), "line":N}.
//
// Input is one of:
//
//   - CSV (nvidia-smi --format=csv, driver ≥ 450) with or without header,
//     with or without units (header names may carry them, "memory.used
//     [MiB]"; values too, "81559 MiB"). A header is a line of ", "-separated
//     field names, most of them lower-case dotted identifiers like
//     "utilization.gpu", each optionally followed by " [unit]", at least one
//     a field flightdeck reads (index, name, memory.used, …); any other line
//     is a row. A header may appear anywhere and applies to the rows after
//     it; before any header, rows use fields (the query's field list, e.g.
//     from --fields), and a header in the input overrides fields. Skipped:
//     blank lines, lines starting with '#' (a fixture's "# source:" line,
//     pasted comments), a leading UTF-8 byte order mark, and pasted command
//     lines that run nvidia-smi ("$ nvidia-smi --query-gpu=… --format=csv";
//     a row whose cells contain the text, a host "gpu-nvidia-smi-01", stays a
//     row). nvidia-smi prints nothing after a whole-command failure, so text
//     after one that is not a CSV row (a pasted kernel log) is skipped rather
//     than reported.
//   - an nvidia_gpu_exporter capture (a file whose first line after its '#'
//     rule is "# nvidia_gpu_exporter GPU capture"; see captureSections): only
//     the body of its "# load :: query-gpu" section is read, as CSV, the
//     section the fixtures' MANIFEST "expect" describes. Line numbers still
//     count every line of the file.
//
// Empty input (or only blank and '#' lines) writes nothing and returns nil.
//
// Errors: input that starts with binary data (a NUL byte, gzip or UTF-16,
// or mostly invalid UTF-8 in its first KiB) is refused before anything is
// written, with an error wrapping ErrNotQueryGPU. A row with the wrong
// number of cells, an unparsable index, or no field list to read it with is
// dropped; after the whole input is written WriteJSONL returns a
// *GarbledError listing the dropped rows' line numbers (1-based, counting
// every input line). When nothing at all was recognised (no header, no
// row, no failure; README text, a help page) the *GarbledError is wrapped
// in an error that also wraps ErrNotQueryGPU and says what was expected; a
// capture without a load query-gpu section gives ErrNotQueryGPU too. Read
// and write errors are returned as they are, and stop the output.
func WriteJSONL(w io.Writer, r io.Reader, fields []string) error {
	lr := newLineReader(r)
	head, err := lr.r.Peek(sniffLen)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return err
	}
	if why := sanitize.NotText(head, len(head) == sniffLen); why != "" {
		return &notQueryGPUError{reason: why}
	}
	var capture *captureSections
	if isCapture(bytes.TrimPrefix(head, utf8BOM)) {
		capture = &captureSections{}
	}
	if bytes.HasPrefix(head, utf8BOM) {
		lr.r.Discard(len(utf8BOM)) // cannot fail: the bytes are buffered
	}

	if appsFields(fields) {
		return &notQueryGPUError{reason: "the --fields are --query-compute-apps fields (pid, process_name, used_memory: one row per process, not per GPU)"}
	}
	bw := bufio.NewWriter(w)
	c := converter{jw: jsonlWriter{w: bw}, fields: len(fields) > 0}
	if len(fields) > 0 {
		c.plan = newRowPlan(fields)
	}
	for lineNo := 1; ; lineNo++ {
		line, long, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if capture != nil && !capture.body(line) {
			continue
		}
		if err := c.line(lineNo, line, long); err != nil {
			return err
		}
	}
	if err := c.flushPending(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	switch {
	case capture != nil && !capture.found:
		return &notQueryGPUError{reason: `nvidia_gpu_exporter capture without a "# load :: query-gpu" section`}
	case c.garbled.Count == 0:
		return nil
	case c.jw.n == 0 && !c.sawHeader:
		return &notQueryGPUError{reason: c.unrecognised(), garbled: &c.garbled}
	}
	return &c.garbled
}

var utf8BOM = []byte("\xef\xbb\xbf")

// converter turns input lines into records; it holds what one line leaves
// for the next.
type converter struct {
	jw          jsonlWriter
	plan        *rowPlan // nil until a header or field list names the columns
	fields      bool     // a field list was given
	sawHeader   bool
	sawFailure  bool
	apps        bool              // a --query-compute-apps header was read: its rows are processes
	pending     *event.GPUFailure // a version mismatch, waiting for its "NVML library version" line
	pendingLine int
	garbled     GarbledError
	cells       [][]byte
}

func (c *converter) flushPending() error {
	if c.pending == nil {
		return nil
	}
	err := c.jw.failure(*c.pending, c.pendingLine)
	c.pending = nil
	return err
}

// line handles one input line (without its end of line; long when it was
// cut). Only write errors are returned.
func (c *converter) line(lineNo int, line []byte, long bool) error {
	// trailing spaces may end an empty last cell: keep them
	if v, ok := ParseNVMLVersion(line); ok && c.pending != nil {
		c.pending.NVMLVersion = v
		return c.flushPending()
	}
	if err := c.flushPending(); err != nil {
		return err
	}
	if t := bytes.TrimSpace(line); len(t) == 0 || t[0] == '#' || isCommandEcho(t) {
		return nil
	}
	if f, ok := ClassifyFailure(line); ok {
		c.sawFailure = true
		if f.Class == event.GPUFailDriverLibraryMismatch {
			c.pending, c.pendingLine = &f, lineNo
			return nil
		}
		return c.jw.failure(f, lineNo)
	}
	shape := shapeRow
	if !long {
		var names []string
		if names, shape = headerShape(line); shape == shapeHeader {
			c.plan, c.sawHeader, c.apps = newRowPlan(names), true, false
			return nil
		}
		if shape == shapeAppsHead {
			c.plan, c.apps = nil, true
		}
	}
	var rowErr *RowError
	switch {
	case long:
		rowErr = rowError(line, fmt.Sprintf("line longer than %d bytes", maxLineLen))
	case shape == shapeAppsHead:
		rowErr = rowError(line, "a --query-compute-apps header (pid, process_name, used_memory: one row per process), not --query-gpu output (one row per GPU)")
	case c.apps && c.plan == nil:
		rowErr = rowError(line, "a --query-compute-apps row (a process, not a GPU)")
	case shape == shapeUnknownHead:
		rowErr = rowError(line, "field names, but none that flightdeck reads (index, name, memory.used, …), so not a header")
	case c.plan == nil:
		rowErr = rowError(line, "headerless row and no field list to read it with")
	default:
		c.cells = splitCells(c.cells, line)
		rowErr = c.plan.check(c.cells, line)
	}
	if rowErr == nil {
		return c.jw.row(c.plan, c.cells)
	}
	if c.sawFailure {
		return nil // text pasted after a failure, not nvidia-smi output
	}
	rowErr.Line = lineNo
	if len(c.garbled.Rows) < maxRowErrors {
		c.garbled.Rows = append(c.garbled.Rows, *rowErr)
	}
	c.garbled.Count++
	return nil
}

// unrecognised says why input of which no line was recognised is not
// --query-gpu output, and what was expected.
func (c *converter) unrecognised() string {
	var b strings.Builder
	switch {
	case c.apps:
		b.WriteString("this is nvidia-smi --query-compute-apps output (one row per process, not per GPU)")
	case c.fields:
		fmt.Fprintf(&b, "no line is a header or a row of the %d given fields", len(c.plan.cols))
	default:
		b.WriteString("no header line and no field list (--fields) to read headerless rows with")
	}
	fmt.Fprintf(&b, "; expected nvidia-smi --query-gpu=index,name,… --format=csv output, a whole-command failure message or an nvidia_gpu_exporter capture; %d line", c.garbled.Count)
	if c.garbled.Count != 1 {
		b.WriteByte('s')
	}
	first := c.garbled.Rows[0]
	fmt.Fprintf(&b, " not understood, the first (line %d): %q", first.Line, first.Text)
	return b.String()
}

// headerFields recognises a --query-gpu CSV header: every cell is a name
// (letters, digits, '.', '_', starting with a letter), optionally followed
// by a unit in brackets ("utilization.gpu [%]"); most of the names look
// like field names (lower-case dotted identifiers, or dotted names with a
// few capitals such as "pci.baseClass", see fieldLike); and at least one is
// a field flightdeck knows. A data row of plain words ("Enabled, Disabled")
// or a line of prose ("compatible.") is therefore not a header. It returns
// the names without units.
func headerFields(line []byte) ([]string, bool) {
	names, shape := headerShape(line)
	return names, shape == shapeHeader
}

type lineShape uint8

const (
	shapeRow         lineShape = iota
	shapeHeader                // a header (see headerFields)
	shapeUnknownHead           // header-shaped, but names no field flightdeck knows
	shapeAppsHead              // a --query-compute-apps header: one row per process
)

// headerShape classifies line for headerFields. shapeUnknownHead is a line
// of field-like names none of which flightdeck reads ("timestamp", a line
// of a field list): neither a header nor a plausible --query-gpu row, whose
// values are numbers, tokens and capitalised words.
func headerShape(line []byte) ([]string, lineShape) {
	var names []string
	known, fieldish := false, 0
	rest := line
	for more := true; more; {
		var c []byte
		c, rest, more = nextCell(rest)
		name, ok := headerCellName(c)
		if !ok {
			return nil, shapeRow
		}
		if _, ok := specByName[string(name)]; ok {
			known = true
		}
		if fieldLike(name) {
			fieldish++
		}
		names = append(names, string(name))
	}
	switch {
	case 2*fieldish <= len(names):
		return nil, shapeRow
	case appsFields(names):
		return nil, shapeAppsHead
	case !known:
		return nil, shapeUnknownHead
	}
	return names, shapeHeader
}

// appsFields reports field names of --query-compute-apps (a pid with a
// process name or its memory): one row per process, not per GPU.
func appsFields(names []string) bool {
	return slices.Contains(names, "pid") && (slices.Contains(names, "process_name") || slices.Contains(names, "used_memory") || slices.Contains(names, "used_gpu_memory"))
}

// fieldLike reports a name shaped like a --query-gpu field: words of
// [a-z0-9_] joined by single dots, starting with a letter
// ("clocks_event_reasons.active", "index"), or a dotted name with capitals
// ("pci.baseClass", "encoder.stats.sessionCount"). A capitalised single word
// ("Enabled", a value) is not.
func fieldLike(name []byte) bool {
	if len(name) == 0 || name[0] == '.' || name[len(name)-1] == '.' {
		return false
	}
	lower, dots := name[0] >= 'a' && name[0] <= 'z', 0
	for i, b := range name {
		switch {
		case b >= 'a' && b <= 'z', b >= '0' && b <= '9', b == '_':
		case b >= 'A' && b <= 'Z':
			lower = false
		case b == '.' && name[i-1] != '.':
			dots++
		default:
			return false
		}
	}
	return lower || dots > 0
}

// rowPlan maps the columns of one header (or field list) to JSON.
type rowPlan struct {
	cols  []column
	keys  []string // JSON key of each column
	order []int    // columns in output order
}

func newRowPlan(fields []string) *rowPlan {
	p := &rowPlan{cols: makeColumns(fields)}
	p.keys = make([]string, len(p.cols))
	used := make(map[string]bool, len(p.cols))
	rank := make([]int, len(p.cols))
	for i, c := range p.cols {
		key := cleanText([]byte(c.name), maxTextLen)
		rank[i] = len(jsonKeyOrder) + i
		if c.spec >= 0 {
			if k := fieldSpecs[c.spec].key; k != "" && !used[k] {
				key = k
				rank[i] = slices.Index(jsonKeyOrder, k)
			}
		}
		if used[key] || key == "type" {
			key = key + "#" + strconv.Itoa(i+1) // a repeated header name
		}
		used[key] = true
		p.keys[i] = key
		p.order = append(p.order, i)
	}
	slices.SortStableFunc(p.order, func(a, b int) int { return rank[a] - rank[b] })
	return p
}

// check reports why a row cannot be written, or nil.
func (p *rowPlan) check(cells [][]byte, line []byte) *RowError {
	if len(cells) != len(p.cols) {
		return rowError(line, fmt.Sprintf("%d cells, want %d", len(cells), len(p.cols)))
	}
	for i, c := range p.cols {
		if c.kind == kindIndex {
			if _, ok := parseIndex(cells[i]); !ok {
				return rowError(line, "index "+strconv.Quote(cleanText(cells[i], 40))+" is not a number")
			}
		}
	}
	return nil
}

// jsonlWriter writes records; it keeps its scratch buffer between them.
type jsonlWriter struct {
	w   *bufio.Writer
	buf []byte
	n   int // records written
}

func (j *jsonlWriter) row(p *rowPlan, cells [][]byte) error {
	b := append(j.buf[:0], `{"type":"gpu"`...)
	for _, i := range p.order {
		c, col := cells[i], p.cols[i]
		b = append(b, ',')
		b = jsonappend.String(b, p.keys[i])
		b = append(b, ':')
		switch col.kind {
		case kindIndex:
			n, _ := parseIndex(c)
			b = strconv.AppendInt(b, int64(n), 10)
		case kindNumber:
			if r := reading(c, col.unit); r.Status == event.CellOK {
				b = jsonappend.Float(b, r.Value)
			} else {
				b = jsonappend.String(b, r.Raw)
			}
		case kindText, kindMask:
			if st, raw := token(c); st != event.CellOK {
				b = jsonappend.String(b, raw)
			} else {
				b = jsonappend.String(b, cleanText(c, maxTextLen))
			}
		default:
			if v, ok := genericNumber(col.name, c); ok {
				b = jsonappend.Float(b, v)
			} else {
				b = jsonappend.String(b, cleanText(c, maxTextLen))
			}
		}
	}
	b = append(b, "}\n"...)
	j.buf = b
	j.n++
	_, err := j.w.Write(b)
	return err
}

func (j *jsonlWriter) failure(f event.GPUFailure, line int) error {
	b := append(j.buf[:0], `{"type":"failure","failure_class":`...)
	b = jsonappend.String(b, string(f.Class))
	b = append(b, `,"pci_bus_id":`...)
	if f.BusID == "" {
		b = append(b, "null"...)
	} else {
		b = jsonappend.String(b, f.BusID)
	}
	if f.Reason != "" {
		b = append(b, `,"reason":`...)
		b = jsonappend.String(b, f.Reason)
	}
	b = append(b, `,"needs_reboot":`...)
	b = strconv.AppendBool(b, f.NeedsReboot)
	if f.NVMLVersion != "" {
		b = append(b, `,"nvml_library_version":`...)
		b = jsonappend.String(b, f.NVMLVersion)
	}
	b = append(b, `,"line":`...)
	b = strconv.AppendInt(b, int64(line), 10)
	b = append(b, "}\n"...)
	j.buf = b
	j.n++
	_, err := j.w.Write(b)
	return err
}

// genericNumber reads a cell of a column flightdeck does not map: a plain
// decimal, optionally with a unit ("0 us", "48", "12.5 W"), is a number.
// Values with leading zeros ("0000000000000", a serial), hex ("0x0000"),
// dotted versions ("595.71.05") and any column whose name says it is a
// version ("driver_version", "inforom.oem": "2.10" must not become 2.1) stay
// text.
func genericNumber(name string, c []byte) (float64, bool) {
	if strings.Contains(name, "version") || strings.HasPrefix(name, "inforom.") {
		return 0, false
	}
	num, unit := splitUnit(c)
	for _, u := range unit {
		if !(u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u == '%' || u == '/') {
			return 0, false
		}
	}
	digits := bytes.TrimPrefix(num, []byte("-"))
	if len(digits) > 1 && digits[0] == '0' && digits[1] != '.' {
		return 0, false
	}
	return parseDecimal(num)
}

// headerCellName reads one cell of a CSV header: a field name (letters,
// digits, '.', '_', starting with a letter), optionally followed by a unit
// in brackets ("memory.used [MiB]"). It returns the name, or false when the
// cell cannot be a header cell.
func headerCellName(c []byte) ([]byte, bool) {
	name := c
	if i := bytes.Index(c, []byte(" [")); i > 0 && c[len(c)-1] == ']' {
		name = c[:i]
		if unit := c[i+2 : len(c)-1]; len(unit) == 0 || bytes.ContainsAny(unit, "[]") {
			return nil, false
		}
	}
	if len(name) == 0 || !(name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		return nil, false
	}
	for _, b := range name {
		if !isNameByte(b) {
			return nil, false
		}
	}
	return name, true
}
