// Package bench is the cockpit's benchmark and repeat runs: b runs a
// benchmark against the server, R relaunches the current configuration N
// times to measure its launch-to-launch noise. The panel owns both keys
// (b and R open their forms, tui/dialogs/measure, or ask to stop the run
// they started), the runs started from this cockpit (their contexts, run
// through the Control and RepeatControl in tea.Cmds), and what the screen
// shows of them, which comes only from the event stream:
// event.BenchStarted and event.BenchProgress drive a banner under the
// header, event.BenchDone a result box that stays until esc dismisses it,
// event.RepeatProgress the repeat's banner. A replay shows the recorded
// start and result (progress is never journaled).
package bench

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Control runs the benchmark behind b; *sessions.Bencher implements it.
// BenchDefaults does no I/O (called from Update); Bench does I/O and runs
// only inside a tea.Cmd. Bench publishes event.BenchStarted,
// event.BenchProgress and event.BenchDone on the stream (the screen draws
// those), and returns the result when the run ends (cancelled: ctx
// ended).
type Control interface {
	// BenchDefaults is the config the form starts from: every field
	// filled, zero where the benchmark's own default applies.
	BenchDefaults() event.BenchConfig
	// Bench runs cfg until it is done or ctx ends (then the result keeps
	// the requests that finished, Cancelled set).
	Bench(ctx context.Context, cfg event.BenchConfig) (*event.BenchResult, error)
}

// RepeatControl runs the repeat behind R; *sessions.Repeater implements
// it. Repeat does I/O and runs only inside a tea.Cmd; it publishes
// event.RepeatProgress on the stream and returns when the repeat is done,
// fails, or ctx ends.
type RepeatControl interface {
	// Repeat relaunches the current configuration cfg.N more times, measuring
	// each launch; nil when every launch was measured.
	Repeat(ctx context.Context, cfg sessions.RepeatConfig) error
}

// ResultMsg is the answer of a benchmark started with b: its result, or
// why it could not run. The screen's result box comes from the
// event.BenchDone event, not from this message.
type ResultMsg struct {
	Result *event.BenchResult // nil when the run made none
	Err    error              // why it could not run or finish; nil when it did
}

// RepeatResultMsg is the answer of a repeat started with R: nil Err when
// every launch was measured, else why it stopped.
type RepeatResultMsg struct {
	Err error // nil when every launch was measured
}

// Dialogs opens the dialogs the panel's keys ask with
// (tui/dialogs/measure.Dialogs): the forms return their first command.
type Dialogs interface {
	// OpenBench opens the benchmark form.
	OpenBench() tea.Cmd
	// OpenRepeat opens the repeat form.
	OpenRepeat() tea.Cmd
	// AskStop asks to stop the run started here: what is "bench" or
	// "repeat" (Panel.Stop does it).
	AskStop(what string)
}

// Run is a benchmark or a repeat started from this cockpit: the cancel
// func of its context (nil when none runs from here), whether it runs,
// and whether its stop was asked.
type Run struct {
	Cancel  context.CancelFunc // ends the run's context; nil when none runs from here
	Running bool               // its command has not answered yet
	Stopped bool               // its stop was asked (its context is cancelled)
}

// Panel is the benchmark and repeat panel: its keys (BenchKey b, RepeatKey
// R, a component.Panel), the runs started here, what the stream says of
// every run, and its drawing (Banners, Box). The root sets the func
// fields that tie it to the cockpit. Its keys ask it why they cannot
// act: use it by pointer (NewPanel).
type Panel struct {
	// BenchKey (b) opens the benchmark form, or asks to stop the one
	// running from here; RepeatKey (R) the same for a repeat.
	BenchKey, RepeatKey component.Binding

	// Bench runs the benchmarks the form starts (the cockpit's
	// Options.Bench); nil: b says why it cannot.
	Bench Control
	// Repeat runs the repeats the form starts (Options.Repeat); nil: R
	// says why it cannot.
	Repeat RepeatControl
	// Dialogs opens the forms and the stop question.
	Dialogs Dialogs
	// Replay is set in a replayed journal: a run's banner says its
	// progress is not recorded.
	Replay bool

	// BenchRun and RepeatRun are the runs started here.
	BenchRun, RepeatRun Run
	// QuitWhen: a confirmed quit stopped the repeat; the cockpit quits
	// when its RepeatResultMsg arrives (its relaunch finishes under its
	// own deadline first).
	QuitWhen bool

	// Refused, when set, says why nothing may change the host from this
	// cockpit (a replay, another cockpit drives), does saying what the
	// key would do ("a benchmark would load the server"); "" when it may.
	Refused func(does string) string
	// Busy, when set, says why a server action in flight keeps a repeat
	// from starting ("a kill is in progress"); "" when none runs.
	Busy func() string
	// Offline, when set, says why the host cannot be reached now ("not
	// connected"); "" when it can.
	Offline func() string
	// Server, when set, says whether the cockpit knows the server's state
	// (a status arrived) and whether a server runs.
	Server func() (known, running bool)
	// Experiment, when set, reports whether an experiment is open (a
	// repeat measures the open one).
	Experiment func() bool
	// Flash answers in the status line until the next key.
	Flash func(text string, tone style.Token)
	// Record, when set, returns what records the key that started a run
	// as its cause; it runs inside the run's tea.Cmd.
	Record func(action string) func()
	// RecordCmd, when set, is a tea.Cmd that only records the key as the
	// cause of action (a stop); nil when nothing is recorded.
	RecordCmd func(action string) tea.Cmd
	// Ctx is the context the runs' contexts derive from (it ends when the
	// program does); context.Background when nil.
	Ctx func() context.Context

	// From the stream: the benchmark in progress (nil when none), its
	// latest progress, and the latest finished one, shown in the result
	// box until esc dismisses it (dismissed: its id).
	cur       *event.BenchStarted
	prog      event.BenchProgress
	hasProg   bool
	done      *event.BenchDone
	show      bool
	dismissed string

	// The repeat in progress by the stream, sanitised.
	rep    event.RepeatProgress
	hasRep bool
}

