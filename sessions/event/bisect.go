package event

import "time"

// A bisect (flightdeck bisect, or the cockpit's bisect panel) finds the
// commit that cost a metric: it launches the server at commits of a range
// and measures each launch. Its journal records are bisect-start (the
// range and the method's settings), one bisect-launch per launch, and
// bisect-end; the verdicts are recomputed from the launches by
// sessions/bisect (Fold), so that a resumed bisect and a replay decide as
// the live one did.

// Bisect outcomes (BisectEnd.Outcome). The first four are final; a
// stopped or cancelled bisect can be resumed (flightdeck bisect --resume).
const (
	BisectCulprit       = "culprit"         // one commit made the change
	BisectNoDifference  = "no-difference"   // the endpoints do not differ
	BisectNotSingleStep = "not-single-step" // in-between or flip-flopping results, or untestable commits around the change
	BisectFailed        = "failed"          // too many failed launches, an endpoint that cannot be launched, an error
	BisectStopped       = "stopped"         // the process quit, or the connection dropped (resumable)
	BisectCancelled     = "cancelled"       // cancelled by its key or Ctrl-C (resumable)
)

// BisectCommit is one commit of a bisect's range. Files lists the paths
// it touches (at most 20; FilesTotal counts all).
type BisectCommit struct {
	ID         string    `json:"id"` // full commit id
	Short      string    `json:"short,omitempty"`
	Subject    string    `json:"subject,omitempty"`
	Author     string    `json:"author,omitempty"`
	Date       time.Time `json:"date,omitzero"` // author date
	Files      []string  `json:"files,omitempty"`
	FilesTotal int       `json:"files_total,omitempty"`
}

// BisectOrigin is the checkout a bisect found and restores at its end.
type BisectOrigin struct {
	Head   string `json:"head"`             // full commit id
	Branch string `json:"branch,omitempty"` // "" when detached
	Dirty  bool   `json:"dirty,omitempty"`  // uncommitted work, kept in Snapshot
	// Snapshot is the never-lose-work snapshot (git.Snapshot's id) taken
	// before the first checkout; "" when the tree was clean.
	Snapshot string `json:"snapshot,omitempty"`
}

// BisectStart begins a bisect. It is an event payload (kind
// "bisect-start").
type BisectStart struct {
	ID   string `json:"id"`   // "b1": unique in the journal
	Good string `json:"good"` // the refs as given
	Bad  string `json:"bad"`
	// Commits is the range, oldest first: Commits[0] is good's commit,
	// the last one bad's, the candidates between them in first-parent
	// order.
	Commits []BisectCommit `json:"commits"`
	// Metric is what each launch measures: "tok/s" (the server log's
	// steady-state median, the default), or with a benchmark "bench
	// tok/s", "ttft", "itl", "tpot" (ms, lower is better: Lower).
	Metric string `json:"metric"`
	Lower  bool   `json:"lower,omitempty"`
	// Launches is how many launches each commit gets to start with,
	// MaxLaunches the cap per commit, MaxFailures the failed commits
	// after which the bisect gives up, Alpha the endpoints' significance
	// level.
	Launches    int     `json:"launches"`
	MaxLaunches int     `json:"max_launches"`
	MaxFailures int     `json:"max_failures"`
	Alpha       float64 `json:"alpha"`
	// Noise is the host's known launch-to-launch (A/A) noise, the SD of
	// log(launch median), that set Launches; 0 when none was known.
	Noise float64 `json:"noise,omitempty"`
	// NoiseLaunches is how many earlier launches of the same
	// configuration class the known Noise was pooled from; 0 when Noise
	// was given (or none known).
	NoiseLaunches int          `json:"noise_launches,omitempty"`
	Launch        *LaunchInfo  `json:"launch,omitempty"` // what every commit is launched with (secrets redacted)
	Bench         *BenchConfig `json:"bench,omitempty"`  // the benchmark each launch runs; nil for the log's tok/s
	Origin        BisectOrigin `json:"origin"`
}

// BisectLaunch is one launch of a bisect at one commit: its sample (the
// launch's steady-state median of the metric), or why it gave none. It is
// an event payload (kind "bisect-launch").
type BisectLaunch struct {
	ID     string  `json:"id"`            // the bisect
	Commit string  `json:"commit"`        // full commit id
	Exp    string  `json:"exp,omitempty"` // the launch's experiment
	Value  float64 `json:"value,omitempty"`
	// Failed is the failure class of a launch that gave no sample: the
	// server's ("oom", "nccl", "crash", …), or "checkout", "timeout"
	// (no steady samples within the wait), "bench". Why is its text.
	Failed string `json:"failed,omitempty"`
	Why    string `json:"why,omitempty"`
	// Took is the launch's wall time, from checkout to its sample: the
	// ETA's unit.
	Took time.Duration `json:"took,omitempty"`
}

// BisectEnd ends a bisect. It is an event payload (kind "bisect-end").
type BisectEnd struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`           // Bisect* above
	Culprit string `json:"culprit,omitempty"` // full id, with BisectCulprit
	// Suspects are the commits the change may be in when it could not be
	// pinned on one (BisectNotSingleStep), oldest first.
	Suspects []string `json:"suspects,omitempty"`
	Why      string   `json:"why"`                // one line: "8.1 % slower at 65b09bf, its parent like good (p 0.002)"
	Restored string   `json:"restored,omitempty"` // what the checkout was left at: "main at a6d51c0, dirty work restored"
}

// BisectProgress is a bisect's state between journal records, for the
// screen only. It is an event payload (kind "bisect-progress").
type BisectProgress struct {
	ID     string `json:"id"`
	Commit string `json:"commit,omitempty"` // the commit being measured
	// Phase is "checking out", "launching", "measuring", "benchmarking",
	// "restoring".
	Phase   string        `json:"phase"`
	Launch  int           `json:"launch,omitempty"`  // this commit's launch in progress, 1-based
	Samples int           `json:"samples,omitempty"` // steady samples of the launch so far
	Need    int           `json:"need,omitempty"`
	ETA     time.Duration `json:"eta,omitempty"` // to the end, from the launches' mean wall time; 0 unknown
}
