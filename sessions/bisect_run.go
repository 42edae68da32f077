package sessions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// bisectDecider is the decision procedure the driver follows: a
// *bisect.State in production, a scripted one in the driver's tests.
type bisectDecider interface {
	Next() bisect.Step
	Record(id string, value float64) error
	RecordFailure(id, class string) error
	LaunchesLeft() int
}

// foldDecider is bisect.Fold as a bisectDecider.
func foldDecider(start event.BisectStart, launches []event.BisectLaunch) (bisectDecider, error) {
	return bisect.Fold(start, launches)
}

// Bisect phases (event.BisectProgress.Phase).
const (
	BisectCheckingOut  = "checking out"
	BisectLaunching    = "launching"
	BisectMeasuring    = "measuring"
	BisectBenchmarking = "benchmarking"
	BisectRestoring    = "restoring"
)

// Bisect metrics (BisectConfig.Metric, event.BisectStart.Metric).
const (
	MetricLogTokS   = "tok/s"
	MetricBenchTokS = "bench tok/s"
	MetricTTFT      = "ttft"
	MetricITL       = "itl"
	MetricTPOT      = "tpot"
)

// bisecter runs the bisects of one session, one at a time: it checks out,
// launches through Control, measures through the Lab's experiments (or
// the Bencher), journals through Publish.
type bisecter struct {
	Control *Control
	Lab     *Lab
	Git     *Git
	Bencher *Bencher
	Publish event.Sink
	// Journal is the session's own journal file ("" without one), Opened
	// when this session began: its records from before are earlier
	// sessions' (this one's are kept in own).
	Journal string
	Opened  time.Time
	// Experiments are the experiments a bisect's known A/A noise is read
	// from (knownNoise) when its Method.Noise is 0 and NoKnownNoise is
	// not set; nil: none.
	Experiments func() []ledger.Experiment
	// decide folds a bisect's records into its decision procedure; nil:
	// bisect.Fold.
	decide func(event.BisectStart, []event.BisectLaunch) (bisectDecider, error)

	running atomic.Bool
	mu      sync.Mutex
	own     []event.Event // the bisect records this session published
}

// publish sends p (a bisect record or progress) on the stream; the
// records are kept for a resume in the same session.
func (b *bisecter) publish(p event.Payload) {
	e := event.Event{At: time.Now(), Data: p}
	if _, progress := p.(event.BisectProgress); !progress {
		b.mu.Lock()
		b.own = append(b.own, e)
		b.mu.Unlock()
	}
	if b.Publish != nil {
		b.Publish(e)
	}
}

// metricOf normalises a metric name ("bench-tok/s" is "bench tok/s") and
// says whether lower is better. Errors: an unknown metric, a benchmark
// metric without a benchmark, or the log's tok/s with one.
func metricOf(m string, bench bool) (string, bool, error) {
	m = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(m)), "-", " ")
	if m == "" {
		m = MetricLogTokS
		if bench {
			m = MetricBenchTokS
		}
	}
	switch m {
	case MetricLogTokS:
		if bench {
			return m, false, errors.New("bisect: metric tok/s is the server log's: a benchmark measures bench-tok/s, ttft, itl or tpot")
		}
		return m, false, nil
	case MetricBenchTokS, MetricTTFT, MetricITL, MetricTPOT:
		if !bench {
			return m, false, fmt.Errorf("bisect: metric %s needs a benchmark (its settings)", m)
		}
		return m, m != MetricBenchTokS, nil
	}
	return m, false, fmt.Errorf("bisect: metric %q: want tok/s, bench-tok/s, ttft, itl or tpot", m)
}

// benchValue is the metric's value in a benchmark result (ms for the
// latencies: their medians), or why there is none.
func benchValue(metric string, r *event.BenchResult) (float64, error) {
	if r == nil || r.Completed == 0 {
		return 0, errors.New("no request succeeded")
	}
	if r.Failed > 0 {
		return 0, fmt.Errorf("%d of %d requests failed", r.Failed, r.Completed+r.Failed)
	}
	v := 0.0
	switch metric {
	case MetricBenchTokS:
		v = r.OutputTokPerSec
	case MetricTTFT:
		v = r.TTFT.Median
	case MetricITL:
		v = r.ITL.Median
	case MetricTPOT:
		v = r.TPOT.Median
	}
	if !(v > 0) {
		return 0, fmt.Errorf("the benchmark measured no %s", metric)
	}
	return v, nil
}

// bisectRun is one bisect in progress.
type bisectRun struct {
	b        *bisecter
	cfg      BisectConfig
	start    event.BisectStart
	plan     Plan
	d        bisectDecider
	restore  event.BisectOrigin // what the end puts back
	tries    map[string]int     // launches made at each commit
	recorded int                // launches recorded (journaled), resumed ones included
	took     []time.Duration
	lastProg event.BisectProgress
}

