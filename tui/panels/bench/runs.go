package bench

import (
	"context"
	"errors"
	"strconv"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// RepeatArmText is the answer to a first q while a repeat runs.
const RepeatArmText = "a repeat is running: q again stops it, then quits once its relaunch is done"

// RepeatQuitText is the answer to a confirmed quit while a repeat runs.
const RepeatQuitText = "stopping the repeat: waiting for the relaunch to finish (q again quits now)"

// BenchDefaults is the benchmark's defaults, for its form (no I/O).
func (p *Panel) BenchDefaults() event.BenchConfig { return p.Bench.BenchDefaults() }

// StartBench runs cfg (the form's, checked) in a tea.Cmd under a context
// that b, or esc, cancels after asking (Stop); its answer is a ResultMsg.
func (p *Panel) StartBench(cfg event.BenchConfig) tea.Cmd {
	ctx, cancel := context.WithCancel(p.ctx())
	ctl := p.Bench
	p.BenchRun = Run{Cancel: cancel, Running: true}
	p.show = false
	rec := p.record("bench " + ConfigText(cfg))
	return func() tea.Msg {
		defer cancel()
		rec()
		r, err := ctl.Bench(ctx, cfg)
		return ResultMsg{Result: r, Err: err}
	}
}

// BenchResult applies the answer of a benchmark started here: the run
// ends, and the status line says how it went.
func (p *Panel) BenchResult(r ResultMsg) {
	stopped := p.BenchRun.Stopped
	p.BenchRun = Run{}
	switch {
	case r.Err != nil && (stopped || errors.Is(r.Err, context.Canceled)) && r.Result == nil:
		p.flash("benchmark stopped before any result", style.Dim)
	case r.Err != nil:
		p.flash("benchmark failed: "+style.ErrText(r.Err), style.Crit)
	case r.Result != nil && r.Result.Cancelled:
		p.flash("benchmark stopped: "+style.Plural(r.Result.Completed, "request")+" measured", style.Warn)
	case r.Result != nil && r.Result.Failed > 0:
		res := r.Result
		_, tn := Outcome("", res)
		s := "benchmark done: " + strconv.Itoa(res.Failed) + " of " + strconv.Itoa(res.Completed+res.Failed) + " requests failed"
		if res.Completed > 0 {
			s += "; " + report.FormatNum(res.OutputTokPerSec) + " tok/s output over the " + strconv.Itoa(res.Completed) + " that succeeded"
		} else if len(res.Errors) > 0 {
			s += ": " + sanitize.String(res.Errors[0].Err)
		}
		p.flash(s, tn)
	case r.Result != nil:
		p.flash("benchmark done: "+report.FormatNum(r.Result.OutputTokPerSec)+" tok/s output", style.OK)
	}
}

// StartRepeat runs cfg (the form's, checked) in a tea.Cmd under a context
// that R, or esc, cancels after asking (Stop); its answer is a
// RepeatResultMsg.
func (p *Panel) StartRepeat(cfg sessions.RepeatConfig) tea.Cmd {
	ctx, cancel := context.WithCancel(p.ctx())
	ctl := p.Repeat
	p.RepeatRun = Run{Cancel: cancel, Running: true}
	what := "repeat " + strconv.Itoa(cfg.N) + " launches, " + strconv.Itoa(cfg.MinSamples) + " samples each"
	if cfg.Bench {
		what += ", bench each"
	}
	rec := p.record(what)
	return func() tea.Msg {
		defer cancel()
		rec()
		return RepeatResultMsg{Err: ctl.Repeat(ctx, cfg)}
	}
}

// RepeatResult applies the answer of a repeat started here: the run ends
// and the status line says how it went. quit reports that a confirmed
// quit was waiting for it (StopToQuit): the cockpit quits now, unless
// something else holds it back.
func (p *Panel) RepeatResult(r RepeatResultMsg) (quit bool) {
	stopped, quit, launches := p.RepeatRun.Stopped, p.QuitWhen, p.rep.N
	p.RepeatRun, p.QuitWhen = Run{}, false
	p.hasRep = false
	switch {
	case r.Err == nil && launches == 1:
		p.flash("repeat done: 1 launch; the A/A noise needs 2 of one configuration (R again)", style.Warn)
	case r.Err == nil && launches > 0 && launches < compare.MinLaunches:
		// Enough to measure the A/A noise (one launch a side then gets a
		// verdict against it), not for the Mann–Whitney test.
		p.flash("repeat done: "+strconv.Itoa(launches)+" launches measure the A/A noise; comparisons with fewer than "+strconv.Itoa(compare.MinLaunches)+" launches a side are judged against it (x, then c)", style.Warn)
	case r.Err == nil:
		p.flash("repeat done: x, then c compares against the series", style.OK)
	case stopped && errors.Is(r.Err, context.Canceled):
		p.flash("repeat stopped", style.Warn)
	default:
		p.flash("repeat failed: "+style.ErrText(r.Err), style.Crit)
	}
	return quit
}

// StopQuestion is the question asked before stopping the run started
// here, what "bench" or "repeat": it names the run and how far it got.
func (p *Panel) StopQuestion(what string) string {
	if what == "repeat" {
		q := "Stop the repeat"
		if r := &p.rep; p.hasRep && r.N > 0 {
			q += " at launch " + strconv.Itoa(r.I) + "/" + strconv.Itoa(r.N)
		}
		return q + "? A relaunch in progress finishes first; the server keeps running."
	}
	q := "Stop the benchmark"
	if c := p.cur; c != nil {
		q += " " + sanitize.String(c.ID)
	}
	if pr := &p.prog; p.hasProg && pr.Total > 0 {
		q += " (" + strconv.Itoa(pr.Done) + "/" + strconv.Itoa(pr.Total) + " requests done)"
	}
	return q + "? Its result keeps the requests that finished."
}

// Stop stops the run started here (the stop question's y), what "bench"
// or "repeat": it cancels the run's context (its answer comes later) and
// returns what records the stop.
func (p *Panel) Stop(what string) tea.Cmd {
	run, name := &p.BenchRun, "the benchmark"
	if what == "repeat" {
		run, name = &p.RepeatRun, "the repeat"
	}
	if run.Cancel == nil {
		p.flash(name+" had already ended", style.Dim)
		return nil
	}
	run.Cancel()
	run.Stopped = true
	p.flash("stopping "+name+" ...", style.Warn)
	return p.recordCmd("stop " + what)
}

// StopFirst stops the benchmark running from here before a kill or a
// relaunch (its requests would fail into the kill and the new server's
// warm-up) and returns what records that, for the action's command to
// call before it records itself (so the keys are in order); a no-op when
// none runs or it is stopping already.
func (p *Panel) StopFirst() (record func()) {
	b := &p.BenchRun
	if b.Cancel == nil || b.Stopped || (p.cur == nil && !b.Running) {
		return func() {}
	}
	b.Cancel()
	b.Stopped = true
	return p.record("stop bench")
}

// StopRuns stops both runs started here, unrecorded: another cockpit
// drives the server now.
func (p *Panel) StopRuns() {
	for _, r := range []*Run{&p.RepeatRun, &p.BenchRun} {
		if r.Cancel != nil && !r.Stopped {
			r.Cancel()
			r.Stopped = true
		}
	}
}

// StopToQuit answers a confirmed quit (a second q, or ctrl+c) while the
// repeat started here runs: quitting at once would cancel a relaunch
// halfway and strand the server killed, so it stops the repeat, and the
// cockpit quits when RepeatControl.Repeat returns (RepeatResult); asked
// again, now is set: quit at once.
func (p *Panel) StopToQuit() (now bool, cmd tea.Cmd) {
	if p.QuitWhen {
		return true, nil
	}
	p.QuitWhen = true
	p.flash(RepeatQuitText, style.Warn)
	if p.RepeatRun.Stopped || p.RepeatRun.Cancel == nil {
		return false, nil // stopping already
	}
	p.RepeatRun.Cancel()
	p.RepeatRun.Stopped = true
	return false, p.recordCmd("stop repeat (quit)")
}

// BenchNote is what a kill or relaunch question adds while a benchmark
// runs: " A benchmark b1 is running: it is stopped first." (one started
// here), "... it will fail." (a repeat's), "" when none.
func (p *Panel) BenchNote() string {
	what := "it is stopped first."
	if p.BenchRun.Cancel == nil {
		what = "it will fail." // not ours to stop (a repeat's)
	}
	switch {
	case p.BenchRun.Stopped:
		return ""
	case p.cur != nil:
		return " A benchmark " + sanitize.String(p.cur.ID) + " is running: " + what
	case p.BenchRun.Running:
		return " A benchmark is starting: " + what
	}
	return ""
}

// RepeatNote is what a kill question adds while a repeat runs: " A repeat
// (launch 2/5) is running: it will fail.", "" when none.
func (p *Panel) RepeatNote() string {
	if !p.RepeatRun.Running && !p.hasRep {
		return ""
	}
	r := "A repeat"
	if pr := &p.rep; p.hasRep && pr.N > 0 {
		r += " (launch " + strconv.Itoa(pr.I) + "/" + strconv.Itoa(pr.N) + ")"
	}
	return " " + r + " is running: it will fail."
}

// Started folds a benchmark's start from the stream.
func (p *Panel) Started(s event.BenchStarted) {
	p.cur, p.hasProg = &s, false
}

// Progressed folds a benchmark's progress; another run's is not the
// current one's.
func (p *Panel) Progressed(pr event.BenchProgress) {
	if p.cur != nil && p.cur.ID == pr.ID {
		p.prog, p.hasProg = pr, true
	}
}

// Finished folds a benchmark's end: its result box shows, unless it is the
// one dismissed.
func (p *Panel) Finished(d event.BenchDone) {
	if p.cur != nil && p.cur.ID == d.ID {
		p.cur, p.hasProg = nil, false
	}
	p.done = &d
	p.show = d.ID != p.dismissed
}

// Repeated folds a repeat's progress; its end hides the banner.
func (p *Panel) Repeated(r event.RepeatProgress) {
	switch r.Phase {
	case sessions.RepeatDone, sessions.RepeatStopped, sessions.RepeatFailed:
		p.hasRep = false
		return
	}
	for _, f := range []*string{&r.Series, &r.Exp, &r.Phase, &r.Err} {
		*f = sanitize.String(*f)
	}
	p.rep, p.hasRep = r, true
}

// Showing reports whether the result box is on screen (esc dismisses it).
func (p *Panel) Showing() bool { return p.show }

// Dismiss hides the result box; a seek keeps it hidden (CarryDismissed).
func (p *Panel) Dismiss() {
	p.show = false
	if p.done != nil {
		p.dismissed = p.done.ID
	}
}

// CarryDismissed keeps from's dismissed result box dismissed in p (a
// replay's seek rebuilds the panel from the journal).
func (p *Panel) CarryDismissed(from *Panel) {
	p.dismissed = from.dismissed
	if !from.show && from.done != nil {
		p.dismissed = from.done.ID
	}
}
