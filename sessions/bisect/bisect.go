// Package bisect is the decision procedure of flightdeck bisect: given the
// launches measured so far at the commits of a range (each launch one
// sample, its steady-state median), it says which commit to launch next
// and, at the end, the outcome: the first bad commit, endpoints that do
// not differ, or a change that is not a single step. It does no I/O: the
// driver (sessions.Bisect) launches and measures, and a resumed bisect or
// a replay decides as the live one did by folding the same journal
// records (Fold).
package bisect

import (
	"errors"
	"fmt"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Verdict is what a commit's launches say of it, against the two
// endpoints' samples.
type Verdict string

// The verdicts.
const (
	Untested Verdict = ""        // no launch yet
	Unknown  Verdict = "unknown" // launches so far decide nothing: collect more
	Good     Verdict = "good"    // like the good endpoint
	Bad      Verdict = "bad"     // like the bad endpoint
	Between  Verdict = "between" // significantly unlike both: an in-between value
	Mixed    Verdict = "mixed"   // launches like good and launches like bad: flip-flopping
	Skipped  Verdict = "skipped" // its launches failed, or it stayed unknown at the cap: a neighbour is tried
)

// Config is a bisect's method settings; zero fields take the defaults in
// their comments (Config.WithDefaults).
type Config struct {
	Launches    int     // launches per commit to start with (0: derived from the endpoints' gap and noise; the endpoints start with at least 3)
	MaxLaunches int     // the cap per commit (default 10)
	MaxFailures int     // failed (skipped) commits after which the bisect gives up (default 3)
	Alpha       float64 // the endpoints differ at p ≤ Alpha (default 0.01)
	Noise       float64 // the host's known A/A noise, the SD of log(launch median); 0 unknown
	Lower       bool    // a lower value is better (latency metrics)
}

// Commit is one commit of the range with what its launches gave.
type Commit struct {
	event.BisectCommit
	Index    int       // its place in the range: 0 is the good endpoint
	Samples  []float64 // the launches' values, in launch order
	Failures []string  // the failed launches' classes
	Verdict  Verdict
	P        float64 // the p-value of the test behind Verdict; 0 when none ran
}

// Step is what to do next: launch Commit once more, or stop with Outcome.
type Step struct {
	Done    bool
	Commit  string // full id of the commit to launch next, when not Done
	Outcome Outcome
}

// Outcome is how a bisect ended.
type Outcome struct {
	Kind     string   // event.BisectCulprit, BisectNoDifference, BisectNotSingleStep or BisectFailed
	Culprit  string   // full id, with BisectCulprit
	Suspects []string // with BisectNotSingleStep: the commits the change may be in, oldest first
	Why      string   // one line for the screen and the journal
}

// ExitCode is the process's exit status for o, as git bisect run's
// conventions where they fit: 0 culprit found, 3 the endpoints do not
// differ, 4 not a single step, 1 failed.
func (o Outcome) ExitCode() int {
	switch o.Kind {
	case event.BisectCulprit:
		return 0
	case event.BisectNoDifference:
		return 3
	case event.BisectNotSingleStep:
		return 4
	}
	return 1
}

// State is a bisect in progress: the range and every launch recorded.
// Its methods are not safe for concurrent use.
type State struct {
	cfg     Config
	commits []*Commit
	byID    map[string]*Commit
}

// ErrRange is returned by New for a range without its two endpoints.
var ErrRange = errors.New("bisect: the range needs a good and a bad commit")

// New begins a bisect over commits, oldest first (commits[0] the good
// endpoint, the last one the bad). Errors: fewer than two commits, a
// commit without an id or listed twice, an invalid cfg.
func New(commits []event.BisectCommit, cfg Config) (*State, error) {
	if len(commits) < 2 {
		return nil, ErrRange
	}
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	s := &State{cfg: cfg, byID: make(map[string]*Commit, len(commits))}
	for i, c := range commits {
		if c.ID == "" {
			return nil, fmt.Errorf("bisect: commit %d of the range has no id", i)
		}
		if s.byID[c.ID] != nil {
			return nil, fmt.Errorf("bisect: commit %s is listed twice", c.ID)
		}
		cc := &Commit{BisectCommit: c, Index: i}
		s.commits = append(s.commits, cc)
		s.byID[c.ID] = cc
	}
	return s, nil
}

// Config is the settings in force, defaults filled in.
func (s *State) Config() Config { return s.cfg }

// Commits is the range, oldest first, with the launches recorded. The
// caller must not modify them.
func (s *State) Commits() []*Commit { return s.commits }

// Commit is the commit with full id, nil when it is not in the range.
func (s *State) Commit(id string) *Commit { return s.byID[id] }

// Record adds one launch's sample (a finite value > 0) at commit id.
func (s *State) Record(id string, value float64) error {
	c := s.byID[id]
	switch {
	case c == nil:
		return fmt.Errorf("bisect: commit %s is not in the range", id)
	case !(value > 0) || value > 1e300:
		return fmt.Errorf("bisect: launch value %v at %s: want a finite value > 0", value, id)
	}
	c.Samples = append(c.Samples, value)
	return nil
}

// RecordFailure adds a failed launch at commit id, of failure class
// class ("oom", "crash", "checkout", "timeout", …).
func (s *State) RecordFailure(id, class string) error {
	c := s.byID[id]
	if c == nil {
		return fmt.Errorf("bisect: commit %s is not in the range", id)
	}
	if class == "" {
		class = "failed"
	}
	c.Failures = append(c.Failures, class)
	return nil
}

// Fold rebuilds a bisect's state from its journal records: start, then
// its launches in order (those of other bisects are ignored). A resumed
// bisect and a replay call Next on it as the live one did.
func Fold(start event.BisectStart, launches []event.BisectLaunch) (*State, error) {
	s, err := New(start.Commits, ConfigOf(start))
	if err != nil {
		return nil, err
	}
	for _, l := range launches {
		if l.ID != start.ID {
			continue
		}
		if l.Failed != "" {
			err = s.RecordFailure(l.Commit, l.Failed)
		} else {
			err = s.Record(l.Commit, l.Value)
		}
		if err != nil {
			return nil, fmt.Errorf("bisect %s: %w", start.ID, err)
		}
	}
	return s, nil
}

// ConfigOf is the settings a bisect-start record carries.
func ConfigOf(start event.BisectStart) Config {
	return Config{Launches: start.Launches, MaxLaunches: start.MaxLaunches, MaxFailures: start.MaxFailures,
		Alpha: start.Alpha, Noise: start.Noise, Lower: start.Lower}
}
