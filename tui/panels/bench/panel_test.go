package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// fakeBench answers Bench with res, or, with wait, when its context ends.
type fakeBench struct {
	res  *event.BenchResult
	wait bool
	cfgs []event.BenchConfig
}

func (f *fakeBench) BenchDefaults() event.BenchConfig { return event.BenchConfig{Requests: 32} }
func (f *fakeBench) Bench(ctx context.Context, cfg event.BenchConfig) (*event.BenchResult, error) {
	f.cfgs = append(f.cfgs, cfg)
	if f.wait {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.res, nil
}

type fakeRepeat struct{}

func (fakeRepeat) Repeat(ctx context.Context, _ sessions.RepeatConfig) error {
	<-ctx.Done()
	return ctx.Err()
}

// panel is a panel on a ready server with an open experiment; said
// collects its flashes, recorded what it records.
func panel() (p *Panel, said, recorded *[]string) {
	said, recorded = new([]string), new([]string)
	p = NewPanel()
	p.Bench, p.Repeat = &fakeBench{res: &event.BenchResult{Completed: 32, OutputTokPerSec: 85.7}}, fakeRepeat{}
	p.Server = func() (bool, bool) { return true, true }
	p.Experiment = func() bool { return true }
	p.Flash = func(s string, _ style.Token) { *said = append(*said, s) }
	p.Record = func(a string) func() { return func() { *recorded = append(*recorded, a) } }
	return p, said, recorded
}

// TestKeysSayWhy: b and R say why they cannot start, in the cockpit's
// order: refused, no control, another run, the server.
func TestKeysSayWhy(t *testing.T) {
	p := NewPanel()
	if p.BenchKey.Why() != "benchmark not available here: it needs a connection to the server's host" ||
		p.RepeatKey.Why() != "repeat not available here: it needs server control and a journal" {
		t.Errorf("no control: %q, %q", p.BenchKey.Why(), p.RepeatKey.Why())
	}
	p, _, _ = panel()
	if p.BenchKey.Why() != "" || p.RepeatKey.Why() != "" {
		t.Errorf("ready: %q, %q", p.BenchKey.Why(), p.RepeatKey.Why())
	}
	p.Experiment = func() bool { return false }
	if p.RepeatKey.Why() != "no open experiment: a launch from here starts one (or e)" {
		t.Errorf("no experiment: %q", p.RepeatKey.Why())
	}
	p.Busy = func() string { return "a kill is in progress" }
	p.Server = func() (bool, bool) { return true, false }
	if p.RepeatKey.Why() != "a kill is in progress" || p.BenchKey.Why() != "no server running: L launches one" {
		t.Errorf("busy: %q, %q", p.RepeatKey.Why(), p.BenchKey.Why())
	}
	p.Refused = func(does string) string { return "read-only replay: " + does }
	if p.BenchKey.Why() != "read-only replay: a benchmark would load the server" || p.RepeatKey.Why() != "read-only replay: a repeat would relaunch the server" {
		t.Errorf("refused: %q, %q", p.BenchKey.Why(), p.RepeatKey.Why())
	}
}

// TestBenchRunFromHere: a run started here records its key, runs in its
// command, answers with its result; asked to stop, it cancels and records
// the stop; the answer after it says it ended.
func TestBenchRunFromHere(t *testing.T) {
	p, said, recorded := panel()
	cmd := p.StartBench(event.BenchConfig{InputLen: 128, OutputLen: 128, Concurrency: 1, Requests: 32})
	if !p.BenchRun.Running || len(*recorded) != 0 {
		t.Fatalf("started: running %v, recorded %q inside Update", p.BenchRun.Running, *recorded)
	}
	r, ok := cmd().(ResultMsg)
	if !ok || r.Result == nil || (*recorded)[0] != "bench completions in 128 out 128 conc 1 32 requests warm-up 1" {
		t.Fatalf("answer %#v, recorded %q", r, *recorded)
	}
	p.BenchResult(r)
	if p.BenchRun.Running || (*said)[0] != "benchmark done: 85.7 tok/s output" {
		t.Errorf("after: running %v, said %q", p.BenchRun.Running, *said)
	}
	if p.Stop("bench"); (*said)[1] != "the benchmark had already ended" {
		t.Errorf("stop after the end: %q", *said)
	}
	p.Bench = &fakeBench{wait: true}
	cmd = p.StartBench(event.BenchConfig{})
	p.RecordCmd = func(string) tea.Cmd { return nil }
	if p.BenchNote() != " A benchmark is starting: it is stopped first." {
		t.Errorf("note %q", p.BenchNote())
	}
	p.Stop("bench")
	if !p.BenchRun.Stopped || (*said)[2] != "stopping the benchmark ..." || p.BenchNote() != "" {
		t.Errorf("stop: %+v said %q note %q", p.BenchRun, *said, p.BenchNote())
	}
	p.BenchResult(cmd().(ResultMsg))
	if (*said)[3] != "benchmark stopped before any result" {
		t.Errorf("stopped: %q", *said)
	}
}

// TestBannersAndBox: the stream drives the progress line and the result
// box; esc's Dismiss hides the box, and a seek keeps it hidden.
func TestBannersAndBox(t *testing.T) {
	st := style.Plain()
	p, _, _ := panel()
	p.Started(event.BenchStarted{ID: "b1\x1b[2J", Target: "http://127.0.0.1:30000"})
	if b := p.Banners(); len(b) != 1 || b[0].Text != "bench b1 running on http://127.0.0.1:30000: starting" {
		t.Errorf("started: %+v", b)
	}
	p.Progressed(event.BenchProgress{ID: "b1\x1b[2J", Done: 16, Total: 32, TokPerSec: 85.3})
	p.Progressed(event.BenchProgress{ID: "b9", Done: 30, Total: 32})
	if b := p.Banners(); len(b) != 1 || b[0].Text != "bench b1 16/32 requests  85.3 tok/s  [##########----------]" {
		t.Errorf("progress: %+v", b)
	}
	p.Repeated(event.RepeatProgress{Series: "e3", I: 2, N: 5, Phase: sessions.RepeatWarmingUp, Samples: 3, Need: 10})
	if b := p.Banners(); len(b) != 2 || b[1].Text != "repeat 2/5 of e3: warming up 3/10" || p.RepeatNote() != " A repeat (launch 2/5) is running: it will fail." {
		t.Errorf("repeat: %+v, note %q", b, p.RepeatNote())
	}
	p.Finished(event.BenchDone{ID: "b1\x1b[2J", Exp: "e3", Result: &event.BenchResult{Completed: 31, Failed: 1, Duration: 46300 * time.Millisecond}})
	lines, iw := p.Box(&st, 100)
	if len(p.Banners()) != 1 || iw != 72 || !strings.HasPrefix(style.StripSGR(lines[0]), "+- bench b1 on e3: done: 1 of 32 failed -") || !p.Showing() {
		t.Fatalf("done: %d banners, box %q", len(p.Banners()), lines)
	}
	if lines, _ := p.Box(&st, 23); lines != nil {
		t.Error("a box on a 23-cell screen")
	}
	p.Dismiss()
	fresh := NewPanel()
	fresh.CarryDismissed(p)
	fresh.Finished(event.BenchDone{ID: "b1\x1b[2J", Err: "x"})
	if p.Showing() || fresh.Showing() {
		t.Error("a dismissed box came back")
	}
	p.Repeated(event.RepeatProgress{Phase: sessions.RepeatDone})
	if len(p.Banners()) != 0 {
		t.Errorf("after the repeat: %+v", p.Banners())
	}
}

// TestRepeatStopsToQuit: a confirmed quit stops the repeat and waits for
// it; asked again it quits now; the repeat's answer reports the quit.
func TestRepeatStopsToQuit(t *testing.T) {
	p, said, _ := panel()
	cmd := p.StartRepeat(sessions.RepeatConfig{N: 4, MinSamples: 10})
	if now, _ := p.StopToQuit(); now || !p.RepeatRun.Stopped || !p.QuitWhen || (*said)[0] != RepeatQuitText {
		t.Fatalf("first: now %v run %+v said %q", now, p.RepeatRun, *said)
	}
	if now, _ := p.StopToQuit(); !now {
		t.Error("asked again: not now")
	}
	r := cmd().(RepeatResultMsg)
	if !errors.Is(r.Err, context.Canceled) || !p.RepeatResult(r) || p.RepeatRun.Running || (*said)[1] != "repeat stopped" {
		t.Errorf("answer %v, said %q", r.Err, *said)
	}
}
