package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
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
// tok/s and its 95 % confidence interval, "[n<6]" when too few samples
// bound it, "no samples" when there are none.
func FormatResult(res event.ExperimentResult) string {
	if res.N == 0 {
		return "no samples"
	}
	ci := "[n<6]"
	if res.Lo != nil && res.Hi != nil {
		ci = "[" + fmtRate(*res.Lo) + ", " + fmtRate(*res.Hi) + "]"
	} else if res.N >= 6 {
		ci = "[unbounded]"
	}
	return fmt.Sprintf("%s %s (n=%d)", fmtRate(res.Median), ci, res.N)
}

// FormatNum is a tok/s or ms value as the journal's reports, journal diff
// and the cockpit write it: one decimal ("88.4"), none from 1000 ("1446"),
// three below 1 ("0.412"), "-" when not finite.
func FormatNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmtNum(v)
}

// fmtNum formats a tok/s or ms value: one decimal, three below 1.
func fmtNum(v float64) string {
	if v != 0 && v > -1 && v < 1 {
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func fmtRate(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// fmtDelta formats a percentage with its sign: "+42.4%", "-8.0%".
func fmtDelta(p float64) string {
	if math.Abs(p) < 0.05 {
		p = 0
	}
	s := strconv.FormatFloat(p, 'f', 1, 64)
	if p >= 0 {
		s = "+" + s
	}
	return s + "%"
}

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