// NewPanel returns a panel with no runs yet.
func NewPanel() *Panel {
	p := &Panel{
		BenchKey:  component.New("actions", "b", "bench", "b").InFooter(),
		RepeatKey: component.New("actions", "R", "repeat", "R"),
	}
	p.BenchKey.Long = "benchmark the server (a form; b again stops it)"
	p.RepeatKey.Long = "repeat the launch N times: A/A noise (R stops it)"
	p.BenchKey.Disabled = p.BenchWhy
	p.RepeatKey.Disabled = p.RepeatWhy
	return p
}

// Bindings implements component.Panel, in the help's order.
func (p *Panel) Bindings() []*component.Binding {
	return []*component.Binding{&p.BenchKey, &p.RepeatKey}
}

// Act implements component.Panel: b and R open their form, or, while
// their run started here runs, ask to stop it.
func (p *Panel) Act(b *component.Binding) tea.Cmd {
	switch b {
	case &p.BenchKey:
		if p.BenchRun.Running {
			p.Dialogs.AskStop("bench")
			return nil
		}
		return p.Dialogs.OpenBench()
	case &p.RepeatKey:
		if p.RepeatRun.Running {
			p.Dialogs.AskStop("repeat")
			return nil
		}
		return p.Dialogs.OpenRepeat()
	}
	return nil
}

// BenchWhy is why b cannot start a benchmark; "" when it can (b while one
// runs from here asks to stop it instead).
func (p *Panel) BenchWhy() string {
	if why := call1(p.Refused, "a benchmark would load the server"); why != "" {
		return why
	}
	switch {
	case p.Bench == nil:
		return "benchmark not available here: it needs a connection to the server's host"
	case p.BenchRun.Running:
		return ""
	case p.cur != nil:
		return "a benchmark is running (" + sanitize.String(p.cur.ID) + ", started by a repeat)"
	case p.RepeatRun.Running:
		return "a repeat is running: its relaunches would cut a benchmark short (R stops it; 'bench each' benchmarks every launch)"
	}
	if why := call(p.Offline); why != "" {
		return why
	}
	if known, running := p.server(); known && !running {
		return "no server running: L launches one"
	}
	return ""
}

// RepeatWhy is why R cannot start a repeat; "" when it can (R while one
// runs from here asks to stop it instead).
func (p *Panel) RepeatWhy() string {
	if why := call1(p.Refused, "a repeat would relaunch the server"); why != "" {
		return why
	}
	switch {
	case p.Repeat == nil:
		return "repeat not available here: it needs server control and a journal"
	case p.RepeatRun.Running:
		return ""
	case p.hasRep:
		return "a repeat is running"
	}
	if why := call(p.Busy); why != "" {
		return why
	}
	if p.BenchRun.Running {
		return "a benchmark is running: wait for it, or b stops it"
	}
	if why := call(p.Offline); why != "" {
		return why
	}
	if _, running := p.server(); !running {
		return "no server running: L launches one"
	}
	if p.Experiment == nil || !p.Experiment() {
		return "no open experiment: a launch from here starts one (or e)"
	}
	return ""
}

// server is Server's answer; nothing known without one.
func (p *Panel) server() (known, running bool) {
	if p.Server == nil {
		return false, false
	}
	return p.Server()
}

// call is f's answer, "" when f is nil.
func call(f func() string) string {
	if f == nil {
		return ""
	}
	return f()
}

// call1 is f(arg), "" when f is nil.
func call1(f func(string) string, arg string) string {
	if f == nil {
		return ""
	}
	return f(arg)
}

// flash answers in the status line, if the root listens.
func (p *Panel) flash(text string, tone style.Token) {
	if p.Flash != nil {
		p.Flash(text, tone)
	}
}

// record is Record's recorder for action, a no-op without one.
func (p *Panel) record(action string) func() {
	if p.Record == nil {
		return func() {}
	}
	return p.Record(action)
}

// recordCmd is RecordCmd's command for action, nil without one.
func (p *Panel) recordCmd(action string) tea.Cmd {
	if p.RecordCmd == nil {
		return nil
	}
	return p.RecordCmd(action)
}

// ctx is the context runs derive from.
func (p *Panel) ctx() context.Context {
	if p.Ctx == nil {
		return context.Background()
	}
	return p.Ctx()
}
