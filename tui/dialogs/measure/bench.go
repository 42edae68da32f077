package measure

import (
	"math"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Benchmark form fields, in order.
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

// BenchForm is the benchmark form (b): the endpoint, the prompt and
// output lengths, the concurrency, the requests or the duration, the rate
// and its arrivals, and the warm-up, prefilled from Runs.BenchDefaults;
// enter starts the run (Runs.StartBench).
type BenchForm struct {
	form
	ds   *Dialogs
	base event.BenchConfig // the defaults when the form opened: what blank fields keep
}

// OpenBench opens the benchmark form, prefilled from the defaults (blank
// where a default is zero: the benchmark's own default applies), and
// returns its first command.
func (ds *Dialogs) OpenBench() tea.Cmd {
	d := ds.Runs.BenchDefaults()
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
	f := &BenchForm{ds: ds, base: d, form: form{fields: []field{
		choiceField("endpoint", []string{string(event.BenchCompletions), string(event.BenchChat)}, endpoint),
		ds.textField("input len", num(d.InputLen), "128 tokens"),
		ds.textField("output len", num(d.OutputLen), "128 tokens"),
		ds.textField("concurrency", num(d.Concurrency), "1"),
		ds.textField("requests", num(d.Requests), "32, or blank with a duration"),
		ds.textField("duration", dur, "e.g. 60s (instead of requests)"),
		ds.textField("rate req/s", rate, "blank: as fast as possible"),
		choiceField("poisson", []string{"no", "yes"}, poisson),
		ds.textField("warm-up", warmupText(d.Warmup), "1 request"),
	}}}
	ds.Push(f)
	return f.setFocus(bfEndpoint)
}

// ID implements component.Dialog.
func (f *BenchForm) ID() string { return BenchID }

// Key implements component.Dialog: tab, up and down move between the
// fields, left and right choose, enter runs, esc cancels; other keys are
// the focused field's text.
func (f *BenchForm) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	return answer(f.ds, &f.form, msg, "benchmark",
		func() (event.BenchConfig, string) { return benchConfig(f.base, &f.form) },
		f.ds.Runs.BenchWhy, f.ds.Runs.StartBench)
}

// View implements component.Dialog: the title says which experiment the
// result goes with.
func (f *BenchForm) View(st *style.Styles, w, h int) component.Box {
	title := "benchmark"
	if id, _, ok := f.ds.Experiment(); ok {
		title += " (its result goes with " + sanitize.String(id) + ")"
	} else if f.ds.Journal() {
		title += " (no open experiment: the result is not kept with one)"
	}
	_, bad := benchConfig(f.base, &f.form)
	hints := []string{
		"Streams random prompts of the input length; max_tokens is the output length (ignore_eos). Warm-up requests run first and are left out of every metric. A blank rate sends as fast as the concurrency allows; poisson draws exponential gaps at the rate.",
	}
	return f.box(st, w, h, title, hints, bad, "enter", "run", "tab", "field", "left/right", "choose", "esc", "cancel")
}

// Help implements component.Dialog.
func (f *BenchForm) Help() []component.Hint {
	return []component.Hint{{Key: "enter", Desc: "run"}, {Key: "tab/up/down", Desc: "field"}, {Key: "left/right", Desc: "choose"}, {Key: "esc", Desc: "cancel"}}
}

// benchConfig is the form's config over base (what blank fields keep), or
// why it is not valid.
func benchConfig(base event.BenchConfig, f *form) (event.BenchConfig, string) {
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
		return base, style.ErrText(err)
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
