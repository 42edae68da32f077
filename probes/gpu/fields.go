package gpu

import (
	"bytes"
	"errors"
	"strings"
)

// slot names the GPU struct field a CSV column fills.
type slot uint8

const (
	slotNone slot = iota // a column flightdeck does not map (kept only by WriteJSONL)
	slotIndex
	slotName
	slotBusID
	slotUUID
	slotUtilGPU
	slotUtilMem
	slotMemUsed
	slotMemTotal
	slotPowerDraw
	slotPowerLimit
	slotTemp
	slotSMClock
	slotMemClock
	slotSMClockMax
	slotFan
	slotPState
	slotPCIeGenCur
	slotPCIeGenMax
	slotPCIeWidthCur
	slotPCIeWidthMax
	slotClockEvents
	slotPersistence
	slotECC
	slotMIG
)

// cellKind says how a column's cells are parsed.
type cellKind uint8

const (
	kindGeneric cellKind = iota // unmapped column: number when it looks like one, else text
	kindIndex                   // non-negative integer; a row without one is an error
	kindNumber                  // Reading
	kindText                    // Text
	kindMask                    // ClockEvents: 0x-prefixed hex
)

// fieldSpec is one field flightdeck queries.
type fieldSpec struct {
	names []string // --query-gpu names; names[0] is preferred, the rest are aliases
	slot  slot
	kind  cellKind
	unit  string // the unit nvidia-smi prints without "nounits" ("" when it prints none)
	key   string // JSON key in WriteJSONL output; "" means the header name
}

// fieldSpecs is flightdeck's fixed query, in query order. index comes first
// so that rows can be grouped by GPU. Aliases are from --help-query-gpu of
// driver 590 ("clocks.current.sm" or "clocks.sm") and older drivers
// (clocks_throttle_reasons.* before 535).
var fieldSpecs = [...]fieldSpec{
	{names: []string{"index"}, slot: slotIndex, kind: kindIndex, key: "index"},
	{names: []string{"name", "gpu_name"}, slot: slotName, kind: kindText, key: "name"},
	{names: []string{"pci.bus_id", "gpu_bus_id"}, slot: slotBusID, kind: kindText, key: "pci_bus_id"},
	{names: []string{"uuid", "gpu_uuid"}, slot: slotUUID, kind: kindText},
	{names: []string{"utilization.gpu"}, slot: slotUtilGPU, kind: kindNumber, unit: "%", key: "util_gpu_pct"},
	{names: []string{"utilization.memory"}, slot: slotUtilMem, kind: kindNumber, unit: "%", key: "util_mem_pct"},
	{names: []string{"memory.used"}, slot: slotMemUsed, kind: kindNumber, unit: "MiB", key: "mem_used_mib"},
	{names: []string{"memory.total"}, slot: slotMemTotal, kind: kindNumber, unit: "MiB", key: "mem_total_mib"},
	{names: []string{"power.draw"}, slot: slotPowerDraw, kind: kindNumber, unit: "W", key: "power_draw_w"},
	{names: []string{"power.limit"}, slot: slotPowerLimit, kind: kindNumber, unit: "W", key: "power_limit_w"},
	// nvidia-smi prints temperature.gpu without a unit even in units mode;
	// "C" is accepted in case a driver adds one.
	{names: []string{"temperature.gpu"}, slot: slotTemp, kind: kindNumber, unit: "C", key: "temp_c"},
	{names: []string{"clocks.current.sm", "clocks.sm"}, slot: slotSMClock, kind: kindNumber, unit: "MHz", key: "sm_clock_mhz"},
	{names: []string{"clocks.current.memory", "clocks.mem"}, slot: slotMemClock, kind: kindNumber, unit: "MHz", key: "mem_clock_mhz"},
	{names: []string{"clocks.max.sm"}, slot: slotSMClockMax, kind: kindNumber, unit: "MHz"},
	{names: []string{"fan.speed"}, slot: slotFan, kind: kindNumber, unit: "%", key: "fan_speed_pct"},
	{names: []string{"pstate"}, slot: slotPState, kind: kindText, key: "pstate"},
	{names: []string{"pcie.link.gen.current"}, slot: slotPCIeGenCur, kind: kindNumber, key: "pcie_gen_current"},
	{names: []string{"pcie.link.gen.max"}, slot: slotPCIeGenMax, kind: kindNumber},
	{names: []string{"pcie.link.width.current"}, slot: slotPCIeWidthCur, kind: kindNumber, key: "pcie_width_current"},
	{names: []string{"pcie.link.width.max"}, slot: slotPCIeWidthMax, kind: kindNumber},
	{names: []string{"clocks_event_reasons.active", "clocks_throttle_reasons.active"}, slot: slotClockEvents, kind: kindMask},
	{names: []string{"persistence_mode"}, slot: slotPersistence, kind: kindText},
	{names: []string{"ecc.mode.current"}, slot: slotECC, kind: kindText},
	{names: []string{"mig.mode.current"}, slot: slotMIG, kind: kindText, key: "mig_mode"},
}

