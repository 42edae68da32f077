package agent

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The encoder appends to a caller's buffer and never reflects: the agent
// writes a line a tick, and the cockpit's tests encode millions in fuzzing.

// AppendHello appends h as a hello line (with "v" = ProtocolVersion and
// the interval in whole milliseconds) and its "\n".
func AppendHello(b []byte, h Hello) []byte {
	b = append(b, `{"t":"hello","v":`...)
	b = strconv.AppendInt(b, ProtocolVersion, 10)
	b = append(b, `,"version":`...)
	b = appendString(b, h.Version)
	b = append(b, `,"driver":`...)
	b = appendString(b, h.Driver)
	b = append(b, `,"nvml":`...)
	b = appendString(b, h.NVML)
	b = append(b, `,"cuda":`...)
	b = strconv.AppendInt(b, int64(h.CUDA), 10)
	b = append(b, `,"gpus":`...)
	b = strconv.AppendInt(b, int64(h.GPUs), 10)
	b = append(b, `,"interval_ms":`...)
	b = strconv.AppendInt(b, h.Interval.Milliseconds(), 10)
	if h.Simulated {
		b = append(b, `,"simulated":true`...)
	}
	return append(b, "}\n"...)
}

// AppendAlive appends a heartbeat line written at at and its "\n":
// {"t":"alive","at":1764400000123456789}.
func AppendAlive(b []byte, at time.Time) []byte {
	b = append(b, `{"t":"alive"`...)
	b = appendTimeKey(b, `,"at":`, at)
	return append(b, "}\n"...)
}

// AppendLaunch appends a launch line and its "\n": {"t":"launch","pid":4242}.
// The cockpit's launcher script writes the same with printf; this is for
// tests and other launchers.
func AppendLaunch(b []byte, l Launch) []byte {
	b = append(b, `{"t":"launch","pid":`...)
	b = strconv.AppendInt(b, int64(l.PID), 10)
	return append(b, "}\n"...)
}

// AppendUnavailable appends u as an unavailable line (with "v" =
// ProtocolVersion) and its "\n".
func AppendUnavailable(b []byte, u Unavailable) []byte {
	b = append(b, `{"t":"unavailable","v":`...)
	b = strconv.AppendInt(b, ProtocolVersion, 10)
	b = append(b, `,"reason":`...)
	b = appendString(b, u.Reason)
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(u.Code), 10)
	return append(b, "}\n"...)
}

// AppendEvent appends the line for an event whose payload the protocol
// carries (event.GPUSample, event.Xid, event.GPUFailure, event.GPUStale) and reports true;
// for any other payload it returns b unchanged and false. A sample's time
// is Sample.At (the event's time when Sample.At is zero); the others carry
// the event's time.
func AppendEvent(b []byte, e event.Event) ([]byte, bool) {
	switch p := e.Data.(type) {
	case event.GPUSample:
		if p.At.IsZero() {
			p.At = e.At
		}
		return AppendSample(b, p), true
	case event.Xid:
		return AppendXid(b, e.At, p), true
	case event.GPUFailure:
		return AppendFailure(b, e.At, p), true
	case event.GPUStale:
		return AppendStale(b, e.At, p), true
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState,
		event.DriverState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUSource, event.GitAction, event.GitMoved, event.GitStatus,
		event.JournalStatus, event.Key, event.KillStep, event.LogBench, event.LogFollowError,
		event.LogLines, event.LogNotice, event.LogReset, event.Note, event.Prefill, event.Repeat,
		event.RepeatProgress, event.RepoHead, event.RepoUnreadable, event.ServerFailure,
		event.ServerHealthy, event.ServerLaunched, event.ServerObserved, event.ServerReady,
		event.ServerStatus, event.Session, event.SpecDecode, event.Throughput, event.TokRate:
		// not in the agent protocol
	}
	return b, false
}

