package compare

import (
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// CommitMeasure is what the experiments measured at one commit, in the
// sides' configuration class (ClassKey): its launches' server-log tok/s.
type CommitMeasure struct {
	Commit   string  // full id
	Launches int     // launches with a value
	TokS     float64 // the median of the launches' values, tok/s
}

// maxCulpritNamed is how many commits a culprit line names.
const maxCulpritNamed = 5

// Culprit is where a commit range's measurements put the change between A
// and B (Diff.Culprit): after the last commit measured like A ("good")
// and up to the first measured like B ("bad"), oldest to newest along the
// range. Without measurements inside the range it is somewhere among all
// of the range's commits; HEAD's subject is never the cause by itself.
type Culprit struct {
	// Regression says B is slower than A (the change is a culprit); else
	// it is an improvement.
	Regression bool
	// Decided says the across-launch verdict of the server-log row found a
	// difference: without one there is no change to place.
	Decided bool
	// Good and Bad bound the change: the short id of the last commit
	// measured like A (A's own when none inside) and of the first
	// measured like B (B's own when none inside), with their tok/s.
	Good, Bad           string
	GoodTokS, BadTokS   float64
	MeasuredInside      int // commits strictly inside the range with a measurement
	Candidates          int // commits the change may be (after Good, up to and including Bad)
	Named               []string
	Unmeasured, Skipped int // candidates without a measurement; named ones left out (cut)
}

// measureCommits is the server-log tok/s measured at each commit by the
// experiments of the given classes.
func measureCommits(exps []ledger.Experiment, keys keyCache, classes ...string) []CommitMeasure {
	order, configs := configLaunches(exps, keys, func(x *ledger.Experiment) bool {
		return keys.class(x) != "" && slices.Contains(classes, keys.class(x))
	})
	byCommit := map[string][]float64{}
	var commits []string
	m := &metrics[0] // MetricLogTokS
	for _, k := range order {
		for _, p := range m.launchPoints(configs[k]) {
			c := p.x.Commit()
			if _, ok := byCommit[c]; !ok {
				commits = append(commits, c)
			}
			byCommit[c] = append(byCommit[c], p.v)
		}
	}
	out := make([]CommitMeasure, 0, len(commits))
	for _, c := range commits {
		out = append(out, CommitMeasure{Commit: c, Launches: len(byCommit[c]), TokS: ledger.Median(byCommit[c])})
	}
	return out
}

// Culprit places the change between A and B along d.Range by the
// measurements of the sides' class (d.Measured); ok is false when there
// is no range, B is not a descendant of A (the range has commits only A
// has), or it lists no commit.
func (d *Diff) Culprit() (c Culprit, ok bool) {
	r := d.Range
	if r == nil || len(r.Behind) > 0 || r.BehindTotal > 0 || len(r.Ahead) == 0 {
		return Culprit{}, false
	}
	row := d.Row(MetricLogTokS)
	measured := func(line string) (CommitMeasure, bool) {
		id, _, _ := strings.Cut(line, " ")
		for _, m := range d.Measured {
			if id != "" && strings.HasPrefix(m.Commit, id) {
				return m, true
			}
		}
		return CommitMeasure{}, false
	}
	// Oldest first: Ahead lists newest first, B's commit on top.
	list := slices.Clone(r.Ahead)
	slices.Reverse(list)
	total := max(r.AheadTotal, len(r.Ahead))
	older := total - len(list) // cut off the bottom of Ahead: unlisted, unmeasured
	c.Good, c.Bad = git.ShortID(sanitize.OneLine(r.From)), git.ShortID(sanitize.OneLine(r.To))
	if row != nil {
		c.Decided = row.Verdict.Decided()
		c.Regression = row.Verdict.Word == WordSlower
		c.GoodTokS, c.BadTokS = row.Launches.A.Median, row.Launches.B.Median
	}
	lastGood, firstBad := -1, len(list)-1
	if c.Decided {
		a, b := row.Launches.A.Median, row.Launches.B.Median
		bad := make([]bool, len(list))
		for i, l := range list {
			if m, ok := measured(l); ok {
				bad[i] = abs(m.TokS-b) < abs(m.TokS-a)
				if i < len(list)-1 {
					c.MeasuredInside++
				}
			}
		}
		for i := range list {
			if _, ok := measured(list[i]); ok && bad[i] {
				firstBad = i
				break
			}
		}
		for i := firstBad - 1; i >= 0; i-- {
			if _, ok := measured(list[i]); ok && !bad[i] {
				lastGood = i
				break
			}
		}
		if lastGood >= 0 {
			m, _ := measured(list[lastGood])
			c.Good, c.GoodTokS = git.ShortID(sanitize.OneLine(m.Commit)), m.TokS
		}
		if m, ok := measured(list[firstBad]); ok {
			c.Bad, c.BadTokS = git.ShortID(sanitize.OneLine(m.Commit)), m.TokS
		}
	}
	cands := list[lastGood+1 : firstBad+1]
	c.Candidates = len(cands)
	if lastGood < 0 {
		c.Candidates += older
	}
	// Nothing narrows it without a measurement inside: every commit of
	// the range is a candidate, B's own (measured as B) included; else
	// the unmeasured candidates are named.
	narrowed := c.MeasuredInside > 0 && c.Decided
	for i := len(cands) - 1; i >= 0; i-- { // newest first
		if _, ok := measured(cands[i]); ok && narrowed {
			continue
		}
		if _, ok := measured(cands[i]); !ok {
			c.Unmeasured++
		}
		if len(c.Named) < maxCulpritNamed {
			c.Named = append(c.Named, sanitize.OneLine(cands[i]))
		} else {
			c.Skipped++
		}
	}
	if lastGood < 0 {
		c.Unmeasured += older
		c.Skipped += older
	}
	return c, true
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// Text is the culprit line:
//
//	culprit between a6d51c0 (89.4) and 1b2c3d4 (82.1): 2 commits, unmeasured: 9f8e7d6 Fix …
//	culprit: one of the 3 commits of the range, none measured inside (newest first): e7b9c70 …, 3207427 …, 1b2c3d4 …
//	no change to place yet (no verdict between A and B): 3 commits in the range
func (c Culprit) Text() string {
	what := "change"
	if c.Regression {
		what = "culprit"
	}
	list := strings.Join(c.Named, ", ")
	if c.Skipped > 0 {
		list += ", ... and " + strconv.Itoa(c.Skipped) + " more"
	}
	commits := plural(c.Candidates, "commit")
	switch {
	case !c.Decided:
		return "no change to place yet (no verdict between A and B): " + commits + " in the range"
	case c.MeasuredInside == 0:
		if c.Candidates == 1 {
			return what + ": the range's only commit, " + list
		}
		return what + ": one of the " + commits + " of the range, none measured inside (newest first): " + list
	}
	s := what + " between " + c.Good + " (" + FormatValue(c.GoodTokS, UnitTokS) + ") and " + c.Bad + " (" + FormatValue(c.BadTokS, UnitTokS) + "): " + commits
	switch {
	case c.Candidates == 1:
		s += ", " + c.Bad + " itself"
	case c.Unmeasured > 0:
		s += ", unmeasured: " + list
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
