package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Per-process GPU memory: nvidia-smi --query-compute-apps (driver ≥ 450).
// After an inference server is killed, the cockpit polls it until none of
// the server's processes is left and the memory is back, and on timeout
// names the survivors.

// appCol names the ComputeApp field a compute-apps column fills.
type appCol uint8

const (
	appSkip appCol = iota // a field App does not keep: timestamp, gpu_name, gpu_serial
	appPID
	appName
	appUsed
	appBus
	appUUID
)

// appFieldNames holds every name --help-query-compute-apps lists (drivers
// 590 and 595: "process_name" or "name", "used_gpu_memory" or
// "used_memory") and the ComputeApp field it fills.
var appFieldNames = map[string]appCol{
	"timestamp":       appSkip,
	"gpu_name":        appSkip,
	"gpu_bus_id":      appBus,
	"gpu_serial":      appSkip,
	"gpu_uuid":        appUUID,
	"pid":             appPID,
	"process_name":    appName,
	"name":            appName,
	"used_gpu_memory": appUsed,
	"used_memory":     appUsed,
}

// AppFields returns the --query-compute-apps field list the cockpit uses:
// pid, process_name, used_memory, gpu_bus_id, gpu_uuid.
func AppFields() []string {
	return []string{"pid", "process_name", "used_memory", "gpu_bus_id", "gpu_uuid"}
}

// maxProcessName bounds ComputeApp.Name; a process name is a path and may be longer
// than the other text cells.
const maxProcessName = 1024

// noProcesses is what some nvidia-smi versions print instead of an empty
// list.
var noProcesses = []byte("No running processes found")

// ParseComputeApps reads the output of
//
//	nvidia-smi --query-compute-apps=<fields> --format=csv[,noheader][,nounits]
//
// Cells may carry their unit ("2296 MiB") or not. A header line
// ("pid, process_name, used_gpu_memory [MiB], …") names the columns of the
// rows after it and wins over fields, the query's field list, which names
// the columns of headerless rows; columns are mapped by name (aliases as in
// --help-query-compute-apps: "name" is "process_name", "used_memory" is
// "used_gpu_memory"). fields may be nil when the output has a header; a
// name in it that is not a compute-apps field, or two names for one field,
// is an error.
//
// Empty output, blank lines, a header alone and "No running processes
// found" give no apps and no error. A whole-command failure line (GPU lost,
// "Failed to initialize NVML: …", "No devices were found", …) anywhere in
// out is returned as a *FailureError holding its ClassifyFailure result. A
// token ("[Not Supported]", "[N/A]", …) in the pid or memory cell keeps the
// row, with PID 0 and the token's Status in PIDStatus or UsedMiB. Any other
// unreadable row (wrong cell count, a pid that is not a positive number,
// memory that is not a non-negative number of MiB) is a *RowError naming its
// 1-based line number in out: nothing is guessed. On error the returned
// slice is nil, so that a caller waiting for processes to go never mistakes
// unreadable output for none.
//
// nvidia-smi does not quote cells, so a process name containing ", "
// spreads over several cells: when a row with a process_name column has
// more cells than columns, the extra cells are joined back into the name
// (every other column must still parse).
func ParseComputeApps(out []byte, fields []string) ([]event.ComputeApp, error) {
	var plan *appPlan
	if len(fields) > 0 {
		p, err := newAppPlan(fields, false)
		if err != nil {
			return nil, err
		}
		plan = p
	}
	if fs := failuresIn(out); len(fs) > 0 {
		return nil, &FailureError{Failure: fs[0]}
	}
	out = bytes.TrimPrefix(out, utf8BOM)
	var apps []event.ComputeApp
	var cells [][]byte
	for lineNo := 1; len(out) > 0; lineNo++ {
		var line []byte
		line, out, _ = bytes.Cut(out, []byte{'\n'})
		line = trimEOL(line)
		t := bytes.TrimSpace(line)
		if len(t) == 0 || bytes.Equal(bytes.TrimSuffix(t, []byte(".")), noProcesses) {
			continue
		}
		if names, ok := appHeader(t); ok {
			p, err := newAppPlan(names, true)
			if err != nil {
				re := rowError(line, err.Error())
				re.Line = lineNo
				return nil, re
			}
			plan = p
			continue
		}
		if plan == nil {
			re := rowError(line, "headerless row and no field list to read it with")
			re.Line = lineNo
			return nil, re
		}
		var a event.ComputeApp
		var re *RowError
		a, cells, re = plan.parse(line, cells)
		if re != nil {
			re.Line = lineNo
			return nil, re
		}
		apps = append(apps, a)
	}
	return apps, nil
}

// appPlan is what each column of a compute-apps row holds.
type appPlan struct {
	cols []appCol
	name int // index of the process-name column, -1 when none
}

