// Package journaltest writes realistic journals for tests and benchmarks:
// DemoDay is a day of `flightdeck demo` — 8 simulated H200s sampled at
// 2 Hz and the simulated SGLang server's log, its lines run through the
// cockpit's own log pipeline (sessions.LogPipeline: the parsed decode and
// prefill lines and the tok/s series) — recorded by the cockpit's own
// sessions.Recorder, so the file is what the recorder writes, in a
// simulated clock.
package journaltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/event/eventtest"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// The demo's workload, as remote/sim models it.
const (
	// DemoGPUs is the simulated host's GPU count.
	DemoGPUs = 8
	// DemoTick is the GPU sampling period (2 Hz).
	DemoTick = 500 * time.Millisecond
	// DemoTokPerSec is the simulated server's decode rate with the
	// demo's tuned profile (nccl-ll-ring: 88.7 tok/s against 62.5
	// untuned; the faster rate logs more lines).
	DemoTokPerSec = 88.7
	// decodeLogInterval: SGLang logs a decode line every 40 forward steps.
	decodeLogInterval = 40
	// idleGapChance: after a request, the chance of an idle pause of
	// 6-15 s (remote/sim's engine).
	idleGapChance = 0.12
)

// DemoStart is the created time of the journals DemoDay writes.
var DemoStart = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// DemoLogPath is the server log the demo journal follows.
const DemoLogPath = "/tmp/flightdeck-sim-1331372090/logs/sim-20261201-080000.log"

// DemoDayFile is a 24 h DemoDay journal for benchmarks: written once per
// test binary into a new temporary directory, or the file the environment
// variable FD_DEMO_JOURNAL names (written there when missing, reused when
// it exists). It returns the journal's path.
var DemoDayFile = sync.OnceValues(func() (string, error) {
	path := os.Getenv("FD_DEMO_JOURNAL")
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	} else {
		dir, err := os.MkdirTemp("", "fd-demo-day-")
		if err != nil {
			return "", err
		}
		path = filepath.Join(dir, "day.jsonl")
	}
	_, err := DemoDay(path, 24*time.Hour)
	return path, err
})

