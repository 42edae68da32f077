package journal

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// ScanFunc calls fn with every event of a journal in file order, stopping at
// the first error fn returns (and returning it). (*Journal).Scan is one.
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
	// Sessions are the cockpit sessions that appended to the journal after
	// the one that created it (session events, in file order); the first
	// session is the Header.
	Sessions []SessionStart
	// GPUEvents are the driver's Xids and the changes of how GPUs were
	// sampled (gpu-xid, gpu-source), in file order; identical Xids (same
	// GPU and code) within one experiment are one entry with a count.
	GPUEvents []GPUEvent
	// epoch counts experiment starts and ends and sessions while reading:
	// identical Xids group only within one stretch between them.
	epoch int
}

// GPUEvent is an Xid the driver reported during the session, or a change
// of how the GPUs were sampled (NVML, the agent, or nvidia-smi and why).
type GPUEvent struct {
	At   time.Time // the first occurrence
	Last time.Time // the last occurrence: At unless Count > 1
	// Exp is the experiment open at the first occurrence, "" when none.
	Exp string
	// Count is how many identical Xids this entry stands for (1 for a
	// sampling change).
	Count int
	// What says it, sanitised: "GPU 3 (00000000:83:00.0) Xid 79: GPU has
	// fallen off the bus", "GPUs sampled by nvidia-smi: agent exited: …".
	What string
	// Xid is the Xid code, 0 for a sampling change. Critical says the
	// GPU's results cannot be trusted until it is reset (gpu.XidMeaning).
	Xid      uint64
	Critical bool
	xid      event.Xid // the grouping key of an Xid entry
	epoch    int       // Report.epoch when it was added: Xids group within one
}

// Describe is the event in words after its time and experiment, with
// times as h:mm:ss since start: "GPU 1 Xid 13: graphics engine exception
// x37 (until 0:05:14)", "GPU 3 (00000000:83:00.0) Xid 79: GPU has fallen
// off the bus; critical: the GPU needs a reset before its results can be
// trusted".
func (g GPUEvent) Describe(start time.Time) string {
	s := g.What
	if g.Count > 1 {
		s += " x" + strconv.Itoa(g.Count) + " (until " + FormatElapsed(g.Last.Sub(start)) + ")"
	}
	if g.Critical {
		s += "; critical: the GPU needs a reset before its results can be trusted"
	}
	return s
}

// XidText is one Xid in words: "GPU 3 (00000000:83:00.0) Xid 79: GPU has
// fallen off the bus", sanitised.
func XidText(x event.Xid) string {
	meaning, _ := gpu.XidMeaning(x.Code)
	return sanitize.OneLine(x.GPUName() + " Xid " + strconv.FormatUint(x.Code, 10) + ": " + meaning)
}

// SourceText is a sampling path in words, sanitised: "GPUs sampled by the
// agent (agent 0.8.0, uploaded)", "GPUs sampled by nvidia-smi: agent
// exited: …".
func SourceText(src event.GPUSource) string {
	s := "GPUs sampled by "
	switch src.Mode {
	case event.SourceAgent:
		s += "the agent (NVML on the host)"
	case event.SourceNVML:
		s += "NVML"
	default:
		s += string(src.Mode)
	}
	if src.Detail != "" {
		s += " [" + src.Detail + "]"
	}
	if src.Fallback != "" {
		s += ": " + src.Fallback
	}
	return sanitize.OneLine(s)
}