// AppendSample appends s as a sample line and its "\n" (see the package
// documentation for the format).
func AppendSample(b []byte, s event.GPUSample) []byte {
	b = append(b, `{"t":"sample"`...)
	b = appendTimeKey(b, `,"at":`, s.At)
	if s.GPUs != nil {
		b = append(b, `,"gpus":[`...)
		for i := range s.GPUs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendGPU(b, &s.GPUs[i])
		}
		b = append(b, ']')
	}
	if s.Missing != nil {
		b = append(b, `,"missing":[`...)
		for i, m := range s.Missing {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(m), 10)
		}
		b = append(b, ']')
	}
	if s.Apps != nil {
		b = append(b, `,"apps":[`...)
		for i := range s.Apps {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendApp(b, &s.Apps[i])
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

// AppendXid appends x, seen at at, as an xid line and its "\n".
func AppendXid(b []byte, at time.Time, x event.Xid) []byte {
	b = append(b, `{"t":"xid"`...)
	b = appendTimeKey(b, `,"at":`, at)
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(x.Index), 10)
	b = appendStringKey(b, `,"uuid":`, x.UUID)
	b = appendStringKey(b, `,"pci_bus_id":`, x.BusID)
	b = append(b, `,"code":`...)
	b = strconv.AppendUint(b, x.Code, 10)
	return append(b, "}\n"...)
}

// AppendFailure appends f, seen at at, as a failure line and its "\n".
func AppendFailure(b []byte, at time.Time, f event.GPUFailure) []byte {
	b = append(b, `{"t":"failure"`...)
	b = appendTimeKey(b, `,"at":`, at)
	b = append(b, `,"class":`...)
	b = appendString(b, string(f.Class))
	b = appendStringKey(b, `,"pci_bus_id":`, f.BusID)
	b = appendStringKey(b, `,"reason":`, f.Reason)
	if f.NeedsReboot {
		b = append(b, `,"needs_reboot":true`...)
	}
	b = appendStringKey(b, `,"nvml_version":`, f.NVMLVersion)
	b = appendStringKey(b, `,"line":`, f.Line)
	return append(b, "}\n"...)
}

// AppendStale appends s, seen at at, as a stale line and its "\n".
func AppendStale(b []byte, at time.Time, s event.GPUStale) []byte {
	b = append(b, `{"t":"stale"`...)
	b = appendTimeKey(b, `,"at":`, at)
	b = appendTimeKey(b, `,"last_sample":`, s.LastSample)
	b = append(b, `,"missed":`...)
	b = strconv.AppendInt(b, int64(s.Missed), 10)
	b = appendStringKey(b, `,"reason":`, s.Reason)
	return append(b, "}\n"...)
}

// GPU object keys, in event.GPU field order.
const (
	keyIndex            = "index"
	keyName             = "name"
	keyBusID            = "pci_bus_id"
	keyUUID             = "uuid"
	keyUtilGPU          = "util_gpu_pct"
	keyUtilMem          = "util_mem_pct"
	keyMemUsed          = "mem_used_mib"
	keyMemTotal         = "mem_total_mib"
	keyPowerDraw        = "power_draw_w"
	keyPowerLimit       = "power_limit_w"
	keyTemp             = "temp_c"
	keySMClock          = "sm_clock_mhz"
	keyMemClock         = "mem_clock_mhz"
	keySMClockMax       = "sm_clock_max_mhz"
	keyFan              = "fan_speed_pct"
	keyPState           = "pstate"
	keyPCIeGenCurrent   = "pcie_gen_current"
	keyPCIeGenMax       = "pcie_gen_max"
	keyPCIeWidthCurrent = "pcie_width_current"
	keyPCIeWidthMax     = "pcie_width_max"
	keyClockEvents      = "clock_events"
	keyPersistence      = "persistence_mode"
	keyECC              = "ecc_mode"
	keyMIG              = "mig_mode"
	keyLost             = "lost"
	keyPCIeRx           = "pcie_rx_kbs"
	keyPCIeTx           = "pcie_tx_kbs"
)

func appendGPU(b []byte, g *event.GPU) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(g.Index), 10)
	b = appendText(b, `,"`+keyName+`":`, g.Name)
	b = appendText(b, `,"`+keyBusID+`":`, g.BusID)
	b = appendText(b, `,"`+keyUUID+`":`, g.UUID)
	b = appendReading(b, `,"`+keyUtilGPU+`":`, g.UtilGPUPct)
	b = appendReading(b, `,"`+keyUtilMem+`":`, g.UtilMemPct)
	b = appendReading(b, `,"`+keyMemUsed+`":`, g.MemUsedMiB)
	b = appendReading(b, `,"`+keyMemTotal+`":`, g.MemTotalMiB)
	b = appendReading(b, `,"`+keyPowerDraw+`":`, g.PowerDrawW)
	b = appendReading(b, `,"`+keyPowerLimit+`":`, g.PowerLimitW)
	b = appendReading(b, `,"`+keyTemp+`":`, g.TempC)
	b = appendReading(b, `,"`+keySMClock+`":`, g.SMClockMHz)
	b = appendReading(b, `,"`+keyMemClock+`":`, g.MemClockMHz)
	b = appendReading(b, `,"`+keySMClockMax+`":`, g.SMClockMax)
	b = appendReading(b, `,"`+keyFan+`":`, g.FanPct)
	b = appendText(b, `,"`+keyPState+`":`, g.PState)
	b = appendReading(b, `,"`+keyPCIeGenCurrent+`":`, g.PCIeGenCurrent)
	b = appendReading(b, `,"`+keyPCIeGenMax+`":`, g.PCIeGenMax)
	b = appendReading(b, `,"`+keyPCIeWidthCurrent+`":`, g.PCIeWidthCurrent)
	b = appendReading(b, `,"`+keyPCIeWidthMax+`":`, g.PCIeWidthMax)
	b = appendClockEvents(b, g.ClockEvents)
	b = appendText(b, `,"`+keyPersistence+`":`, g.Persistence)
	b = appendText(b, `,"`+keyECC+`":`, g.ECCMode)
	b = appendText(b, `,"`+keyMIG+`":`, g.MIGMode)
	if g.Lost {
		b = append(b, `,"`+keyLost+`":true`...)
	}
	b = appendReading(b, `,"`+keyPCIeRx+`":`, g.PCIeRxKBs)
	b = appendReading(b, `,"`+keyPCIeTx+`":`, g.PCIeTxKBs)
	return append(b, '}')
}

