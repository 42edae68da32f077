package experiments

import (
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The across-launch verdict of the panel's details and the header: the
// one compare and the reports give (sessions/compare's Verdict), computed
// over the same experiments c compares, at most once per ledger change
// for each pair.

// verdictKey names a verdict computed at one ledger generation.
type verdictKey struct {
	base, x string
}

// compareExps are the experiments c and the verdicts compare among: the
// earlier sessions' of the host (their launches and A/A noise count too)
// and this session's, the open one with its result so far.
func (p *Panel) compareExps() []ledger.Experiment { return p.allExperiments() }

// VerdictVs is the server-log tok/s row of x compared with base (A):
// its Verdict is the across-launch verdict. nil when either is nil or has
// no result yet, or they are one experiment. It is cached per ledger
// change.
func (p *Panel) VerdictVs(base, x *ledger.Experiment) *compare.ResultRow {
	if base == nil || x == nil || base.ID == x.ID || p.resultOf(base).N == 0 || p.resultOf(x).N == 0 {
		return nil
	}
	if p.verdictGen != p.gen || p.verdicts == nil {
		p.verdicts, p.verdictGen = map[verdictKey]*compare.ResultRow{}, p.gen
	}
	k := verdictKey{base.ID, x.ID}
	if r, ok := p.verdicts[k]; ok {
		return r
	}
	var row *compare.ResultRow
	if d, err := compare.Compare(p.compareExps(), base.ID, x.ID); err == nil {
		row = d.Row(compare.MetricLogTokS)
	}
	p.verdicts[k] = row
	return row
}

// baseExp is the experiment the deltas are against: the one marked with
// B, else the first with a result; nil when none.
func (p *Panel) baseExp() *ledger.Experiment {
	if b := p.baseline(); b != nil {
		return b // this session's mark, or an earlier session's
	}
	if p.markedBaseline() != "" {
		return nil // marked, not at hand: no verdicts, as no deltas
	}
	_, id := p.implicitBase()
	if id == "" {
		return nil
	}
	return p.ledger.Find(id)
}

// verdictBrief is a verdict for the header, where room is short: the
// word when it found a difference or none ("slower", "no significant
// difference"), "no verdict" otherwise (the panel and c say why).
func verdictBrief(v compare.Verdict) string {
	if v.Word == compare.WordSame {
		return "no difference"
	}
	return v.Word
}

// VerdictTone is the tone a verdict is drawn in, in the panel and the
// compare view alike: faster and better OK, slower and worse critical,
// no verdict (and a difference within the A/A noise) a warning, the rest
// dim (no significant difference; an accept length longer or shorter, a
// diagnostic rather than a goal).
func VerdictTone(v compare.Verdict, withinNoise bool) style.Token {
	switch w := v.Word; {
	case withinNoise, w == compare.WordNone:
		return style.Warn
	case w == compare.WordFaster, w == compare.WordBetter:
		return style.OK
	case w == compare.WordSlower, w == compare.WordWorse:
		return style.Crit
	}
	return style.Dim
}

// Chrome spells the words of the reports in the screen's ASCII: the
// chrome has no ambiguous-width characters ("±" is "+-", "—" is "-").
func Chrome(s string) string { return chrome.Replace(s) }

var chrome = strings.NewReplacer("±", "+-", "≥", ">=", "≤", "<=", "–", "-", "—", "-")

// BaselineTokPerSec is the marked baseline's median tok/s (its result so
// far while it is open; this session's mark or an earlier session's), the
// reference the tok/s sparkline draws; 0 when none is marked, it is not at
// hand, or it has no result yet.
func (p *Panel) BaselineTokPerSec() float64 {
	base := p.baseline() // this session's mark, or an earlier session's
	if base == nil {
		return 0
	}
	if r := p.resultOf(base); r.N > 0 && r.Median > 0 {
		return r.Median
	}
	return 0
}

// BaselineDelta is the header's live delta of the open experiment cur
// against the marked baseline: "vs e1 +42.1%", "vs 11-24:e1 -7.9%" for
// an earlier journal's (its tok/s so far against the baseline's result); "" when no baseline is marked, cur is it, or
// either has no result yet.
func (p *Panel) BaselineDelta(cur *ledger.Experiment) string {
	base := p.baseline()
	if base == nil || base.ID == cur.ID {
		return ""
	}
	br := p.resultOf(base)
	r := p.Provisional()
	if br.N == 0 || br.Median <= 0 || r.N == 0 {
		return ""
	}
	return "vs " + sanitize.String(shortQualified(base.ID)) + " " + DeltaText(r.Median, br.Median)
}

// shortQualified is an earlier journal's experiment id as the header
// names it: "11-24:e1" for "2026-11-24-101500-demo:e1" (the journal's
// date, when its name starts with one; else its name cut to 12 cells);
// a plain id as it is.
func shortQualified(id string) string {
	j, e, ok := history.Split(id)
	if !ok {
		return id
	}
	if len(j) >= 10 && j[4] == '-' && j[7] == '-' {
		return j[5:10] + ":" + e
	}
	return style.Truncate(j, 12) + ":" + e
}

// BaselineVerdict is the across-launch verdict of the open experiment cur
// against the marked baseline in a word or two, for the header next to
// BaselineDelta: "faster", "slower", "no difference", "no verdict" (the
// x panel and c give it in full); "" when BaselineDelta is "".
func (p *Panel) BaselineVerdict(cur *ledger.Experiment) string {
	if p.BaselineDelta(cur) == "" {
		return ""
	}
	if row := p.VerdictVs(p.baseline(), cur); row != nil { // an earlier session's too
		return verdictBrief(row.Verdict)
	}
	return ""
}
