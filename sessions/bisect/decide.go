package bisect

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The decision procedure: Next reads the launches recorded and says what
// to do; the statistics are in judge.go.

// WithDefaults fills c's zero fields with the defaults: MaxLaunches 10,
// MaxFailures 3, Alpha 0.01. Launches 0 stays 0: it means derived, once
// the endpoints are measured, from their gap against the noise
// (derivedLaunches). An error names a field out of range: a negative
// count, Launches over MaxLaunches, Alpha outside (0, 0.2], a negative or
// non-finite Noise.
func (c Config) WithDefaults() (Config, error) {
	if c.MaxLaunches == 0 {
		c.MaxLaunches = 10
	}
	if c.MaxFailures == 0 {
		c.MaxFailures = 3
	}
	if c.Alpha == 0 {
		c.Alpha = 0.01
	}
	switch {
	case c.Launches < 0 || c.MaxLaunches < 0 || c.MaxFailures < 0:
		return c, fmt.Errorf("bisect: launches %d, max launches %d, max failures %d: want counts ≥ 0", c.Launches, c.MaxLaunches, c.MaxFailures)
	case c.Launches > c.MaxLaunches:
		return c, fmt.Errorf("bisect: launches %d over max launches %d", c.Launches, c.MaxLaunches)
	case !(c.Alpha > 0 && c.Alpha <= 0.2):
		return c, fmt.Errorf("bisect: alpha %v: want 0 < alpha ≤ 0.2", c.Alpha)
	case !(c.Noise >= 0) || math.IsInf(c.Noise, 0):
		return c, fmt.Errorf("bisect: noise %v: want a finite SD ≥ 0", c.Noise)
	}
	return c, nil
}

// endpointStart is the launches each endpoint gets before its first test,
// endpointCap the most it gets.
func (c Config) endpointStart() int { return max(c.Launches, 3) }
func (c Config) endpointCap() int   { return max(c.MaxLaunches, c.endpointStart()) }

// lookAlpha is the level of each look of the endpoint phase: Alpha over
// the looks it can take (Bonferroni).
func (c Config) lookAlpha() float64 {
	return c.Alpha / float64(looks(c.endpointStart(), c.endpointCap()))
}

// endpointGiveUp is how many failed launches end the bisect at an
// endpoint: 2 without a sample (one retry), MaxLaunches in all.
func endpointGiveUp(c *Commit, capN int) bool {
	return len(c.Failures) >= 2 && len(c.Samples) == 0 || len(c.Failures) >= max(2, capN)
}

// decision is Next's full answer, for Window, Left and LaunchesLeft too.
type decision struct {
	step   Step
	st     *stat // nil until both endpoints have their start launches
	start  int   // starting launches per candidate (0 before the endpoints differ)
	lo, hi int
	ev     map[int]evidence
}

// Next says what to do: the commit to launch once more, or the outcome.
// It sets every commit's Verdict and P (the p-value behind the verdict:
// for the endpoints their test's, for a good commit its test against
// bad, for a bad one against good, for between the larger of the two,
// for mixed the larger of its clearest launches'). It depends only on the
// launches recorded, in order: the same records give the same steps.
func (s *State) Next() Step { return s.decide().step }

// Window is the candidates' range still open: the last commit known like
// good and the first known like bad (indexes into Commits).
func (s *State) Window() (lo, hi int) {
	d := s.decide()
	return d.lo, d.hi
}

// Left is how many candidates the window still holds untested (not
// counting its ends, skipped commits or the one being measured).
func (s *State) Left() int {
	d := s.decide()
	n := 0
	for i := d.lo + 1; i < d.hi; i++ {
		if c := s.commits[i]; len(c.Samples) == 0 && len(c.Failures) == 0 {
			n++
		}
	}
	return n
}