// newAppPlan maps field names (header cells when header is set, which may
// carry a unit, "used_gpu_memory [MiB]") to ComputeApp fields. Names a header
// holds that are not compute-apps fields are skipped (a newer driver's
// field); in a field list they are an error.
func newAppPlan(fields []string, header bool) (*appPlan, error) {
	p := &appPlan{cols: make([]appCol, len(fields)), name: -1}
	seen := make(map[appCol]string, len(fields))
	known := false
	for i, f := range fields {
		name := headerName(f)
		col, ok := appFieldNames[name]
		if !ok {
			if header {
				continue
			}
			return nil, fmt.Errorf("gpu: %q is not a --query-compute-apps field", name)
		}
		known = true
		if col == appSkip {
			continue
		}
		if prev, dup := seen[col]; dup {
			return nil, fmt.Errorf("gpu: compute-apps field %q is queried twice (as %q and %q)", name, prev, name)
		}
		seen[col] = name
		p.cols[i] = col
		if col == appName {
			p.name = i
		}
	}
	if !known {
		return nil, fmt.Errorf("gpu: field list %q names no --query-compute-apps field", fields)
	}
	return p, nil
}

// appHeader recognises a --query-compute-apps header: every cell is a field
// name (letters, digits, '.', '_', starting with a letter), optionally
// followed by a unit in brackets ("used_gpu_memory [MiB]"), and at least
// one is a compute-apps field. Rows never look like that: their pid and
// memory cells are numbers or bracketed tokens. (Only a query of nothing but
// process names could print a row that does, for a process named "pid".)
func appHeader(line []byte) ([]string, bool) {
	var names []string
	known := false
	rest := line
	for more := true; more; {
		var c []byte
		c, rest, more = nextCell(rest)
		name, ok := headerCellName(c)
		if !ok {
			return nil, false
		}
		if _, ok := appFieldNames[string(name)]; ok {
			known = true
		}
		names = append(names, string(name))
	}
	return names, known
}

// absentApp has every field Absent (not queried).
var absentApp = event.ComputeApp{
	PIDStatus: event.CellAbsent,
	Name:      event.Text{Status: event.CellAbsent},
	UsedMiB:   event.Reading{Status: event.CellAbsent},
	BusID:     event.Text{Status: event.CellAbsent},
	UUID:      event.Text{Status: event.CellAbsent},
}

// parse reads one row; cells is scratch space, returned for reuse.
func (p *appPlan) parse(line []byte, cells [][]byte) (event.ComputeApp, [][]byte, *RowError) {
	cells = splitCells(cells, line)
	if extra := len(cells) - len(p.cols); extra != 0 {
		if extra < 0 || p.name < 0 {
			return event.ComputeApp{}, cells, rowError(line, strconv.Itoa(len(cells))+" cells, want "+strconv.Itoa(len(p.cols)))
		}
		// The process name held ", ": put its cells back together.
		merged := bytes.Join(cells[p.name:p.name+extra+1], []byte(", "))
		cells = slices.Delete(cells, p.name+1, p.name+extra+1)
		cells[p.name] = merged
	}
	a := absentApp
	for i, col := range p.cols {
		c := cells[i]
		switch col {
		case appPID:
			if st, _ := token(c); st != event.CellOK && st != event.CellEmpty {
				a.PID, a.PIDStatus = 0, st
				break
			}
			pid, ok := parsePID(c)
			if !ok {
				return event.ComputeApp{}, cells, rowError(line, "pid "+strconv.Quote(cleanText(c, 40))+" is not a process id")
			}
			a.PID, a.PIDStatus = pid, event.CellOK
		case appUsed:
			r := reading(c, "MiB")
			if r.Status == event.CellInvalid || r.Valid() && r.Value < 0 {
				return event.ComputeApp{}, cells, rowError(line, "used memory "+strconv.Quote(cleanText(c, 40))+" is not a number of MiB")
			}
			a.UsedMiB = r
		case appName:
			a.Name = appText(c, maxProcessName, false)
		case appBus:
			a.BusID = appText(c, maxTextLen, true)
			if a.BusID.Status == event.CellOK && !isBusID(c) {
				a.BusID.Status = event.CellInvalid
			}
		case appUUID:
			a.UUID = appText(c, maxTextLen, true)
		}
	}
	return a, cells, nil
}