func appendApp(b []byte, a *event.ComputeApp) []byte {
	b = append(b, `{"pid":`...)
	b = strconv.AppendInt(b, int64(a.PID), 10)
	if a.PIDStatus != event.CellOK {
		b = append(b, `,"pid_status":`...)
		b = strconv.AppendUint(b, uint64(a.PIDStatus), 10)
	}
	b = appendText(b, `,"name":`, a.Name)
	b = appendReading(b, `,"used_mib":`, a.UsedMiB)
	b = appendText(b, `,"pci_bus_id":`, a.BusID)
	b = appendText(b, `,"uuid":`, a.UUID)
	return append(b, '}')
}

// tokenStatus classifies a non-value token as probes/gpu does for
// nvidia-smi's cells: ok is false when s is not one.
func tokenStatus(s string) (st event.CellStatus, ok bool) {
	switch s {
	case "":
		return event.CellEmpty, true
	case "[N/A]", "N/A":
		return event.CellNA, true
	case "[Not Supported]":
		return event.CellNotSupported, true
	case "[Unknown Error]":
		return event.CellUnknownError, true
	case "[GPU is lost]":
		return event.CellLost, true
	case "ERR!":
		return event.CellErr, true
	case "[Requested functionality has been deprecated]":
		return event.CellDeprecated, true
	}
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return event.CellOther, true
	}
	return event.CellOK, false
}

// rawStatus is the Status a Reading or ClockEvents written as the string
// raw reads back with: its token's, else Invalid (garbled text).
func rawStatus(raw string) event.CellStatus {
	if st, ok := tokenStatus(raw); ok {
		return st
	}
	return event.CellInvalid
}

// textStatus is the Status a Text written as the string s reads back with:
// its token's, else OK.
func textStatus(s string) event.CellStatus {
	st, _ := tokenStatus(s)
	return st
}

func isPosZero(v float64) bool { return math.Float64bits(v) == 0 }

