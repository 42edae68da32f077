package bench

import (
	"cmp"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Banners are the runs' lines under the header: the benchmark's, "bench b1
// 12/32 requests  1 failed  88.4 tok/s  [#####-----]  (b stops)", then the
// repeat's, "repeat 2/5 of e1: warming up 3/10  (R stops)".
func (p *Panel) Banners() []component.Banner {
	return append(p.benchBanner(), p.repeatBanner()...)
}

// benchBanner is the running benchmark's line, none when none runs.
func (p *Panel) benchBanner() []component.Banner {
	c := p.cur
	if c == nil {
		return nil
	}
	id := sanitize.String(c.ID)
	head := "bench " + id
	if !p.hasProg {
		what := head + " running on " + sanitize.String(c.Target)
		if p.Replay {
			return []component.Banner{{Text: what + " (progress is not recorded)", Short: head + " running", Tone: style.Accent}}
		}
		return []component.Banner{{Text: what + ": starting", Short: head + " starting", Tone: style.Accent}}
	}
	pr := &p.prog
	var parts []string
	frac := -1.0
	switch {
	case pr.Warmup:
		parts = append(parts, "warming up")
	case pr.Total > 0:
		parts = append(parts, strconv.Itoa(pr.Done)+"/"+strconv.Itoa(pr.Total)+" requests")
		frac = float64(pr.Done) / float64(pr.Total)
	case pr.Limit > 0:
		parts = append(parts, style.ShortDur(pr.Elapsed)+"/"+style.ShortDur(pr.Limit)+", "+strconv.Itoa(pr.Done)+" requests")
		frac = float64(pr.Elapsed) / float64(pr.Limit)
	default:
		parts = append(parts, strconv.Itoa(pr.Done)+" requests")
	}
	tn := style.Accent
	if pr.Failed > 0 {
		parts = append(parts, strconv.Itoa(pr.Failed)+" failed")
		tn = style.Warn
	}
	if !pr.Warmup && pr.TokPerSec > 0 {
		parts = append(parts, report.FormatNum(pr.TokPerSec)+" tok/s")
	}
	text := head + " " + strings.Join(parts, "  ")
	short := text
	if frac >= 0 {
		text += "  " + progressBar(frac, 20)
	}
	if p.BenchRun.Running {
		text += "  (b stops)"
	}
	return []component.Banner{{Text: text, Short: short, Tone: tn}}
}

// repeatBanner is the repeat's line, none when none runs.
func (p *Panel) repeatBanner() []component.Banner {
	if !p.hasRep {
		return nil
	}
	r := &p.rep
	head := "repeat " + strconv.Itoa(r.I) + "/" + strconv.Itoa(r.N)
	text := head
	if r.Series != "" {
		text += " of " + r.Series
	}
	phase := r.Phase
	if r.Need > 0 && (r.Phase == sessions.RepeatMeasuring || r.Phase == sessions.RepeatWarmingUp) {
		phase += " " + strconv.Itoa(r.Samples) + "/" + strconv.Itoa(r.Need)
	}
	text += ": " + phase
	short := head + ": " + phase
	if r.Exp != "" {
		text += " (" + r.Exp + ")"
	}
	switch {
	case p.QuitWhen:
		text += "  (stopping to quit; q quits now)"
	case p.RepeatRun.Running:
		text += "  (R stops)"
	}
	return []component.Banner{{Text: text, Short: short, Tone: style.Accent}}
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

// ConfigText is a benchmark config in one line, as the result box shows
// it and the journal records the key that ran it: "completions in 128
// out 128 conc 4 32 requests rate 2/s poisson warm-up 1".
func ConfigText(c event.BenchConfig) string {
	parts := []string{cmp.Or(sanitize.String(string(c.Endpoint)), "completions")}
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

// Box is the result box of the latest finished benchmark for a w-cell
// screen: its lines (framed) and inner width; nil when it is not shown or
// the screen is narrower than 24 cells.
func (p *Panel) Box(st *style.Styles, w int) ([]string, int) {
	if !p.show || p.done == nil || w < 24 {
		return nil, 0
	}
	d := p.done
	iw := min(w-4, 72)
	id := sanitize.String(d.ID)
	title := "bench " + id
	if d.Exp != "" {
		title += " on " + sanitize.String(d.Exp)
	}
	lab := func(l string) string { return st.Dim.Render(style.PadRight(l, 10)) }
	num := report.FormatNum
	var body []string
	r := d.Result
	frame := st.Accent
	switch {
	case r == nil:
		title += ": failed"
		frame = st.Crit
		for _, l := range style.Wrap(cmp.Or(sanitize.String(d.Err), "no result"), iw) {
			body = append(body, st.Crit.Render(l))
		}
	default:
		var how style.Token
		title, how = Outcome(title, r)
		frame = st.Tone(how)
		body = append(body,
			lab("target")+style.Truncate(sanitize.String(r.Target), iw-10),
			lab("config")+style.Truncate(ConfigText(r.Config), iw-10),
			lab("output")+st.Accent.Render(num(r.OutputTokPerSec)+" tok/s")+"   total "+num(r.TotalTokPerSec)+" tok/s   "+
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
			body = append(body, lab(row.name)+style.PadLeft(num(row.d.Mean), 9)+style.PadLeft(num(row.d.Median), 9)+
				style.PadLeft(num(row.d.P90), 9)+style.PadLeft(num(row.d.P99), 9))
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

// Outcome is the result box's title for a finished run, title plus how it
// ended ("bench b1 on e3: done", ": done: 30 of 32 failed", ": stopped
// early"), and the box's tone: warn when requests failed or it was
// stopped, crit when none succeeded.
func Outcome(title string, r *event.BenchResult) (string, style.Token) {
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
