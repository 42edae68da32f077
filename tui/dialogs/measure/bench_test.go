package measure

import (
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/bench"
	"github.com/flightdeck-dev/flightdeck/tui/style"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// The form's configs are checked in words: bench.ConfigText is the one
// line the panel records and its result box shows (a test-only import:
// the dialogs themselves never name the panel).

// fakeRuns is the panel the dialogs act for: defaults, why a run cannot
// start (why), and what was started and stopped.
type fakeRuns struct {
	defaults event.BenchConfig
	why      string
	started  []string
	stopped  []string
}

func (f *fakeRuns) BenchDefaults() event.BenchConfig { return f.defaults }
func (f *fakeRuns) BenchWhy() string                 { return f.why }
func (f *fakeRuns) RepeatWhy() string                { return f.why }
func (f *fakeRuns) StartBench(cfg event.BenchConfig) tea.Cmd {
	f.started = append(f.started, "bench "+bench.ConfigText(cfg))
	return func() tea.Msg { return nil }
}
func (f *fakeRuns) StartRepeat(cfg sessions.RepeatConfig) tea.Cmd {
	f.started = append(f.started, "repeat")
	return func() tea.Msg { return nil }
}
func (f *fakeRuns) StopQuestion(what string) string {
	return "Stop the " + what + "? Its result keeps the requests that finished."
}
func (f *fakeRuns) Stop(what string) tea.Cmd {
	f.stopped = append(f.stopped, what)
	return nil
}

// dialogs opens on a stack with fake runs of defaults d; the flashes go
// to said.
type harness struct {
	runs  *fakeRuns
	stack *component.Stack
	said  []string
}

func dialogs(d event.BenchConfig) (*Dialogs, *harness) {
	h := &harness{runs: &fakeRuns{defaults: d}, stack: &component.Stack{}}
	ds := &Dialogs{
		Runs:       h.runs,
		Experiment: func() (string, string, bool) { return "e3", "nccl-ll-ring", true },
		Journal:    func() bool { return true },
		Flash:      func(s string, _ style.Token) { h.said = append(h.said, s) },
		Push:       h.stack.Push,
		Inputs:     func() textinput.Styles { return textinput.DefaultStyles(true) },
	}
	return ds, h
}

// openBench opens the benchmark form of ds.
func openBench(ds *Dialogs) *BenchForm {
	var f *BenchForm
	push := ds.Push
	ds.Push = func(d component.Dialog) { f = d.(*BenchForm); push(d) }
	ds.OpenBench()
	ds.Push = push
	return f
}

func TestBenchConfig(t *testing.T) {
	ds, _ := dialogs(tuitest.BenchDefaults())
	for _, c := range []struct {
		name   string
		fields map[int]string
		choice map[int]int
		want   string // bench.ConfigText, or the error
	}{
		{"defaults", nil, nil, "completions in 128 out 128 conc 1 32 requests warm-up 1"},
		{"duration instead", map[int]string{bfRequests: "", bfDuration: "90"}, nil, "completions in 128 out 128 conc 1 for 1m30s warm-up 1"},
		{"duration text", map[int]string{bfRequests: "", bfDuration: "2m"}, nil, "completions in 128 out 128 conc 1 for 2m00s warm-up 1"},
		{"under a second", map[int]string{bfRequests: "", bfDuration: "250ms"}, nil, "completions in 128 out 128 conc 1 for 250ms warm-up 1"},
		{"both", map[int]string{bfDuration: "60s"}, nil, "requests or duration, not both: clear one"},
		{"bad duration", map[int]string{bfRequests: "", bfDuration: "soon"}, nil, `duration: "soon" is not a duration: 60s, 2m, 1m30s`},
		{"negative seconds", map[int]string{bfRequests: "", bfDuration: "-5"}, nil, `duration: "-5" is not a positive number of seconds (at most a week)`},
		{"zero concurrency", map[int]string{bfConcurrency: "0"}, nil, "concurrency: 0 is out of range (1 to 100000)"},
		// The bounds are the benchmark's (bench.Max...).
		{"input too long", map[int]string{bfInput: "1048577"}, nil, "input len: 1048577 is out of range (1 to 1048576)"},
		{"longest input", map[int]string{bfInput: "1048576"}, nil, "completions in 1048576 out 128 conc 1 32 requests warm-up 1"},
		{"too many requests", map[int]string{bfRequests: "10000001"}, nil, "requests: 10000001 is out of range (1 to 10000000)"},
		{"too much warm-up", map[int]string{bfWarmup: "10001"}, nil, "warm-up: 10001 is out of range (0 to 10000)"},
		{"no warm-up", map[int]string{bfWarmup: "0"}, nil, "completions in 128 out 128 conc 1 32 requests warm-up 0"},
		{"rate", map[int]string{bfRate: "4"}, map[int]int{bfPoisson: 1}, "completions in 128 out 128 conc 1 32 requests rate 4/s poisson warm-up 1"},
		{"poisson without rate", nil, map[int]int{bfPoisson: 1}, "poisson arrivals need a rate (blank rate sends as fast as concurrency allows)"},
		{"bad rate", map[int]string{bfRate: "NaN"}, nil, `rate req/s: "NaN" is not a rate (blank: as fast as possible)`},
		{"negative rate", map[int]string{bfRate: "-1"}, nil, `rate req/s: "-1" is not a rate (blank: as fast as possible)`},
		{"chat", nil, map[int]int{bfEndpoint: 1}, "chat in 128 out 128 conc 1 32 requests warm-up 1"},
	} {
		f := openBench(ds)
		for i, v := range c.fields {
			f.fields[i].input.SetValue(v)
		}
		for i, v := range c.choice {
			f.fields[i].idx = v
		}
		cfg, bad := benchConfig(f.base, &f.form)
		got := bad
		if bad == "" {
			got = bench.ConfigText(cfg)
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Zero defaults (the benchmark's own apply) show blank, and blank
	// fields keep them.
	ds, _ = dialogs(event.BenchConfig{})
	f := openBench(ds)
	if v := f.fields[bfInput].input.Value(); v != "" {
		t.Errorf("zero input len shown as %q", v)
	}
	if cfg, bad := benchConfig(f.base, &f.form); bad != "" || cfg != (event.BenchConfig{Endpoint: event.BenchCompletions}) {
		t.Errorf("zero defaults: %+v %q", cfg, bad)
	}
	// What the fields do not check, Config.Validate does: a defaults
	// config the form keeps as it is.
	ds, _ = dialogs(event.BenchConfig{Timeout: -time.Second})
	f = openBench(ds)
	if _, bad := benchConfig(f.base, &f.form); bad != "timeout -1s: must not be negative" {
		t.Errorf("invalid defaults: %q", bad)
	}
}

// A run without warm-up (Warmup -1 from Bencher.Defaults) reopens with
// "0" in the field, and keeps none when the field is left as it is.
func TestBenchFormKeepsNoWarmup(t *testing.T) {
	d := tuitest.BenchDefaults()
	d.Warmup = -1
	ds, _ := dialogs(d)
	f := openBench(ds)
	if v := f.fields[bfWarmup].input.Value(); v != "0" {
		t.Fatalf("warm-up field %q, want 0", v)
	}
	cfg, bad := benchConfig(f.base, &f.form)
	if bad != "" || cfg.Warmup != -1 {
		t.Fatalf("warm-up %d (%q), want -1 (none)", cfg.Warmup, bad)
	}
	if got := cfg.Defaults().WarmupRequests(); got != 0 {
		t.Fatalf("after Defaults: %d warm-up requests, want 0", got)
	}
}

// TestFormKeys: esc says the run was not started; enter with a bad value
// or while the run cannot start says why and keeps the form; enter starts
// the run and closes it.
func TestFormKeys(t *testing.T) {
	st := style.Plain()
	ds, h := dialogs(tuitest.BenchDefaults())
	ds.OpenBench()
	if h.stack.TopID() != BenchID || h.stack.Top().(*BenchForm).Focused() != "endpoint" {
		t.Fatalf("open: %q", h.stack.TopID())
	}
	h.stack.Key(tuitest.KeyMsg("esc"))
	if !h.stack.Empty() || h.said[0] != "benchmark not started" {
		t.Errorf("esc: %q open, said %q", h.stack.TopID(), h.said)
	}
	ds.OpenBench()
	h.stack.Key(tuitest.KeyMsg("down"))
	h.stack.Key(tuitest.KeyMsg("x"))
	h.stack.Key(tuitest.KeyMsg("enter"))
	if h.stack.TopID() != BenchID || h.said[1] != `cannot start: input len: "128x" is not a whole number` {
		t.Errorf("bad value: %q open, said %q", h.stack.TopID(), h.said)
	}
	h.stack.Key(tuitest.KeyMsg("backspace"))
	h.runs.why = "no server running: L launches one"
	h.stack.Key(tuitest.KeyMsg("enter"))
	if h.stack.TopID() != BenchID || h.said[2] != h.runs.why {
		t.Errorf("cannot start: %q open, said %q", h.stack.TopID(), h.said)
	}
	h.runs.why = ""
	if cmd, _ := h.stack.Key(tuitest.KeyMsg("enter")); cmd == nil || !h.stack.Empty() ||
		strings.Join(h.runs.started, ";") != "bench completions in 128 out 128 conc 1 32 requests warm-up 1" {
		t.Errorf("enter: %q open, started %q", h.stack.TopID(), h.runs.started)
	}
	ds.OpenRepeat()
	if b := h.stack.Top().View(&st, 80, 24); b.Title != "repeat e3 nccl-ll-ring" || h.stack.Top().Help()[0] != (component.Hint{Key: "enter", Desc: "start"}) {
		t.Errorf("repeat form: %q %+v", b.Title, h.stack.Top().Help())
	}
	h.stack.Key(tuitest.KeyMsg("enter"))
	if !h.stack.Empty() || len(h.runs.started) != 2 {
		t.Errorf("repeat: started %q", h.runs.started)
	}
}

// TestStopQuestion: y stops the run, any other key keeps it running; the
// footer says so.
func TestStopQuestion(t *testing.T) {
	ds, h := dialogs(tuitest.BenchDefaults())
	ds.AskStop("repeat")
	if h.stack.TopID() != StopRepeatID || h.stack.Top().Help()[1] != (component.Hint{Key: "n/esc", Desc: "keep running"}) {
		t.Fatalf("asked: %q %+v", h.stack.TopID(), h.stack.Top().Help())
	}
	h.stack.Key(tuitest.KeyMsg("n"))
	ds.AskStop("bench")
	h.stack.Key(tuitest.KeyMsg("y"))
	if !h.stack.Empty() || strings.Join(h.said, ";") != "still running" || strings.Join(h.runs.stopped, ";") != "bench" {
		t.Errorf("said %q, stopped %q", h.said, h.runs.stopped)
	}
}

// TestTinyScreens: every dialog draws at any size without panicking, no
// box where there is no room for one, and a short screen keeps the stop
// question's y/N.
func TestTinyScreens(t *testing.T) {
	st := style.Plain()
	ds, h := dialogs(tuitest.BenchDefaults())
	ds.OpenBench()
	ds.OpenRepeat()
	ds.AskStop("bench")
	for h.stack.Top() != nil {
		d := h.stack.Top()
		tuitest.AuditDialogSizes(t, &st, d.ID(), d, [][2]int{{0, 0}, {1, 1}, {7, 4}, {8, 5}, {12, 6}, {20, 6}, {300, 100}})
		h.stack.Pop()
	}
	ds.AskStop("bench")
	b := h.stack.Top().View(&st, 20, 6)
	if last := b.Body[len(b.Body)-1]; len(b.Body) != 2 || !strings.HasSuffix(style.StripSGR(last), "y/N") {
		t.Errorf("short stop question: %q", b.Body)
	}
}