// specByName maps every name and alias in fieldSpecs to its index there.
var specByName = func() map[string]int {
	m := make(map[string]int, 2*len(fieldSpecs))
	for i, f := range fieldSpecs {
		for _, n := range f.names {
			m[n] = i
		}
	}
	return m
}()

// DefaultFields returns the preferred --query-gpu names of every field
// flightdeck reads, in query order (index first). A host's driver may lack
// some of them; QueryFields picks the ones it supports.
func DefaultFields() []string {
	out := make([]string, len(fieldSpecs))
	for i, f := range fieldSpecs {
		out[i] = f.names[0]
	}
	return out
}

// ErrNoIndexField is returned when the driver's field list lacks "index",
// without which rows cannot be told apart.
var ErrNoIndexField = errors.New("gpu: nvidia-smi does not offer the \"index\" field")

// ParseHelpQueryGPU reads the output of `nvidia-smi --help-query-gpu` and
// returns the set of field names it lists, aliases included. A field line
// holds only quoted names: `"clocks.current.sm" or "clocks.sm"`; description
// lines, including ones that start with a quoted word (`"0: Default" means
// …`), are ignored. A leading "# source:" line is skipped like any other
// non-field line. It returns an error when the output names no field at all
// (it is then not --help-query-gpu output, e.g. a failure message).
func ParseHelpQueryGPU(out []byte) (map[string]bool, error) {
	set := make(map[string]bool, 256)
	for len(out) > 0 {
		var line []byte
		line, out, _ = bytes.Cut(out, []byte{'\n'})
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '"' {
			continue
		}
		names, ok := helpFieldLine(line)
		if !ok {
			continue
		}
		for _, n := range names {
			set[n] = true
		}
	}
	if len(set) == 0 {
		return nil, errors.New("gpu: no field names in nvidia-smi --help-query-gpu output")
	}
	return set, nil
}

// helpFieldLine parses `"a"` or `"a" or "b" [or "c" …]`; ok is false for any
// other line.
func helpFieldLine(line []byte) ([]string, bool) {
	var names []string
	for {
		if len(line) < 2 || line[0] != '"' {
			return nil, false
		}
		end := bytes.IndexByte(line[1:], '"')
		if end <= 0 {
			return nil, false
		}
		name := line[1 : 1+end]
		for _, c := range name {
			if !isNameByte(c) {
				return nil, false
			}
		}
		names = append(names, string(name))
		line = line[end+2:]
		if len(line) == 0 {
			return names, true
		}
		rest, ok := bytes.CutPrefix(line, []byte(" or "))
		if !ok {
			return nil, false
		}
		line = rest
	}
}

func isNameByte(c byte) bool {
	return c == '.' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// QueryFields picks flightdeck's query from the set ParseHelpQueryGPU
// returned: every field of DefaultFields the driver supports, in the same
// order, each under the first of its names the driver knows (e.g.
// "clocks_throttle_reasons.active" on drivers before 535). It returns
// ErrNoIndexField when "index" is missing.
func QueryFields(supported map[string]bool) ([]string, error) {
	out := make([]string, 0, len(fieldSpecs))
	for _, f := range fieldSpecs {
		for _, n := range f.names {
			if supported[n] {
				out = append(out, n)
				break
			}
		}
	}
	if len(out) == 0 || out[0] != "index" {
		return nil, ErrNoIndexField
	}
	return out, nil
}

// headerName strips the unit suffix nvidia-smi adds to header cells in
// units mode ("utilization.gpu [%]" → "utilization.gpu") and trims spaces.
func headerName(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "]") {
		if i := strings.LastIndex(s, " ["); i > 0 {
			s = strings.TrimSpace(s[:i])
		}
	}
	return s
}
