package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// FormatElapsed formats a duration since the start as h:mm:ss (negative
// durations as 0:00:00).
func FormatElapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}

// FormatResult formats a result as "62.5 [62.1, 62.9] (n=40)": the median
// tok/s and its 95 % interval within the launch (compare.FormatInterval:
// the spread of one launch's samples, never a verdict), "no samples" when
// there are none.
func FormatResult(res event.ExperimentResult) string {
	if res.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("%s %s (n=%d)", fmtRate(res.Median), compare.FormatInterval(res.Lo, res.Hi, res.N, compare.UnitTokS), res.N)
}

// FormatNum is a tok/s or ms value as the journal's reports, journal diff
// and the cockpit write it (compare.FormatValue): one decimal ("88.4"),
// none from 1000 ("1446"), three below 1 ("0.412"), "-" when not finite.
func FormatNum(v float64) string { return compare.FormatValue(v, "") }

func fmtNum(v float64) string { return compare.FormatValue(v, "") }

func fmtRate(v float64) string { return compare.FormatValue(v, compare.UnitTokS) }

func fmtDelta(p float64) string { return compare.FormatDelta(p) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// EndedHow says in a word or two how an experiment ended: "open", "key",
// "relaunch", "kill", "exit", "quit", "taken-over", or "crash" when the
// journal ends with it open and no end recorded.
func EndedHow(x *ledger.Experiment) string {
	switch {
	case x.Open():
		return "open"
	case x.EndedBy == "":
		return "crash"
	}
	return string(x.EndedBy)
}

// EndedWords says how an experiment ended for a reader: "open", "by
// hand", "relaunch", "kill", "exit", "quit", "taken-over", or "crash" (EndedHow's words,
// TriggerKey spelled out).
func EndedWords(x *ledger.Experiment) string {
	if h := EndedHow(x); h != string(event.TriggerKey) {
		return h
	}
	return "by hand"
}

// StartGPUsLabel names an experiment's GPU state at its start: "GPUs at
// launch (before the model loaded)" for one a launch started (the GPUs are
// idle then: compare the state at the end, under load), else "GPUs at
// start".
func StartGPUsLabel(x *ledger.Experiment) string {
	if x.StartedBy == event.TriggerLaunch {
		return "GPUs at launch (before the model loaded)"
	}
	return "GPUs at start"
}

// RepeatText says which launch of a repeat x is: "launch 2 of 5 of the
// repeat of e1"; "" when x is not part of one.
func RepeatText(x *ledger.Experiment) string {
	if x.Repeat == nil {
		return ""
	}
	return fmt.Sprintf("launch %d of %d of the repeat of %s", x.Repeat.I, x.Repeat.N, sanitize.OneLine(x.Repeat.Series))
}

// BenchRunText describes one benchmark run in a line: "b2 output 62.4
// tok/s, TTFT 40.1 ms, ITL 16.0 ms, TPOT 16.1 ms, E2E 2001.5 ms (medians),
// 32 ok, 0 failed, concurrency 1, 128 in / 128 out" — or "b1 failed:
// connect: connection refused". Sanitised.
func BenchRunText(d event.BenchDone) string {
	id := sanitize.OneLine(d.ID)
	r := d.Result
	if r == nil {
		why := d.Err
		if why == "" {
			why = "no result recorded"
		}
		return id + " failed: " + sanitize.OneLine(why)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s output %s tok/s", id, FormatNum(r.OutputTokPerSec))
	if r.Completed > 0 {
		fmt.Fprintf(&b, ", TTFT %s ms, ITL %s ms, TPOT %s ms, E2E %s ms (medians)",
			FormatNum(r.TTFT.Median), FormatNum(r.ITL.Median), FormatNum(r.TPOT.Median), FormatNum(r.E2E.Median))
	}
	fmt.Fprintf(&b, ", %d ok, %d failed", r.Completed, r.Failed)
	c := r.Config
	fmt.Fprintf(&b, ", concurrency %d, %d in / %d out", c.Concurrency, c.InputLen, c.OutputLen)
	if r.Duration > 0 {
		fmt.Fprintf(&b, ", %s", r.Duration.Round(100*time.Millisecond))
	}
	if r.Cancelled {
		b.WriteString(", cancelled")
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "; errors: %s x%d", sanitize.OneLine(r.Errors[0].Err), r.Errors[0].Count)
		if len(r.Errors) > 1 {
			fmt.Fprintf(&b, " and %d more kinds", len(r.Errors)-1)
		}
	}
	return sanitize.OneLine(b.String())
}
