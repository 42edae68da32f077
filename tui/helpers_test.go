package tui

import (
	"fmt"
	"math"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// t0 is the synthetic session start; every test event is at t0 + offset.
var t0 = time.Date(2025, 10, 22, 10, 27, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func ok(v float64) event.Reading { return event.Reading{Value: v, Status: event.CellOK} }

func bad(st event.CellStatus, raw string) event.Reading { return event.Reading{Status: st, Raw: raw} }

func txt(s string) event.Text { return event.Text{S: s, Status: event.CellOK} }

// h200 is a busy, healthy H200 on PCIe Gen5 x16 (the DESIGN.md reference
// host). Values vary a little by index so rows are distinguishable.
func h200(i int) event.GPU {
	return event.GPU{
		Index:            i,
		Name:             txt("NVIDIA H200"),
		BusID:            txt(fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10)),
		UtilGPUPct:       ok(97),
		UtilMemPct:       ok(41),
		MemUsedMiB:       ok(123289.6 + float64(i)),
		MemTotalMiB:      ok(144384),
		PowerDrawW:       ok(612 + float64(i)),
		PowerLimitW:      ok(700),
		TempC:            ok(61 + float64(i%3)),
		SMClockMHz:       ok(1980),
		MemClockMHz:      ok(3201),
		SMClockMax:       ok(1980),
		PState:           txt("P0"),
		PCIeGenCurrent:   ok(5),
		PCIeGenMax:       ok(5),
		PCIeWidthCurrent: ok(16),
		PCIeWidthMax:     ok(16),
		ClockEvents:      event.ClockEvents{Status: event.CellOK},
		Persistence:      txt("Enabled"),
		// As the nvidia-smi stream reads it: no PCIe throughput.
		PCIeRxKBs: bad(event.CellAbsent, ""),
		PCIeTxKBs: bad(event.CellAbsent, ""),
	}
}

func sampleOf(gs ...event.GPU) event.GPUSample { return event.GPUSample{GPUs: gs} }

func h200s(n int) event.GPUSample {
	s := event.GPUSample{}
	for i := range n {
		s.GPUs = append(s.GPUs, h200(i))
	}
	return s
}

// decodeLine is an SGLang decode line like those in the fixtures.
func decodeLine(i int, tps float64) string {
	return fmt.Sprintf("[2025-10-22 10:%02d:%02d TP0] Decode batch. #running-req: 1, #token: %d, token usage: 0.01, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: 0",
		27+i/60%30, i%60, 1200+i, tps)
}

func linesOf(texts ...string) event.LogLines {
	ls := event.LogLines{Path: "/data/logs/sglang.log"}
	for i, s := range texts {
		ls.Lines = append(ls.Lines, event.LogLine{Offset: int64(i * 160), Text: []byte(s)})
	}
	return ls
}

func decodeLines(from, n int) event.LogLines {
	var ts []string
	for i := from; i < from+n; i++ {
		ts = append(ts, decodeLine(i, rateAt(i)))
	}
	return linesOf(ts...)
}

// rateAt is a deterministic tok/s series around 82 with a dip.
func rateAt(i int) float64 {
	return 82 + 0.6*math.Sin(float64(i)/3) + map[bool]float64{true: -6, false: 0}[i%50 > 40]
}

func ev(d time.Duration, p event.Payload) event.Event { return event.Event{At: at(d), Data: p} }

func connected() event.Event {
	return ev(0, event.ConnState{Host: "root@gpu-box:22", Conn: event.Connected, Since: t0})
}

// scene is the standard screen: connected, n H200s, nLog log lines, a full
// tok/s window, the server ready 3m12s ago.
func scene(w, h, nGPU, nLog int, o Options) *Model {
	o.Head = "bba2fc4 (+3 dirty)"
	m := New(o)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	evs := EventsMsg{connected(), ev(time.Second, event.ServerReady{Server: "sglang", Text: "The server is fired up and ready to roll!"})}
	for i := range 300 {
		evs = append(evs, ev(2*time.Second, event.TokRate{TokPerSec: rateAt(i), AcceptLength: 2.31, HasAccept: true, Ranks: 1}))
	}
	evs = append(evs, ev(3*time.Second, h200s(nGPU)))
	for i := 0; i < nLog; i += 500 {
		evs = append(evs, ev(3*time.Second, decodeLines(i, min(500, nLog-i))))
	}
	evs = append(evs, ev(193*time.Second, event.TokRate{TokPerSec: 82.4, AcceptLength: 2.31, HasAccept: true, Ranks: 1}))
	m.Update(evs)
	return m
}

func serverlogFailureOOM() event.ServerFailure {
	return event.ServerFailure{Class: event.FailOOM, Text: "torch.OutOfMemoryError: CUDA out of memory."}
}

func connReconnecting(d time.Duration, attempt int, next time.Duration) event.Event {
	return ev(d, event.ConnState{Host: "root@gpu-box:22", Conn: event.Reconnecting, Attempt: attempt, NextTry: at(next)})
}

// callLog records what the cockpit asked of a fake control ("Checkout
// main", `Note "x"`), in order; safe for concurrent use. Fakes embed it.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (c *callLog) record(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, s)
}

// Calls returns the calls so far.
func (c *callLog) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}
