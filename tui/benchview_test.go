package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/measure"
	"github.com/flightdeck-dev/flightdeck/tui/panels/bench"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// fakeBench records the configs the cockpit runs. Run answers at once
// with res and err, or, with wait set, when its context ends (a stopped
// run: the requests so far).
type fakeBench struct {
	callLog
	mu       sync.Mutex
	defaults event.BenchConfig
	res      *event.BenchResult
	err      error
	wait     bool
	cfgs     []event.BenchConfig
}

func (f *fakeBench) BenchDefaults() event.BenchConfig { return f.defaults }

func (f *fakeBench) Bench(ctx context.Context, cfg event.BenchConfig) (*event.BenchResult, error) {
	f.mu.Lock()
	f.cfgs = append(f.cfgs, cfg)
	f.mu.Unlock()
	f.record("Run " + bench.ConfigText(cfg))
	if f.wait {
		<-ctx.Done()
		return &event.BenchResult{Config: cfg, Cancelled: true, Completed: 12}, nil
	}
	return f.res, f.err
}

var _ BenchControl = (*fakeBench)(nil)

// benchScene is the lab scene (server ready, e3 open) with a fake bench.
func benchScene(w, h int) (*Model, *fakeBench) {
	f := &fakeBench{defaults: benchDefaults(), res: benchResult()}
	m, _ := labScene(w, h, Options{Bench: f})
	send(m, session()...)
	return m, f
}

func TestBenchFormRunsTheConfig(t *testing.T) {
	m, f := benchScene(100, 30)
	press(m, "b")
	if m.overlay.TopID() != measure.BenchID {
		t.Fatalf("b: dialog %q, status %q", m.overlay.TopID(), m.Status())
	}
	box := plain(m) + boxText(m)
	for _, s := range []string{"+- benchmark (its result goes with e3) -", "endpoint < completions >", "input len 128", "requests 32", "warm-up 1"} {
		if !strings.Contains(box, s) {
			t.Errorf("form lacks %q:\n%s", s, plain(m))
		}
	}
	// Focus starts on the first field, the endpoint; down to input len:
	// change it, concurrency, the rate and poisson; the endpoint is a
	// choice.
	if f := m.overlay.Top().(*measure.BenchForm); f.Focused() != "endpoint" {
		t.Errorf("the form opened on field %q, not the endpoint", f.Focused())
	}
	press(m, "down", "backspace", "backspace", "backspace")
	typeText(m, "512")
	press(m, "down", "down")
	press(m, "backspace")
	typeText(m, "4")
	press(m, "down", "down", "down")
	typeText(m, "2.5")
	press(m, "down", "right")
	press(m, "up", "up", "up", "up", "up", "up", "up", "right") // the endpoint: chat
	msgs := do(m, "enter")
	if m.DialogOpen() || len(msgs) != 1 {
		t.Fatalf("enter: dialog %q msgs %v status %q", m.overlay.TopID(), msgs, m.Status())
	}
	want := "Run chat in 512 out 128 conc 4 32 requests rate 2.5/s poisson warm-up 1"
	if c := f.Calls(); len(c) != 1 || c[0] != want {
		t.Errorf("calls %q, want %q", c, want)
	}
	if got := f.cfgs[0]; got.Seed != 1 || got.Timeout != 10*time.Minute {
		t.Errorf("fields the form does not show were lost: %+v", got)
	}
	if m.Status() != "benchmark done: 1 of 32 requests failed; 85.7 tok/s output over the 31 that succeeded" || m.bench.BenchRun.Running {
		t.Errorf("answer: status %q running %v", m.Status(), m.bench.BenchRun.Running)
	}
	// A bad value says why and keeps the form.
	press(m, "b", "down")
	press(m, "backspace", "backspace", "backspace")
	typeText(m, "x1")
	if cmd := press(m, "enter"); cmd != nil || m.overlay.TopID() != measure.BenchID || m.Status() != `cannot start: input len: "x1" is not a whole number` {
		t.Errorf("bad input: dialog %q status %q", m.overlay.TopID(), m.Status())
	}
	if !strings.Contains(boxText(m), `input len: "x1" is not a whole number`) {
		t.Errorf("the form does not say why:\n%s", plain(m))
	}
	press(m, "esc")
	if m.DialogOpen() || m.Status() != "benchmark not started" || len(f.Calls()) != 1 {
		t.Errorf("esc: dialog %q status %q calls %q", m.overlay.TopID(), m.Status(), f.Calls())
	}
	// An error of Run is the answer.
	f.err, f.res = errors.New("no server answers on port 30000\x1b[2J"), nil
	press(m, "b")
	do(m, "enter")
	if m.Status() != "benchmark failed: no server answers on port 30000" {
		t.Errorf("failed run: %q", m.Status())
	}
}

