package tui

import (
	"context"
	"math"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/panels/bench"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The benchmark and the repeat (tui/panels/bench) tied to the cockpit:
// why their keys cannot act for the rest of the cockpit, the answers of
// their commands, and quitting while a repeat runs. Their forms and the
// stop question are overlays here until they move to the stack.

// BenchResultMsg is the answer of a benchmark started with b: its result,
// or why it could not run. The screen's result box comes from the
// event.BenchDone event, not from this message.
type BenchResultMsg = bench.ResultMsg

// Overlays of issue 6, after the experiment ones (experiments.go).
const (
	modalBench   modal = 210 + iota // b: the benchmark form
	modalRepeat                     // R: the repeat form
	modalStop                       // b/R/esc while one runs: stop it? y/N
	modalCompare                    // c in the x panel: the compare view
)

// isMeasureModal reports whether md is one of the overlays above.
func isMeasureModal(md modal) bool { return md >= modalBench && md <= modalCompare }

// Bench form fields, in order.
const (
	bfEndpoint = iota
	bfInput
	bfOutput
	bfConcurrency
	bfRequests
	bfDuration
	bfRate
	bfPoisson
	bfWarmup
	bfFields
)

// measureBindings sets the issue-6 keys' help.
func measureBindings(k *KeyMap) {
	k.Mark.Long = "x panel: mark (c compares two)"
	k.Compare.Long = "x panel: cursor vs marked/base"
	k.Baseline.Long = "x panel: (un)mark the baseline"
}

// openBench opens the form, prefilled from BenchControl.Defaults (blank
// where a default is zero: the benchmark's own default applies).
func (m *Model) openBench() tea.Cmd {
	m.showHelp = false
	d := m.bench.Bench.BenchDefaults()
	m.benchBase = d
	num := func(v int) string {
		if v <= 0 {
			return ""
		}
		return strconv.Itoa(v)
	}
	endpoint := 0
	if d.Endpoint == event.BenchChat {
		endpoint = 1
	}
	poisson := 0
	if d.Poisson {
		poisson = 1
	}
	dur, rate := "", ""
	if d.Duration > 0 {
		dur = d.Duration.String()
	}
	if d.Rate > 0 {
		rate = strconv.FormatFloat(d.Rate, 'f', -1, 64)
	}
	f := &measureForm{fields: []formField{
		choiceField("endpoint", []string{string(event.BenchCompletions), string(event.BenchChat)}, endpoint),
		m.textField("input len", num(d.InputLen), "128 tokens"),
		m.textField("output len", num(d.OutputLen), "128 tokens"),
		m.textField("concurrency", num(d.Concurrency), "1"),
		m.textField("requests", num(d.Requests), "32, or blank with a duration"),
		m.textField("duration", dur, "e.g. 60s (instead of requests)"),
		m.textField("rate req/s", rate, "blank: as fast as possible"),
		choiceField("poisson", []string{"no", "yes"}, poisson),
		m.textField("warm-up", warmupText(d.Warmup), "1 request"),
	}}
	m.benchForm = f
	m.modal = modalBench
	return f.setFocus(bfEndpoint)
}

// benchConfig is the form's config over base (what blank fields keep), or
// why it is not valid.
func benchConfig(base event.BenchConfig, f *measureForm) (event.BenchConfig, string) {
	c := base
	c.Endpoint = event.BenchEndpoint(f.choice(bfEndpoint))
	for _, n := range []struct {
		field  int
		dst    *int
		lo, hi int
	}{
		{bfInput, &c.InputLen, 1, event.BenchMaxLen},
		{bfOutput, &c.OutputLen, 1, event.BenchMaxLen},
		{bfConcurrency, &c.Concurrency, 1, event.BenchMaxConcurrency},
		{bfRequests, &c.Requests, 1, event.BenchMaxRequests},
		{bfWarmup, &c.Warmup, 0, event.BenchMaxWarmup},
	} {
		v, why := wholeNumber(f.fields[n.field].label, f.text(n.field), *n.dst, n.lo, n.hi)
		if why != "" {
			return base, why
		}
		*n.dst = v
	}
	switch {
	case f.text(bfWarmup) == "":
		c.Warmup = base.Warmup
	case c.Warmup == 0:
		c.Warmup = -1 // none: a zero Config.Warmup takes the default (1)
	}
	if s := f.text(bfRequests); s == "" {
		c.Requests = 0
	}
	c.Duration = 0
	if s := f.text(bfDuration); s != "" {
		d, err := parseSeconds(s)
		if err != "" {
			return base, "duration: " + err
		}
		c.Duration = d
	}
	if c.Requests > 0 && c.Duration > 0 {
		return base, "requests or duration, not both: clear one"
	}
	c.Rate = 0
	if s := f.text(bfRate); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
			return base, "rate req/s: " + strconv.Quote(s) + " is not a rate (blank: as fast as possible)"
		}
		c.Rate = r
	}
	c.Poisson = f.choice(bfPoisson) == "yes"
	if c.Poisson && c.Rate == 0 {
		return base, "poisson arrivals need a rate (blank rate sends as fast as concurrency allows)"
	}
	// The benchmark's own check has the last word (a default the form
	// left in place, a limit the fields above do not cover).
	if err := c.Defaults().Validate(); err != nil {
		return base, errText(err)
	}
	return c, ""
}