func (run *bisectRun) progress(p event.BisectProgress) {
	p.ID = run.start.ID
	if len(run.took) > 0 {
		var sum time.Duration
		for _, t := range run.took {
			sum += t
		}
		p.ETA = sum / time.Duration(len(run.took)) * time.Duration(run.d.LaunchesLeft())
	}
	if p == run.lastProg {
		return
	}
	run.lastProg = p
	run.b.publish(p)
}

// Run runs (or resumes) one bisect to its end: see Session.Bisect.
func (b *bisecter) Run(ctx context.Context, cfg BisectConfig) (bisect.Outcome, error) {
	switch {
	case b.Lab == nil:
		return bisect.Outcome{}, ErrNoLab
	case b.Control == nil:
		return bisect.Outcome{}, errors.New("bisect: no server control for this host")
	case b.Git == nil:
		return bisect.Outcome{}, ErrNoRepo
	}
	if !b.running.CompareAndSwap(false, true) {
		return bisect.Outcome{}, ErrBisectBusy
	}
	defer b.running.Store(false)
	if err := b.Control.guard(ctx); err != nil {
		return bisect.Outcome{}, err
	}
	run, err := b.begin(ctx, cfg)
	if err != nil {
		return bisect.Outcome{}, err
	}
	return run.loop(ctx)
}

// begin prepares a bisect: a new one (range, origin, bisect-start) or one
// resumed from its records.
func (b *bisecter) begin(ctx context.Context, cfg BisectConfig) (*bisectRun, error) {
	if cfg.MinSamples == 0 {
		cfg.MinSamples = 10
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 10 * time.Minute
	}
	req := b.Control.Request()
	if cfg.Request != nil {
		req = *cfg.Request
	}
	plan, err := b.Control.Plan(req)
	if err != nil {
		return nil, fmt.Errorf("bisect: the launch: %w", err)
	}
	decide := b.decide
	if decide == nil {
		decide = foldDecider
	}
	run := &bisectRun{b: b, cfg: cfg, plan: plan, tries: map[string]int{}}
	var launches []event.BisectLaunch
	if cfg.Resume != "" {
		rs, err := b.resumable(cfg)
		if err != nil {
			return nil, err
		}
		if d := launchDiff(plan, rs.start.Launch); rs.start.Launch != nil && d != "" {
			return nil, fmt.Errorf("bisect %s: the launch would differ from the bisect's (%s): resume with its preset, profile and flags", rs.start.ID, d)
		}
		run.start, launches = rs.start, rs.launches
		st, err := b.Git.Status(ctx)
		if err != nil {
			return nil, err
		}
		if err := checkIdle(st); err != nil {
			return nil, err
		}
		run.restore = rs.start.Origin
		if !keptAside(st, rs.start.ID, rs.start.Origin) && st.Head.ID == rs.start.Origin.Head && st.Branch == rs.start.Origin.Branch {
			// Restored already (a cancelled bisect): what is here now is
			// what the end puts back. Not so while the dirty work is still
			// in the bisect's stash (a bisect killed at a launch of the
			// commit it started from): the end restores the snapshot.
			if run.restore, err = b.Git.takeOrigin(ctx, rs.start.ID); err != nil {
				return nil, err
			}
		}
		if rs.foreign { // read from another journal: this one must hold it too
			b.publish(rs.start)
			for _, l := range launches {
				b.publish(l)
			}
		}
	} else {
		if run.start, err = b.newStart(ctx, cfg, plan); err != nil {
			return nil, err
		}
		run.restore = run.start.Origin
		b.publish(run.start)
	}
	run.cfg.Bench = run.start.Bench // the bisect-start's benchmark (defaults filled in) wins
	if run.d, err = decide(run.start, launches); err != nil {
		return nil, err
	}
	run.recorded = len(launches)
	for _, l := range launches {
		run.tries[l.Commit]++
		if l.Took > 0 {
			run.took = append(run.took, l.Took)
		}
	}
	return run, nil
}

