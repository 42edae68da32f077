package journal

// The fields of a gpu-sample row, in gpuFieldNames order: which are
// Readings and which Texts, and how one is compared, written and read
// back.

import (
	"fmt"

	"github.com/flightdeck-dev/flightdeck/remote/jsonappend"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// fullMask is the mask of g written as a full row.
func fullMask(g *event.GPU) int {
	mask := gpuFullMask
	for f := fLost + 1; f < gpuNFields; f++ {
		if *reading(g, f) != absentReading {
			mask |= 1 << f
		}
	}
	return mask
}

// reading returns the Reading of field f, nil when f is not one.
func reading(g *event.GPU, f int) *event.Reading {
	switch f {
	case 3:
		return &g.UtilGPUPct
	case 4:
		return &g.UtilMemPct
	case 5:
		return &g.MemUsedMiB
	case 6:
		return &g.MemTotalMiB
	case 7:
		return &g.PowerDrawW
	case 8:
		return &g.PowerLimitW
	case 9:
		return &g.TempC
	case 10:
		return &g.SMClockMHz
	case 11:
		return &g.MemClockMHz
	case 12:
		return &g.SMClockMax
	case 13:
		return &g.FanPct
	case 15:
		return &g.PCIeGenCurrent
	case 16:
		return &g.PCIeGenMax
	case 17:
		return &g.PCIeWidthCurrent
	case 18:
		return &g.PCIeWidthMax
	case 24:
		return &g.PCIeRxKBs
	case 25:
		return &g.PCIeTxKBs
	}
	return nil
}

// text returns the Text of field f, nil when f is not one.
func text(g *event.GPU, f int) *event.Text {
	switch f {
	case 0:
		return &g.Name
	case 1:
		return &g.BusID
	case 2:
		return &g.UUID
	case 14:
		return &g.PState
	case 20:
		return &g.Persistence
	case 21:
		return &g.ECCMode
	case 22:
		return &g.MIGMode
	}
	return nil
}

func fieldEqual(a, b *event.GPU, f int) bool {
	if r := reading(a, f); r != nil {
		return *r == *reading(b, f)
	}
	if t := text(a, f); t != nil {
		return *t == *text(b, f)
	}
	if f == fClockEvent {
		return a.ClockEvents == b.ClockEvents
	}
	return a.Lost == b.Lost
}

func appendField(b []byte, g *event.GPU, f int) []byte {
	if r := reading(g, f); r != nil {
		return appendReading(b, *r)
	}
	if t := text(g, f); t != nil {
		return appendText(b, *t)
	}
	if f == fClockEvent {
		c := g.ClockEvents
		if c.Status == event.CellOK && c.Raw == "" {
			return jsonappend.Float(b, float64(c.Mask))
		}
		b = append(b, '[')
		b = jsonappend.Float(b, float64(c.Status))
		b = append(b, ',')
		b = jsonappend.String(b, c.Raw)
		b = append(b, ',')
		b = jsonappend.Float(b, float64(c.Mask))
		return append(b, ']')
	}
	if g.Lost {
		return append(b, '1')
	}
	return append(b, '0')
}

// appendReading writes r: a number when OK with no Raw text, else
// [status, raw] or [status, raw, value].
func appendReading(b []byte, r event.Reading) []byte {
	if r.Status == event.CellOK && r.Raw == "" && isFinite(r.Value) {
		return jsonappend.Float(b, r.Value)
	}
	b = append(b, '[')
	b = jsonappend.Float(b, float64(r.Status))
	b = append(b, ',')
	b = jsonappend.String(b, r.Raw)
	if r.Value != 0 || !isFinite(r.Value) || (r.Value == 0 && 1/r.Value < 0) {
		b = append(b, ',')
		b = jsonappend.Float(b, r.Value)
	}
	return append(b, ']')
}

// appendText writes t: a string when OK, else [status, text].
func appendText(b []byte, t event.Text) []byte {
	if t.Status == event.CellOK {
		return jsonappend.String(b, t.S)
	}
	b = append(b, '[')
	b = jsonappend.Float(b, float64(t.Status))
	b = append(b, ',')
	b = jsonappend.String(b, t.S)
	return append(b, ']')
}

func parseStatus(b []byte) (event.CellStatus, bool) {
	n, ok := parseInt(b)
	return event.CellStatus(n), ok && n >= 0 && n < 256
}

// fieldError is the error of field f that parseField refused (made only
// then: a sample has about 200 fields).
func fieldError(f int) error { return fmt.Errorf("gpu field %s: %w", gpuFieldNames[f], errSyntax) }

// parseField reads field f of g from v; false when v is not its form.
func parseField(g *event.GPU, f int, v []byte, scratch [][]byte) bool {
	if r := reading(g, f); r != nil {
		x, ok := parseReading(v, scratch)
		if !ok {
			return false
		}
		*r = x
		return true
	}
	if t := text(g, f); t != nil {
		x, ok := parseText(v, scratch)
		if !ok {
			return false
		}
		*t = x
		return true
	}
	if f == fClockEvent {
		if v[0] != '[' {
			m, ok := parseInt(v)
			if !ok || m < 0 {
				return false
			}
			g.ClockEvents = event.ClockEvents{Mask: event.ClockEventReason(m)}
			return true
		}
		el, err := splitArray(v, scratch[:0])
		if err != nil || len(el) != 3 {
			return false
		}
		st, ok1 := parseStatus(el[0])
		raw, ok2 := parseString(el[1])
		m, ok3 := parseInt(el[2])
		if !ok1 || !ok2 || !ok3 || m < 0 {
			return false
		}
		g.ClockEvents = event.ClockEvents{Mask: event.ClockEventReason(m), Status: st, Raw: raw}
		return true
	}
	switch string(v) {
	case "0":
		g.Lost = false
	case "1":
		g.Lost = true
	default:
		return false
	}
	return true
}

// parseReading reads what appendReading writes; v is not empty.
func parseReading(v []byte, scratch [][]byte) (event.Reading, bool) {
	if v[0] != '[' {
		x, ok := parseNum(v)
		return event.Reading{Value: x}, ok
	}
	el, err := splitArray(v, scratch[:0])
	if err != nil || len(el) < 2 || len(el) > 3 {
		return event.Reading{}, false
	}
	st, ok1 := parseStatus(el[0])
	raw, ok2 := parseString(el[1])
	var x float64
	ok3 := true
	if len(el) == 3 {
		x, ok3 = parseNum(el[2])
	}
	return event.Reading{Value: x, Status: st, Raw: raw}, ok1 && ok2 && ok3
}

// parseText reads what appendText writes; v is not empty.
func parseText(v []byte, scratch [][]byte) (event.Text, bool) {
	if v[0] != '[' {
		s, ok := parseString(v)
		return event.Text{S: s}, ok
	}
	el, err := splitArray(v, scratch[:0])
	if err != nil || len(el) != 2 {
		return event.Text{}, false
	}
	st, ok1 := parseStatus(el[0])
	s, ok2 := parseString(el[1])
	return event.Text{S: s, Status: st}, ok1 && ok2
}