// parseSeconds parses "60s", "2m30s" or a plain number of seconds into a
// positive duration, or says why it cannot.
func parseSeconds(s string) (time.Duration, string) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if v <= 0 || math.IsNaN(v) || v > 7*24*3600 {
			return 0, strconv.Quote(s) + " is not a positive number of seconds (at most a week)"
		}
		return time.Duration(v * float64(time.Second)), ""
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > 7*24*time.Hour {
		return 0, strconv.Quote(s) + " is not a duration: 60s, 2m, 1m30s"
	}
	return d, ""
}

// benchKey handles a key while the bench form is open.
func (m *Model) benchKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	return measureFormKey(m, msg, &m.benchForm, "benchmark",
		func() (event.BenchConfig, string) { return benchConfig(m.benchBase, m.benchForm) },
		m.bench.BenchWhy, m.bench.StartBench)
}

// wireBench ties the benchmark and repeat panel to the model.
func (m *Model) wireBench() {
	p := m.bench
	p.Bench, p.Repeat, p.Replay = m.opts.Bench, m.opts.Repeat, m.opts.ReadOnly
	p.Refused = func(does string) string {
		switch {
		case m.opts.ReadOnly:
			return m.roPrefix() + ": " + does
		case m.watching():
			return m.watchingWhy()
		}
		return ""
	}
	p.Busy = func() string {
		switch m.srv.busy {
		case actionKill:
			return "a kill is in progress"
		case actionLaunch:
			return "a launch is in progress"
		}
		return ""
	}
	p.Offline = func() string { return notConnected(m) }
	p.Server = func() (known, running bool) { return m.srv.hasSt, m.srv.running() }
	p.Experiment = func() bool { return m.exp.ledger.Current() != nil }
	p.Flash = m.flash
	p.Record = m.recorder
	p.RecordCmd = m.recordCmd
	p.Ctx = func() context.Context { return m.ctx }
	p.Dialogs = measureModals{m}
}

// measureModals opens the panel's forms and stop question as the root's
// overlays.
type measureModals struct{ m *Model }

func (d measureModals) OpenBench() tea.Cmd  { return d.m.openBench() }
func (d measureModals) OpenRepeat() tea.Cmd { return d.m.openRepeat() }
func (d measureModals) AskStop(what string) { d.m.askStop(what) }

// benchResult applies the answer of a benchmark started here; a stop
// question still open is moot.
func (m *Model) benchResult(r BenchResultMsg) {
	m.bench.BenchResult(r)
	if m.modal == modalStop && m.stopWhat == "bench" {
		m.modal = modalNone // the question is moot
	}
}

// applyBench folds a benchmark event from the stream into the panel.
func (m *Model) applyBench(p any) {
	switch p := p.(type) {
	case event.BenchStarted:
		m.bench.Started(p)
	case event.BenchProgress:
		m.bench.Progressed(p)
	case event.BenchDone:
		m.bench.Finished(p)
	}
}

// askStop opens the stop question for a benchmark ("bench") or a repeat
// ("repeat") started here.
func (m *Model) askStop(what string) {
	m.showHelp = false
	m.stopWhat, m.modal = what, modalStop
}

// stopKey answers the stop question: y stops the run.
func (m *Model) stopKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	m.modal = modalNone
	if msg.String() != "y" {
		m.flash("still running", style.Dim)
		return m, nil
	}
	return m, m.bench.Stop(m.stopWhat)
}

// benchFormBox is the bench form's title and content for inner width iw.
func (m *Model) benchFormBox(iw int) (string, []string) {
	title := "benchmark"
	if cur := m.exp.ledger.Current(); cur != nil {
		title += " (its result goes with " + sanitize.String(cur.ID) + ")"
	} else if m.exp.ctl != nil {
		title += " (no open experiment: the result is not kept with one)"
	}
	_, bad := benchConfig(m.benchBase, m.benchForm)
	hints := []string{
		"Streams random prompts of the input length; max_tokens is the output length (ignore_eos). Warm-up requests run first and are left out of every metric. A blank rate sends as fast as the concurrency allows; poisson draws exponential gaps at the rate.",
	}
	return title, m.renderForm(m.benchForm, iw, hints, bad, "enter", "run", "tab", "field", "left/right", "choose", "esc", "cancel")
}

// warmupText is the warm-up field's text for Config.Warmup: blank for 0
// (the default), "0" for a negative count (none).
func warmupText(n int) string {
	switch {
	case n < 0:
		return "0"
	case n == 0:
		return ""
	}
	return strconv.Itoa(n)
}