// addGPUEvent folds an Xid or a sampling change into r.GPUEvents.
func (r *Report) addGPUEvent(at time.Time, exp string, p event.Payload) {
	switch p := p.(type) {
	case event.Xid:
		for i := len(r.GPUEvents) - 1; i >= 0; i-- {
			g := &r.GPUEvents[i]
			if g.epoch != r.epoch {
				break
			}
			if g.Xid != 0 && g.xid == p {
				g.Count++
				g.Last = at
				return
			}
		}
		_, crit := gpu.XidMeaning(p.Code)
		r.GPUEvents = append(r.GPUEvents, GPUEvent{At: at, Last: at, Exp: exp, Count: 1, What: XidText(p), Xid: p.Code, Critical: crit, xid: p, epoch: r.epoch})
	case event.GPUSource:
		what := SourceText(p)
		for i := len(r.GPUEvents) - 1; i >= 0; i-- {
			if r.GPUEvents[i].Xid == 0 {
				if r.GPUEvents[i].What == what {
					return // no change (a second session of the journal)
				}
				break
			}
		}
		r.GPUEvents = append(r.GPUEvents, GPUEvent{At: at, Last: at, Exp: exp, Count: 1, What: what, epoch: r.epoch})
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState,
		event.DriverState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSample, event.GPUStale, event.GitAction,
		event.GitMoved, event.GitStatus, event.JournalStatus, event.Key, event.KillStep,
		event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset,
		event.Note, event.Prefill, event.Repeat, event.RepeatProgress, event.RepoHead,
		event.RepoUnreadable, event.ServerFailure, event.ServerHealthy, event.ServerLaunched,
		event.ServerObserved, event.ServerReady, event.ServerStatus, event.Session, event.SpecDecode,
		event.Throughput, event.TokRate:
		// not a GPU event
	}
}

// ExpXids returns the Xids reported while experiment id was open, and
// the critical ones reported before it started in the same cockpit
// session (their GPU needs a reset: the cockpit keeps their marks for the
// session, and a result measured on it is suspect); see Before.
func (r *Report) ExpXids(id string) []GPUEvent {
	x := r.Ledger.Find(id)
	if x == nil {
		return nil
	}
	since := r.Header.Created
	for _, ss := range r.Sessions {
		if !ss.At.After(x.Started) {
			since = ss.At
		}
	}
	var out []GPUEvent
	for _, g := range r.GPUEvents {
		switch {
		case g.Xid == 0:
		case g.Exp == x.ID:
			out = append(out, g)
		case g.Critical && g.At.Before(x.Started) && !g.At.Before(since):
			out = append(out, g)
		}
	}
	return out
}

// Before says whether g, one of ExpXids(id), came before experiment id
// started (a critical Xid it inherits) rather than while it ran.
func (g GPUEvent) Before(id string) bool { return g.Exp != id }

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
		case event.GitMoved:
			r.RepoChanges = append(r.RepoChanges, RepoChange{At: e.At, What: movedText(p)})
		case event.GitAction:
			if p.OK() && p.From != p.To {
				r.RepoChanges = append(r.RepoChanges, RepoChange{At: e.At, What: actionText(p)})
			}
		case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
			event.ConnState, event.DriverState, event.ExperimentEnd, event.ExperimentFingerprint,
			event.ExperimentStart, event.ExperimentUpdate, event.GPUFailure, event.GPUSample,
			event.GPUStale, event.GitStatus, event.JournalStatus, event.Key, event.KillStep,
			event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset,
			event.Note, event.Prefill, event.Repeat, event.RepeatProgress, event.RepoHead,
			event.RepoUnreadable, event.ServerFailure, event.ServerHealthy, event.ServerLaunched,
			event.ServerObserved, event.ServerReady, event.ServerStatus, event.SpecDecode,
			event.Throughput, event.TokRate:
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

// movedText describes a move of the checkout made outside flightdeck.
func movedText(m event.GitMoved) string {
	var b strings.Builder
	who := "git"
	if m.Action != "" {
		who = "git " + m.Action
	}
	if m.From == m.To {
		fmt.Fprintf(&b, "the dirty set changed (%d -> %d dirty paths)", m.DirtyBefore, m.DirtyAfter)
		return sanitize.OneLine(b.String())
	}
	fmt.Fprintf(&b, "%s moved HEAD %s -> %s", who, orShort(m.FromShort, m.From), orShort(m.ToShort, m.To))
	if m.FromBranch != m.ToBranch {
		fmt.Fprintf(&b, ", branch %s -> %s", compare.BranchText(m.FromBranch), compare.BranchText(m.ToBranch))
	}
	var parts []string
	if m.Forward > 0 {
		parts = append(parts, plural(m.Forward, "commit")+" forward")
	}
	if m.Back > 0 {
		parts = append(parts, plural(m.Back, "commit")+" back")
	}
	if m.FilesTotal > 0 {
		parts = append(parts, compare.FilesText(m.Files, m.FilesTotal))
	}
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, "; ") + ")")
	}
	return sanitize.OneLine(b.String())
}