func (s *State) decide() decision {
	for _, c := range s.commits {
		c.Verdict, c.P = Untested, 0
		if len(c.Samples)+len(c.Failures) > 0 {
			c.Verdict = Unknown
		}
	}
	last := len(s.commits) - 1
	d := decision{lo: 0, hi: max(0, last), ev: map[int]evidence{}}
	launch := func(c *Commit) decision { d.step = Step{Commit: c.ID}; return d }
	stop := func(kind, why string, suspects ...string) decision {
		d.step = Step{Done: true, Outcome: Outcome{Kind: kind, Why: why, Suspects: suspects}}
		return d
	}
	if last < 1 {
		return stop(event.BisectFailed, errNoRange.Error())
	}
	good, bad := s.commits[0], s.commits[last]
	capE := s.cfg.endpointCap()
	for _, c := range []*Commit{good, bad} {
		if endpointGiveUp(c, capE) {
			c.Verdict = Skipped
			name := "good"
			if c == bad {
				name = "bad"
			}
			return stop(event.BisectFailed, fmt.Sprintf("the %s endpoint %s could not be launched: %s",
				name, short(c), failureList(c.Failures)))
		}
	}
	start := s.cfg.endpointStart()
	if len(good.Samples) < start {
		return launch(good)
	}
	if len(bad.Samples) < start {
		return launch(bad)
	}
	st := endpointStat(good.Samples, bad.Samples, s.cfg.lookAlpha(), s.cfg.Noise, s.cfg.Lower)
	d.st = &st
	good.P, bad.P = st.p, st.p
	if !st.differ {
		ng, nb := len(good.Samples), len(bad.Samples)
		switch {
		case ng >= capE && nb >= capE:
			return stop(event.BisectNoDifference, fmt.Sprintf("the endpoints do not differ: bad is %s than good (%s %s, %s)",
				s.deltaWords(st.deltaPct), st.method, formatP(st.p), formatN(ng, nb)))
		case ng <= nb && ng < capE || nb >= capE:
			return launch(good)
		}
		return launch(bad)
	}
	good.Verdict, bad.Verdict = Good, Bad
	if !st.regress {
		return stop(event.BisectNoDifference, fmt.Sprintf("the endpoints do not differ as a regression: bad is %s than good (%s %s, %s)",
			s.deltaWords(st.deltaPct), st.method, formatP(st.p), formatN(st.ng, st.nb)))
	}
	d.start = s.cfg.Launches
	if d.start == 0 {
		d.start = derivedLaunches(st, s.cfg.Alpha, s.cfg.MaxLaunches)
	}
	d.start = min(max(d.start, 1), max(s.cfg.MaxLaunches, 1))
	return s.bisect(d, launch, stop)
}

// bisect is Next once the endpoints differ as a regression.
func (s *State) bisect(d decision, launch func(*Commit) decision, stop func(kind, why string, suspects ...string) decision) decision {
	last := len(s.commits) - 1
	var skipped []*Commit
	for i := 1; i < last; i++ {
		c := s.commits[i]
		switch {
		case len(c.Failures) > 0:
			c.Verdict = Skipped
			skipped = append(skipped, c)
			continue
		case len(c.Samples) == 0:
			continue
		}
		e := judge(c.Samples, *d.st, s.cfg.Alpha)
		d.ev[i] = e
		c.Verdict, c.P = e.verdict, e.p
		switch {
		case len(c.Samples) < d.start:
			c.Verdict = Unknown
		case e.verdict == Unknown && len(c.Samples) >= s.cfg.MaxLaunches:
			c.Verdict = Skipped
			skipped = append(skipped, c)
		}
	}
	for i := 1; i < last; i++ {
		if s.commits[i].Verdict == Bad {
			d.hi = i
			break
		}
	}
	for i := d.hi - 1; i > 0; i-- {
		if s.commits[i].Verdict == Good {
			d.lo = i
			break
		}
	}
	var running *Commit
	for i := d.lo + 1; i < d.hi && running == nil; i++ {
		if s.commits[i].Verdict == Unknown {
			running = s.commits[i]
		}
	}
	for i := d.hi + 1; i < last; i++ {
		if c := s.commits[i]; c.Verdict == Good {
			return stop(event.BisectNotSingleStep, fmt.Sprintf("not a single step: %s is like bad but %s after it is like good (%s vs bad)",
				short(s.commits[d.hi]), short(c), formatP(c.P)), s.ids(d.lo+1, last)...)
		}
	}
	for i := d.lo + 1; i < d.hi; i++ {
		c := s.commits[i]
		if c.Verdict == Between || c.Verdict == Mixed {
			return stop(event.BisectNotSingleStep, "not a single step: "+s.evidenceWords(c, d.ev[i])+
				fmt.Sprintf("; the change lies in %s", s.spanWords(d.lo, d.hi)), s.ids(d.lo+1, d.hi)...)
		}
	}
	if d.hi == d.lo+1 {
		d.step = Step{Done: true, Outcome: Outcome{Kind: event.BisectCulprit, Culprit: s.commits[d.hi].ID, Why: s.culpritWords(d)}}
		return d
	}
	var untested []int
	var between []*Commit
	for i := d.lo + 1; i < d.hi; i++ {
		c := s.commits[i]
		if c.Verdict == Skipped {
			between = append(between, c)
		} else if c.Verdict == Untested {
			untested = append(untested, i)
		}
	}
	if running == nil && len(untested) == 0 {
		var names []string
		for _, c := range between {
			names = append(names, short(c))
		}
		return stop(event.BisectNotSingleStep, fmt.Sprintf("the change is in one of %s or %s (%s could not be launched or stayed unknown)",
			strings.Join(names, ", "), short(s.commits[d.hi]), strings.Join(names, ", ")), s.ids(d.lo+1, d.hi)...)
	}
	if len(skipped) >= s.cfg.MaxFailures {
		var parts []string
		for _, c := range skipped {
			parts = append(parts, short(c)+" "+skipReason(c))
		}
		return stop(event.BisectFailed, fmt.Sprintf("too many failed launches: %d commits skipped (%s)", len(skipped), strings.Join(parts, ", ")))
	}
	if running != nil {
		return launch(running)
	}
	return launch(s.commits[pick(d.lo, d.hi, func(i int) bool { return s.commits[i].Verdict == Untested })])
}