func TestBenchProgressAndResult(t *testing.T) {
	m, _ := benchScene(100, 30)
	evs := benchEvents()
	send(m, evs[0])
	if l := screenLines(m)[1]; l != "bench b1 running on http://127.0.0.1:30000 via gpu-box: starting" {
		t.Errorf("started: %q", l)
	}
	send(m, evs[1])
	if l := screenLines(m)[1]; l != "bench b1 warming up" {
		t.Errorf("warm-up: %q", l)
	}
	send(m, evs[2])
	if l := screenLines(m)[1]; l != "bench b1 12/32 requests  1 failed  85.3 tok/s  [########------------]" || !painted(m, m.styles.Warn, l) {
		t.Errorf("progress: %q", l)
	}
	// Progress of another run is not this one's.
	send(m, ev(221*time.Second, event.BenchProgress{ID: "b9", Done: 30, Total: 32}))
	if l := screenLines(m)[1]; !strings.Contains(l, "12/32") {
		t.Errorf("another run's progress shown: %q", l)
	}
	send(m, evs[3])
	scr := plain(m)
	if strings.Contains(scr, "bench b1 12/32") || !strings.Contains(scr, "+- bench b1 on e3: done: 1 of 32 failed -") {
		t.Fatalf("done:\n%s", scr)
	}
	if strings.Contains(scr, "\x1b[31m") || !strings.Contains(scr, "HTTP 503: The server is not ready. x1") {
		t.Errorf("errors not sanitised:\n%s", scr)
	}
	// Keys still act while the box shows (it is not an overlay); esc
	// dismisses it.
	press(m, "x")
	if !m.exp.Open || !strings.Contains(plain(m), "+- bench b1") {
		t.Errorf("x with the box:\n%s", plain(m))
	}
	press(m, "esc")
	if strings.Contains(plain(m), "+- bench b1") || !m.exp.Open {
		t.Errorf("esc did not dismiss the box first:\n%s", plain(m))
	}
	// The panel lists the run with its experiment.
	// (report.BenchRunText, wrapped onto two lines).
	if scr := plain(m); !strings.Contains(scr, "bench       b1 output 85.7 tok/s, TTFT 23.8 ms, ITL 11.2 ms, TPOT 11.2 ms, E2E 1445 ms (medians), 31\n") ||
		!strings.Contains(scr, "\n            ok, 1 failed, concurrency 1, 128 in / 128 out, 46.3s; errors: HTTP 503: The server is...\n") {
		t.Errorf("panel details:\n%s", plain(m))
	}
	// A failed run: its box says why.
	send(m, ev(250*time.Second, event.BenchStarted{ID: "b2", Exp: "e3"}), ev(251*time.Second, event.BenchDone{ID: "b2", Exp: "e3", Err: "GET /v1/models: connection refused"}))
	if scr := plain(m); !strings.Contains(scr, "+- bench b2 on e3: failed -") || !strings.Contains(scr, "GET /v1/models: connection refused") ||
		!strings.Contains(scr, "b2 failed: GET /v1/models: connection refused") {
		t.Errorf("failed run:\n%s", scr)
	}
}

