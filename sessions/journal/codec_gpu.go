package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/jsonappend"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// KeyframeEvery is how often, in event time, a gpu-sample is written whole
// (a keyframe); the samples between store only the fields that differ from
// the keyframe's row of the same GPU, so each can be decoded from its
// keyframe alone and a damaged line costs only itself. A sample is also a
// keyframe when the writer dropped one, and when its processes (Apps)
// are mostly new (keyframeApps).
const KeyframeEvery = 60 * time.Second

// gpu-sample data: [flags, (missing), (at), (apps), row, row, ...]
//
//	flags  bit 0: keyframe; bit 1: a Missing list follows; bit 2: Sample.At
//	       follows as event-time seconds (when it differs from the event's
//	       time); bit 3: Sample.At is the zero time; bit 4: an Apps list
//	       follows (codec_gpuapps.go); bit 5: Apps are the keyframe's
//	       (neither: Apps is nil)
//	row    [index, mask, value...]: mask bit i set means field i follows
//	       (gpuFieldNames order). A full row has every bit of
//	       gpuFullMask (fields 0-23) set; of the later fields (24, 25: PCIe
//	       throughput) it holds those that are not Absent. Keyframe rows,
//	       and rows of GPUs the keyframe lacks, are full. Any other row is a
//	       delta: its absent fields are its keyframe row's.
//
// A Reading is a number when OK with no Raw text, else [status, raw] or
// [status, raw, value]; a Text is a string when OK, else [status, text];
// ClockEvents is the mask when OK with no Raw, else [status, raw, mask];
// Lost is 0 or 1.
//
// Fields 24 and 25 and flag bits 4 and 5 came with NVML sampling (issue
// 8). A sample without them (every nvidia-smi sample) is written as
// before; a reader built earlier reports a line that uses them as
// undecodable rather than misreading it.
const (
	gpuFlagKey     = 1
	gpuFlagMissing = 2
	gpuFlagAt      = 4
	gpuFlagZeroAt  = 8
	gpuFlagApps    = 16
	gpuFlagKeyApps = 32
	gpuFlagsAll    = 63
)

// gpuFieldNames names the fields of a gpu-sample row, in mask bit order.
var gpuFieldNames = [...]string{
	"Name", "BusID", "UUID", "UtilGPUPct", "UtilMemPct", "MemUsedMiB", "MemTotalMiB", "PowerDrawW",
	"PowerLimitW", "TempC", "SMClockMHz", "MemClockMHz", "SMClockMax", "FanPct", "PState",
	"PCIeGenCurrent", "PCIeGenMax", "PCIeWidthCurrent", "PCIeWidthMax", "ClockEvents",
	"Persistence", "ECCMode", "MIGMode", "Lost", "PCIeRxKBs", "PCIeTxKBs",
}

const (
	gpuNFields  = len(gpuFieldNames)
	gpuAllMask  = 1<<gpuNFields - 1
	fClockEvent = 19
	fLost       = 23
	// gpuFullMask marks a full row: fields 0-23, the format's first
	// fields, every one of them always written in a full row. The later
	// fields are written in a full row only when not Absent.
	gpuFullMask = 1<<(fLost+1) - 1
)

// absentReading is a later field's value in a full row that leaves it out.
var absentReading = event.Reading{Status: event.CellAbsent}

// gpuEncState is the writer's keyframe: when it was written, its rows
// and its Apps.
type gpuEncState struct {
	has   bool
	keyAt time.Time
	base  map[int]event.GPU
	apps  []event.ComputeApp // the keyframe's Apps (nil when it had none)
}

// gpuDecState is the reader's keyframe rows and Apps; has is false before
// the first keyframe (and after a damaged one).
type gpuDecState struct {
	has  bool
	base map[int]event.GPU
	apps []event.ComputeApp
}

