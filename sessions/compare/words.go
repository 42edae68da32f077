package compare

import (
	"math"
	"strconv"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// The words and number formats of results and verdicts. The reports
// (package report: Markdown, JSON, journal diff, journal show), the x
// panel, the header and the compare view all write values with these, so
// one number reads the same everywhere.

// UnitTokS, UnitMs and UnitTokens are the result rows' units: tok/s, a
// latency in milliseconds, and a count of tokens (the EAGLE accept length,
// accepted tokens per verify step).
const (
	UnitTokS   = "tok/s"
	UnitMs     = "ms"
	UnitTokens = "tokens"
)

// FormatValue is a value in unit as every view writes it: one decimal
// ("88.4"), none from 1000 ("1446"), three below 1 ("0.412"); two
// decimals for UnitTokens ("2.31": accept lengths differ in the second);
// "-" when not finite.
func FormatValue(v float64, unit string) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case unit == UnitTokens:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v != 0 && v > -1 && v < 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// FormatDelta is a change in percent with its sign and one decimal:
// "+42.4%", "-8.0%", "+0.0%" for a change under 0.05 % either way; "-"
// when not finite.
func FormatDelta(pct float64) string {
	if math.IsNaN(pct) || math.IsInf(pct, 0) {
		return "-"
	}
	if math.Abs(pct) < 0.05 {
		pct = 0
	}
	s := strconv.FormatFloat(pct, 'f', 1, 64)
	if pct >= 0 {
		s = "+" + s
	}
	return s + "%"
}

// FormatNoise is a launch-to-launch spread in percent, the largest
// distance of a launch from the median (Spread): "±0.3%"; below 0.1 %
// with two significant digits ("±0.04%"), so a small noise never reads
// as none.
func FormatNoise(pct float64) string { return "±" + noisePct(pct) }

// FormatSD is a launch-to-launch standard deviation in percent
// (NoiseEstimate.SDPct): "sd 0.3%", "sd 0.04%". It is not the spread
// FormatNoise writes: the two name two statistics.
func FormatSD(pct float64) string { return "sd " + noisePct(pct) }

// noisePct is a noise in percent: one decimal, two significant digits
// below 0.1 %.
func noisePct(pct float64) string {
	if pct != 0 && math.Abs(pct) < 0.1 {
		return strconv.FormatFloat(pct, 'g', 2, 64) + "%"
	}
	return strconv.FormatFloat(pct, 'f', 1, 64) + "%"
}

// FormatP is a test's p-value: "p=0.008", "p<0.001" below a thousandth.
func FormatP(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return "p=" + strconv.FormatFloat(p, 'f', 3, 64)
}

// FormatN is the launches of the two sides of a verdict: "n=1+1",
// "n=5+4".
func FormatN(n1, n2 int) string {
	return "n=" + strconv.Itoa(n1) + "+" + strconv.Itoa(n2)
}

// FormatLaunches is a count of launches in words: "1 launch", "5
// launches".
func FormatLaunches(n int) string {
	if n == 1 {
		return "1 launch"
	}
	return strconv.Itoa(n) + " launches"
}

// FormatInterval is the 95 % interval of a median over n values, within
// one launch: "[62.1, 62.9]"; "[n<6]" when too few values bound it,
// "[unbounded]" otherwise.
func FormatInterval(lo, hi *float64, n int, unit string) string {
	switch {
	case lo != nil && hi != nil:
		return "[" + FormatValue(*lo, unit) + ", " + FormatValue(*hi, unit) + "]"
	case n < 6:
		return "[n<6]"
	}
	return "[unbounded]"
}

// FormatSummary is one side's value: the median with its 95 % interval,
// "62.5 [62.1, 62.9] n=40", "61.4 n=1", or "-" when there is none.
func FormatSummary(s ledger.Summary, unit string) string {
	switch {
	case s.N == 0:
		return "-"
	case s.N == 1:
		return FormatValue(s.Median, unit) + " n=1"
	}
	return FormatValue(s.Median, unit) + " " + FormatInterval(s.Lo, s.Hi, s.N, unit) + " n=" + strconv.Itoa(s.N)
}

// FormatAge is how long before (or, negative, after) a reference time
// something happened: "<1 min ago", "25 min ago", "2 h ago", "3 d ago",
// "1 h later".
func FormatAge(d time.Duration) string {
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, " later"
	}
	switch {
	case d < time.Minute:
		return "<1 min" + suffix
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min" + suffix
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h" + suffix
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " d" + suffix
}