func TestBenchStopAsksThenCancels(t *testing.T) {
	m, f := benchScene(100, 30)
	f.wait = true
	press(m, "b")
	cmd := press(m, "enter")
	if cmd == nil || !m.bench.BenchRun.Running {
		t.Fatal("no run started")
	}
	send(m, benchEvents()[:3]...)
	if l := screenLines(m)[1]; !strings.HasSuffix(l, "(b stops)") {
		t.Errorf("banner %q", l)
	}
	// b asks; n keeps it running.
	press(m, "b")
	if m.overlay.TopID() != measure.StopBenchID || !strings.Contains(boxText(m), "Stop the benchmark b1 (12/32 requests done)? Its result keeps the requests that finished. y/N") {
		t.Fatalf("b while running:\n%s", plain(m))
	}
	press(m, "n")
	if m.DialogOpen() || m.Status() != "still running" {
		t.Errorf("n: dialog %q status %q", m.overlay.TopID(), m.Status())
	}
	// esc asks too (nothing else to close); y cancels the run's context.
	press(m, "esc")
	if m.overlay.TopID() != measure.StopBenchID {
		t.Fatalf("esc while running: dialog %q", m.overlay.TopID())
	}
	press(m, "y")
	for _, msg := range run(cmd) { // returns: its context ended
		m.Update(msg)
	}
	if m.bench.BenchRun.Running || m.Status() != "benchmark stopped: 12 requests measured" {
		t.Errorf("after stop: running %v status %q", m.bench.BenchRun.Running, m.Status())
	}
}

func TestBenchUnavailable(t *testing.T) {
	f := &fakeBench{defaults: benchDefaults()}
	for _, c := range []struct {
		name  string
		setup func(*Model)
		o     Options
		want  string
	}{
		{"replay", nil, Options{ReadOnly: true, Bench: f}, "read-only replay: a benchmark would load the server"},
		{"no control", nil, Options{}, "benchmark not available here: it needs a connection to the server's host"},
		{"disconnected", func(m *Model) {
			send(m, ev(5*time.Second, event.ConnState{Host: "root@gpu-box:22", Conn: event.Reconnecting, Attempt: 2}))
		}, Options{Bench: f}, "not connected"},
		{"no server", func(m *Model) { send(m, ev(5*time.Second, event.ServerStatus{Phase: event.PhaseKilled})) }, Options{Bench: f}, "no server running: L launches one"},
		{"a repeat's run", func(m *Model) { send(m, benchEvents()[0]) }, Options{Bench: f}, "a benchmark is running (b1, started by a repeat)"},
		{"during a repeat", func(m *Model) { m.bench.RepeatRun.Running = true }, Options{Bench: f},
			"a repeat is running: its relaunches would cut a benchmark short (R stops it; 'bench each' benchmarks every launch)"},
	} {
		m := scene(80, 24, 1, 0, c.o)
		if c.setup != nil {
			c.setup(m)
		}
		press(m, "b")
		if m.DialogOpen() || m.Status() != c.want {
			t.Errorf("%s: dialog %q status %q, want %q", c.name, m.overlay.TopID(), m.Status(), c.want)
		}
	}
}

// TestReplayShowsRecordedBench: a replay has the start and the result
// (progress is never journaled), read-only; a seek keeps a dismissed box
// dismissed.
func TestReplayShowsRecordedBench(t *testing.T) {
	evs := benchEvents()
	m := newSized(100, 30, Options{ReadOnly: true})
	send(m, session()...)
	send(m, evs[0])
	if l := screenLines(m)[1]; l != "bench b1 running on http://127.0.0.1:30000 via gpu-box (progress is not recorded)" {
		t.Errorf("replayed start: %q", l)
	}
	send(m, evs[3])
	if !strings.Contains(plain(m), "+- bench b1 on e3: done: 1 of 32 failed -") {
		t.Errorf("replayed result:\n%s", plain(m))
	}
	press(m, "esc")
	fresh := newSized(100, 30, Options{ReadOnly: true})
	fresh.CarryView(m)
	send(fresh, session()...)
	send(fresh, evs[0], evs[3])
	if strings.Contains(plain(fresh), "+- bench b1") {
		t.Errorf("a seek brought the dismissed box back:\n%s", plain(fresh))
	}
}