// actionText describes a git action of the cockpit that moved HEAD, with
// the files between the two commits when the action recorded them (a
// checkout does; journals before that did not: then it says how to list
// them).
func actionText(a event.GitAction) string {
	s := fmt.Sprintf("flightdeck %s moved HEAD %s -> %s", a.Op, git.ShortID(a.From), git.ShortID(a.To))
	if a.FilesTotal > 0 {
		s += " (" + compare.FilesText(a.Files, a.FilesTotal) + ")"
	} else {
		s += fmt.Sprintf(" (files changed not recorded: git diff --stat %s %s)", git.ShortID(a.From), git.ShortID(a.To))
	}
	if a.Snapshot != "" {
		s += " (undo: snapshot " + a.Snapshot + ")"
	}
	return sanitize.OneLine(s)
}

func orShort(short, id string) string {
	if short != "" {
		return short
	}
	return git.ShortID(id)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
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
// cockpit (Ledger.Baseline), else the first one with a result (N > 0). It
// returns nil with "" when none is marked and no experiment has a result,
// and an error when idOrName names no experiment.
func (r *Report) Baseline(idOrName string) (*ledger.Experiment, error) {
	if idOrName != "" {
		x := r.Ledger.Find(idOrName)
		if x == nil {
			return nil, fmt.Errorf("baseline %q: no such experiment (have %s)", idOrName, r.ExpList())
		}
		return x, nil
	}
	if x := r.Ledger.Baseline(); x != nil {
		return x, nil
	}
	exps := r.Ledger.Experiments()
	for i := range exps {
		if exps[i].Result.N > 0 {
			return &exps[i], nil
		}
	}
	return nil, nil
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

// EndedHow says in a word or two how an experiment ended: "open", "key",
// "relaunch", "kill", "exit", "quit", "taken-over", or "crash" when the
// journal ends with it open and no end recorded.
func EndedHow(x *ledger.Experiment) string {
	switch {
	case x.Open():
		return "open"
	case x.EndedBy == "":
		return "crash"
	}
	return string(x.EndedBy)
}

// EndedWords says how an experiment ended for a reader: "open", "by
// hand", "relaunch", "kill", "exit", "quit", "taken-over", or "crash" (EndedHow's words,
// TriggerKey spelled out).
func EndedWords(x *ledger.Experiment) string {
	if h := EndedHow(x); h != string(ledger.TriggerKey) {
		return h
	}
	return "by hand"
}

// FormatResult formats a result as "62.5 [62.1, 62.9] (n=40)": the median
// tok/s and its 95 % confidence interval, "[n<6]" when too few samples
// bound it, "no samples" when there are none.
func FormatResult(res event.ExperimentResult) string {
	if res.N == 0 {
		return "no samples"
	}
	ci := "[n<6]"
	if res.Lo != nil && res.Hi != nil {
		ci = "[" + fmtRate(*res.Lo) + ", " + fmtRate(*res.Hi) + "]"
	} else if res.N >= 6 {
		ci = "[unbounded]"
	}
	return fmt.Sprintf("%s %s (n=%d)", fmtRate(res.Median), ci, res.N)
}

func fmtRate(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// fmtDelta formats a percentage with its sign: "+42.4%", "-8.0%".
func fmtDelta(p float64) string {
	if math.Abs(p) < 0.05 {
		p = 0
	}
	s := strconv.FormatFloat(p, 'f', 1, 64)
	if p >= 0 {
		s = "+" + s
	}
	return s + "%"
}

// FormatElapsed formats a duration since the start as h:mm:ss (negative
// durations as 0:00:00).
func FormatElapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}

// StartGPUsLabel names an experiment's GPU state at its start: "GPUs at
// launch (before the model loaded)" for one a launch started (the GPUs are
// idle then: compare the state at the end, under load), else "GPUs at
// start".
func StartGPUsLabel(x *ledger.Experiment) string {
	if x.StartedBy == ledger.TriggerLaunch {
		return "GPUs at launch (before the model loaded)"
	}
	return "GPUs at start"
}
