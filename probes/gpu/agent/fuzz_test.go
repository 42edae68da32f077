package agent

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// gen builds values from fuzz bytes; it returns zeros when they run out.
type gen struct{ b []byte }

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *gen) u64() uint64 {
	var x [8]byte
	n := copy(x[:], g.b)
	g.b = g.b[n:]
	return binary.LittleEndian.Uint64(x[:])
}

var fuzzTokens = []string{"", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[GPU is lost]",
	"ERR!", "[Requested functionality has been deprecated]", "[Insufficient Permissions]", "[]", "[",
	"garbled", "12 W", "P0", "NVIDIA H200", "é\x00\"\\\x1b[2J", "\xff\xfe"}

func (g *gen) str() string {
	c := g.byte()
	if c < 200 {
		return fuzzTokens[int(c)%len(fuzzTokens)]
	}
	n := int(g.byte() % 24)
	n = min(n, len(g.b))
	s := string(g.b[:n])
	g.b = g.b[n:]
	return s
}

func (g *gen) status() event.CellStatus {
	c := g.byte()
	if c >= 240 {
		return event.CellStatus(g.byte())
	}
	return event.CellStatus(c % 11)
}

func (g *gen) float() float64 {
	switch c := g.byte(); c % 8 {
	case 0:
		return 0
	case 1, 2:
		return float64(int64(g.u64()) % 100000)
	case 3:
		return float64(int64(g.u64())%10000000) / 100
	default:
		return math.Float64frombits(g.u64())
	}
}

func (g *gen) reading() event.Reading {
	switch g.byte() % 4 {
	case 0:
		return event.Reading{Value: g.float()}
	case 1:
		return event.Reading{Status: event.CellAbsent}
	}
	r := event.Reading{Status: g.status(), Raw: g.str()}
	if g.byte()%3 == 0 {
		r.Value = g.float()
	}
	return r
}

func (g *gen) text() event.Text {
	if g.byte()%4 == 0 {
		return event.Text{Status: event.CellAbsent}
	}
	return event.Text{Status: g.status(), S: g.str()}
}

func (g *gen) time() time.Time {
	switch g.byte() % 4 {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(int64(g.u64()), int64(g.u64()%1e9))
	}
	return time.Unix(0, int64(g.u64()))
}

func (g *gen) sample() event.GPUSample {
	s := event.GPUSample{At: g.time()}
	n := int(g.byte() % 4)
	if n > 0 || g.byte()%2 == 0 {
		s.GPUs = make([]event.GPU, 0, n)
	}
	for range n {
		s.GPUs = append(s.GPUs, event.GPU{
			Index: int(uint32(g.u64()) >> 1), Name: g.text(), BusID: g.text(), UUID: g.text(),
			UtilGPUPct: g.reading(), UtilMemPct: g.reading(), MemUsedMiB: g.reading(), MemTotalMiB: g.reading(),
			PowerDrawW: g.reading(), PowerLimitW: g.reading(), TempC: g.reading(), SMClockMHz: g.reading(),
			MemClockMHz: g.reading(), SMClockMax: g.reading(), FanPct: g.reading(), PState: g.text(),
			PCIeGenCurrent: g.reading(), PCIeGenMax: g.reading(), PCIeWidthCurrent: g.reading(), PCIeWidthMax: g.reading(),
			ClockEvents: event.ClockEvents{Mask: event.ClockEventReason(g.u64() >> (g.byte() % 65)), Status: g.status(), Raw: g.str()},
			Persistence: g.text(), ECCMode: g.text(), MIGMode: g.text(), Lost: g.byte()%2 == 0,
			PCIeRxKBs: g.reading(), PCIeTxKBs: g.reading(),
		})
	}
	if c := g.byte() % 3; c > 0 {
		s.Missing = []int{}
		for range c - 1 {
			s.Missing = append(s.Missing, int(g.u64()>>1)) // indices: 0 or more
		}
	}
	if c := g.byte() % 3; c > 0 {
		s.Apps = []event.ComputeApp{}
		for range c - 1 {
			s.Apps = append(s.Apps, event.ComputeApp{PID: int(int64(g.u64())), PIDStatus: g.status(), Name: g.text(),
				UsedMiB: g.reading(), BusID: g.text(), UUID: g.text()})
		}
	}
	return s
}

// validStrings replaces each byte of invalid UTF-8 in every string of s by
// U+FFFD, as the encoder does.
func validStrings(s event.GPUSample) event.GPUSample {
	fix := func(x string) string {
		if utf8.ValidString(x) {
			return x
		}
		return string([]rune(x))
	}
	fr := func(r *event.Reading) { r.Raw = fix(r.Raw) }
	ft := func(t *event.Text) { t.S = fix(t.S) }
	for i := range s.GPUs {
		g := &s.GPUs[i]
		for _, t := range []*event.Text{&g.Name, &g.BusID, &g.UUID, &g.PState, &g.Persistence, &g.ECCMode, &g.MIGMode} {
			ft(t)
		}
		for _, r := range []*event.Reading{&g.UtilGPUPct, &g.UtilMemPct, &g.MemUsedMiB, &g.MemTotalMiB, &g.PowerDrawW,
			&g.PowerLimitW, &g.TempC, &g.SMClockMHz, &g.MemClockMHz, &g.SMClockMax, &g.FanPct, &g.PCIeGenCurrent,
			&g.PCIeGenMax, &g.PCIeWidthCurrent, &g.PCIeWidthMax, &g.PCIeRxKBs, &g.PCIeTxKBs} {
			fr(r)
		}
		g.ClockEvents.Raw = fix(g.ClockEvents.Raw)
	}
	for i := range s.Apps {
		a := &s.Apps[i]
		ft(&a.Name)
		fr(&a.UsedMiB)
		ft(&a.BusID)
		ft(&a.UUID)
	}
	return s
}

