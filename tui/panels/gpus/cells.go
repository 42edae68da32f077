package gpus

import (
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Thresholds for highlighting. They are judgement calls for datacenter GPUs
// (H100/H200/B200 slow down near 87–90 °C; an idle GPU legitimately drops
// to a lower P-state and PCIe gen to save power, so those only count under
// load).
const (
	busyUtilPct = 10 // util.gpu above this (%) means "under load"
	tempWarnC   = 85 // temperature.gpu at or above this (°C) is highlighted
)

// cell is one formatted table cell: plain text plus the token to paint it.
type cell struct {
	text string
	tone style.Token
}

// token renders a non-value as a short marker (never 0) and the tone it
// deserves: a lost GPU is critical, an error is a warning, a value the
// driver does not offer is merely dim.
func token(st event.CellStatus) cell {
	switch st {
	case event.CellNA:
		return cell{"N/A", style.Dim}
	case event.CellNotSupported:
		return cell{"n/s", style.Dim}
	case event.CellUnknownError:
		return cell{"UNK", style.Warn}
	case event.CellLost:
		return cell{"LOST", style.Crit}
	case event.CellErr:
		return cell{"ERR", style.Warn}
	case event.CellEmpty:
		return cell{"?", style.Dim}
	case event.CellDeprecated:
		return cell{"dep", style.Dim}
	case event.CellOther:
		return cell{"oth", style.Warn}
	case event.CellInvalid:
		return cell{"bad", style.Warn}
	case event.CellAbsent:
		return cell{"n/q", style.Dim}
	}
	return cell{"?", style.Warn}
}

// worse returns the more severe of two tones (text < dim < warn < crit).
func worse(a, b style.Token) style.Token {
	rank := func(t style.Token) int {
		switch t {
		case style.Crit:
			return 3
		case style.Warn:
			return 2
		case style.Dim:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func num(r event.Reading, prec int, unit string) cell {
	if !r.Valid() {
		return token(r.Status)
	}
	return cell{strconv.FormatFloat(r.Value, 'f', prec, 64) + unit, style.Text}
}

// pair formats "a/b" where either side may be a non-value token.
func pair(a, b event.Reading, scale float64, prec int) cell {
	fa, fb := numScaled(a, scale, prec), numScaled(b, scale, prec)
	return cell{fa.text + "/" + fb.text, worse(fa.tone, fb.tone)}
}

func numScaled(r event.Reading, scale float64, prec int) cell {
	if !r.Valid() {
		return token(r.Status)
	}
	return cell{strconv.FormatFloat(r.Value/scale, 'f', prec, 64), style.Text}
}

func textCell(t event.Text) cell {
	if t.Status != event.CellOK {
		return token(t.Status)
	}
	return cell{t.S, style.Text}
}

// shortName drops vendor words that every row repeats: "NVIDIA H200" →
// "H200", "NVIDIA GeForce RTX 4080 SUPER" → "RTX 4080 SUPER".
func shortName(s string) string {
	for _, p := range []string{"NVIDIA ", "Tesla ", "GeForce "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// busy reports whether the GPU is under load, the condition under which a
// low P-state or a downshifted PCIe link is abnormal.
func busy(g *event.GPU) bool {
	return g.UtilGPUPct.Valid() && g.UtilGPUPct.Value > busyUtilPct
}

// reasonNames are the short names of the clock-event reasons, in bit order.
var reasonNames = []struct {
	bit  event.ClockEventReason
	name string
	sev  style.Token
}{
	{event.ReasonGPUIdle, "idle", style.Text},
	{event.ReasonApplicationsClocks, "app-clk", style.Warn},
	{event.ReasonSWPowerCap, "sw-power", style.Warn},
	{event.ReasonHWSlowdown, "hw-slow", style.Crit},
	{event.ReasonSyncBoost, "sync-boost", style.Warn},
	{event.ReasonSWThermalSlowdown, "sw-thermal", style.Warn},
	{event.ReasonHWThermalSlowdown, "hw-thermal", style.Crit},
	{event.ReasonHWPowerBrakeSlowdown, "power-brake", style.Crit},
	{event.ReasonDisplayClockSetting, "display-clk", style.Warn},
}

// throttleCell names the active clock-event reasons. "-" means none; "idle"
// alone is the normal state of an unloaded GPU and is not highlighted.
func throttleCell(ce event.ClockEvents) cell {
	if ce.Status != event.CellOK {
		return token(ce.Status)
	}
	if ce.Mask == 0 {
		return cell{"-", style.Text}
	}
	var parts []string
	t := style.Text
	rest := ce.Mask
	for _, r := range reasonNames {
		if ce.Mask&r.bit != 0 {
			parts = append(parts, r.name)
			t = worse(t, r.sev)
			rest &^= r.bit
		}
	}
	if rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
		t = worse(t, style.Warn)
	}
	return cell{strings.Join(parts, ","), t}
}

func pstateCell(g *event.GPU) cell {
	c := textCell(g.PState)
	if g.PState.Status == event.CellOK && g.PState.S != "P0" && busy(g) {
		c.tone = style.Warn
	}
	return c
}

// pcieCell formats the current link as "Gen5x16"; it is highlighted when
// the GPU is busy and either the generation or the width is below max.
func pcieCell(g *event.GPU) cell {
	gen, w := g.PCIeGenCurrent, g.PCIeWidthCurrent
	if !gen.Valid() {
		return token(gen.Status)
	}
	if !w.Valid() {
		return token(w.Status)
	}
	c := cell{"Gen" + strconv.FormatFloat(gen.Value, 'f', 0, 64) + "x" + strconv.FormatFloat(w.Value, 'f', 0, 64), style.Text}
	if busy(g) && ((g.PCIeGenMax.Valid() && gen.Value < g.PCIeGenMax.Value) ||
		(g.PCIeWidthMax.Valid() && w.Value < g.PCIeWidthMax.Value)) {
		c.tone = style.Warn
	}
	return c
}

func tempCell(r event.Reading) cell {
	c := num(r, 0, "C")
	if r.Valid() && r.Value >= tempWarnC {
		c.tone = style.Warn
	}
	return c
}

// gpuCells formats every column of one GPU row.
func gpuCells(g *event.GPU) [numCols]cell {
	var c [numCols]cell
	c[colIdx] = cell{strconv.Itoa(g.Index), style.Text}
	c[colName] = textCell(g.Name)
	if c[colName].tone == style.Text {
		c[colName].text = shortName(c[colName].text)
	}
	c[colUtil] = num(g.UtilGPUPct, 0, "%")
	c[colMem] = pair(g.MemUsedMiB, g.MemTotalMiB, 1024, 1)
	c[colPower] = pair(g.PowerDrawW, g.PowerLimitW, 1, 0)
	c[colTemp] = tempCell(g.TempC)
	c[colSM] = num(g.SMClockMHz, 0, "")
	c[colP] = pstateCell(g)
	c[colPCIe] = pcieCell(g)
	c[colRxTx] = rxTxCell(g)
	c[colThrottle] = throttleCell(g.ClockEvents)
	if g.ShowsLost() {
		c[colIdx].tone = style.Crit
	}
	return c
}

// Cells is the text of each column of g's row as the table formats it,
// before it is fitted to a width, in column order: the index first, the
// throttle reasons last (the one column a narrow row shortens, at a
// reason boundary, see fitList). The procs column is empty: it comes from
// the sample's processes.
func Cells(g *event.GPU) []string {
	c := gpuCells(g)
	out := make([]string, len(c))
	for i := range c {
		out[i] = c[i].text
	}
	return out
}

// abnormal reports whether any cell of the row is highlighted.
func abnormal(c *[numCols]cell) bool {
	for _, x := range c {
		if x.tone == style.Warn || x.tone == style.Crit {
			return true
		}
	}
	return false
}

// PCIe throughput (event.GPU.PCIeRxKBs/PCIeTxKBs) is shown in MiB/s. NVML
// documents nvmlDeviceGetPcieThroughput in "KB/s" (a byte counter over
// 20 ms) without saying which KB; nvitop reads it as KiB/s (1024 bytes),
// and so do we: MiB/s = KB/s / 1024. The header says MiB/s.
const (
	kibPerMiB = 1024
	// maxRxTxMiBs is far above any PCIe link (Gen6 x16 is about 120,000
	// MiB/s each way): a larger figure, a negative one or NaN from a
	// remote agent shows as "bad", never as a number.
	maxRxTxMiBs = 1e6
)

// rxTxCell formats PCIe receive/transmit throughput as "1.2/0.4" (MiB/s;
// one decimal below 10, whole numbers above), each side a value or a
// non-value token.
func rxTxCell(g *event.GPU) cell {
	if g.PCIeRxKBs.Status == event.CellAbsent && g.PCIeTxKBs.Status == event.CellAbsent {
		return absentRxTx // not sampled (the column is hidden): no allocation per row
	}
	a, b := mibs(g.PCIeRxKBs), mibs(g.PCIeTxKBs)
	return cell{a.text + "/" + b.text, worse(a.tone, b.tone)}
}

// absentRxTx is rxTxCell of a GPU whose PCIe throughput was not sampled.
var absentRxTx = cell{token(event.CellAbsent).text + "/" + token(event.CellAbsent).text, token(event.CellAbsent).tone}

func mibs(r event.Reading) cell {
	if !r.Valid() {
		return token(r.Status)
	}
	v := r.Value / kibPerMiB
	switch {
	case !(v >= 0 && v < maxRxTxMiBs): // NaN too
		return token(event.CellInvalid)
	case v < 10:
		return cell{strconv.FormatFloat(v, 'f', 1, 64), style.Text}
	}
	return cell{strconv.FormatFloat(v, 'f', 0, 64), style.Text}
}

// Process cells (event.GPUSample.Apps, NVML only).
const (
	// procNameMaxW is the most cells of a process name the procs column
	// shows (a Linux process name, comm, is at most 15 bytes; a longer
	// name or path is cut).
	procNameMaxW = 15
	// leftoverMiB: a GPU with at least this much memory used (MiB) and no
	// process listed is flagged. A server killed without its children,
	// or one in another container, holds memory that nothing here owns;
	// an idle GPU uses well under it.
	leftoverMiB = 1024
)

// procSummary is what one sample's Apps say about one GPU. It is
// comparable, so an unchanged summary leaves the row's cache alone.
type procSummary struct {
	known bool   // the sample listed processes (Apps not nil)
	n     int    // processes on the GPU
	top   string // the name of the one using the most memory: sanitised, its last path element, cut to procNameMaxW
}

// summarizeProcs counts the processes of apps on g (matched by bus id or
// UUID) and names the one using the most memory (the first listed when
// none reads a value).
func summarizeProcs(apps []event.ComputeApp, g *event.GPU) procSummary {
	if apps == nil {
		return procSummary{}
	}
	ps := procSummary{known: true}
	best, topName := -1.0, ""
	for i := range apps {
		a := &apps[i]
		if !appOn(a, g) {
			continue
		}
		ps.n++
		used := -0.5 // below any reading, above "not read yet"
		if a.UsedMiB.Valid() {
			used = a.UsedMiB.Value
		}
		if used > best {
			best = used
			topName = ""
			if a.Name.Status == event.CellOK {
				topName = a.Name.S
			}
		}
	}
	if topName != "" {
		n := sanitize.String(topName)
		if i := strings.LastIndexByte(n, '/'); i >= 0 && i < len(n)-1 {
			n = n[i+1:]
		}
		ps.top = style.Truncate(n, procNameMaxW)
	}
	return ps
}

// appOn reports whether app a runs on GPU g: the same bus id, or else the
// same UUID.
func appOn(a *event.ComputeApp, g *event.GPU) bool {
	if a.BusID.Status == event.CellOK && g.BusID.Status == event.CellOK && gpu.SameBus(a.BusID.S, g.BusID.S) {
		return true
	}
	return a.UUID.Status == event.CellOK && g.UUID.Status == event.CellOK && a.UUID.S != "" && a.UUID.S == g.UUID.S
}

// procsCells formats the procs column, in full ("2 python3") and short
// (the count alone): "-" when the sample listed no processes. A GPU with
// none listed and leftoverMiB or more in use reads "0, 78G held" ("0
// 78G" short) in the warning tone.
func procsCells(ps procSummary, g *event.GPU) (full, short cell) {
	if !ps.known {
		return cell{"-", style.Dim}, cell{"-", style.Dim}
	}
	n := strconv.Itoa(ps.n)
	if ps.n == 0 {
		if u := g.MemUsedMiB; u.Valid() && u.Value >= leftoverMiB && u.Value < 1<<30 { // 1 PiB: no real GPU
			gib := u.Value / 1024
			prec := 0
			if gib < 10 {
				prec = 1
			}
			held := strconv.FormatFloat(gib, 'f', prec, 64) + "G"
			return cell{"0, " + held + " held", style.Warn}, cell{"0 " + held, style.Warn}
		}
		return cell{"0", style.Text}, cell{"0", style.Text}
	}
	if ps.top == "" {
		return cell{n, style.Text}, cell{n, style.Text}
	}
	return cell{n + " " + ps.top, style.Text}, cell{n, style.Text}
}
