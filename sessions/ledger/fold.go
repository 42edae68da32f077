package ledger

import (
	"math"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// ledgerFold is the Ledger's working state: where each experiment is, the
// server run the stream is in, and the open experiment's samples.
//
// A run is one life of the server: a launch (server-launched, or a
// server-status that goes launching) or a rewritten log (log-reset)
// begins a new one. Its ready time is the first of server-ready (the ready
// line) and server-status ready (the health check) seen in it. The open
// experiment keeps one segment per run it spans, so that each run's
// warm-up is dropped on its own.
type ledgerFold struct {
	index    map[string]int // experiment id → position in Ledger.exps
	runAt    time.Time      // when the current run began; zero while unknown
	runReady time.Time      // the current run's ready time; zero while unknown
	segs     []segment      // the open experiment's runs; nil when none is open
	last     time.Time      // the time of the last event applied
	// benching is the benchmark run going (bench-start without its
	// bench-done), "" when none; afterBench says the next tok/s sample
	// still spans the run's last requests.
	benching   string
	afterBench bool
}

// segment is the part of one run inside the open experiment.
type segment struct {
	start  time.Time // when the experiment or the run began, whichever is later
	ready  time.Time // the run's ready time, zero while unknown
	points []Point
	accept []float64 // per point: EAGLE accept length, NaN when the line had none
	// benched counts the samples left out because flightdeck's own
	// benchmark was loading the server: another workload, measured by the
	// run itself (Experiment.Bench).
	benched int
}

func (l *Ledger) apply(e event.Event) bool {
	prev := l.fold.last
	if e.At.After(l.fold.last) {
		l.fold.last = e.At
	}
	f := &l.fold
	switch p := e.Data.(type) {
	case event.Session:
		// Another cockpit appends to the journal: what the previous one
		// left open ended with it (a crash), at its last event — not at
		// the new session's first. The server's run is not known any more.
		f.runAt, f.runReady = time.Time{}, time.Time{}
		f.benching, f.afterBench = "", false
		if x := l.Current(); x != nil {
			at := prev
			if at.IsZero() {
				at = x.Started
			}
			return l.Close(at)
		}
		return false
	case event.TokRate:
		if p.Dropped || len(f.segs) == 0 {
			return false // idle-gap artefact, or no experiment to measure
		}
		s := &f.segs[len(f.segs)-1]
		if f.benching != "" || f.afterBench {
			f.afterBench = false
			s.benched++
			return true
		}
		s.points = append(s.points, Point{At: e.At, Value: p.TokPerSec})
		acc := math.NaN()
		if p.HasAccept {
			acc = p.AcceptLength
		}
		s.accept = append(s.accept, acc)
		return true
	case event.ServerReady:
		return l.ready(e.At)
	case event.LogReset:
		return l.newRun(e.At)
	case event.ServerLaunched:
		return l.newRun(e.At)
	case event.ServerStatus:
		switch p.Phase {
		case event.PhaseLaunching:
			// Republished on every change while launching: only a later
			// launch than the run's is a new one (server-launched usually
			// came first, at the same time).
			if p.Since.After(f.runAt) {
				return l.newRun(p.Since)
			}
		case event.PhaseReady:
			at := p.Since
			if at.IsZero() {
				at = e.At
			}
			return l.ready(at)
		}
		return false
	case event.ExperimentStart:
		return l.start(e.At, p)
	case event.ExperimentFingerprint:
		x := l.find(p.Exp)
		if x == nil {
			if o := l.orphan(e.At, p.Exp, p.Kind()); o != nil {
				fp := p.Fingerprint
				o.Fingerprint = &fp
				return true
			}
			return false
		}
		fp := p.Fingerprint
		x.Fingerprint = &fp
		return true
	case event.ExperimentUpdate:
		x := l.find(p.Exp)
		if x == nil {
			if o := l.orphan(e.At, p.Exp, p.Kind()); o != nil {
				x = &o.Experiment
			} else {
				return false
			}
		}
		if p.Name != "" {
			x.Name = p.Name
		}
		if p.Hypothesis != "" {
			x.Hypothesis = p.Hypothesis
		}
		if p.Conclusion != "" {
			x.Conclusion = p.Conclusion
		}
		return true
	case event.ExperimentEnd:
		x := l.find(p.Exp)
		if x == nil {
			o := l.orphan(e.At, p.Exp, p.Kind())
			if o == nil || !o.Open() {
				return false
			}
			o.Ended, o.EndedBy, o.Result, o.EndGPUs = e.At, p.Trigger, p.Result, p.GPUs
			if p.Conclusion != "" {
				o.Conclusion = p.Conclusion
			}
			return true // the open experiment, if any, is another one
		}
		if !x.Open() {
			return false
		}
		x.Ended, x.EndedBy, x.Result, x.EndGPUs = e.At, p.Trigger, p.Result, p.GPUs
		if p.Conclusion != "" {
			x.Conclusion = p.Conclusion
		}
		f.segs = nil
		return true
	case event.Baseline:
		// The latest mark wins, even one naming an experiment not seen
		// (Baseline returns nil for it).
		if l.baseline == p.Exp {
			return false
		}
		l.baseline = p.Exp
		return true
	case event.Repeat:
		x := l.find(p.Exp)
		if x == nil {
			return false // an earlier journal's experiment, or a lost one's
		}
		r := p
		x.Repeat = &r
		return true
	case event.BenchStarted:
		f.benching = p.ID
		return false
	case event.BenchDone:
		if f.benching != "" {
			f.benching, f.afterBench = "", true
		}
		x := l.find(p.Exp)
		if x == nil {
			return false
		}
		x.Bench = append(x.Bench, p)
		return true
	case event.Note:
		n := TimedNote{At: e.At, Note: p}
		l.notes = append(l.notes, n)
		if x := l.find(p.Exp); x != nil {
			x.Notes = append(x.Notes, n)
		} else if o := l.orphan(e.At, p.Exp, p.Kind()); o != nil {
			o.Notes = append(o.Notes, n)
		}
		return true
	case event.BenchProgress, event.ConnState, event.DriverState, event.HostChanges, event.HostState, event.GPUFailure, event.GPUSample,
		event.GPUSource, event.GPUStale, event.GitAction, event.GitMoved, event.GitStatus,
		event.JournalStatus, event.Key, event.KillStep, event.LogBench, event.LogFollowError,
		event.LogLines, event.LogNotice, event.Prefill, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead,
		event.RepoUnreadable, event.ServerFailure, event.ServerHealthy, event.ServerObserved,
		event.SpecDecode, event.Throughput, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// no part of an experiment
	}
	return false
}

// newRun begins a run at at.
func (l *Ledger) newRun(at time.Time) bool {
	f := &l.fold
	f.runAt, f.runReady = at, time.Time{}
	if len(f.segs) == 0 {
		return false
	}
	if last := &f.segs[len(f.segs)-1]; len(last.points) == 0 {
		*last = segment{start: at} // nothing measured in it: reuse
	} else {
		f.segs = append(f.segs, segment{start: at})
	}
	return true
}

// ready records the run's ready time (the first one seen in the run).
func (l *Ledger) ready(at time.Time) bool {
	f := &l.fold
	if !f.runReady.IsZero() {
		return false
	}
	f.runReady = at
	if len(f.segs) > 0 {
		f.segs[len(f.segs)-1].ready = at
	}
	return true
}

func (l *Ledger) start(at time.Time, p event.ExperimentStart) bool {
	f := &l.fold
	if f.index == nil {
		f.index = map[string]int{}
	}
	if _, dup := f.index[p.ID]; dup || p.ID == "" {
		return false // a garbled or repeated line: the first one stands
	}
	if l.Current() != nil {
		l.Close(at) // a start without an end: the previous one's end was lost
	}
	f.index[p.ID] = len(l.exps)
	l.exps = append(l.exps, Experiment{ID: p.ID, Name: p.Name, Hypothesis: p.Hypothesis, Started: at, StartedBy: p.Trigger, Launch: p.Launch})
	f.segs = []segment{{start: at, ready: f.runReady}}
	return true
}

// find returns the experiment with this id (not a name), or nil.
func (l *Ledger) find(id string) *Experiment {
	if i, ok := l.fold.index[id]; ok && id != "" {
		return &l.exps[i]
	}
	return nil
}

// Close ends the open experiment, if any, at at (zero: the time of the last
// event applied) with trigger "" and the result of its samples, as if an
// exp-end had been read. The journal commands call it at the end of a file:
// an experiment still open there was ended by a crash (the cockpit was
// killed before it could write exp-end). Apply calls it for a Session
// event (another cockpit appending to the journal), at the event before
// it. It reports whether one was open.
func (l *Ledger) Close(at time.Time) bool {
	x := l.Current()
	if x == nil {
		return false
	}
	if at.IsZero() {
		at = l.fold.last
	}
	x.Result = l.provisional()
	x.Ended, x.EndedBy = at, ""
	if x.Ended.IsZero() || x.Ended.Before(x.Started) {
		x.Ended = x.Started
	}
	l.fold.segs = nil
	return true
}

// provisional computes the open experiment's result: each run's steady
// state (SteadyState from the later of its ready time and its start), the
// kept values of all runs in time order, summarised by Summarize.
func (l *Ledger) provisional() event.ExperimentResult {
	if l.Current() == nil {
		return event.ExperimentResult{}
	}
	var values, accept []float64
	dropped := 0
	for _, s := range l.fold.segs {
		from := s.start
		if s.ready.After(from) {
			from = s.ready
		}
		st := SteadyState(s.points, from)
		values = append(values, st.Values...)
		dropped += st.Dropped + s.benched
		for _, i := range st.Kept {
			if !math.IsNaN(s.accept[i]) {
				accept = append(accept, s.accept[i])
			}
		}
	}
	return ResultOf(values, dropped, accept)
}