// FuzzRoundTrip: decoding what AppendSample wrote gives the same sample.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendSample(nil, sample8()))
	f.Add([]byte("\x03\x01\x02\x03\xff\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		s := g.sample()
		line := AppendSample(nil, s)
		if bytes.Count(line, []byte{'\n'}) != 1 {
			t.Fatalf("not one line: %q", line)
		}
		var d Decoder
		m, err := d.Decode(line)
		if err != nil {
			t.Fatalf("Decode: %v\nline: %s", err, line)
		}
		if df := diff(validStrings(s), m.Payload.(event.GPUSample)); df != "" {
			t.Fatalf("round trip: %s\nline: %s", df, line)
		}
		x := event.Xid{Index: int(int64(g.u64())), UUID: g.str(), BusID: g.str(), Code: g.u64()}
		at := g.time()
		for _, p := range []event.Payload{x,
			event.GPUFailure{Class: event.GPUFailureClass(g.str()), BusID: g.str(), Reason: g.str(), NeedsReboot: g.byte()%2 == 0, NVMLVersion: g.str(), Line: g.str()},
			event.GPUStale{LastSample: g.time(), Missed: int(int64(g.u64())), Reason: g.str()}} {
			line, _ := AppendEvent(nil, event.Event{At: at, Data: p})
			m, err := d.Decode(line)
			if err != nil {
				t.Fatalf("Decode: %v\nline: %s", err, line)
			}
			// These payloads' strings are checked through a re-encoding:
			// invalid UTF-8 changes them once, then never again.
			again, _ := AppendEvent(nil, event.Event{At: m.At, Data: m.Payload})
			if !bytes.Equal(again, line) || !m.At.Equal(at) {
				t.Fatalf("re-encoded\n%s\nas\n%s", line, again)
			}
		}
	})
}

// FuzzDecode: any bytes decode or fail without panicking; what decodes
// encodes and decodes again to the same message.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"t":"hello","v":1,"version":"x","gpus":8,"interval_ms":1000}`))
	f.Add(AppendSample(nil, sample8()))
	f.Add([]byte(`{"t":"sample","gpus":[{"index":0,"temp_c":{"status":3,"raw":"x","value":"nan"},"clock_events":"[N/A]"}],"missing":[],"apps":[{"pid":1,"pid_status":2}]}`))
	f.Add([]byte(`{"t":"xid","at":[-5,3],"code":79}`))
	f.Add([]byte(`{"t":"failure","class":"\ud83d\ude00\u0000\ud800"}`))
	f.Add([]byte(`{"t":"future","x":[{},[],-0.5e+3,true,null]}`))
	f.Add([]byte(`{"t":"hello","v":1,"simulated":true}`))
	f.Add([]byte(`{"t":"alive","at":1764400000123456789}`))
	f.Add([]byte(`{"t":"launch","pid":4242}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Decoder
		m, err := d.Decode(data)
		if err != nil {
			return
		}
		var line []byte
		switch m.Kind {
		case KindHello:
			line = AppendHello(nil, m.Hello)
		case KindUnavailable:
			line = AppendUnavailable(nil, m.Unavailable)
		case KindAlive:
			line = AppendAlive(nil, m.At)
		case KindLaunch:
			line = AppendLaunch(nil, m.Launch)
		case KindUnknown:
			return
		default:
			var ok bool
			line, ok = AppendEvent(nil, event.Event{At: m.At, Data: m.Payload})
			if !ok {
				t.Fatalf("payload %T not encodable", m.Payload)
			}
		}
		m2, err := d.Decode(line)
		if err != nil {
			t.Fatalf("re-decode: %v\nline: %s", err, line)
		}
		if df := diff(m, m2); df != "" {
			t.Fatalf("re-decoded differently: %s\nin:   %s\nline: %s", df, data, line)
		}
	})
}

// FuzzReader: any stream is read to its end without panicking, one
// message or error per line.
func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"t\":\"hello\",\"v\":1}\ngarbage\n\n{\"t\":\"stale\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		lines := strings.Count(string(data), "\n") + 1
		for i := 0; ; i++ {
			if i > lines {
				t.Fatalf("more than %d results from %d lines", i, lines)
			}
			if _, err := r.Next(); err != nil {
				if _, ok := err.(*LineError); ok {
					continue
				}
				return
			}
		}
	})
}
