package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// GPUStateSummary describes the GPUs' state in one line: their count and
// name, then SM and memory clocks, P-state, PCIe link, throttle reasons,
// persistence and ECC mode. A field with the same value on every GPU is
// given once; numbers that differ are given as a range ("SM 1965-1980
// MHz"); other differing values name their GPUs ("PCIe Gen5 x16 (0-2,4-7),
// Gen4 x8 (3)"), so an odd GPU stands out. "" for no GPUs.
func GPUStateSummary(all []event.GPU) string {
	if len(all) == 0 {
		return ""
	}
	// A lost GPU has no state to compare: it is named once at the end.
	var lost []int
	gpus := make([]event.GPU, 0, len(all))
	for i := range all {
		if all[i].Lost || all[i].ShowsLost() {
			lost = append(lost, all[i].Index)
		} else {
			gpus = append(gpus, all[i])
		}
	}
	field := func(f func(g *event.GPU) string) string {
		type group struct {
			val string
			idx []int
		}
		var gs []group
	outer:
		for i := range gpus {
			v := f(&gpus[i])
			for j := range gs {
				if gs[j].val == v {
					gs[j].idx = append(gs[j].idx, gpus[i].Index)
					continue outer
				}
			}
			gs = append(gs, group{v, []int{gpus[i].Index}})
		}
		if len(gs) == 1 {
			return gs[0].val
		}
		parts := make([]string, len(gs))
		for i, g := range gs {
			parts[i] = g.val + " (GPU " + IndexRanges(g.idx) + ")"
		}
		return strings.Join(parts, ", ")
	}
	numRange := func(unit string, rd func(g *event.GPU) event.Reading) string {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range gpus {
			r := rd(&gpus[i])
			if !r.Valid() {
				// A GPU without a value: name it rather than hide it.
				return field(func(g *event.GPU) string {
					if r := rd(g); !r.Valid() {
						return readingText(r, 0)
					}
					return readingText(rd(g), 0) + unit
				})
			}
			lo, hi = min(lo, r.Value), max(hi, r.Value)
		}
		if lo == hi {
			return strconv.FormatFloat(lo, 'f', 0, 64) + unit
		}
		return strconv.FormatFloat(lo, 'f', 0, 64) + "-" + strconv.FormatFloat(hi, 'f', 0, 64) + unit
	}
	var b strings.Builder
	if len(gpus) == 0 {
		fmt.Fprintf(&b, "%dx GPU, all lost", len(all))
		return b.String()
	}
	names := field(func(g *event.GPU) string { return textText(g.Name) })
	fmt.Fprintf(&b, "%dx %s: SM %s, mem %s, %s, PCIe %s, throttle %s",
		len(all), names,
		numRange(" MHz", func(g *event.GPU) event.Reading { return g.SMClockMHz }),
		numRange(" MHz", func(g *event.GPU) event.Reading { return g.MemClockMHz }),
		field(func(g *event.GPU) string { return textText(g.PState) }),
		field(pcieText),
		field(func(g *event.GPU) string {
			n, _ := ThrottleReasons(g.ClockEvents)
			if len(n) == 0 {
				return "none"
			}
			return strings.Join(n, "+")
		}))
	if p := field(func(g *event.GPU) string { return textText(g.Persistence) }); g0Present(gpus, func(g *event.GPU) event.Text { return g.Persistence }) {
		b.WriteString(", persistence " + p)
	}
	if e := field(func(g *event.GPU) string { return textText(g.ECCMode) }); g0Present(gpus, func(g *event.GPU) event.Text { return g.ECCMode }) {
		b.WriteString(", ECC " + e)
	}
	if len(lost) > 0 {
		fmt.Fprintf(&b, ", GPU %s lost", IndexRanges(lost))
	}
	return b.String()
}

// g0Present reports whether any GPU has the text field queried at all
// (older drivers lack some fields: say nothing rather than "Absent").
func g0Present(gpus []event.GPU, f func(g *event.GPU) event.Text) bool {
	for i := range gpus {
		if f(&gpus[i]).Status != event.CellAbsent {
			return true
		}
	}
	return false
}

// pcieText is the current link as "Gen5 x16", or the token of a field
// that was not read.
func pcieText(g *event.GPU) string {
	if !g.PCIeGenCurrent.Valid() {
		return tokenText(g.PCIeGenCurrent.Status, g.PCIeGenCurrent.Raw)
	}
	if !g.PCIeWidthCurrent.Valid() {
		return tokenText(g.PCIeWidthCurrent.Status, g.PCIeWidthCurrent.Raw)
	}
	return "Gen" + readingText(g.PCIeGenCurrent, 0) + " x" + readingText(g.PCIeWidthCurrent, 0)
}

// IndexRanges formats GPU indices, in the order given (sort them for
// ranges), as "0-2,4-7".
func IndexRanges(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(idx[i]))
		} else {
			parts = append(parts, strconv.Itoa(idx[i])+"-"+strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// ThrottleReasons names the active clock-event (throttle) reasons in bit
// order ("sw-power", "hw-slow"; unknown bits as "0x…"), none when none is
// active, or the non-value ("N/A") when the mask was not read: ok is false
// then.
func ThrottleReasons(ce event.ClockEvents) (names []string, ok bool) {
	if ce.Status != event.CellOK {
		return []string{tokenText(ce.Status, ce.Raw)}, false
	}
	rest := ce.Mask
	for _, r := range reasonNames {
		if ce.Mask&r.bit != 0 {
			names = append(names, r.name)
			rest &^= r.bit
		}
	}
	if rest != 0 {
		names = append(names, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return names, true
}

// reasonNames are the short names of the clock-event (throttle) reasons,
// in bit order, as the cockpit shows them.
var reasonNames = []struct {
	bit  event.ClockEventReason
	name string
}{
	{event.ReasonGPUIdle, "idle"},
	{event.ReasonApplicationsClocks, "app-clk"},
	{event.ReasonSWPowerCap, "sw-power"},
	{event.ReasonHWSlowdown, "hw-slow"},
	{event.ReasonSyncBoost, "sync-boost"},
	{event.ReasonSWThermalSlowdown, "sw-thermal"},
	{event.ReasonHWThermalSlowdown, "hw-thermal"},
	{event.ReasonHWPowerBrakeSlowdown, "power-brake"},
	{event.ReasonDisplayClockSetting, "display-clk"},
}

// tokenText is a non-value as nvidia-smi printed it, or its status name.
func tokenText(st event.CellStatus, raw string) string {
	if raw != "" {
		return sanitize.OneLine(raw)
	}
	return st.String()
}

// readingText formats a reading with prec decimals, or its token.
func readingText(r event.Reading, prec int) string {
	if !r.Valid() {
		return tokenText(r.Status, r.Raw)
	}
	return strconv.FormatFloat(r.Value, 'f', prec, 64)
}

func textText(t event.Text) string {
	if t.Status != event.CellOK {
		return tokenText(t.Status, t.S)
	}
	return sanitize.OneLine(t.S)
}
