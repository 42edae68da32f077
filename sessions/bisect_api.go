package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// BisectConfig is one bisect (flightdeck bisect; the cockpit's bisect
// panel). Zero fields take the defaults in their comments.
type BisectConfig struct {
	Good, Bad string // refs: the endpoints (Good measured faster than Bad)
	// Request is what every commit is launched with; nil: the session's
	// launch request (Control.Request), as the launch form would launch.
	Request *LaunchRequest
	// Bench, when set, benchmarks every launch and Metric reads the
	// benchmark: "bench tok/s" (or "bench-tok/s"), "ttft", "itl" or
	// "tpot" (ms, lower is better). Without it the metric is the server
	// log's tok/s.
	Bench  *event.BenchConfig
	Metric string
	// Method: launches per commit, the cap, failures, α, known noise.
	// With Method.Noise 0 a new bisect takes the host's known A/A noise
	// of its launch's configuration class (any commit) from this
	// session's and the host's earlier experiments (repeats: flightdeck
	// server repeat, R), when it stands on BisectNoiseMinLaunches
	// launches or more, for the log's or the benchmark's tok/s;
	// NoKnownNoise leaves it unknown.
	Method       bisect.Config
	NoKnownNoise bool
	// MinSamples is the steady tok/s samples a launch must have to count
	// (default 10), MaxWait bounds one launch from checkout to its
	// sample (default 10 min).
	MinSamples int
	MaxWait    time.Duration
	// Stay leaves the culprit checked out at the end instead of restoring
	// the original checkout and dirty work (without a culprit the
	// checkout is restored all the same).
	Stay bool
	// Resume continues the bisect of this id found in the session's
	// journal (Good, Bad, the metric, the benchmark and Method then come
	// from its bisect-start; Request must launch as it did); ResumeLast
	// ("last") the last one without a final end.
	Resume string
	// From is the journal file Resume reads the bisect from when it is
	// not the session's own (a CLI session writing a new journal); the
	// bisect's records are then copied into the session's journal.
	From string
}

// ErrBisectBusy is returned by Bisect while another bisect runs.
var ErrBisectBusy = errors.New("a bisect is already running")

// Bisect runs a bisect to its end and returns its outcome; every launch
// is an experiment (named "bisect b1 65b09bf #2"), every step a journal
// record (bisect-start, -launch, -end), progress published as
// event.BisectProgress. At the end the original checkout and dirty work
// are restored (the dirty work is stashed at the start, so that every
// commit launches as committed), or with Stay the culprit stays checked
// out; the server is left as it is (running the last commit launched).
// When ctx ends it lets the launch in progress finish, restores the
// checkout, journals the end as cancelled (Resume continues it) and
// returns ctx's error. Errors before anything is checked out:
// ErrBisectBusy, ErrNoLab (no journal), ErrNoRepo, the driver lock's, a
// launch request that does not plan, a bad ref or range, git in the
// middle of a merge or rebase, ErrNoBisectToResume. Later errors (the
// connection, the lock) end the bisect as stopped, resumable too.
func (s *Session) Bisect(ctx context.Context, cfg BisectConfig) (bisect.Outcome, error) {
	a, err := s.attachedOr()
	if err != nil {
		return bisect.Outcome{}, err
	}
	if a.bisect == nil {
		return bisect.Outcome{}, ErrNoLab
	}
	s.inflight.Add(1)
	defer s.inflight.Done()
	return a.bisect.Run(ctx, cfg)
}

// BisectRange lists the commits a bisect from good to bad would test,
// oldest first, endpoints included (the start dialog's list and
// estimate): git.Repo.FirstParent's, with its errors, and ErrNoRepo.
func (s *Session) BisectRange(ctx context.Context, good, bad string) ([]event.BisectCommit, error) {
	g, err := s.git()
	if err != nil {
		return nil, err
	}
	return g.FirstParent(ctx, good, bad)
}
