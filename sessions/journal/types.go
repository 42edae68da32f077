// Package journal is flightdeck's session journal, format v1: one
// append-only JSON Lines file per cockpit session — a header line, then one
// line per event of the stream, [t, "kind", data] with t in seconds since
// the header's created time (the spirit of asciicast v2). The format is
// documented in docs/journal-format.md.
//
// The package has the journal-native payloads (notes, experiments and
// their fingerprints and results, keys), the codec of every payload kind
// the cockpit publishes, a Writer (file mode 0600, one writer per file,
// losing nothing on a full disk), and a reader that tolerates a torn last
// line and garbled lines, skips unknown kinds, and indexes a file so that
// replay can seek to any time.
package journal

import (
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote/server"
)

// FormatName is the header's "format" value.
const FormatName = "flightdeck-journal"

// FormatVersion is the format version this package writes and reads. A reader
// refuses a file with a higher version (ErrVersion).
const FormatVersion = 1

// Header is the first line of a journal.
type Header struct {
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

// Kind implements event.Payload.
func (Note) Kind() string { return "note" }

// Trigger says what started or ended an experiment.
type Trigger string

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
	Launch *server.LaunchInfo `json:"launch,omitempty"`
}

// Kind implements event.Payload.
func (ExperimentStart) Kind() string { return "exp-start" }

// ExperimentFingerprint carries the fingerprint captured at an
// experiment's start. It is an event payload (kind "exp-fingerprint").
type ExperimentFingerprint struct {
	Exp         string      `json:"exp"`
	Fingerprint Fingerprint `json:"fingerprint"`
}

// Kind implements event.Payload.
func (ExperimentFingerprint) Kind() string { return "exp-fingerprint" }

// ExperimentUpdate changes an experiment's name, hypothesis or conclusion
// after the fact; empty fields are left as they were. It is an event
// payload (kind "exp-update").
type ExperimentUpdate struct {
	Exp        string `json:"exp"`
	Name       string `json:"name,omitempty"`
	Hypothesis string `json:"hypothesis,omitempty"`
	Conclusion string `json:"conclusion,omitempty"`
}

// Kind implements event.Payload.
func (ExperimentUpdate) Kind() string { return "exp-update" }

// ExperimentEnd closes an experiment with its result. It is an event
// payload (kind "exp-end").
type ExperimentEnd struct {
	Exp        string  `json:"exp"`
	Trigger    Trigger `json:"trigger"`
	Conclusion string  `json:"conclusion,omitempty"`
	Result     Result  `json:"result"`
	// GPUs is the last GPU sample under load during the experiment (else
	// the last before a kill began, else the last): clocks, P-state, PCIe
	// link and throttle reasons while it ran (at start they are idle values).
	GPUs []gpu.GPU `json:"gpus,omitempty"`
}

// Kind implements event.Payload.
func (ExperimentEnd) Kind() string { return "exp-end" }

// Result is an experiment's measured generation throughput: the steady-state
// tok/s samples (the server log's aggregate rate, one per log report) with
// the warm-up dropped (and the samples while flightdeck's own benchmark
// loaded the server: that workload is the run's own result), their
// median and its 95 % confidence interval (order statistics, as benchstat
// computes it).
type Result struct {
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
	Launch *server.LaunchInfo `json:"launch,omitempty"`
	// CommandLine is Launch's argv as a shell line, secrets redacted.
	CommandLine string    `json:"command_line,omitempty"`
	Versions    []Version `json:"versions,omitempty"` // in probe order
	// GPUs is the last GPU sample at the start: name, clocks, P-state,
	// PCIe gen/width, throttle reasons, persistence and ECC mode.
	GPUs   []gpu.GPU `json:"gpus,omitempty"`
	Errors []string  `json:"errors,omitempty"` // "git: not a repository", "hostname: timed out after 10s"
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

// MaxRangeItems is the most commits, and the most files, a CommitRange
// lists: 50.
const MaxRangeItems = 50

// MaxPatch is the most of a dirty patch stored in a fingerprint: 4 MiB.
const MaxPatch = 4 << 20

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

// Kind implements event.Payload.
func (Baseline) Kind() string { return "exp-baseline" }

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

// Kind implements event.Payload.
func (Repeat) Kind() string { return "exp-repeat" }

// Key records a key that caused an action in the cockpit. It is an event
// payload (kind "key").
type Key struct {
	Key    string `json:"key"`    // as bubbletea names it: "K", "y", "enter"
	Action string `json:"action"` // "kill sglang pid 4123", "launch sim profile nccl-ll-ring"
}

// Kind implements event.Payload.
func (Key) Kind() string { return "key" }

// Status is the recorder's state, published to the stream for the screen
// (never written to the journal): the file, bytes written, and the last
// write error (a full disk) until a write succeeds again. It is an event
// payload (kind "journal-status").
type Status struct {
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`             // written to the file so far
	Pending int    `json:"pending,omitempty"` // bytes held in memory, not yet written
	Err     string `json:"err,omitempty"`     // e.g. "write ...: no space left on device"
	Dropped int    `json:"dropped,omitempty"` // events lost because the memory buffer was full
}

// Kind implements event.Payload.
func (Status) Kind() string { return "journal-status" }
