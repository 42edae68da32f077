package tui

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The benchmark in the cockpit: b opens a form prefilled from
// BenchControl.Defaults; enter runs BenchControl.Run in a tea.Cmd under a
// context that b or esc cancels (after asking). What the screen shows
// comes only from the stream: event.BenchStarted and event.BenchProgress drive a
// banner under the header, event.BenchDone a result box that stays until esc
// dismisses it, and the ledger lists finished runs in the experiments
// panel's details. A replay shows the recorded start and result (progress
// is never journaled).

// BenchResultMsg is the answer of a Run started with b: its result, or
// why it could not run. The screen's result box comes from the event.BenchDone
// event, not from this message.
type BenchResultMsg struct {
	Result *event.BenchResult
	Err    error
}

// Overlays of issue 6, after the experiment ones (experiments.go).
const (
	modalBench   modal = 210 + iota // b: the benchmark form
	modalRepeat                     // R: the repeat form
	modalStop                       // b/R/esc while one runs: stop it? y/N
	modalCompare                    // c in the x panel: the compare view
)

// isMeasureModal reports whether md is one of the overlays above.
func isMeasureModal(md modal) bool { return md >= modalBench && md <= modalCompare }

// benchState is the benchmark's side of the model.
type benchState struct {
	ctl  BenchControl // Options.Bench; nil: b says why it cannot run
	form *measureForm
	base event.BenchConfig // Defaults() when the form opened: what blank fields keep

	// The run started here: its cancel func (nil when none runs from
	// here), and whether its stop was asked.
	cancel  context.CancelFunc
	running bool
	stopped bool

	// From the stream: the run in progress (nil when none), its latest
	// progress, and the latest finished run, shown in the result box
	// until esc dismisses it (dismissed: its id).
	cur       *event.BenchStarted
	prog      event.BenchProgress
	hasProg   bool
	done      *event.BenchDone
	show      bool
	dismissed string
}

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

// benchUnavailable is why b cannot start a benchmark; "" when it can (b
// while one runs from here asks to stop it instead).
func benchUnavailable(m *Model) string {
	switch {
	case m.opts.ReadOnly:
		return m.roPrefix() + ": a benchmark would load the server"
	case m.watching():
		return m.watchingWhy()
	case m.bench.ctl == nil:
		return "benchmark not available here: it needs a connection to the server's host"
	case m.bench.running:
		return ""
	case m.bench.cur != nil:
		return "a benchmark is running (" + sanitize.String(m.bench.cur.ID) + ", started by a repeat)"
	case m.rep.running:
		return "a repeat is running: its relaunches would cut a benchmark short (R stops it; 'bench each' benchmarks every launch)"
	}
	if why := notConnected(m); why != "" {
		return why
	}
	if m.srv.hasSt && !m.srv.running() {
		return "no server running: L launches one"
	}
	return ""
}

// measureBindings sets the issue-6 keys' help.
func measureBindings(k *KeyMap) {
	k.Bench.Long = "benchmark the server (a form; b again stops it)"
	k.Repeat.Long = "repeat the launch N times: A/A noise (R stops it)"
	k.Mark.Long = "x panel: mark (c compares two)"
	k.Compare.Long = "x panel: cursor vs marked/base"
	k.Baseline.Long = "x panel: (un)mark the baseline"
}

// openBench opens the form, prefilled from BenchControl.Defaults (blank
// where a default is zero: the benchmark's own default applies).
func (m *Model) openBench() tea.Cmd {
	m.showHelp = false
	d := m.bench.ctl.BenchDefaults()
	m.bench.base = d
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
	m.bench.form = f
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
	return measureFormKey(m, msg, &m.bench.form, "benchmark",
		func() (event.BenchConfig, string) { return benchConfig(m.bench.base, m.bench.form) },
		benchUnavailable, m.startBench)
}

// startBench runs cfg in a tea.Cmd under a context b (or esc) cancels.
func (m *Model) startBench(cfg event.BenchConfig) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	ctl := m.bench.ctl
	b := &m.bench
	b.cancel, b.running, b.stopped, b.show = cancel, true, false, false
	rec := m.recorder("bench " + benchConfigText(cfg))
	return func() tea.Msg {
		defer cancel()
		rec()
		r, err := ctl.Bench(ctx, cfg)
		return BenchResultMsg{Result: r, Err: err}
	}
}

