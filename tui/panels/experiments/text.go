package experiments

import (
	"strconv"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// How the cockpit writes an experiment: its result, its delta, how it
// ended and when. The header, the experiment forms and the compare view
// write them as the panel's rows and details do.

// ResultText is a result in one line: "88.9 tok/s [87.1, 90.2] n=24",
// "88.9 tok/s (n<6) n=4", "no tok/s samples".
func ResultText(r event.ExperimentResult) string {
	if r.N == 0 {
		return "no tok/s samples"
	}
	return MedianText(r) + " tok/s " + IntervalText(r) + " n=" + strconv.Itoa(r.N)
}

// MedianText is the median to one decimal, "88.9" (compare.FormatValue).
func MedianText(r event.ExperimentResult) string {
	return compare.FormatValue(r.Median, compare.UnitTokS)
}

// IntervalText is the median's 95 % interval within the launch,
// "[87.1, 90.2]", or why there is none: "[n<6]" when too few samples,
// "[unbounded]" otherwise (compare.FormatInterval). It is the launch's
// spread, not a verdict.
func IntervalText(r event.ExperimentResult) string {
	return compare.FormatInterval(r.Lo, r.Hi, r.N, compare.UnitTokS)
}

// DeltaText is v against base in percent, signed, one decimal: "+42.1%"
// ("-" when base is not positive), as every view writes deltas
// (compare.FormatDelta).
func DeltaText(v, base float64) string {
	if !(base > 0) {
		return "-"
	}
	return compare.FormatDelta((v - base) / base * 100)
}

// EndedHow says how an experiment ended, for its state column and
// titles: "killed", "relaunched", "exited", "quit", "taken over", "ended"
// (by e); "" for none, an unknown trigger sanitised.
func EndedHow(t event.Trigger) string {
	switch t {
	case "":
		return ""
	case event.TriggerKey:
		return "ended"
	case event.TriggerKill:
		return "killed"
	case event.TriggerRelaunch:
		return "relaunched"
	case event.TriggerExit:
		return "exited"
	case event.TriggerQuit:
		return "quit"
	case event.TriggerTakenOver:
		return "taken over"
	}
	return sanitize.String(string(t))
}

// Clock is a time of day, "10:31:02", in the event's own location; "?"
// when unknown.
func Clock(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.Format("15:04:05")
}

// prefixed is p+s, or "" when s is empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// profileWord is "profile nccl-ll-ring", "" for none.
func profileWord(p string) string { return prefixed("profile ", p) }
