package tuitest

import (
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// BisectID is the fixture bisect's id.
const BisectID = "b1"

// BisectCommits is the fixture range, oldest first: bba2fc4 the good
// endpoint, a6d51c0 the bad one, 65b09bf (Fix PCG MoE Error) the commit
// that costs the tok/s.
func BisectCommits() []event.BisectCommit {
	list := []struct{ short, subject string }{
		{"bba2fc4", "Tune NCCL ring"},
		{"1c2d3e4", "Refactor the scheduler's waiting queue"},
		{"2d3e4f5", "Add prefill metrics"},
		{"3207427", "Bump flashinfer to 0.2.5"},
		{"65b09bf", "Fix PCG MoE Error"},
		{"7a8b9c0", "Docs: serving guide"},
		{"8b9c0d1", "Tidy imports"},
		{"9c0d1e2", "Speed up the detokenizer"},
		{"a6d51c0", "NCCL LL ring"},
	}
	out := make([]event.BisectCommit, len(list))
	for i, c := range list {
		out[i] = event.BisectCommit{ID: BisectFull(c.short), Short: c.short, Subject: c.subject, Author: "Dev <dev@example.com>",
			Date: T0.Add(-time.Duration(len(list)-i) * time.Hour)}
	}
	out[4].Files = []string{"python/sglang/srt/layers/moe/fused_moe.py", "python/sglang/srt/model_executor/cuda_graph_runner.py"}
	out[4].FilesTotal = 5
	return out
}

// BisectFull is the fixture's full id of the short id s.
func BisectFull(s string) string { return s + strings.Repeat("0", 40-len(s)) }

// BisectStart is the fixture bisect's start record.
func BisectStart() event.BisectStart {
	cs := BisectCommits()
	return event.BisectStart{ID: BisectID, Good: cs[0].ID, Bad: cs[len(cs)-1].ID, Commits: cs, Metric: "tok/s",
		Launches: 2, MaxLaunches: 10, MaxFailures: 3, Alpha: 0.01, Noise: 0.004, // the host's A/A noise: t-tests decide from 3+3 launches
		Launch: &event.LaunchInfo{Preset: "sglang", Profile: "nccl-ll-ring"},
		Origin: event.BisectOrigin{Head: cs[len(cs)-1].ID, Branch: "main", Dirty: true, Snapshot: "snap-1"}}
}

// BisectLaunches is the fixture's launches so far: both endpoints three
// times, the midpoint 65b09bf twice (like bad), 2d3e4f5 twice (like
// good), 3207427 once and one launch of it failed (oom).
func BisectLaunches() []event.BisectLaunch {
	l := func(short string, v float64) event.BisectLaunch {
		return event.BisectLaunch{ID: BisectID, Commit: BisectFull(short), Value: v, Took: 90 * time.Second}
	}
	return []event.BisectLaunch{
		l("bba2fc4", 82.1), l("bba2fc4", 82.6), l("bba2fc4", 81.9),
		l("a6d51c0", 75.4), l("a6d51c0", 75.9), l("a6d51c0", 75.1),
		l("65b09bf", 75.6), l("65b09bf", 75.2),
		l("2d3e4f5", 82.3), l("2d3e4f5", 81.8),
		l("3207427", 82.0),
		{ID: BisectID, Commit: BisectFull("3207427"), Failed: "oom", Why: "torch.OutOfMemoryError: CUDA out of memory.", Took: 40 * time.Second},
	}
}

// BisectProgress is the fixture's launch in progress: 3207427's third,
// measuring.
func BisectProgress() event.BisectProgress {
	return event.BisectProgress{ID: BisectID, Commit: BisectFull("3207427"), Phase: "measuring", Launch: 3, Samples: 7, Need: 10, ETA: 6 * time.Minute}
}

// BisectEnd is the fixture bisect's end: outcome with its why and what
// was restored.
func BisectEnd(outcome string) event.BisectEnd {
	e := event.BisectEnd{ID: BisectID, Outcome: outcome, Restored: "main at a6d51c0, dirty work restored"}
	switch outcome {
	case event.BisectCulprit:
		e.Culprit = BisectFull("65b09bf")
		e.Why = "8.1 % slower at 65b09bf, its parent like good (p 0.002)"
	case event.BisectNotSingleStep:
		e.Suspects = []string{BisectFull("3207427"), BisectFull("65b09bf")}
		e.Why = "3207427 could not be launched (oom): the change is in one of 2 commits"
	case event.BisectCancelled:
		e.Why = "cancelled by X after 12 launches"
	}
	return e
}

// BisectEvents is the fixture bisect as the stream carries it, from at
// on, a second apart: the start, the launches, then the progress.
func BisectEvents(at time.Duration) []event.Event {
	evs := []event.Event{Ev(at, BisectStart())}
	for i, l := range BisectLaunches() {
		evs = append(evs, Ev(at+time.Duration(i+1)*time.Second, l))
	}
	return append(evs, Ev(at+20*time.Second, BisectProgress()))
}