func isFinite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// appendReading appends key and r in the shortest form that reads back
// exactly; nothing for an Absent reading without value or text.
func appendReading(b []byte, key string, r event.Reading) []byte {
	switch {
	case r.Status == event.CellOK && r.Raw == "" && isFinite(r.Value):
		b = append(b, key...)
		return appendNum(b, r.Value)
	case r.Status == event.CellAbsent && r.Raw == "" && isPosZero(r.Value):
		return b
	case isPosZero(r.Value) && r.Status == rawStatus(r.Raw) && validUTF8(r.Raw):
		b = append(b, key...)
		return appendString(b, r.Raw)
	}
	b = append(b, key...)
	b = append(b, `{"status":`...)
	b = strconv.AppendUint(b, uint64(r.Status), 10)
	if r.Raw != "" {
		b = append(b, `,"raw":`...)
		b = appendString(b, r.Raw)
	}
	if !isPosZero(r.Value) {
		b = append(b, `,"value":`...)
		b = appendNumOrWord(b, r.Value)
	}
	return append(b, '}')
}

// appendText appends key and t in the shortest form that reads back
// exactly; nothing for an Absent text without a string.
func appendText(b []byte, key string, t event.Text) []byte {
	switch {
	case t.Status == event.CellAbsent && t.S == "":
		return b
	case t.Status == textStatus(t.S) && validUTF8(t.S):
		b = append(b, key...)
		return appendString(b, t.S)
	}
	b = append(b, key...)
	b = append(b, `{"status":`...)
	b = strconv.AppendUint(b, uint64(t.Status), 10)
	b = append(b, `,"s":`...)
	b = appendString(b, t.S)
	return append(b, '}')
}

func appendClockEvents(b []byte, c event.ClockEvents) []byte {
	const key = `,"` + keyClockEvents + `":`
	switch {
	case c.Status == event.CellOK && c.Raw == "":
		b = append(b, key...)
		return strconv.AppendUint(b, uint64(c.Mask), 10)
	case c.Status == event.CellAbsent && c.Raw == "" && c.Mask == 0:
		return b
	case c.Mask == 0 && c.Status == rawStatus(c.Raw) && validUTF8(c.Raw):
		b = append(b, key...)
		return appendString(b, c.Raw)
	}
	b = append(b, key...)
	b = append(b, `{"status":`...)
	b = strconv.AppendUint(b, uint64(c.Status), 10)
	if c.Raw != "" {
		b = append(b, `,"raw":`...)
		b = appendString(b, c.Raw)
	}
	if c.Mask != 0 {
		b = append(b, `,"mask":`...)
		b = strconv.AppendUint(b, uint64(c.Mask), 10)
	}
	return append(b, '}')
}

// appendTimeKey appends key and t as Unix nanoseconds, or as [seconds,
// nanoseconds] outside the years 1678–2262 that int64 nanoseconds cover;
// nothing for the zero time.
func appendTimeKey(b []byte, key string, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = append(b, key...)
	if ns := t.UnixNano(); time.Unix(0, ns).Equal(t) {
		return strconv.AppendInt(b, ns, 10)
	}
	b = append(b, '[')
	b = strconv.AppendInt(b, t.Unix(), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(t.Nanosecond()), 10)
	return append(b, ']')
}

func appendStringKey(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return appendString(b, s)
}

// appendNum writes a finite v as the shortest JSON number that reads back
// as v (integers without a fraction; -0 as "-0").
func appendNum(b []byte, v float64) []byte {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 && !(v == 0 && math.Signbit(v)) {
		return strconv.AppendInt(b, int64(v), 10)
	}
	if a := math.Abs(v); a >= 1e-6 && a < 1e21 || a == 0 {
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendNumOrWord is appendNum that writes the non-finite values JSON
// lacks as the strings "nan", "inf" and "-inf".
func appendNumOrWord(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, `"nan"`...)
	case math.IsInf(v, 1):
		return append(b, `"inf"`...)
	case math.IsInf(v, -1):
		return append(b, `"-inf"`...)
	}
	return appendNum(b, v)
}

const hexDigits = "0123456789abcdef"

func validUTF8(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return utf8.ValidString(s[i:])
		}
	}
	return true
}

// appendString writes s as a JSON string: '"', '\\' and control characters
// (ANSI escapes included) escaped, each byte that is not valid UTF-8
// written as U+FFFD, everything else as is.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += n
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