// The bench goldens: the form, the progress line and the result box at
// 100x30, the result box at 80x24.
func TestBenchGolden(t *testing.T) {
	t.Run("form_100x30", func(t *testing.T) {
		m, _ := benchScene(100, 30)
		press(m, "b")
		golden.RequireEqual(t, plain(m))
	})
	t.Run("progress_100x30", func(t *testing.T) {
		m, _ := benchScene(100, 30)
		press(m, "b")
		press(m, "enter") // running from here: "(b stops)"
		send(m, benchEvents()[:3]...)
		golden.RequireEqual(t, plain(m))
	})
	for _, sz := range [][2]int{{100, 30}, {80, 24}} {
		t.Run(fmt.Sprintf("result_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m, _ := benchScene(sz[0], sz[1])
			send(m, benchEvents()...)
			golden.RequireEqual(t, plain(m))
		})
	}
}

// TestBenchOutcomeSaysFailures: the result box's title and tone, and the
// answer's status line, say how many requests failed and whether the run
// was stopped early; none succeeding is critical.
func TestBenchOutcomeSaysFailures(t *testing.T) {
	for _, c := range []struct {
		name          string
		ok, failed    int
		cancelled     bool
		title, status string
		tone, stTone  style.Token // the box's, the status line's
	}{
		{"clean", 32, 0, false, "bench b1 on e3: done", "benchmark done: 85.7 tok/s output", style.Accent, style.OK},
		{"some failed", 2, 30, false, "bench b1 on e3: done: 30 of 32 failed",
			"benchmark done: 30 of 32 requests failed; 85.7 tok/s output over the 2 that succeeded", style.Warn, style.Warn},
		{"all failed", 0, 32, false, "bench b1 on e3: done: 32 of 32 failed",
			"benchmark done: 32 of 32 requests failed: HTTP 503: The server is not ready.", style.Crit, style.Crit},
		{"stopped", 12, 0, true, "bench b1 on e3: stopped early", "benchmark stopped: 12 requests measured", style.Warn, style.Warn},
		{"stopped with failures", 10, 2, true, "bench b1 on e3: stopped early, 2 of 12 failed", "benchmark stopped: 10 requests measured", style.Warn, style.Warn},
		{"stopped, all failed", 0, 3, true, "bench b1 on e3: stopped early, 3 of 3 failed", "benchmark stopped: 0 requests measured", style.Crit, style.Warn},
	} {
		r := benchResult()
		r.Completed, r.Failed, r.Cancelled = c.ok, c.failed, c.cancelled
		title, tn := bench.Outcome("bench b1 on e3", r)
		if title != c.title || tn != c.tone {
			t.Errorf("%s: title %q tone %d, want %q %d", c.name, title, tn, c.title, c.tone)
		}
		m, _ := benchScene(100, 30)
		m.Update(BenchResultMsg{Result: r})
		if m.Status() != c.status || m.statusTone != c.stTone {
			t.Errorf("%s: status %q tone %d, want %q %d", c.name, m.Status(), m.statusTone, c.status, c.stTone)
		}
		send(m, ev(247*time.Second, event.BenchDone{ID: "b1", Exp: "e3", Result: r}))
		if !strings.Contains(plain(m), "+- "+c.title+" -") || !painted(m, m.styles.Tone(c.tone), "+-") {
			t.Errorf("%s: box title not %q in tone %d:\n%s", c.name, c.title, c.tone, plain(m))
		}
	}
}

