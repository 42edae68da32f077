package bisect

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// Row is one tested commit of the evidence table (the bisect panel, the
// CLI, the Markdown report, journal show).
type Row struct {
	Index   int    // its place in the range: 0 is the good endpoint
	ID      string // full commit id
	Short   string // short id ("" when the range gave none)
	Subject string
	// Role is "good" or "bad" for the endpoints, "" for a candidate.
	Role     string
	Launches int      // launches with a sample
	Failures []string // the failed launches' classes
	// Summary is the launches' median (the metric's unit) with its 95 %
	// interval (ledger.Summarize: benchmath, finite from 6 launches).
	Summary ledger.Summary
	// DeltaPct is the median's change over the good endpoint's median,
	// percent; valid when HasDelta.
	DeltaPct float64
	HasDelta bool
	Verdict  Verdict
	P        float64 // Commit.P
	// PGood and PBad are a candidate's t tests against each endpoint
	// (judge.go); 0 when none ran.
	PGood, PBad float64
	// Words is the row as one evidence line, as the TUI and the CLI print
	// it: "4f3e2a1: like good, 1 launch, median 89.1, 0.1 % faster
	// (p=0.712 vs good, p<0.001 vs bad)".
	Words string
}

// Rows is the evidence table: every commit with a launch (failed ones
// too), in range order, as Next last judged them (it calls Next).
func (s *State) Rows() []Row {
	d := s.decide()
	var good float64
	if len(s.commits) > 0 {
		good = ledger.Summarize(s.commits[0].Samples).Median
	}
	var rows []Row
	for i, c := range s.commits {
		if len(c.Samples)+len(c.Failures) == 0 {
			continue
		}
		r := Row{Index: i, ID: c.ID, Short: c.Short, Subject: c.Subject, Launches: len(c.Samples),
			Failures: c.Failures, Verdict: c.Verdict, P: c.P}
		switch i {
		case 0:
			r.Role = "good"
		case len(s.commits) - 1:
			r.Role = "bad"
		}
		if len(c.Samples) > 0 {
			r.Summary = ledger.Summarize(c.Samples)
			if good > 0 {
				r.DeltaPct, r.HasDelta = (r.Summary.Median/good-1)*100, true
			}
		}
		if e, ok := d.ev[i]; ok {
			r.PGood, r.PBad = e.pGood, e.pBad
		}
		r.Words = s.rowWords(r, d)
		rows = append(rows, r)
	}
	return rows
}

// rowWords is one row's evidence line:
//
//	good endpoint 3c2d1e0: 7 launches, median 89.0
//	bad endpoint 65b09bf: 7 launches, median 81.9, 8.0 % slower (mann-whitney-u p<0.001, n=7+7)
//	4f3e2a1: like good, 1 launch, median 89.1, 0.1 % faster (p=0.712 vs good, p<0.001 vs bad)
//	9a8b7c6: skipped, 1 failed (oom)
func (s *State) rowWords(r Row, d decision) string {
	name := r.Short
	if name == "" {
		name = shortID(r.ID)
	}
	var b strings.Builder
	if r.Role != "" {
		fmt.Fprintf(&b, "%s endpoint %s: ", r.Role, name)
	} else {
		fmt.Fprintf(&b, "%s: %s, ", name, verdictWords(r.Verdict))
	}
	var parts []string
	if r.Launches > 0 {
		parts = append(parts, launchesWords(r.Launches), "median "+strconv.FormatFloat(r.Summary.Median, 'f', 1, 64))
	}
	if len(r.Failures) > 0 {
		parts = append(parts, fmt.Sprintf("%d failed (%s)", len(r.Failures), failureList(r.Failures)))
	}
	if r.HasDelta && r.Index > 0 {
		parts = append(parts, s.deltaWords(r.DeltaPct))
	}
	b.WriteString(strings.Join(parts, ", "))
	switch {
	case r.Role == "bad" && d.st != nil:
		fmt.Fprintf(&b, " (%s %s, %s)", d.st.method, formatP(d.st.p), formatN(d.st.ng, d.st.nb))
	case r.Role == "" && r.Launches > 0 && d.st != nil:
		fmt.Fprintf(&b, " (%s vs good, %s vs bad)", formatP(r.PGood), formatP(r.PBad))
	}
	return b.String()
}

// verdictWords is a verdict as the evidence line writes it.
func verdictWords(v Verdict) string {
	switch v {
	case Good:
		return "like good"
	case Bad:
		return "like bad"
	case Between:
		return "in between"
	case Mixed:
		return "mixed"
	case Skipped:
		return "skipped"
	case Unknown:
		return "unknown so far"
	}
	return "untested"
}

