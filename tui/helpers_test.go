package tui

import (
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// The shared fixtures (tui/tuitest), by the names the cockpit's tests
// use.
var (
	t0          = tuitest.T0
	at          = tuitest.At
	ok          = tuitest.OK
	bad         = tuitest.Bad
	txt         = tuitest.Txt
	h200        = tuitest.H200
	h200s       = tuitest.H200s
	decodeLine  = tuitest.DecodeLine
	linesOf     = tuitest.LinesOf
	decodeLines = tuitest.DecodeLines
	rateAt      = tuitest.RateAt
	ev          = tuitest.Ev
	connected   = tuitest.Connected
	readyStatus = tuitest.ReadyStatus
	result      = tuitest.Result
	session     = tuitest.Session
	keyMsg      = tuitest.KeyMsg
	space       = tuitest.Space
	run         = tuitest.Run
	isQuit      = tuitest.IsQuit

	benchDefaults = tuitest.BenchDefaults
	benchResult   = tuitest.BenchResult
	benchEvents   = tuitest.BenchEvents
)

func sampleOf(gs ...event.GPU) event.GPUSample { return event.GPUSample{GPUs: gs} }

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

// assertFits fails t unless m's screen, sized w by h, is exactly h lines
// and none wider than w cells; what names the screen in the failures.
func assertFits(t *testing.T, m *Model, w, h int, what string) {
	t.Helper()
	ls := screenLines(m)
	if len(ls) != h {
		t.Errorf("%dx%d %s: %d lines", w, h, what, len(ls))
	}
	for i, l := range ls {
		if lw := ansiWidth(l); lw > w {
			t.Errorf("%dx%d %s: line %d is %d wide: %q", w, h, what, i, lw, l)
		}
	}
}
