package event

import "time"

// SessionHeader is the first line of a journal.
type SessionHeader struct {
	Format  string    `json:"format"`  // FormatName
	Version int       `json:"version"` // Version
	Created time.Time `json:"created"` // RFC 3339, UTC, ns; event times count from here
	// Flightdeck is the version of the flightdeck that created the file.
	Flightdeck string `json:"flightdeck"`
	Host       string `json:"host"`            // the host as the cockpit names it: "gpu-box", "root@10.1.2.3:22", "local"
	Label      string `json:"label,omitempty"` // the cockpit's fixed label, e.g. "demo"
	Name       string `json:"name,omitempty"`  // the session name (--name), "" when none
	LogPath    string `json:"log,omitempty"`   // the server log followed at start, "" when none or not known yet
	NoLog      bool   `json:"no_log,omitempty"`
	User       string `json:"user,omitempty"`     // who ran the cockpit
	Hostname   string `json:"hostname,omitempty"` // the machine the cockpit ran on
	PID        int    `json:"pid,omitempty"`      // the cockpit's process id
}

// Note is a timestamped free-text note typed with n (or `flightdeck
// journal note`). It is an event payload (kind "note").
type Note struct {
	Text string `json:"text"`
	Exp  string `json:"exp,omitempty"` // the experiment open when it was written, "" when none
}

// Trigger says what started or ended an experiment.
type Trigger string

// ExperimentStart opens an experiment. It is an event payload (kind
// "exp-start"). The fingerprint follows in an ExperimentFingerprint once
// it has been captured (the version probes take time).
type ExperimentStart struct {
	ID         string  `json:"id"`   // "e1", "e2", … in session order
	Name       string  `json:"name"` // defaults to "<profile> @ <short commit>"
	Hypothesis string  `json:"hypothesis,omitempty"`
	Trigger    Trigger `json:"trigger"`
	// Launch is the launch that started it (Trigger "launch"), with secret
	// env values redacted; nil when started by hand.
	Launch *LaunchInfo `json:"launch,omitempty"`
}

// ExperimentFingerprint carries the fingerprint captured at an
// experiment's start. It is an event payload (kind "exp-fingerprint").
type ExperimentFingerprint struct {
	Exp         string      `json:"exp"`
	Fingerprint Fingerprint `json:"fingerprint"`
}

// ExperimentUpdate changes an experiment's name, hypothesis or conclusion
// after the fact; empty fields are left as they were. It is an event
// payload (kind "exp-update").
type ExperimentUpdate struct {
	Exp        string `json:"exp"`
	Name       string `json:"name,omitempty"`
	Hypothesis string `json:"hypothesis,omitempty"`
	Conclusion string `json:"conclusion,omitempty"`
}

// ExperimentEnd closes an experiment with its result. It is an event
// payload (kind "exp-end").
type ExperimentEnd struct {
	Exp        string           `json:"exp"`
	Trigger    Trigger          `json:"trigger"`
	Conclusion string           `json:"conclusion,omitempty"`
	Result     ExperimentResult `json:"result"`
	// GPUs is the last GPU sample under load during the experiment (else
	// the last before a kill began, else the last): clocks, P-state, PCIe
	// link and throttle reasons while it ran (at start they are idle values).
	GPUs []GPU `json:"gpus,omitempty"`
}

// ExperimentResult is an experiment's measured generation throughput: the steady-state
// tok/s samples (the server log's aggregate rate, one per log report) with
// the warm-up dropped (and the samples while flightdeck's own benchmark
// loaded the server: that workload is the run's own result), their
// median and its 95 % confidence interval (order statistics, as benchstat
// computes it).
type ExperimentResult struct {
	Metric string `json:"metric"` // "tok/s"
	// Samples are the steady-state values kept, tok/s, in time order.
	Samples []float64 `json:"samples,omitempty"`
	N       int       `json:"n"`       // len(Samples)
	Dropped int       `json:"dropped"` // warm-up, near-idle and benchmark-loaded samples left out
	Median  float64   `json:"median"`  // tok/s; 0 when N is 0
	// Lo and Hi bound the median's confidence interval, tok/s; nil when
	// unbounded (too few samples: benchmath needs ≥ 6 for a finite 95 % CI).
	Lo         *float64 `json:"lo,omitempty"`
	Hi         *float64 `json:"hi,omitempty"`
	Confidence float64  `json:"confidence,omitempty"` // the interval's actual confidence level, ≥ 0.95 when bounded
	// AcceptLength is the median EAGLE accept length over the kept
	// samples; 0 when the server reported none.
	AcceptLength float64  `json:"accept_length,omitempty"`
	Warnings     []string `json:"warnings,omitempty"` // e.g. "need >= 6 samples for confidence interval at level 0.95"
}