// parsePID parses a process id: 1 to 10 decimal digits, 1 ≤ pid ≤ 2^31-1.
func parsePID(c []byte) (int, bool) {
	if len(c) == 0 || len(c) > 10 {
		return 0, false
	}
	var n uint64
	for _, d := range c {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + uint64(d-'0')
	}
	if n == 0 || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

// appText parses a text cell. A process name (strict false) is kept
// sanitised with Status OK: any bytes are a legal file name. An identifier
// (strict) that is unprintable or too long is Invalid, so that it matches
// nothing.
func appText(c []byte, max int, strict bool) event.Text {
	if st, raw := token(c); st != event.CellOK {
		return event.Text{S: raw, Status: st}
	}
	if strict && (!safeText(c) || len(c) > max) {
		return event.Text{S: cleanText(c, max), Status: event.CellInvalid}
	}
	return event.Text{S: cleanText(c, max)}
}

func isBusID(c []byte) bool {
	for _, b := range c {
		if !isBusIDByte(b) {
			return false
		}
	}
	return len(c) > 0
}

// SameBus reports whether two PCI bus ids name the same device. nvidia-smi
// prints an 8-digit domain ("00000000:18:00.0") in --query-compute-apps and
// pci.bus_id, a 4-digit one in failure messages ("0000:18:00.0"), and lspci
// none ("18:00.0", domain 0). Hex digits compare case-insensitively and
// leading zeros do not count. Ids that are not "[domain:]bus:device.function"
// in hex (a token such as "[N/A]", "") match nothing, themselves included.
func SameBus(a, b string) bool {
	x, ok := parseBusID(a)
	if !ok {
		return false
	}
	y, ok := parseBusID(b)
	return ok && x == y
}

// NormBusID is the form in which the cockpit matches a failure's bus id to
// a GPU row: trimmed, lower case, and the domain without its leading zeros,
// so that "00000000:0B:00.0" (nvidia-smi's CSV) and "0000:0b:00.0"
// (failure messages) both give ":0b:00.0". A string without exactly three
// colon-separated parts is only trimmed and lower-cased. Unlike SameBus it
// checks nothing and keeps the domain: "0b:00.0" stays as it is.
func NormBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	dom, rest, ok := strings.Cut(s, ":")
	if !ok || strings.Count(rest, ":") != 1 {
		return s
	}
	dom = strings.TrimLeft(dom, "0")
	return dom + ":" + rest
}

type busID struct{ domain, bus, device, function uint32 }

func parseBusID(s string) (busID, bool) {
	s = strings.TrimSpace(s)
	var id busID
	parts := strings.Split(s, ":")
	if len(parts) == 2 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 3 {
		return id, false
	}
	dev, fn, ok := strings.Cut(parts[2], ".")
	if !ok {
		return id, false
	}
	var okD, okB, okV, okF bool
	id.domain, okD = parseHex(parts[0], 8)
	id.bus, okB = parseHex(parts[1], 4)
	id.device, okV = parseHex(dev, 4)
	id.function, okF = parseHex(fn, 2)
	return id, okD && okB && okV && okF
}