// newStart lists the range, checks the settings, takes the origin (the
// dirty work stashed) and returns the bisect-start record.
func (b *bisecter) newStart(ctx context.Context, cfg BisectConfig, plan Plan) (event.BisectStart, error) {
	metric, lower, err := metricOf(cfg.Metric, cfg.Bench != nil)
	if err != nil {
		return event.BisectStart{}, err
	}
	if cfg.Bench != nil {
		if b.Bencher == nil {
			return event.BisectStart{}, errors.New("bisect: the benchmark is not available in this session")
		}
		if err := cfg.Bench.Defaults().Validate(); err != nil {
			return event.BisectStart{}, fmt.Errorf("bisect: the benchmark: %w", err)
		}
	}
	m := cfg.Method
	m.Lower = lower
	var noiseN int
	if m.Noise == 0 && !cfg.NoKnownNoise && b.Experiments != nil {
		if n := knownNoise(b.Experiments(), metric, *planInfo(plan)); n != nil {
			m.Noise, noiseN = n.SD, n.Launches
		}
	}
	if m, err = m.WithDefaults(); err != nil {
		return event.BisectStart{}, err
	}
	commits, err := b.Git.FirstParent(ctx, cfg.Good, cfg.Bad)
	if err != nil {
		return event.BisectStart{}, fmt.Errorf("bisect: the range %s..%s: %w", cfg.Good, cfg.Bad, err)
	}
	if _, err := bisect.New(commits, m); err != nil {
		return event.BisectStart{}, err
	}
	id, err := b.nextID()
	if err != nil {
		return event.BisectStart{}, err
	}
	start := event.BisectStart{ID: id, Good: cfg.Good, Bad: cfg.Bad, Commits: commits, Metric: metric, Lower: lower,
		Launches: m.Launches, MaxLaunches: m.MaxLaunches, MaxFailures: m.MaxFailures, Alpha: m.Alpha, Noise: m.Noise,
		NoiseLaunches: noiseN, Launch: planInfo(plan)}
	if cfg.Bench != nil {
		bc := cfg.Bench.Defaults()
		start.Bench = &bc
	}
	if start.Origin, err = b.Git.takeOrigin(ctx, id); err != nil {
		return event.BisectStart{}, err
	}
	return start, nil
}

// planInfo is what plan launches, redacted as the journal keeps it.
func planInfo(p Plan) *event.LaunchInfo {
	return &event.LaunchInfo{Preset: p.Spec.Preset, Profile: p.Spec.Profile, Argv: server.RedactArgv(p.Spec.Argv), Env: server.Redact(p.Spec.Env)}
}

// loop launches what the decision procedure asks for until it is done,
// ctx ends or something other than a launch fails; then the end.
func (run *bisectRun) loop(ctx context.Context) (bisect.Outcome, error) {
	for {
		if err := ctx.Err(); err != nil {
			return run.end(ctx, run.cancelled(), err)
		}
		step := run.d.Next()
		if step.Done {
			return run.end(ctx, step.Outcome, nil)
		}
		l, err := run.launch(ctx, step.Commit)
		if err != nil {
			if ctx.Err() != nil {
				return run.end(ctx, run.cancelled(), ctx.Err())
			}
			return run.end(ctx, bisect.Outcome{Kind: event.BisectStopped, Why: err.Error()}, err)
		}
		run.b.publish(l)
		run.recorded++
		if l.Took > 0 {
			run.took = append(run.took, l.Took)
		}
		if l.Failed != "" {
			err = run.d.RecordFailure(l.Commit, l.Failed)
		} else {
			err = run.d.Record(l.Commit, l.Value)
		}
		if err != nil {
			return run.end(ctx, bisect.Outcome{Kind: event.BisectFailed, Why: err.Error()}, err)
		}
	}
}

// cancelled is the outcome of a bisect whose context ended: how far it
// got ("after 3 launches"; the launch cut short by the cancel is not one).
func (run *bisectRun) cancelled() bisect.Outcome {
	n := strconv.Itoa(run.recorded) + " launches"
	if run.recorded == 1 {
		n = "1 launch"
	}
	return bisect.Outcome{Kind: event.BisectCancelled, Why: "after " + n}
}

// end restores the checkout (unless Stay with a culprit), journals
// bisect-end and returns o with err.
func (run *bisectRun) end(ctx context.Context, o bisect.Outcome, err error) (bisect.Outcome, error) {
	run.progress(event.BisectProgress{Phase: BisectRestoring})
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	var restored string
	var rerr error
	if run.cfg.Stay && o.Kind == event.BisectCulprit {
		if rerr = run.b.Git.checkoutFor(rctx, o.Culprit); rerr == nil {
			restored = "culprit " + git.ShortID(o.Culprit) + " checked out (stay)"
			if run.restore.Snapshot != "" {
				restored += "; the dirty work is in snapshot " + run.restore.Snapshot + " and stash \"" + bisectStash(run.start.ID) + "\""
			}
		}
	} else {
		restored, rerr = run.b.Git.restoreOrigin(rctx, run.start.ID, run.restore)
	}
	if rerr != nil {
		restored = "not restored: " + rerr.Error() + "; " + undoHint(run.restore, run.start.ID)
		if err == nil {
			err = fmt.Errorf("bisect %s: %w", run.start.ID, rerr)
		}
	}
	run.b.publish(event.BisectEnd{ID: run.start.ID, Outcome: o.Kind, Culprit: o.Culprit, Suspects: o.Suspects, Why: o.Why, Restored: restored})
	return o, err
}

// expName names a launch's experiment: "bisect b1 65b09bf #2".
func (run *bisectRun) expName(commit string, i int) string {
	return "bisect " + run.start.ID + " " + git.ShortID(commit) + " #" + strconv.Itoa(i)
}
