package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

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

// Before says whether g, one of ExpXids(id), came before experiment id
// started (a critical Xid it inherits) rather than while it ran.
func (g GPUEvent) Before(id string) bool { return g.Exp != id }

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
		event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSample, event.GPUStale, event.GitAction,
		event.GitMoved, event.GitStatus, event.JournalStatus, event.Key, event.KillStep,
		event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset,
		event.Note, event.Prefill, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead,
		event.RepoUnreadable, event.ServerFailure, event.ServerHealthy, event.ServerLaunched,
		event.ServerObserved, event.ServerReady, event.ServerStatus, event.Session, event.SpecDecode,
		event.Throughput, event.TokRate, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// not a GPU event
	}
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