// benchResult applies the answer of a Run.
func (m *Model) benchResult(r BenchResultMsg) {
	b := &m.bench
	stopped := b.stopped
	b.cancel, b.running, b.stopped = nil, false, false
	if m.modal == modalStop && m.stopWhat == "bench" {
		m.modal = modalNone // the question is moot
	}
	switch {
	case r.Err != nil && (stopped || errors.Is(r.Err, context.Canceled)) && r.Result == nil:
		m.flash("benchmark stopped before any result", style.Dim)
	case r.Err != nil:
		m.flash("benchmark failed: "+errText(r.Err), style.Crit)
	case r.Result != nil && r.Result.Cancelled:
		m.flash("benchmark stopped: "+style.Plural(r.Result.Completed, "request")+" measured", style.Warn)
	case r.Result != nil && r.Result.Failed > 0:
		res := r.Result
		_, tn := benchOutcome("", res)
		s := "benchmark done: " + strconv.Itoa(res.Failed) + " of " + strconv.Itoa(res.Completed+res.Failed) + " requests failed"
		if res.Completed > 0 {
			s += "; " + fmtNum(res.OutputTokPerSec) + " tok/s output over the " + strconv.Itoa(res.Completed) + " that succeeded"
		} else if len(res.Errors) > 0 {
			s += ": " + sanitize.String(res.Errors[0].Err)
		}
		m.flash(s, tn)
	case r.Result != nil:
		m.flash("benchmark done: "+fmtNum(r.Result.OutputTokPerSec)+" tok/s output", style.OK)
	}
}

// applyBench folds a benchmark event from the stream.
func (m *Model) applyBench(p any) {
	b := &m.bench
	switch p := p.(type) {
	case event.BenchStarted:
		s := p
		b.cur, b.hasProg = &s, false
	case event.BenchProgress:
		if b.cur != nil && b.cur.ID == p.ID {
			b.prog, b.hasProg = p, true
		}
	case event.BenchDone:
		if b.cur != nil && b.cur.ID == p.ID {
			b.cur, b.hasProg = nil, false
		}
		d := p
		b.done = &d
		b.show = p.ID != b.dismissed
	}
}

// askStop opens the stop question for a benchmark ("bench") or a repeat
// ("repeat") started here.
func (m *Model) askStop(what string) {
	m.showHelp = false
	m.stopWhat, m.modal = what, modalStop
}

// stopQuestion is the stop overlay's question.
func (m *Model) stopQuestion() string {
	if m.stopWhat == "repeat" {
		q := "Stop the repeat"
		if p := &m.rep.prog; m.rep.hasProg && p.N > 0 {
			q += " at launch " + strconv.Itoa(p.I) + "/" + strconv.Itoa(p.N)
		}
		return q + "? A relaunch in progress finishes first; the server keeps running."
	}
	q := "Stop the benchmark"
	if c := m.bench.cur; c != nil {
		q += " " + sanitize.String(c.ID)
	}
	if p := &m.bench.prog; m.bench.hasProg && p.Total > 0 {
		q += " (" + strconv.Itoa(p.Done) + "/" + strconv.Itoa(p.Total) + " requests done)"
	}
	return q + "? Its result keeps the requests that finished."
}

// stopKey answers the stop question: y cancels the run's context.
func (m *Model) stopKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	m.modal = modalNone
	if msg.String() != "y" {
		m.flash("still running", style.Dim)
		return m, nil
	}
	cancel, stopped, what := m.bench.cancel, &m.bench.stopped, "the benchmark"
	if m.stopWhat == "repeat" {
		cancel, stopped, what = m.rep.cancel, &m.rep.stopped, "the repeat"
	}
	if cancel == nil {
		m.flash(what+" had already ended", style.Dim)
		return m, nil
	}
	cancel()
	*stopped = true
	m.flash("stopping "+what+" ...", style.Warn)
	return m, m.recordCmd("stop " + m.stopWhat)
}