func encGPUSample(st *encState, b []byte, at time.Time, p event.Payload) ([]byte, error) {
	s, err := payloadAs[event.GPUSample](p)
	if err != nil {
		return b, err
	}
	es := &st.gpu
	key := !es.has || at.Sub(es.keyAt) >= KeyframeEvery || at.Before(es.keyAt) ||
		s.Apps != nil && unseenApps(s.Apps, es.apps) >= keyframeApps
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
	switch {
	case s.Apps == nil:
	case !key && es.apps != nil && slices.Equal(s.Apps, es.apps):
		flags |= gpuFlagKeyApps
	default:
		flags |= gpuFlagApps
	}
	b = append(b, '[')
	b = jsonappend.Float(b, float64(flags))
	if flags&gpuFlagMissing != 0 {
		b = append(b, ",["...)
		for i, m := range s.Missing {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonappend.Float(b, float64(m))
		}
		b = append(b, ']')
	}
	if flags&gpuFlagAt != 0 {
		b = append(b, ',')
		b = appendMicros(b, toMicros(s.At, st.created))
	}
	if flags&gpuFlagApps != 0 {
		b = append(b, ',')
		var ref []event.ComputeApp
		if !key {
			ref = es.apps
		}
		b = appendApps(b, s.Apps, ref)
	}
	if key {
		if es.base == nil {
			es.base = make(map[int]event.GPU, len(s.GPUs))
		}
		clear(es.base)
		es.has, es.keyAt = true, at
		es.apps = slices.Clone(s.Apps)
	}
	for i := range s.GPUs {
		g := &s.GPUs[i]
		mask := -1
		if !key {
			if k, ok := es.base[g.Index]; ok {
				mask = 0
				for f := range gpuNFields {
					if !fieldEqual(g, &k, f) {
						mask |= 1 << f
					}
				}
				if mask&gpuFullMask == gpuFullMask {
					mask = -1 // it would read as a full row: write it whole
				}
			}
		}
		if mask < 0 {
			mask = fullMask(g)
		}
		b = append(b, ",["...)
		b = jsonappend.Float(b, float64(g.Index))
		b = append(b, ',')
		b = jsonappend.Float(b, float64(mask))
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
	if !ok || flags < 0 || flags > gpuFlagsAll || flags&gpuFlagApps != 0 && flags&gpuFlagKeyApps != 0 {
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
	s := event.GPUSample{At: at}
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
	switch {
	case flags&gpuFlagApps != 0:
		if len(el) == 0 {
			return nil, fmt.Errorf("gpu-sample apps: %w", errSyntax)
		}
		var ref []event.ComputeApp
		if !key && ds.has {
			ref = ds.apps
		}
		if s.Apps, err = parseApps(el[0], ref); err != nil {
			return nil, fmt.Errorf("gpu-sample apps: %w", err)
		}
		el = el[1:]
	case flags&gpuFlagKeyApps != 0:
		if key || !ds.has || ds.apps == nil {
			return nil, errors.New("gpu-sample: its Apps are its keyframe's, and the keyframe has none, or is missing or damaged")
		}
		s.Apps = slices.Clone(ds.apps)
	}
	s.GPUs = make([]event.GPU, len(el))
	var base map[int]event.GPU
	if key {
		base = make(map[int]event.GPU, len(el))
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
		if mask&gpuFullMask != gpuFullMask {
			k, ok := ds.base[int(idx)]
			if !ds.has || !ok {
				return nil, fmt.Errorf("gpu-sample: GPU %d's row is a delta and its keyframe is missing or damaged", idx)
			}
			*g = k
		} else {
			// A full row leaves out the later fields that are Absent.
			g.PCIeRxKBs, g.PCIeTxKBs = absentReading, absentReading
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
			if !parseField(g, f, v[0], fs[:0]) {
				return nil, fmt.Errorf("gpu-sample GPU %d: %w", idx, fieldError(f))
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
		ds.has, ds.base, ds.apps = true, base, slices.Clone(s.Apps)
	}
	return s, nil
}

// hasNonFinite reports whether a reading of g holds NaN or ±Inf as a value.
func hasNonFinite(g event.GPU) bool {
	for f := range gpuFieldNames {
		if r := reading(&g, f); r != nil && r.Status == event.CellOK && !isFinite(r.Value) {
			return true
		}
	}
	return false
}

// gpuRowsJSONCodec is jsonCodec for a kind whose struct JSON carries GPU
// rows (rows returns them): a row written before the PCIe throughput
// fields existed has no such key, and decodes with them Absent rather than
// as a 0 KB/s reading. One writer writes every row of a line, so a key
// missing from the line is missing from each row.
func gpuRowsJSONCodec[T event.Payload](rows func(*T) *[]event.GPU) codec {
	c := redactedJSONCodec(func(v T) T {
		// encoding/json refuses NaN and ±Inf: a non-finite value (only a
		// broken agent sends one) is stored as an invalid reading, so the
		// experiment's record is written rather than lost.
		gs := rows(&v)
		if !slices.ContainsFunc(*gs, hasNonFinite) {
			return v
		}
		*gs = slices.Clone(*gs)
		for i := range *gs {
			g := &(*gs)[i]
			for f := range gpuFieldNames {
				if r := reading(g, f); r != nil && r.Status == event.CellOK && !isFinite(r.Value) {
					*r = event.Reading{Status: event.CellInvalid, Raw: strconv.FormatFloat(r.Value, 'g', -1, 64)}
				}
			}
		}
		return v
	})
	c.dec = func(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			return v, err
		}
		noRx := !bytes.Contains(data, []byte(`"PCIeRxKBs"`))
		noTx := !bytes.Contains(data, []byte(`"PCIeTxKBs"`))
		if noRx || noTx {
			gs := *rows(&v)
			for i := range gs {
				if noRx {
					gs[i].PCIeRxKBs = absentReading
				}
				if noTx {
					gs[i].PCIeTxKBs = absentReading
				}
			}
		}
		return v, nil
	}
	return c
}