// Fingerprint is everything captured at an experiment's start that could
// explain its speed. A part that could not be captured is recorded in
// Errors (and its field left empty); capture never fails as a whole.
type Fingerprint struct {
	At       time.Time `json:"at"`                 // when capture began
	Hostname string    `json:"hostname,omitempty"` // of the GPU host (uname -n)
	Kernel   string    `json:"kernel,omitempty"`   // uname -r
	Git      *GitState `json:"git,omitempty"`      // nil when no repository is configured
	// Launch is the resolved launch (command, env profile, env with secret
	// values redacted); nil when no launch by flightdeck is known.
	Launch *LaunchInfo `json:"launch,omitempty"`
	// CommandLine is Launch's argv as a shell line, secrets redacted.
	CommandLine string    `json:"command_line,omitempty"`
	Versions    []Version `json:"versions,omitempty"` // in probe order
	// GPUs is the last GPU sample at the start: name, clocks, P-state,
	// PCIe gen/width, throttle reasons, persistence and ECC mode.
	GPUs   []GPU    `json:"gpus,omitempty"`
	Errors []string `json:"errors,omitempty"` // "git: not a repository", "hostname: timed out after 10s"
}

// GitState is the server checkout at an experiment's start.
type GitState struct {
	Repo    string `json:"repo"`              // path on the host
	Head    string `json:"head,omitempty"`    // full commit id
	Branch  string `json:"branch,omitempty"`  // "" when detached
	Subject string `json:"subject,omitempty"` // HEAD's subject line
	// Patch is `git diff HEAD --binary` (staged and unstaged changes to
	// tracked files), at most MaxPatch bytes; PatchSHA256 is the hex
	// SHA-256 of the whole patch and PatchBytes its size, so a cut patch
	// still identifies the tree. Untracked lists untracked files (not
	// their content).
	Patch          string   `json:"patch,omitempty"`
	PatchSHA256    string   `json:"patch_sha256,omitempty"`
	PatchBytes     int      `json:"patch_bytes,omitempty"`
	PatchTruncated bool     `json:"patch_truncated,omitempty"`
	Untracked      []string `json:"untracked,omitempty"`
	Stashes        []string `json:"stashes,omitempty"` // "stash@{0}: On main: before checkout", newest first
	// Range is how HEAD moved since the previous experiment of the
	// session (the commits and files between them); nil when HEAD did not
	// move, for the first experiment, or when it could not be read.
	Range *CommitRange `json:"range,omitempty"`
}

// CommitRange is what lies between two commits From and To: `git log
// --oneline From..To` (Ahead: commits To has that From has not), To..From
// (Behind: commits a checkout of an older commit left out) and `git diff
// --name-only From To` (Files). Lists are cut at MaxRangeItems; the
// totals count them all.
type CommitRange struct {
	From   string   `json:"from"`             // full commit id
	To     string   `json:"to"`               // full commit id
	Ahead  []string `json:"ahead,omitempty"`  // "65b09bf Fix PCG MoE Error", newest first
	Behind []string `json:"behind,omitempty"` // as Ahead
	Files  []string `json:"files,omitempty"`  // paths, sorted
	// AheadTotal, BehindTotal and FilesTotal count all of them, cut or not.
	AheadTotal  int `json:"ahead_total,omitempty"`
	BehindTotal int `json:"behind_total,omitempty"`
	FilesTotal  int `json:"files_total,omitempty"`
	// Err says why the range could not be read in full (a shallow clone,
	// an unreachable commit); the lists hold what was read.
	Err string `json:"err,omitempty"`
}