// evidenceWords is why a candidate stopped the bisect: "4f3e2a1 is in
// between: 3.9 % slower than good, unlike good (p<0.001) and unlike bad
// (p<0.001) over 2 launches", or mixed with its clearest launches.
func (s *State) evidenceWords(c *Commit, e evidence) string {
	switch c.Verdict {
	case Mixed:
		return fmt.Sprintf("%s flip-flops: of its %s, %d are like good (%s vs bad) and %d like bad (%s vs good)",
			short(c), launchesWords(e.n), e.clearlyGood, formatP(e.pClearGood), e.clearlyBad, formatP(e.pClearBad))
	case Between:
		return fmt.Sprintf("%s is in between: %s than good, unlike good (%s) and unlike bad (%s) over %s",
			short(c), s.deltaWords(e.deltaPct), formatP(e.pGood), formatP(e.pBad), launchesWords(e.n))
	}
	return short(c) + " is " + verdictWords(c.Verdict)
}

// culpritWords is the culprit's line: "8.1 % slower at 65b09bf: its
// parent 3c2d1e0 is like good (p<0.001 vs bad), it is like bad (p<0.001
// vs good)".
func (s *State) culpritWords(d decision) string {
	lo, hi := s.commits[d.lo], s.commits[d.hi]
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s: ", s.deltaWords(d.st.deltaPct), short(hi))
	if d.lo == 0 {
		fmt.Fprintf(&b, "its parent is the good endpoint (%s %s)", d.st.method, formatP(d.st.p))
	} else {
		fmt.Fprintf(&b, "its parent %s is like good (%s vs bad)", short(lo), formatP(lo.P))
	}
	if d.hi == len(s.commits)-1 {
		b.WriteString(", it is the bad endpoint")
	} else {
		fmt.Fprintf(&b, ", it is like bad (%s vs good)", formatP(hi.P))
	}
	return b.String()
}

// spanWords is the commits after lo up to hi: "3c2d1e0..65b09bf (12
// commits)".
func (s *State) spanWords(lo, hi int) string {
	n := hi - lo
	if n == 1 {
		return short(s.commits[hi])
	}
	return fmt.Sprintf("%s..%s (%d commits)", short(s.commits[lo]), short(s.commits[hi]), n)
}

// deltaWords is a change of the metric in percent as the bisect reads
// it: "8.1 % slower" / "faster" (tok/s), "8.1 % worse" / "better" (a
// Lower metric, a latency: up is worse).
func (s *State) deltaWords(pct float64) string {
	up, down := "faster", "slower"
	if s.cfg.Lower {
		up, down = "worse", "better"
	}
	w := up
	if pct < 0 {
		w = down
	}
	if math.IsNaN(pct) || math.IsInf(pct, 0) {
		return "a change of unknown size"
	}
	return strconv.FormatFloat(math.Abs(pct), 'f', 1, 64) + " % " + w
}

// skipReason is why a commit was skipped: its failure classes, or
// "unknown after 10 launches".
func skipReason(c *Commit) string {
	if len(c.Failures) > 0 {
		return failureList(c.Failures)
	}
	return "unknown after " + launchesWords(len(c.Samples))
}

// failureList is failure classes as a list, repeats counted: "oom ×2,
// crash".
func failureList(classes []string) string {
	var order []string
	n := map[string]int{}
	for _, c := range classes {
		if n[c] == 0 {
			order = append(order, c)
		}
		n[c]++
	}
	for i, c := range order {
		if n[c] > 1 {
			order[i] = c + " ×" + strconv.Itoa(n[c])
		}
	}
	return strings.Join(order, ", ")
}

// short is a commit's short id for the one-line texts.
func short(c *Commit) string {
	if c.Short != "" {
		return c.Short
	}
	return shortID(c.ID)
}

func shortID(id string) string {
	if len(id) > 7 {
		return id[:7]
	}
	return id
}

func launchesWords(n int) string {
	if n == 1 {
		return "1 launch"
	}
	return strconv.Itoa(n) + " launches"
}

// formatP and formatN write p-values and sample sizes as
// sessions/compare does: "p=0.008", "p<0.001"; "n=5+4".
func formatP(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return "p=" + strconv.FormatFloat(p, 'f', 3, 64)
}

func formatN(n1, n2 int) string { return "n=" + strconv.Itoa(n1) + "+" + strconv.Itoa(n2) }
