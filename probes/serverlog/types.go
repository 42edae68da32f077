// Package serverlog follows an inference server's log and parses it: SGLang
// "Decode batch" / "Prefill batch" lines, vLLM V0/V1 metrics and
// spec-decode lines, readiness lines, failure signatures, and the
// sglang.bench_serving / vllm bench serve result tables.
//
// Parsers are pure functions over bytes: no I/O, no allocation on lines
// that do not match.
package serverlog

// Fields says which optional fields of a Throughput were present in the line.
type Fields uint16

const (
	HasPromptTokPerSec Fields = 1 << iota
	HasAcceptLength
	HasAcceptRate
	HasRunning
	HasQueued
	HasCUDAGraph
	HasTokenUsage
	HasTokens
)

// Throughput is one generation-throughput report parsed from one log line:
// an SGLang "Decode batch" line (per rank) or a vLLM "Avg generation
// throughput" line (per engine). It is an event payload.
type Throughput struct {
	TokPerSec       float64 // generation tok/s reported for this rank/engine
	PromptTokPerSec float64 // vLLM "Avg prompt throughput", tok/s
	AcceptLength    float64 // speculative decoding mean accept length (incl. bonus token)
	AcceptRate      float64 // speculative decoding accept rate, 0–1
	TokenUsage      float64 // KV-cache usage fraction 0–1 (SGLang "token usage", vLLM "GPU KV cache usage" / 100)
	Tokens          int64   // SGLang "#token" / "#full token": KV-cache tokens in use
	Running         int     // #running-req / Running: N reqs
	Queued          int     // #queue-req / Waiting / Pending
	CUDAGraph       bool    // SGLang "cuda graph: True"
	Has             Fields  // which optional fields above are set

	Rank   string // rank tag as printed: "TP0", "DP1 TP0", "DP3 TP3 EP3"; "" when none
	DP     int    // DP rank from the tag, -1 when none
	Engine int    // vLLM "Engine NNN:", -1 when none
	Server string // "sglang" or "vllm"
	Stamp  string // the line's own timestamp text, "" when none ("2025-10-22 10:27:58")
	Line   int    // 1-based line number in the parsed input (0 when streaming)
}

// Kind implements event.Payload.
func (Throughput) Kind() string { return "throughput" }

// Rate is the server's aggregate generation rate at one point of the tok/s
// series: DP ranks reporting at the same second are summed, and SGLang's
// near-zero first line after idle is dropped (Dropped is set and the rate is
// not part of the series). It is an event payload.
type Rate struct {
	TokPerSec    float64 // aggregate tok/s
	AcceptLength float64 // mean accept length across ranks; valid when HasAccept
	HasAccept    bool
	Ranks        int  // how many rank lines were summed
	Dropped      bool // idle-gap artefact, excluded from the series
}

// Kind implements event.Payload.
func (Rate) Kind() string { return "tok-rate" }

// Ready reports a readiness line. It is an event payload.
type Ready struct {
	Server string // "sglang" or "vllm"
	Text   string // the line, sanitised
	URL    string // "http://0.0.0.0:8000" when the line gives one
	Line   int
}

// Kind implements event.Payload.
func (Ready) Kind() string { return "server-ready" }

// FailureClass names a class of server failure.
type FailureClass string

const (
	FailOOM               FailureClass = "oom"
	FailNCCL              FailureClass = "nccl"
	FailCUDAIllegalMemory FailureClass = "cuda-illegal-memory"
	FailWatchdogTimeout   FailureClass = "watchdog-timeout"
	FailEngineDead        FailureClass = "engine-dead"
	FailTraceback         FailureClass = "traceback"
	FailPortInUse         FailureClass = "port-in-use"
	FailKilled            FailureClass = "killed"
)

// Failure reports a failure signature found in the log. It is an event payload.
type Failure struct {
	Class FailureClass
	Text  string // the offending line, sanitised
	Rank  string // rank tag of that line, "" when none
	Line  int
}

// Kind implements event.Payload.
func (Failure) Kind() string { return "server-failure" }

// Line is one complete log line as read from the file.
type Line struct {
	Offset int64  // byte offset of the line's first byte in the file
	Text   []byte // without the trailing newline; raw bytes, not sanitised
}

// Lines is a batch of consecutive complete lines from the followed log. It
// is an event payload.
type Lines struct {
	Path  string
	Lines []Line
}

// Kind implements event.Payload.
func (Lines) Kind() string { return "log-lines" }

// Reset reports that the followed file was truncated, rotated or replaced,
// and reading restarted at Offset (usually 0). It is an event payload.
type Reset struct {
	Path string
	// Reason: "truncated" (tail said so, or the content check found the
	// file rewritten in place), "replaced" (tail followed a new file at
	// the path, or the file's content changed), "rotated" (a new file
	// appeared at the path), "reopened" (the file became readable again),
	// "missing" (the file is gone).
	Reason string
	Offset int64
}

// Kind implements event.Payload.
func (Reset) Kind() string { return "log-reset" }

// Notice reports a change in whether the followed file can be read: it is
// missing, not a regular file, unreadable, or it appeared (again). The
// Follower emits one when the class changes, not on every retry; Appeared
// ends the problem that an earlier Notice reported. It is an event
// payload.
type Notice struct {
	Path  string
	Class NoticeClass // NoticeMissing, NoticeNotAFile, NoticeInaccessible, NoticeAppeared
	// Text is GNU tail's message without its "tail: ", sanitised, e.g.
	// "cannot open '/data/logs/server.log' for reading: No such file or
	// directory", "error reading '/tmp': Is a directory", "'/data/logs/
	// server.log' has appeared;  following new file"; or one in the same
	// style when the Follower found the change itself ("'/data/logs/
	// server.log' has appeared").
	Text string
}

// Kind implements event.Payload.
func (Notice) Kind() string { return "log-notice" }

// NoticeClass says what a Notice reports.
type NoticeClass string

const (
	// NoticeMissing: the file does not exist, or a directory on its path
	// does not or is a file (ENOENT, ENOTDIR). The Follower waits for it to
	// appear.
	NoticeMissing NoticeClass = "missing"
	// NoticeNotAFile: the path is a directory or another kind of file
	// that tail cannot follow.
	NoticeNotAFile NoticeClass = "not-a-file"
	// NoticeInaccessible: the file exists but cannot be read (permission
	// denied, I/O error).
	NoticeInaccessible NoticeClass = "inaccessible"
	// NoticeAppeared: the file exists and is readable again (created,
	// recreated after rotation, or made readable), and is followed from
	// its first byte.
	NoticeAppeared NoticeClass = "appeared"
)
