package gpu

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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
//   - one object per whole-command failure: {"type":"failure",
//     "failure_class":"gpu-lost", "pci_bus_id":"0000:01:00.0" or null,
//     "reason":… (when the message gives one), "needs_reboot":bool,
//     "nvml_library_version":… (when given), "line":N}.
//
// Input: CSV with or without header, with or without units (header names
// may carry them, "memory.used [MiB]"; values too, "81559 MiB"). A header
// line may appear anywhere and applies to the rows after it; before any
// header, rows use fields (the query's field list, e.g. from --fields), and
// a header in the input overrides fields. Skipped: blank lines, lines
// starting with '#' (a fixture's "# source:" line, pasted comments), and
// pasted command lines (any line containing "nvidia-smi", e.g.
// "$ nvidia-smi --query-gpu=… --format=csv"). nvidia-smi prints nothing
// after a whole-command failure, so text after one that is not a CSV row
// (a pasted kernel log) is skipped rather than reported.
//
// Errors: a row with the wrong number of cells, an unparsable index, or no
// field list to read it with is dropped; after the whole input is written
// WriteJSONL returns a *GarbledError listing the dropped rows' line numbers
// (1-based, counting every input line). Read and write errors are returned
// as they are, and stop the output.
func WriteJSONL(w io.Writer, r io.Reader, fields []string) error {
	bw := bufio.NewWriter(w)
	jw := jsonlWriter{w: bw}
	var plan *rowPlan
	if len(fields) > 0 {
		plan = newRowPlan(fields)
	}
	var (
		garbled     GarbledError
		pending     *Failure // a version mismatch, waiting for its "NVML library version" line
		pendingLine int
		sawFailure  bool
		cells       [][]byte
	)
	flushPending := func() error {
		if pending == nil {
			return nil
		}
		err := jw.failure(*pending, pendingLine)
		pending = nil
		return err
	}
	lr := newLineReader(r)
	for lineNo := 1; ; lineNo++ {
		raw, long, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		line := raw // trailing spaces may end an empty last cell: keep them
		if v, ok := ParseNVMLVersion(line); ok && pending != nil {
			pending.NVMLVersion = v
			if err := flushPending(); err != nil {
				return err
			}
			continue
		}
		if err := flushPending(); err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 || bytes.TrimSpace(line)[0] == '#' || isCommandEcho(line) {
			continue
		}
		if f, ok := ClassifyFailure(line); ok {
			sawFailure = true
			if f.Class == FailDriverLibraryMismatch {
				pending, pendingLine = &f, lineNo
				continue
			}
			if err := jw.failure(f, lineNo); err != nil {
				return err
			}
			continue
		}
		if names, ok := headerFields(line); ok {
			plan = newRowPlan(names)
			continue
		}
		var rowErr *RowError
		switch {
		case long:
			rowErr = rowError(line, fmt.Sprintf("line longer than %d bytes", maxLineLen))
		case plan == nil:
			rowErr = rowError(line, "headerless row and no field list to read it with")
		default:
			cells = splitCells(cells, line)
			rowErr = plan.check(cells, line)
		}
		if rowErr != nil {
			if sawFailure {
				continue // text pasted after a failure, not nvidia-smi output
			}
			rowErr.Line = lineNo
			if len(garbled.Rows) < maxRowErrors {
				garbled.Rows = append(garbled.Rows, *rowErr)
			}
			garbled.Count++
			continue
		}
		if err := jw.row(plan, cells); err != nil {
			return err
		}
	}
	if err := flushPending(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if garbled.Count > 0 {
		return &garbled
	}
	return nil
}

// isCommandEcho reports a pasted shell command line such as
// "❯ nvidia-smi --loop=1 --query-gpu=… --format=csv,noheader,nounits".
// nvidia-smi's own output never contains the lower-case program name.
func isCommandEcho(line []byte) bool {
	return bytes.Contains(line, []byte("nvidia-smi"))
}

// headerFields recognises a CSV header: every cell is a field name
// (letters, digits, '.', '_'), optionally followed by a unit in brackets
// ("utilization.gpu [%]"), and at least one cell is a field flightdeck
// knows, contains a '.', or has a unit, so that a data row of plain words
// ("Enabled, Disabled") is not taken for a header. It returns the names
// without units.
func headerFields(line []byte) ([]string, bool) {
	var names []string
	convincing := false
	rest := line
	for more := true; more; {
		var c []byte
		c, rest, more = nextCell(rest)
		name, unit := c, []byte(nil)
		if i := bytes.Index(c, []byte(" [")); i > 0 && c[len(c)-1] == ']' {
			name, unit = c[:i], c[i+2:len(c)-1]
			if len(unit) == 0 || bytes.ContainsAny(unit, "[]") {
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
		n := string(name)
		if _, known := specByName[n]; known || unit != nil || strings.Contains(n, ".") {
			convincing = true
		}
		names = append(names, n)
	}
	return names, convincing
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
}

func (j *jsonlWriter) row(p *rowPlan, cells [][]byte) error {
	b := append(j.buf[:0], `{"type":"gpu"`...)
	for _, i := range p.order {
		c, col := cells[i], p.cols[i]
		b = append(b, ',')
		b = appendJSONString(b, p.keys[i])
		b = append(b, ':')
		switch col.kind {
		case kindIndex:
			n, _ := parseIndex(c)
			b = strconv.AppendInt(b, int64(n), 10)
		case kindNumber:
			if r := reading(c, col.unit); r.Status == OK {
				b = strconv.AppendFloat(b, r.Value, 'f', -1, 64)
			} else {
				b = appendJSONString(b, r.Raw)
			}
		case kindText, kindMask:
			if st, raw := token(c); st != OK {
				b = appendJSONString(b, raw)
			} else {
				b = appendJSONString(b, cleanText(c, maxTextLen))
			}
		default:
			if v, ok := genericNumber(col.name, c); ok {
				b = strconv.AppendFloat(b, v, 'f', -1, 64)
			} else {
				b = appendJSONString(b, cleanText(c, maxTextLen))
			}
		}
	}
	b = append(b, "}\n"...)
	j.buf = b
	_, err := j.w.Write(b)
	return err
}

func (j *jsonlWriter) failure(f Failure, line int) error {
	b := append(j.buf[:0], `{"type":"failure","failure_class":`...)
	b = appendJSONString(b, string(f.Class))
	b = append(b, `,"pci_bus_id":`...)
	if f.BusID == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, f.BusID)
	}
	if f.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, f.Reason)
	}
	b = append(b, `,"needs_reboot":`...)
	b = strconv.AppendBool(b, f.NeedsReboot)
	if f.NVMLVersion != "" {
		b = append(b, `,"nvml_library_version":`...)
		b = appendJSONString(b, f.NVMLVersion)
	}
	b = append(b, `,"line":`...)
	b = strconv.AppendInt(b, int64(line), 10)
	b = append(b, "}\n"...)
	j.buf = b
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

// appendJSONString appends s as a JSON string. Control characters are
// escaped; s is valid UTF-8 (it comes from cleanText or a constant).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