// DemoDay creates the journal at path and records d of the demo's
// workload into it through a sessions.Recorder (its periodic flushes run
// in real time; the events carry simulated times from DemoStart). It
// returns the number of events given to the recorder.
func DemoDay(path string, d time.Duration) (int, error) {
	w, err := journal.Create(path, event.SessionHeader{Created: DemoStart, Flightdeck: "journaltest", Host: "demo", Label: "demo", Name: "day"})
	if err != nil {
		return 0, err
	}
	events := make(chan event.Event, 4096)
	rec := &sessions.Recorder{W: w}
	done := make(chan error, 1)
	go func() { done <- rec.Run(context.Background(), events) }()
	n := 0
	DemoEvents(d, func(e event.Event) {
		events <- e
		n++
	})
	close(events)
	err = <-done
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// DemoEvents calls fn with the demo's events over d, in stream order: GPU
// samples every DemoTick, and the server's log lines, one follower batch
// per line, each followed by what sessions.LogPipeline derives from it.
// The same d gives the same events.
func DemoEvents(d time.Duration, fn func(event.Event)) {
	rng := rand.New(rand.NewPCG(20, 12))
	gpus := make([]*eventtest.SimGPU, DemoGPUs)
	for i := range gpus {
		gpus[i] = newSimGPU(i)
	}
	pipe := &sessions.LogPipeline{Server: "sglang", Sink: fn}
	srv := &simServer{rng: rng, path: DemoLogPath}
	end := DemoStart.Add(d)
	nextSample := DemoStart.Add(DemoTick)
	fn(event.Event{At: DemoStart, Data: event.GPUSource{Mode: "nvidia-smi", Fallback: "this build has no cgo"}})
	// The demo launches the server at start: its first experiment.
	fn(event.Event{At: DemoStart.Add(time.Millisecond), Data: event.ExperimentStart{ID: "e1", Name: "nccl-ll-ring @ a6d51c0", Trigger: "launch"}})
	for {
		lineAt, line := srv.next()
		// GPU samples up to the line's time, then the line.
		for !nextSample.After(lineAt) && nextSample.Before(end) {
			at := nextSample.Add(time.Duration(rng.IntN(4000)) * time.Microsecond)
			s := event.GPUSample{At: at, GPUs: make([]event.GPU, DemoGPUs)}
			for i, g := range gpus {
				s.GPUs[i] = g.Step(rng, srv.busy)
			}
			fn(event.Event{At: at, Data: s})
			nextSample = nextSample.Add(DemoTick)
		}
		if !lineAt.Before(end) {
			return
		}
		// The follower delivers the line a few ms after it is written.
		at := lineAt.Add(time.Duration(2000+rng.IntN(30000)) * time.Microsecond)
		pipe.Publish(event.Event{At: at, Data: event.LogLines{Path: srv.path, Lines: []event.LogLine{{Offset: srv.off, Text: line}}}})
		srv.off += int64(len(line)) + 1
	}
}

// simServer is remote/sim's SGLang engine in a simulated clock: requests
// of 300-1200 prompt and 1500-4000 output tokens one after another, a
// prefill line for each, a decode line every 40 steps, sometimes an idle
// pause of 6-15 s between requests.
type simServer struct {
	rng  *rand.Rand
	path string
	off  int64
	now  time.Time // model time
	busy bool

	prompt, max, generated int
	steps, sinceLog        int
	lastLog                time.Time
	noise                  float64
}

// next returns the next log line and when it is written.
func (s *simServer) next() (time.Time, []byte) {
	if s.now.IsZero() {
		s.now, s.lastLog = DemoStart, DemoStart
	}
	if s.generated >= s.max {
		if s.max > 0 && s.rng.Float64() < idleGapChance {
			s.busy = false
			s.now = s.now.Add(time.Duration((6 + 9*s.rng.Float64()) * float64(time.Second)))
		}
		s.prompt, s.max, s.generated = 300+s.rng.IntN(900), 1500+s.rng.IntN(2500), 0
		s.busy = true
		s.now = s.now.Add(15*time.Millisecond + time.Duration(float64(s.prompt)/20000*float64(time.Second)))
		return s.now, s.stamp(fmt.Sprintf("Prefill batch. #new-seq: 1, #new-token: %d, #cached-token: 0, token usage: %.2f, #running-req: 0, #queue-req: 0, ",
			s.prompt, float64(s.prompt)/2.9e6))
	}
	if s.noise == 0 || s.sinceLog == 0 {
		s.noise = 1 + (s.rng.Float64()*2-1)*0.006
	}
	for s.generated < s.max {
		s.generated++
		s.sinceLog++
		s.steps++
		s.now = s.now.Add(time.Duration(float64(time.Second) / (DemoTokPerSec * s.noise)))
		if s.steps%decodeLogInterval == 0 {
			thr := float64(s.sinceLog) / s.now.Sub(s.lastLog).Seconds()
			kv := s.prompt + s.generated
			s.lastLog, s.sinceLog = s.now, 0
			return s.now, s.stamp(fmt.Sprintf("Decode batch. #running-req: 1, #token: %d, token usage: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: 0, ",
				kv, float64(kv)/2.9e6, thr))
		}
	}
	return s.next()
}

// stamp prefixes msg with SGLang's "[date time TP0] " (the sim's clock is
// the host's local time; DemoStart is UTC).
func (s *simServer) stamp(msg string) []byte {
	return []byte("[" + s.now.Format("2006-01-02 15:04:05") + " TP0] " + msg)
}

// newSimGPU is GPU i of the simulated host, idle, as nvidia-smi reads it:
// between runs it keeps its boost clock and its memory (the server holds it).
func newSimGPU(i int) *eventtest.SimGPU {
	return &eventtest.SimGPU{G: event.GPU{
		Index:            i,
		Name:             event.Text{S: "NVIDIA H200"},
		BusID:            event.Text{S: fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10)},
		UUID:             event.Text{S: fmt.Sprintf("GPU-3f1c%04d-8a7b-4c2d-9e0f-1a2b3c4d5e6f", i)},
		MemUsedMiB:       ok(0),
		MemTotalMiB:      ok(143771),
		PowerDrawW:       ok(75),
		PowerLimitW:      ok(700),
		TempC:            ok(30),
		SMClockMHz:       ok(345),
		MemClockMHz:      ok(3201),
		SMClockMax:       ok(1980),
		FanPct:           event.Reading{Status: event.CellNA, Raw: "[N/A]"},
		PState:           event.Text{S: "P0"},
		PCIeGenCurrent:   ok(5),
		PCIeGenMax:       ok(5),
		PCIeWidthCurrent: ok(16),
		PCIeWidthMax:     ok(16),
		ClockEvents:      event.ClockEvents{Mask: event.ReasonGPUIdle},
		Persistence:      event.Text{S: "Enabled"},
		ECCMode:          event.Text{S: "Enabled"},
		MIGMode:          event.Text{S: "Disabled"},
		PCIeRxKBs:        event.Reading{Status: event.CellAbsent}, // nvidia-smi does not read them
		PCIeTxKBs:        event.Reading{Status: event.CellAbsent},
	}, Load: eventtest.SimLoad{BusyMemMiB: 126566, IdleW: 120, IdleJitterW: 8, IdleSMClockMHz: 1980}}
}

func ok(v float64) event.Reading { return event.Reading{Value: v} }