// benchBanner is the running benchmark's line under the header: "bench b1
// 12/32 requests  1 failed  88.4 tok/s  [#####-----]  b stops".
func (m *Model) benchBanner() []banner {
	c := m.bench.cur
	if c == nil {
		return nil
	}
	id := sanitize.String(c.ID)
	head := "bench " + id
	if !m.bench.hasProg {
		what := head + " running on " + sanitize.String(c.Target)
		if m.opts.ReadOnly {
			return []banner{{text: what + " (progress is not recorded)", short: head + " running", tone: style.Accent}}
		}
		return []banner{{text: what + ": starting", short: head + " starting", tone: style.Accent}}
	}
	p := &m.bench.prog
	var parts []string
	frac := -1.0
	switch {
	case p.Warmup:
		parts = append(parts, "warming up")
	case p.Total > 0:
		parts = append(parts, strconv.Itoa(p.Done)+"/"+strconv.Itoa(p.Total)+" requests")
		frac = float64(p.Done) / float64(p.Total)
	case p.Limit > 0:
		parts = append(parts, style.ShortDur(p.Elapsed)+"/"+style.ShortDur(p.Limit)+", "+strconv.Itoa(p.Done)+" requests")
		frac = float64(p.Elapsed) / float64(p.Limit)
	default:
		parts = append(parts, strconv.Itoa(p.Done)+" requests")
	}
	tn := style.Accent
	if p.Failed > 0 {
		parts = append(parts, strconv.Itoa(p.Failed)+" failed")
		tn = style.Warn
	}
	if !p.Warmup && p.TokPerSec > 0 {
		parts = append(parts, fmtNum(p.TokPerSec)+" tok/s")
	}
	text := head + " " + strings.Join(parts, "  ")
	short := text
	if frac >= 0 {
		text += "  " + progressBar(frac, 20)
	}
	if m.bench.running {
		text += "  (b stops)"
	}
	return []banner{{text: text, short: short, tone: tn}}
}

// progressBar is "[#####-----]" with n cells inside the brackets, frac of
// them filled (clamped to [0, 1]).
func progressBar(frac float64, n int) string {
	if math.IsNaN(frac) {
		frac = 0
	}
	k := int(math.Round(math.Max(0, math.Min(frac, 1)) * float64(n)))
	return "[" + strings.Repeat("#", k) + strings.Repeat("-", n-k) + "]"
}

// fmtNum is a tok/s or ms value as the reports write it (report.FormatNum),
// so that the result box, the panel and journal diff agree.
func fmtNum(v float64) string { return report.FormatNum(v) }

// benchConfigText is a config in one line: "completions in 128 out 128
// conc 4 32 requests rate 2/s poisson warm-up 1".
func benchConfigText(c event.BenchConfig) string {
	parts := []string{firstOf(sanitize.String(string(c.Endpoint)), "completions")}
	num := func(label string, v int) {
		if v > 0 {
			parts = append(parts, label+" "+strconv.Itoa(v))
		}
	}
	num("in", c.InputLen)
	num("out", c.OutputLen)
	num("conc", c.Concurrency)
	switch {
	case c.Requests > 0:
		parts = append(parts, style.Plural(c.Requests, "request"))
	case c.Duration >= time.Second:
		parts = append(parts, "for "+style.ShortDur(c.Duration))
	case c.Duration > 0:
		parts = append(parts, "for "+c.Duration.String()) // "200ms", not "0s"
	}
	if c.Rate > 0 {
		r := "rate " + strconv.FormatFloat(c.Rate, 'f', -1, 64) + "/s"
		if c.Poisson {
			r += " poisson"
		}
		parts = append(parts, r)
	}
	parts = append(parts, "warm-up "+strconv.Itoa(c.WarmupRequests()))
	return strings.Join(parts, " ")
}