// Version is one version probe's outcome: Value on success, else Err
// ("timed out after 10s", "exit status 1: No module named torch").
type Version struct {
	Name    string `json:"name"`    // "driver", "cuda", "nccl", "torch", "sglang", "vllm", "python"
	Command string `json:"command"` // the shell command run on the host
	Value   string `json:"value,omitempty"`
	Err     string `json:"err,omitempty"`
	Millis  int64  `json:"ms"` // how long it took
}

// Baseline marks an experiment as the session's baseline: the header shows
// the open experiment's delta against it and comparisons default to it.
// The latest mark wins; Exp "" clears it. It is an event payload (kind
// "exp-baseline").
type Baseline struct {
	Exp string `json:"exp"`
}

// Repeat tags an experiment as one launch of a repeat (R): the same
// configuration relaunched N times to measure launch-to-launch noise. It
// is an event payload (kind "exp-repeat"), written right after the
// experiment's start.
type Repeat struct {
	Exp    string `json:"exp"`    // this launch's experiment
	Series string `json:"series"` // the experiment the repeat began from
	I      int    `json:"i"`      // 1-based: this is launch I of N (the series' own is 1)
	N      int    `json:"n"`
}

// Key records a key that caused an action in the cockpit. It is an event
// payload (kind "key").
type Key struct {
	Key    string `json:"key"`    // as bubbletea names it: "K", "y", "enter"
	Action string `json:"action"` // "kill sglang pid 4123", "launch sim profile nccl-ll-ring"
}

// JournalStatus is the recorder's state, published to the stream for the screen
// (never written to the journal): the file, bytes written, and the last
// write error (a full disk) until a write succeeds again. It is an event
// payload (kind "journal-status").
type JournalStatus struct {
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`             // written to the file so far
	Pending int    `json:"pending,omitempty"` // bytes held in memory, not yet written
	Err     string `json:"err,omitempty"`     // e.g. "write ...: no space left on device"
	Dropped int    `json:"dropped,omitempty"` // events lost because the memory buffer was full
}

// RepeatProgress is a repeat's state, published on the stream at each
// step. It is an event payload (kind "repeat-progress").
type RepeatProgress struct {
	Series string `json:"series"` // the experiment the repeat began from
	I      int    `json:"i"`      // the launch in progress, 1-based (the series' own launch is 1)
	N      int    `json:"n"`      // launches in all (RepeatConfig.N + 1)
	Exp    string `json:"exp,omitempty"`
	// Phase is "measuring" (the current launch until MinSamples),
	// "relaunching", "warming up", "benchmarking", "done", "stopped" or
	// "failed".
	Phase   string `json:"phase"`
	Samples int    `json:"samples,omitempty"` // steady samples of the current launch so far
	Need    int    `json:"need,omitempty"`    // RepeatConfig.MinSamples
	Err     string `json:"err,omitempty"`     // why it failed or stopped
}

// Session marks the start of another cockpit session appending to an
// existing journal (--journal FILE again, e.g. after a crash): it carries
// the new session's header (Created is when it began; Format and Version
// are this package's). Append writes it as the first line it adds. It is
// an event payload (kind "session"); the header's fields are its JSON
// fields, as on line 1.
type Session struct {
	SessionHeader
}

// The triggers: what started or ended an experiment (Experiment.StartedBy
// and EndedBy, the trigger of exp-start and exp-end). An experiment still
// open when its session stopped has no end trigger: see Ledger.Close.
const (
	TriggerKey      Trigger = "key"      // e in the cockpit (or the CLI)
	TriggerLaunch   Trigger = "launch"   // a server launch (auto-start)
	TriggerRelaunch Trigger = "relaunch" // a new launch ended the previous experiment
	TriggerKill     Trigger = "kill"     // the server was killed (auto-end)
	TriggerExit     Trigger = "exit"     // the server exited or failed by itself
	TriggerQuit     Trigger = "quit"     // the cockpit quit
	// TriggerTakenOver: another cockpit took the host's driver lock (or
	// this one could not keep it): what the server does next is not this
	// session's, so the experiment ends here.
	TriggerTakenOver Trigger = "taken-over"
)
