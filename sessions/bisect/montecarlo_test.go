package bisect_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The Monte-Carlo check of the whole decision procedure (endpoints, step
// choice, classification, skips), driven by the simulated server's own
// launch noise (sim.LaunchMedian: per-launch σ 0.4 %, per-sample σ 0.6 %,
// the median of 10 steady samples). The range is the good endpoint and
// the 64 commits after it (65 commits, the last the bad endpoint, as
// `git rev-list good..bad` gives 64): the regressing commit is at a
// random position 1…64 and, with failures, 3 other commits (not the
// culprit or its parent, the endpoints neither) fail to launch.

// mcCase is one scenario of 100 seeded runs.
type mcCase struct {
	name     string
	factor   float64 // the regression's factor on tok/s; 1 for none
	failing  int     // commits that fail to launch
	noise    float64 // Config.Noise; 0 unknown
	lower    bool    // the metric is a latency (value = 1000/tok/s)
	minRight int     // runs of 100 that must give the expected outcome
	maxSteps int     // most bisection steps (distinct candidates launched) in any run
	maxMed   int     // the median launches' ceiling
	maxWrong int     // most runs that name a wrong culprit (any culprit without a regression)
}

var mcCases = []mcCase{
	{name: "8pct", factor: 0.92, failing: 3, minRight: 99, maxSteps: 8, maxMed: 40},
	{name: "8pct-noise", factor: 0.92, failing: 3, noise: 0.0047, minRight: 99, maxSteps: 8, maxMed: 40},
	{name: "3pct", factor: 0.97, failing: 3, minRight: 99, maxSteps: 8, maxMed: 80},
	{name: "3pct-noise", factor: 0.97, failing: 3, noise: 0.0047, minRight: 99, maxSteps: 8, maxMed: 80},
	{name: "8pct-latency", factor: 0.92, failing: 3, lower: true, minRight: 99, maxSteps: 8, maxMed: 40},
	// Below the figures the issue asks for: a gap of about 2σ and 1σ.
	// Found less often (the endpoints often do not differ at 10+10), and a
	// culprit named is wrong in a few runs: the SPRT's 1/K per step, with
	// a gap estimated from barely different endpoints.
	{name: "1pct", factor: 0.99, failing: 3, minRight: 60, maxWrong: 5},
	{name: "1pct-noise", factor: 0.99, failing: 3, noise: 0.0047, minRight: 60, maxWrong: 5},
	{name: "0.5pct", factor: 0.995, minRight: 0, maxWrong: 5},
	{name: "none", factor: 1, failing: 3, minRight: 99},
	{name: "none-noise", factor: 1, failing: 3, noise: 0.0047, minRight: 99},
}

// mcResult is what 100 runs of a case gave.
type mcResult struct {
	right, wrongCulprit int
	launches            []int
	maxSteps            int
	outcomes            map[string]int
}

func (r mcResult) median() int {
	l := slices.Clone(r.launches)
	slices.Sort(l)
	return l[len(l)/2]
}

func runCase(c mcCase, runs int) mcResult {
	res := mcResult{outcomes: map[string]int{}}
	for seed := range runs {
		rng := rand.New(rand.NewPCG(uint64(seed), 18))
		const n = 65
		culprit := 1 + rng.IntN(n-1)
		fail := map[int]bool{}
		for len(fail) < c.failing {
			i := 1 + rng.IntN(n-2)
			if i != culprit && i != culprit-1 && i != culprit+1 {
				fail[i] = true
			}
		}
		commits := make([]event.BisectCommit, n)
		for i := range commits {
			commits[i] = event.BisectCommit{ID: fmt.Sprintf("%040x", i+1)}
		}
		s, err := bisect.New(commits, bisect.Config{Noise: c.noise, Lower: c.lower})
		if err != nil {
			panic(err)
		}
		tested := map[string]bool{}
		launches := 0
		var st bisect.Step
		for range 1000 {
			st = s.Next()
			if st.Done {
				break
			}
			launches++
			i := s.Commit(st.Commit).Index
			if i > 0 && i < n-1 {
				tested[st.Commit] = true
			}
			if fail[i] {
				_ = s.RecordFailure(st.Commit, "crash")
				continue
			}
			mean := sim.TunedTokPerSec
			if c.factor != 1 && i >= culprit {
				mean *= c.factor
			}
			v := sim.LaunchMedian(rng, mean, sim.DefaultLaunchSamples)
			if c.lower {
				v = 1000 / v
			}
			_ = s.Record(st.Commit, v)
		}
		res.outcomes[st.Outcome.Kind]++
		res.launches = append(res.launches, launches)
		res.maxSteps = max(res.maxSteps, len(tested))
		want := st.Outcome.Kind == event.BisectCulprit && st.Outcome.Culprit == commits[culprit].ID
		if c.factor == 1 {
			want = st.Outcome.Kind == event.BisectNoDifference
		}
		if st.Outcome.Kind == event.BisectCulprit && !want {
			res.wrongCulprit++
		}
		if want {
			res.right++
		}
	}
	return res
}

// TestMonteCarlo asserts the figures over 100 fixed-seed runs a
// case: an 8 % regression among 64 commits with 3 failing commits found
// in ≥ 99 runs, ≤ 8 steps, a median ≤ 40 launches; a 3 % one with a
// median ≤ 80; no regression: "endpoints do not differ" in ≥ 99, no
// false culprit.
func TestMonteCarlo(t *testing.T) {
	if testing.Short() {
		t.Skip("Monte-Carlo runs")
	}
	for _, c := range mcCases {
		t.Run(c.name, func(t *testing.T) {
			r := runCase(c, 100)
			t.Logf("%s: right %d/100, wrong culprit %d, median %d launches, max %d, max steps %d, outcomes %v",
				c.name, r.right, r.wrongCulprit, r.median(), slices.Max(r.launches), r.maxSteps, r.outcomes)
			if r.right < c.minRight {
				t.Errorf("right in %d of 100 runs, want ≥ %d (%v)", r.right, c.minRight, r.outcomes)
			}
			if r.wrongCulprit > c.maxWrong {
				t.Errorf("%d wrong culprits, want ≤ %d", r.wrongCulprit, c.maxWrong)
			}
			if c.maxSteps > 0 && r.maxSteps > c.maxSteps {
				t.Errorf("max %d bisection steps, want ≤ %d", r.maxSteps, c.maxSteps)
			}
			if c.maxMed > 0 && r.median() > c.maxMed {
				t.Errorf("median %d launches, want ≤ %d", r.median(), c.maxMed)
			}
		})
	}
}

// BenchmarkBisectMonteCarlo runs the cases' 100 runs per iteration and
// reports the correct runs of 100, the median and max launches and the
// max bisection steps.
func BenchmarkBisectMonteCarlo(b *testing.B) {
	for _, c := range mcCases {
		b.Run(c.name, func(b *testing.B) {
			var r mcResult
			for b.Loop() {
				r = runCase(c, 100)
			}
			b.ReportMetric(float64(r.right), "correct/100")
			b.ReportMetric(float64(r.wrongCulprit), "wrong-culprit/100")
			b.ReportMetric(float64(r.median()), "median-launches")
			b.ReportMetric(float64(slices.Max(r.launches)), "max-launches")
			b.ReportMetric(float64(r.maxSteps), "max-steps")
		})
	}
}
