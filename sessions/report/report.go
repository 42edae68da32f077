// Package report writes sessions and comparisons for people and programs.
// ReadReport folds a whole journal into a Report (its experiments, through
// a ledger.Ledger; the tok/s series; the checkout's moves; the cockpit
// sessions that wrote it; the GPU events), which the exports write as
// Markdown (WriteMarkdown), CSV (WriteCSV for tok/s, WriteGPUCSV for the
// GPU samples, both for pandas) and JSON (WriteJSON). WriteDiff writes a
// comparison of two experiments (compare.Diff) as text, Markdown or JSON.
// The words both use for values are the ones the journal commands and the
// cockpit write too: FormatNum, FormatElapsed, FormatResult,
// FormatSummary, BenchRunText and the like. Remote and typed text is
// sanitised, and escaped for Markdown.
package report

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// ScanFunc calls fn with every event of a journal in file order, stopping at
// the first error fn returns (and returning it). (*journal.Journal).Scan is
// one.
type ScanFunc func(fn func(e event.Event) error) error

// Report is a whole journal folded for the exports (WriteMarkdown,
// WriteCSV, WriteJSON) and the journal commands: its header, its
// experiments and notes, and its tok/s series. Build it with ReadReport.
type Report struct {
	Header event.SessionHeader
	// End is the time of the latest event (Header.Created when there is
	// none); End - Header.Created is the session's duration.
	End time.Time
	// Ledger holds the experiments and notes. Experiments left open at the
	// end of a finished journal were ended at End with an empty trigger
	// (the cockpit died before it could end them: see Ledger.Close).
	Ledger ledger.Ledger
	// Live says the journal is still being written: open experiments were
	// left open.
	Live bool
	// Rates is the tok/s series (event.TokRate events, idle-gap artefacts
	// left out) in file order.
	Rates []RateSample
	// RepoChanges are the checkout's moves in file order: HEAD, the branch
	// or the dirty set changed outside flightdeck (a `git pull` in another
	// pane: git-moved), or by a git action of the cockpit (git-action).
	RepoChanges []RepoChange
	// Bisects are the journal's bisects (flightdeck bisect), in the
	// order they started.
	Bisects []Bisect
	// Sessions are the cockpit sessions that appended to the journal after
	// the one that created it (session events, in file order); the first
	// session is the Header.
	Sessions []SessionStart
	// GPUEvents are the driver's Xids and the changes of how GPUs were
	// sampled (gpu-xid, gpu-source), in file order; identical Xids (same
	// GPU and code) within one experiment are one entry with a count.
	GPUEvents []GPUEvent
	// Earlier are experiments of earlier sessions on the same host (ids
	// qualified with their journal: "2026-12-01-101500-demo:e3"), set by
	// the caller after ReadReport: the verdicts (VerdictVs) take the A/A
	// noise and the commits' measurements from them too. The report lists
	// only its own experiments.
	Earlier []ledger.Experiment
	// verdicts caches VerdictVs per (base, x) for len(Earlier) == verdictsOf.
	verdictMu  sync.Mutex
	verdicts   map[[2]string]*compare.ResultRow
	verdictsOf int
	// epoch counts experiment starts and ends and sessions while reading:
	// identical Xids group only within one stretch between them.
	epoch int
}

// SessionStart is a cockpit session appended to the journal (--journal
// FILE again, e.g. after a crash) and what its start ended.
type SessionStart struct {
	At      time.Time // the session event's time
	Session event.Session
	// Crashed is the experiment the previous session left open, ended by
	// this session's start at the previous session's last event; "" when
	// none was open.
	Crashed string
}

// RepoChange is one change of the server's checkout during the session.
type RepoChange struct {
	At time.Time
	// What says it in a few words, sanitised: "git pull moved HEAD a6d51c0
	// -> e7b9c70 (3 commits forward; 5 files: ...)", "checkout 3207427
	// (flightdeck; snapshot s1)".
	What string
}

// RateSample is one point of the tok/s series with the experiment open
// when it arrived.
type RateSample struct {
	At           time.Time
	Exp          string  // experiment id, "" when none was open
	TokPerSec    float64 // aggregate generation rate, tok/s
	AcceptLength float64 // mean EAGLE accept length; valid when HasAccept
	HasAccept    bool
	// Steady says the sample is one of its experiment's steady-state
	// samples (Result.Samples): not warm-up, not near-idle.
	Steady bool
}