// pick is the commit to test in the window (lo, hi): the middle one, or
// when it is not untested the nearest untested one, alternately above
// and below (above first). ok reports whether index i is untested; there
// must be one.
func pick(lo, hi int, ok func(int) bool) int {
	mid := lo + (hi-lo)/2
	for k := 0; k < hi-lo; k++ {
		for _, i := range []int{mid + k, mid - k} {
			if i > lo && i < hi && ok(i) {
				return i
			}
		}
	}
	return mid
}

// ids is the commits' ids from index i to j, both included.
func (s *State) ids(i, j int) []string {
	var out []string
	for k := i; k <= j && k < len(s.commits); k++ {
		out = append(out, s.commits[k].ID)
	}
	return out
}

// stepsOver is the bisection steps a window of n untested commits between
// its ends takes: ceil(log2(n+1)).
func stepsOver(n int) int {
	if n <= 0 {
		return 0
	}
	return int(math.Ceil(math.Log2(float64(n + 1))))
}

// perCandidate is the launches a candidate is expected to take: Launches,
// or 2 when derived (1 with a large gap, more with a small one).
func (c Config) perCandidate() int {
	if c.Launches > 0 {
		return c.Launches
	}
	return 2
}

// endpointLaunches is the launches the endpoints are expected to take
// when they differ clearly: the start each with a known noise; without
// it the Mann–Whitney test's smallest n+n whose smallest p, 2/C(2n, n),
// reaches the look's level.
func (c Config) endpointLaunches() int {
	n := c.endpointStart()
	if c.Noise > 0 {
		return 2 * n
	}
	for ; n < c.endpointCap(); n++ {
		lc, _ := math.Lgamma(float64(2*n + 1))
		ln, _ := math.Lgamma(float64(n + 1))
		if math.Log(2)-(lc-2*ln) <= math.Log(c.lookAlpha()) {
			break
		}
	}
	return 2 * n
}

// Estimate is the launches a bisect over n commits (endpoints included)
// is expected to take with cfg, endpoints included, and its bisection
// steps, ceil(log2(n−1)); a range that clearly regresses, no failures.
// Zero for n < 2 or an invalid cfg.
func Estimate(n int, cfg Config) (steps, launches int) {
	cfg, err := cfg.WithDefaults()
	if err != nil || n < 2 {
		return 0, 0
	}
	steps = stepsOver(n - 2)
	return steps, cfg.endpointLaunches() + steps*cfg.perCandidate()
}

// LaunchesLeft is the launches the bisect is expected still to need: the
// ETA's count. 0 once it is done.
func (s *State) LaunchesLeft() int {
	d := s.decide()
	if d.step.Done {
		return 0
	}
	if d.st == nil || !d.st.differ {
		have := len(s.commits[0].Samples) + len(s.commits[len(s.commits)-1].Samples)
		_, est := Estimate(len(s.commits), s.cfg)
		return max(1, est-have)
	}
	u := 0
	for i := d.lo + 1; i < d.hi; i++ {
		if v := s.commits[i].Verdict; v == Untested || v == Unknown {
			u++
		}
	}
	have := 0
	if c := s.Commit(d.step.Commit); c != nil && c.Verdict == Unknown {
		have = len(c.Samples)
	}
	return max(1, stepsOver(u)*d.start-have)
}

// errNoRange is a guard for a State not made by New.
var errNoRange = errors.New("bisect: no range")