// parseHex parses 1 to maxDigits hex digits.
func parseHex(s string, maxDigits int) (uint32, bool) {
	if len(s) == 0 || len(s) > maxDigits {
		return 0, false
	}
	var n uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | uint32(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n<<4 | uint32(c-'A'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

// FailureError is a whole-command nvidia-smi failure (see ClassifyFailure,
// and FailNoNVIDIASMI for a host without nvidia-smi) returned as an error by
// the one-shot parsers and queries: ParseComputeApps, QueryComputeApps,
// QueryGPUMemory. Find it with errors.As.
type FailureError struct {
	Failure event.GPUFailure
	// Err is how the command ended, usually a *remote.ExitError; nil when
	// the failure was read from saved output.
	Err error
}

func (e *FailureError) Error() string {
	s := "nvidia-smi failed: " + string(e.Failure.Class)
	if e.Failure.Line != "" {
		s += ": " + e.Failure.Line
	}
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

// Unwrap returns Err.
func (e *FailureError) Unwrap() error { return e.Err }

// defaultQueryTimeout bounds a one-shot query whose context has no
// deadline: nvidia-smi can hang in the driver.
const defaultQueryTimeout = 30 * time.Second

// QueryComputeApps runs
//
//	nvidia-smi --query-compute-apps=<AppFields> --format=csv,noheader,nounits
//
// on h (program "" = "nvidia-smi"; a path may be given) with ctx's deadline
// (30 s when ctx has none) and parses it with ParseComputeApps. No compute
// process gives no apps and no error. Errors: a *FailureError for a
// whole-command failure (class FailNoNVIDIASMI when the host has no such
// program; Unwrap gives the *remote.ExitError), a *RowError for garbled
// output, and otherwise an error wrapping ctx.Err() when ctx ended,
// remote.ErrDisconnected when the connection dropped, or the
// *remote.ExitError of any other non-zero exit, followed by nvidia-smi's
// first output line ("Field … is not a valid field to query.").
func QueryComputeApps(ctx context.Context, h remote.Host, program string) ([]event.ComputeApp, error) {
	fields := AppFields()
	out, err := runQuery(ctx, h, program, "--query-compute-apps="+strings.Join(fields, ","), "--format=csv,noheader,nounits")
	if err != nil {
		return nil, err
	}
	apps, err := ParseComputeApps(out, fields)
	if err != nil {
		return nil, fmt.Errorf("gpu: nvidia-smi --query-compute-apps: %w", err)
	}
	return apps, nil
}

// GPUMemory is one GPU's index, bus id and memory from
// --query-gpu=index,pci.bus_id,memory.used,memory.total.
type GPUMemory struct {
	Index             int
	BusID             string // pci.bus_id as printed, "00000000:18:00.0"; compare with SameBus
	UsedMiB, TotalMiB event.Reading
}

// gpuMemoryFields is QueryGPUMemory's --query-gpu list.
var gpuMemoryFields = []string{"index", "pci.bus_id", "memory.used", "memory.total"}

// QueryGPUMemory runs
//
//	nvidia-smi --query-gpu=index,pci.bus_id,memory.used,memory.total --format=csv,noheader,nounits
//
// on h (program "" = "nvidia-smi") with ctx's deadline (30 s when ctx has
// none) and returns the GPUs sorted by index. A GPU whose memory nvidia-smi
// could not read keeps the token's Status ("[GPU is lost]" is Lost); errors
// are those of QueryComputeApps.
func QueryGPUMemory(ctx context.Context, h remote.Host, program string) ([]GPUMemory, error) {
	out, err := runQuery(ctx, h, program, "--query-gpu="+strings.Join(gpuMemoryFields, ","), "--format=csv,noheader,nounits")
	if err != nil {
		return nil, err
	}
	gs, err := parseGPUMemory(out)
	if err != nil {
		return nil, fmt.Errorf("gpu: nvidia-smi --query-gpu: %w", err)
	}
	return gs, nil
}

// parseGPUMemory reads headerless rows of gpuMemoryFields, under the rules
// of ParseComputeApps.
func parseGPUMemory(out []byte) ([]GPUMemory, error) {
	if fs := failuresIn(out); len(fs) > 0 {
		return nil, &FailureError{Failure: fs[0]}
	}
	p, err := NewParser(gpuMemoryFields)
	if err != nil {
		return nil, err // cannot happen: the list is fixed and has index
	}
	var gs []GPUMemory
	for lineNo := 1; len(out) > 0; lineNo++ {
		var line []byte
		line, out, _ = bytes.Cut(out, []byte{'\n'})
		line = trimEOL(line)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		g, err := p.Parse(line)
		if err != nil {
			var re *RowError
			if errors.As(err, &re) {
				re.Line = lineNo
			}
			return nil, err
		}
		for _, m := range [...]struct {
			name string
			r    event.Reading
		}{{"memory.used", g.MemUsedMiB}, {"memory.total", g.MemTotalMiB}} {
			if m.r.Status == event.CellInvalid || m.r.Valid() && m.r.Value < 0 {
				re := rowError(line, m.name+" "+strconv.Quote(m.r.Raw)+" is not a number of MiB")
				if m.r.Valid() {
					re = rowError(line, m.name+" is negative")
				}
				re.Line = lineNo
				return nil, re
			}
		}
		gs = append(gs, GPUMemory{Index: g.Index, BusID: g.BusID.S, UsedMiB: g.MemUsedMiB, TotalMiB: g.MemTotalMiB})
	}
	slices.SortStableFunc(gs, func(a, b GPUMemory) int { return a.Index - b.Index })
	return gs, nil
}

// runQuery runs a one-shot nvidia-smi command on h and returns its stdout.
// A missing program and whole-command failures (on stdout or stderr) come
// back as a *FailureError; see QueryComputeApps for the other errors.
func runQuery(ctx context.Context, h remote.Host, program string, args ...string) ([]byte, error) {
	if h == nil {
		return nil, errors.New("gpu: nil host")
	}
	if program == "" {
		program = "nvidia-smi"
	}
	what, _, _ := strings.Cut(args[0], "=")
	what = program + " " + what
	cmd, err := remote.Command(program, args...)
	if err != nil {
		return nil, fmt.Errorf("gpu: %s: %w", what, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultQueryTimeout)
		defer cancel()
	}
	res, err := h.Run(ctx, cmd, nil)
	if err != nil && ctx.Err() != nil {
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		return nil, fmt.Errorf("gpu: %s: %w", what, err)
	}
	if f, ok := missingProgram(res, err); ok {
		return nil, &FailureError{Failure: f, Err: err}
	}
	if fs := failuresIn(res.Stdout, res.Stderr); len(fs) > 0 {
		return nil, &FailureError{Failure: fs[0], Err: err}
	}
	if err != nil {
		if l := firstLine(res.Stderr, res.Stdout); l != "" {
			return nil, fmt.Errorf("gpu: %s: %w: %s", what, err, l)
		}
		return nil, fmt.Errorf("gpu: %s: %w", what, err)
	}
	return res.Stdout, nil
}