// ReadReport folds every event scan yields into a Report. h is the
// journal's header. When live is false, experiments still open at the end
// are ended at the last event's time as by a crash (Ledger.Close); pass
// true for a journal that is still being written (its lock is held), whose
// open experiment is just open. It returns scan's error.
func ReadReport(h event.SessionHeader, scan ScanFunc, live bool) (*Report, error) {
	r := &Report{Header: h, End: h.Created, Live: live}
	// byExp indexes Rates per experiment id, for the steady flags.
	byExp := map[string][]int{}
	err := scan(func(e event.Event) error {
		if e.At.After(r.End) {
			r.End = e.At
		}
		var open string
		if cur := r.Ledger.Current(); cur != nil {
			open = cur.ID
		}
		r.Ledger.Apply(e)
		if cur := r.Ledger.Current(); (cur == nil) != (open == "") || (cur != nil && cur.ID != open) {
			r.epoch++ // an experiment started or ended
		}
		switch p := e.Data.(type) {
		case event.Session:
			r.epoch++
			st := SessionStart{At: e.At, Session: p}
			if open != "" && r.Ledger.Current() == nil {
				st.Crashed = open
			}
			r.Sessions = append(r.Sessions, st)
		case event.Xid, event.GPUSource:
			exp := ""
			if cur := r.Ledger.Current(); cur != nil {
				exp = cur.ID
			}
			r.addGPUEvent(e.At, exp, p)
		case event.BisectStart, event.BisectLaunch, event.BisectEnd:
			r.Bisects = addBisect(r.Bisects, p)
		case event.GitMoved:
			r.RepoChanges = append(r.RepoChanges, RepoChange{At: e.At, What: movedText(p)})
		case event.GitAction:
			if p.OK() && p.From != p.To {
				r.RepoChanges = append(r.RepoChanges, RepoChange{At: e.At, What: actionText(p)})
			}
		case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
			event.ConnState, event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint,
			event.ExperimentStart, event.ExperimentUpdate, event.GPUFailure, event.GPUSample,
			event.GPUStale, event.GitStatus, event.JournalStatus, event.Key, event.KillStep,
			event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset,
			event.Note, event.Prefill, event.Repeat, event.History, event.BisectProgress, event.RepeatProgress, event.RepoHead,
			event.RepoUnreadable, event.ServerFailure, event.ServerHealthy, event.ServerLaunched,
			event.ServerObserved, event.ServerReady, event.ServerStatus, event.SpecDecode,
			event.Throughput, event.TokRate, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
			// not in the report
		}
		if rt, ok := e.Data.(event.TokRate); ok && !rt.Dropped {
			s := RateSample{At: e.At, TokPerSec: rt.TokPerSec, AcceptLength: rt.AcceptLength, HasAccept: rt.HasAccept}
			if cur := r.Ledger.Current(); cur != nil {
				s.Exp = cur.ID
				byExp[s.Exp] = append(byExp[s.Exp], len(r.Rates))
			}
			r.Rates = append(r.Rates, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !live {
		r.Ledger.Close(r.End)
	} else if cur := r.Ledger.Current(); cur != nil {
		// A journal being written: its open experiment shows the result so
		// far (its state says open), as the cockpit's panel does.
		cur.Result = r.Ledger.Provisional()
	}
	for _, x := range r.Ledger.Experiments() {
		markSteady(r.Rates, byExp[x.ID], x.Result.Samples)
	}
	return r, nil
}

// markSteady sets Steady on the rates (indices idx, in time order) that
// the experiment's result kept. The kept values are a subsequence of the
// experiment's samples in time order; warm-up is dropped at the start, so
// the match runs from the end, preferring the later of equal values. The
// flags then agree with the result by construction: as many steady rows
// as Result.N, with the same values (and so the same median).
func markSteady(rates []RateSample, idx []int, kept []float64) {
	k := len(kept) - 1
	for i := len(idx) - 1; i >= 0 && k >= 0; i-- {
		if rates[idx[i]].TokPerSec == kept[k] {
			rates[idx[i]].Steady = true
			k--
		}
	}
}

// Duration is End - Header.Created (never negative).
func (r *Report) Duration() time.Duration {
	return max(r.End.Sub(r.Header.Created), 0)
}

// Baseline returns the experiment the deltas are relative to: the one with
// id or name idOrName, or with "" the one marked as the baseline in the
// cockpit (Ledger.Baseline), else the first one with a result (N > 0). A
// qualified id (or mark) of an earlier journal's experiment is looked up
// in Earlier. It
// returns nil with "" when none is marked and no experiment has a result,
// and an error when idOrName names no experiment.
func (r *Report) Baseline(idOrName string) (*ledger.Experiment, error) {
	if idOrName != "" {
		x := r.Ledger.Find(idOrName)
		if x == nil {
			x = r.earlier(idOrName)
		}
		if x == nil {
			return nil, fmt.Errorf("baseline %q: no such experiment (have %s)", idOrName, r.ExpList())
		}
		return x, nil
	}
	if x := r.Ledger.Baseline(); x != nil {
		return x, nil
	}
	if x := r.earlier(r.Ledger.BaselineID()); x != nil {
		return x, nil // an earlier journal's experiment of the host
	}
	exps := r.Ledger.Experiments()
	for i := range exps {
		if exps[i].Result.N > 0 {
			return &exps[i], nil
		}
	}
	return nil, nil
}

// earlier returns the experiment of Earlier with id (a qualified one:
// "2026-11-24-101500-demo:e1"), or nil.
func (r *Report) earlier(id string) *ledger.Experiment {
	if id == "" {
		return nil
	}
	for i := range r.Earlier {
		if r.Earlier[i].ID == id {
			return &r.Earlier[i]
		}
	}
	return nil
}

// ExpList names the experiments for an error message: "e1, e2, e3" or "none".
func (r *Report) ExpList() string {
	var ids []string
	for _, x := range r.Ledger.Experiments() {
		ids = append(ids, x.ID)
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}