// TestKillNamesRunningMeasurements: K's question says a running
// benchmark or repeat will fail.
func TestKillNamesRunningMeasurements(t *testing.T) {
	const q = "Kill sglang pid 4123? SIGTERM, SIGKILL after the grace period, then wait for GPU memory."
	m, _ := controlled(100, 30, ptr(readyStatus()))
	send(m, benchEvents()[:3]...)
	press(m, "K")
	if got := boxText(m); got != q+" A benchmark b1 is running: it will fail. y/N" {
		t.Errorf("with a bench: %q", got)
	}
	press(m, "n")
	send(m, benchEvents()[3], ev(250*time.Second, event.RepeatProgress{Series: "e3", I: 2, N: 5, Exp: "e4", Phase: sessions.RepeatMeasuring, Samples: 3, Need: 10}))
	press(m, "K")
	if got := boxText(m); got != q+" A repeat (launch 2/5) is running: it will fail. y/N" {
		t.Errorf("with a repeat: %q", got)
	}
	press(m, "n")
	send(m, ev(260*time.Second, event.RepeatProgress{Series: "e3", I: 2, N: 5, Phase: sessions.RepeatStopped}))
	press(m, "K")
	if got := boxText(m); got != q+" y/N" {
		t.Errorf("nothing running: %q", got)
	}
}

// TestQuitDuringBenchAsks: q while a benchmark runs asks once; q again
// quits (the run is recorded as cancelled).
func TestQuitDuringBenchAsks(t *testing.T) {
	m, f := benchScene(100, 30)
	f.wait = true
	press(m, "b")
	if cmd := press(m, "enter"); cmd == nil || !m.bench.BenchRun.Running {
		t.Fatal("no run started")
	}
	if cmd := press(m, "q"); cmd != nil || m.Status() != "a benchmark is running: quitting stops it - q again to quit" {
		t.Fatalf("first q: cmd %v status %q", cmd, m.Status())
	}
	if cmd := press(m, "q"); cmd == nil || !m.quitting {
		t.Errorf("second q did not quit")
	}
}

// TestKillAndRelaunchStopOurBenchFirst: K or L while this cockpit's
// benchmark runs says that it is stopped first, and y stops it before the
// kill, so that its requests do not fail into the kill and the new
// server's warm-up.
func TestKillAndRelaunchStopOurBenchFirst(t *testing.T) {
	for _, relaunch := range []bool{false, true} {
		f := &fakeBench{defaults: benchDefaults(), res: benchResult(), wait: true}
		m, lab := labScene(100, 30, Options{Bench: f, Control: newFake()})
		send(m, session()...)
		press(m, "b")
		if cmd := press(m, "enter"); cmd == nil || !m.bench.BenchRun.Running {
			t.Fatal("no run started")
		}
		const note = "A benchmark is starting: it is stopped first."
		if relaunch {
			press(m, "L", "enter")
		} else {
			press(m, "K")
		}
		if got := boxText(m); !strings.Contains(got, note+" y/N") {
			t.Fatalf("relaunch %v: question %q", relaunch, got)
		}
		if m.bench.BenchRun.Stopped {
			t.Fatal("stopped before the answer")
		}
		cmd := press(m, "y")
		if !m.bench.BenchRun.Stopped {
			t.Errorf("relaunch %v: y did not stop the benchmark first", relaunch)
		}
		run(cmd)
		keys := lab.Keys()
		if n := len(keys); n < 2 || keys[n-2][1] != "stop bench" || !strings.Contains(keys[n-1][1], map[bool]string{false: "kill", true: "relaunch"}[relaunch]) {
			t.Errorf("relaunch %v: journal keys %q, want the bench's stop, then the action", relaunch, keys)
		}
		// Asked again while it stops: nothing more to say or record.
		if relaunch {
			continue
		}
		press(m, "K")
		if got := boxText(m); strings.Contains(got, "benchmark") {
			t.Errorf("a stopping benchmark named again: %q", got)
		}
	}
}