// benchBox is the result box of the latest finished run: its lines and
// inner width for a w-cell screen, nil when it is not shown.
func (m *Model) benchBox(w int) ([]string, int) {
	b := &m.bench
	if !b.show || b.done == nil || w < 24 {
		return nil, 0
	}
	st := &m.styles
	d := b.done
	iw := min(w-4, 72)
	id := sanitize.String(d.ID)
	title := "bench " + id
	if d.Exp != "" {
		title += " on " + sanitize.String(d.Exp)
	}
	lab := func(l string) string { return st.Dim.Render(style.PadRight(l, 10)) }
	var body []string
	r := d.Result
	frame := st.Accent
	switch {
	case r == nil:
		title += ": failed"
		frame = st.Crit
		for _, l := range style.Wrap(firstOf(sanitize.String(d.Err), "no result"), iw) {
			body = append(body, st.Crit.Render(l))
		}
	default:
		var how style.Token
		title, how = benchOutcome(title, r)
		frame = st.Tone(how)
		body = append(body,
			lab("target")+style.Truncate(sanitize.String(r.Target), iw-10),
			lab("config")+style.Truncate(benchConfigText(r.Config), iw-10),
			lab("output")+st.Accent.Render(fmtNum(r.OutputTokPerSec)+" tok/s")+"   total "+fmtNum(r.TotalTokPerSec)+" tok/s   "+
				strconv.FormatFloat(r.ReqPerSec, 'f', 2, 64)+" req/s",
		)
		reqs := strconv.Itoa(r.Completed) + " ok"
		tn := st.Text
		if r.Failed > 0 {
			reqs += ", " + strconv.Itoa(r.Failed) + " failed"
			tn = st.Warn
			if r.Completed == 0 {
				tn = st.Crit
			}
		}
		reqs += " in " + fmtSeconds(r.Duration)
		body = append(body, lab("requests")+tn.Render(reqs))
		if r.Cancelled {
			body = append(body, st.Warn.Render(style.Truncate("stopped early: the metrics cover the requests that finished", iw)))
		}
		body = append(body, "", st.Title.Render(style.PadRight("ms", 10)+style.PadLeft("mean", 9)+style.PadLeft("median", 9)+style.PadLeft("p90", 9)+style.PadLeft("p99", 9)))
		for _, row := range []struct {
			name string
			d    event.Dist
		}{{"TTFT", r.TTFT}, {"ITL", r.ITL}, {"TPOT", r.TPOT}, {"E2E", r.E2E}} {
			if row.d.N == 0 {
				body = append(body, lab(row.name)+st.Dim.Render("no values"))
				continue
			}
			body = append(body, lab(row.name)+style.PadLeft(fmtNum(row.d.Mean), 9)+style.PadLeft(fmtNum(row.d.Median), 9)+
				style.PadLeft(fmtNum(row.d.P90), 9)+style.PadLeft(fmtNum(row.d.P99), 9))
		}
		for i, e := range r.Errors {
			l := ""
			if i == 0 {
				body = append(body, "")
				l = "errors"
			}
			body = append(body, lab(l)+st.Warn.Render(style.Truncate(sanitize.String(e.Err)+" x"+strconv.Itoa(e.Count), iw-10)))
		}
	}
	hint := "esc dismisses"
	if d.Exp != "" {
		hint += "; x lists it with " + sanitize.String(d.Exp)
	}
	body = append(body, "", st.Dim.Render(style.Truncate(hint, iw)))
	return component.Frame(st, frame, title, body, iw), iw
}

// benchOutcome is the result box's title for a finished run, title plus
// how it ended ("bench b1 on e3: done", ": done: 30 of 32 failed",
// ": stopped early"), and the box's tone: warn when requests failed or it
// was stopped, crit when none succeeded.
func benchOutcome(title string, r *event.BenchResult) (string, style.Token) {
	tn := style.Accent
	failed := ""
	if r.Failed > 0 {
		failed = strconv.Itoa(r.Failed) + " of " + strconv.Itoa(r.Completed+r.Failed) + " failed"
		tn = style.Warn
	}
	if r.Cancelled {
		title += ": stopped early"
		if failed != "" {
			title += ", " + failed
		}
		tn = style.Warn
	} else {
		title += ": done"
		if failed != "" {
			title += ": " + failed
		}
	}
	if r.Completed == 0 && (r.Failed > 0 || !r.Cancelled) {
		tn = style.Crit // nothing measured
	}
	return title, tn
}

// fmtSeconds is a duration in seconds to one decimal: "23.2s".
func fmtSeconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s" }

// benchFormBox is the bench form's title and content for inner width iw.
func (m *Model) benchFormBox(iw int) (string, []string) {
	title := "benchmark"
	if cur := m.exp.ledger.Current(); cur != nil {
		title += " (its result goes with " + sanitize.String(cur.ID) + ")"
	} else if m.exp.ctl != nil {
		title += " (no open experiment: the result is not kept with one)"
	}
	_, bad := benchConfig(m.bench.base, m.bench.form)
	hints := []string{
		"Streams random prompts of the input length; max_tokens is the output length (ignore_eos). Warm-up requests run first and are left out of every metric. A blank rate sends as fast as the concurrency allows; poisson draws exponential gaps at the rate.",
	}
	return title, m.renderForm(m.bench.form, iw, hints, bad, "enter", "run", "tab", "field", "left/right", "choose", "esc", "cancel")
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
