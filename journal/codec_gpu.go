package journal

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/probes/gpu"
)

// KeyframeEvery is how often, in event time, a gpu-sample is written whole
// (a keyframe); the samples between store only the fields that differ from
// the keyframe's row of the same GPU, so each can be decoded from its
// keyframe alone and a damaged line costs only itself.
const KeyframeEvery = 60 * time.Second

// gpu-sample data: [flags, (missing), (at), row, row, ...]
//
//	flags  bit 0: keyframe; bit 1: a Missing list follows; bit 2: Sample.At
//	       follows as event-time seconds (when it differs from the event's
//	       time); bit 3: Sample.At is the zero time
//	row    [index, mask, value...]: mask bit i set means field i follows
//	       (gpuFieldNames order); a row's absent fields are its keyframe
//	       row's. Keyframe rows, and rows of GPUs the keyframe lacks, have
//	       every field.
//
// A Reading is a number when OK with no Raw text, else [status, raw] or
// [status, raw, value]; a Text is a string when OK, else [status, text];
// ClockEvents is the mask when OK with no Raw, else [status, raw, mask];
// Lost is 0 or 1.
const (
	gpuFlagKey     = 1
	gpuFlagMissing = 2
	gpuFlagAt      = 4
	gpuFlagZeroAt  = 8
)

// gpuFieldNames names the fields of a gpu-sample row, in mask bit order.
var gpuFieldNames = [...]string{
	"Name", "BusID", "UUID", "UtilGPUPct", "UtilMemPct", "MemUsedMiB", "MemTotalMiB", "PowerDrawW",
	"PowerLimitW", "TempC", "SMClockMHz", "MemClockMHz", "SMClockMax", "FanPct", "PState",
	"PCIeGenCurrent", "PCIeGenMax", "PCIeWidthCurrent", "PCIeWidthMax", "ClockEvents",
	"Persistence", "ECCMode", "MIGMode", "Lost",
}

const (
	gpuNFields  = len(gpuFieldNames)
	gpuAllMask  = 1<<gpuNFields - 1
	fClockEvent = 19
	fLost       = 23
)

// reading returns the Reading of field f, nil when f is not one.
func reading(g *gpu.GPU, f int) *gpu.Reading {
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
	}
	return nil
}

// text returns the Text of field f, nil when f is not one.
func text(g *gpu.GPU, f int) *gpu.Text {
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

func fieldEqual(a, b *gpu.GPU, f int) bool {
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

func appendField(b []byte, g *gpu.GPU, f int) []byte {
	if r := reading(g, f); r != nil {
		if r.Status == gpu.OK && r.Raw == "" && isFinite(r.Value) {
			return appendNum(b, r.Value)
		}
		b = append(b, '[')
		b = appendNum(b, float64(r.Status))
		b = append(b, ',')
		b = appendSafeString(b, r.Raw)
		if r.Value != 0 || !isFinite(r.Value) || (r.Value == 0 && 1/r.Value < 0) {
			b = append(b, ',')
			b = appendNum(b, r.Value)
		}
		return append(b, ']')
	}
	if t := text(g, f); t != nil {
		if t.Status == gpu.OK {
			return appendSafeString(b, t.S)
		}
		b = append(b, '[')
		b = appendNum(b, float64(t.Status))
		b = append(b, ',')
		b = appendSafeString(b, t.S)
		return append(b, ']')
	}
	if f == fClockEvent {
		c := g.ClockEvents
		if c.Status == gpu.OK && c.Raw == "" {
			return appendNum(b, float64(c.Mask))
		}
		b = append(b, '[')
		b = appendNum(b, float64(c.Status))
		b = append(b, ',')
		b = appendSafeString(b, c.Raw)
		b = append(b, ',')
		b = appendNum(b, float64(c.Mask))
		return append(b, ']')
	}
	if g.Lost {
		return append(b, '1')
	}
	return append(b, '0')
}

// appendSafeString writes s as a JSON string, with invalid UTF-8 replaced
// (nvidia-smi text is ASCII; this only keeps the line valid JSON).
func appendSafeString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	return appendString(b, s)
}

func parseStatus(b []byte) (gpu.Status, bool) {
	n, ok := parseInt(b)
	return gpu.Status(n), ok && n >= 0 && n < 256
}

func parseField(g *gpu.GPU, f int, v []byte, scratch [][]byte) error {
	bad := fmt.Errorf("gpu field %s: %w", gpuFieldNames[f], errSyntax)
	if r := reading(g, f); r != nil {
		if v[0] != '[' {
			x, ok := parseNum(v)
			if !ok {
				return bad
			}
			*r = gpu.Reading{Value: x}
			return nil
		}
		el, err := splitArray(v, scratch[:0])
		if err != nil || len(el) < 2 || len(el) > 3 {
			return bad
		}
		st, ok1 := parseStatus(el[0])
		raw, ok2 := parseString(el[1])
		var x float64
		ok3 := true
		if len(el) == 3 {
			x, ok3 = parseNum(el[2])
		}
		if !ok1 || !ok2 || !ok3 {
			return bad
		}
		*r = gpu.Reading{Value: x, Status: st, Raw: raw}
		return nil
	}
	if t := text(g, f); t != nil {
		if v[0] != '[' {
			s, ok := parseString(v)
			if !ok {
				return bad
			}
			*t = gpu.Text{S: s}
			return nil
		}
		el, err := splitArray(v, scratch[:0])
		if err != nil || len(el) != 2 {
			return bad
		}
		st, ok1 := parseStatus(el[0])
		s, ok2 := parseString(el[1])
		if !ok1 || !ok2 {
			return bad
		}
		*t = gpu.Text{S: s, Status: st}
		return nil
	}
	if f == fClockEvent {
		if v[0] != '[' {
			m, ok := parseInt(v)
			if !ok || m < 0 {
				return bad
			}
			g.ClockEvents = gpu.ClockEvents{Mask: gpu.ClockEventReason(m)}
			return nil
		}
		el, err := splitArray(v, scratch[:0])
		if err != nil || len(el) != 3 {
			return bad
		}
		st, ok1 := parseStatus(el[0])
		raw, ok2 := parseString(el[1])
		m, ok3 := parseInt(el[2])
		if !ok1 || !ok2 || !ok3 || m < 0 {
			return bad
		}
		g.ClockEvents = gpu.ClockEvents{Mask: gpu.ClockEventReason(m), Status: st, Raw: raw}
		return nil
	}
	switch string(v) {
	case "0":
		g.Lost = false
	case "1":
		g.Lost = true
	default:
		return bad
	}
	return nil
}

// gpuEncState is the writer's keyframe: when it was written and its rows.
type gpuEncState struct {
	has   bool
	keyAt time.Time
	base  map[int]gpu.GPU
}

// gpuDecState is the reader's keyframe rows; has is false before the first
// keyframe (and after a damaged one).
type gpuDecState struct {
	has  bool
	base map[int]gpu.GPU
}

func encGPUSample(st *encState, b []byte, at time.Time, p event.Payload) ([]byte, error) {
	s, err := payloadAs[gpu.Sample](p)
	if err != nil {
		return b, err
	}
	es := &st.gpu
	key := !es.has || at.Sub(es.keyAt) >= KeyframeEvery || at.Before(es.keyAt)
	flags := 0
	if key {
		flags |= gpuFlagKey
	}
	if len(s.Missing) > 0 {
		flags |= gpuFlagMissing
	}
	switch {
	case s.At.IsZero():
		flags |= gpuFlagZeroAt
	case toMicros(s.At, st.created) != toMicros(at, st.created):
		flags |= gpuFlagAt
	}
	b = append(b, '[')
	b = appendNum(b, float64(flags))
	if flags&gpuFlagMissing != 0 {
		b = append(b, ",["...)
		for i, m := range s.Missing {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNum(b, float64(m))
		}
		b = append(b, ']')
	}
	if flags&gpuFlagAt != 0 {
		b = append(b, ',')
		b = appendMicros(b, toMicros(s.At, st.created))
	}
	if key {
		if es.base == nil {
			es.base = make(map[int]gpu.GPU, len(s.GPUs))
		}
		clear(es.base)
		es.has, es.keyAt = true, at
	}
	for i := range s.GPUs {
		g := &s.GPUs[i]
		mask := gpuAllMask
		if !key {
			if k, ok := es.base[g.Index]; ok {
				mask = 0
				for f := range gpuNFields {
					if !fieldEqual(g, &k, f) {
						mask |= 1 << f
					}
				}
			}
		}
		b = append(b, ",["...)
		b = appendNum(b, float64(g.Index))
		b = append(b, ',')
		b = appendNum(b, float64(mask))
		for f := range gpuNFields {
			if mask&(1<<f) != 0 {
				b = append(b, ',')
				b = appendField(b, g, f)
			}
		}
		b = append(b, ']')
		if key {
			es.base[g.Index] = *g
		}
	}
	return append(b, ']'), nil
}

func decGPUSample(st *decState, at time.Time, data []byte) (event.Payload, error) {
	var arr [24][]byte
	el, err := splitArray(data, arr[:0])
	if err != nil || len(el) == 0 {
		return nil, fmt.Errorf("gpu-sample: %w", errSyntax)
	}
	flags, ok := parseInt(el[0])
	if !ok || flags < 0 || flags > 15 {
		return nil, fmt.Errorf("gpu-sample flags: %w", errSyntax)
	}
	el = el[1:]
	key := flags&gpuFlagKey != 0
	ds := &st.gpu
	if key {
		// A damaged keyframe must not leave the previous one's rows to
		// decode the following deltas wrongly.
		ds.has = false
	}
	s := gpu.Sample{At: at}
	if flags&gpuFlagMissing != 0 {
		if len(el) == 0 {
			return nil, fmt.Errorf("gpu-sample missing: %w", errSyntax)
		}
		var ms [16][]byte
		m, err := splitArray(el[0], ms[:0])
		if err != nil {
			return nil, fmt.Errorf("gpu-sample missing: %w", err)
		}
		s.Missing = make([]int, len(m))
		for i, x := range m {
			n, ok := parseInt(x)
			if !ok {
				return nil, fmt.Errorf("gpu-sample missing: %w", errSyntax)
			}
			s.Missing[i] = int(n)
		}
		el = el[1:]
	}
	switch {
	case flags&gpuFlagZeroAt != 0:
		s.At = time.Time{}
	case flags&gpuFlagAt != 0:
		if len(el) == 0 {
			return nil, fmt.Errorf("gpu-sample at: %w", errSyntax)
		}
		t, ok := parseMicros(el[0])
		if !ok {
			return nil, fmt.Errorf("gpu-sample at: %w", errSyntax)
		}
		s.At = st.created.Add(t.Duration()).Local()
		el = el[1:]
	}
	s.GPUs = make([]gpu.GPU, len(el))
	var base map[int]gpu.GPU
	if key {
		base = make(map[int]gpu.GPU, len(el))
	}
	var scratch [gpuNFields + 2][]byte
	var fs [4][]byte
	for i, row := range el {
		r, err := splitArray(row, scratch[:0])
		if err != nil || len(r) < 2 {
			return nil, fmt.Errorf("gpu-sample row: %w", errSyntax)
		}
		idx, ok1 := parseInt(r[0])
		mask, ok2 := parseInt(r[1])
		if !ok1 || !ok2 || mask < 0 || mask > gpuAllMask || idx < -1<<31 || idx >= 1<<31 {
			return nil, fmt.Errorf("gpu-sample row: %w", errSyntax)
		}
		g := &s.GPUs[i]
		if mask != gpuAllMask {
			k, ok := ds.base[int(idx)]
			if !ds.has || !ok {
				return nil, fmt.Errorf("gpu-sample: GPU %d's row is a delta and its keyframe is missing or damaged", idx)
			}
			*g = k
		}
		g.Index = int(idx)
		v := r[2:]
		for f := range gpuNFields {
			if mask&(1<<f) == 0 {
				continue
			}
			if len(v) == 0 || len(v[0]) == 0 {
				return nil, fmt.Errorf("gpu-sample row: %w", errSyntax)
			}
			if err := parseField(g, f, v[0], fs[:0]); err != nil {
				return nil, fmt.Errorf("gpu-sample GPU %d: %w", idx, err)
			}
			v = v[1:]
		}
		if len(v) != 0 {
			return nil, fmt.Errorf("gpu-sample row: %w", errSyntax)
		}
		if key {
			base[g.Index] = *g
		}
	}
	if key {
		ds.has, ds.base = true, base
	}
	return s, nil
}
