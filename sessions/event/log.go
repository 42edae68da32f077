package event

import (
	"fmt"
	"time"
)

// LogFollowError reports that following the log failed for a while: tail
// could not start, its stream ended (connection lost, process killed), or
// tail or the shell complained in a way that is not a Notice. The Follower
// retries by itself. It is an event payload.
type LogFollowError struct {
	Path  string
	Err   string        // what went wrong, sanitised
	Retry time.Duration // wait before the next attempt; 0 when tail keeps running
}

// LogBenchFields says which optional fields of a Bench were present.
type LogBenchFields uint64

// LogBench is one benchmark result read from a tool's output (research notes
// §6): the "Serving Benchmark Result" table of sglang.bench_serving or vllm
// bench serve, or the Benchmark pass of sglang.bench_one_batch. A field is
// meaningful only when its Has bit is set (a row the tool did not print,
// or printed as "not set", is missing, never 0). It is an event payload.
type LogBench struct {
	Tool    string // ToolSGLangBenchServing, ToolVLLMBenchServe, ToolSGLangBenchOneBatch; "" when the table does not say
	Backend string // "Backend:" row (sglang.bench_serving), e.g. "sglang"

	OutputTokPerSec      float64 // "Output token throughput (tok/s)"; bench_one_batch: median decode throughput, tok/s
	InputTokPerSec       float64 // "Input token throughput (tok/s)"
	TotalTokPerSec       float64 // "Total token throughput (tok/s)"; bench_one_batch: "Total." throughput, tok/s
	RequestThroughput    float64 // "Request throughput (req/s)"
	SuccessfulRequests   int     // "Successful requests"
	FailedRequests       int     // "Failed requests" (vLLM)
	DurationS            float64 // "Benchmark duration (s)"
	TotalInputTokens     int64   // "Total input tokens"
	TotalGeneratedTokens int64   // "Total generated tokens"
	MaxConcurrency       int     // "Max request concurrency" / "Maximum request concurrency"
	RequestRate          float64 // "Traffic request rate" / "Request rate configured (RPS)", req/s; +Inf for "inf"
	Concurrency          float64 // "Concurrency" (SGLang): mean requests in flight

	TTFTMeanMs, TTFTMedianMs, TTFTP99Ms float64 // time to first token, ms
	TPOTMeanMs, TPOTMedianMs, TPOTP99Ms float64 // time per output token excl. the first, ms
	ITLMeanMs, ITLMedianMs, ITLP99Ms    float64 // inter-token latency, ms
	E2EMeanMs, E2EMedianMs              float64 // end-to-end latency, ms (SGLang)

	// sglang.bench_one_batch only.
	BatchSize            int       // "Batch size"
	PrefillLatencyS      float64   // "Prefill. latency", s
	PrefillTokPerSec     float64   // "Prefill. throughput", tok/s
	DecodeTokPerSec      []float64 // each "Decode N." step's throughput, tok/s
	DecodeMedianLatencyS float64   // "Decode.  median latency", s
	TotalLatencyS        float64   // "Total. latency", s

	Has  LogBenchFields
	Line int // 1-based line of the table title or the pass header (0 when streaming)
}

// SpecFields says which optional fields of a SpecDecode were present.
type SpecFields uint16

// SpecDecode is one vLLM speculative-decoding metrics line (research notes
// §2.3): V0 "Speculative metrics: ..." or V1 "SpecDecoding metrics: ...".
// It is an event payload.
type SpecDecode struct {
	MeanAcceptLength  float64   // "Mean acceptance length", tokens per step incl. the bonus token (V1 ≥ 0.10 only)
	DraftAcceptRate   float64   // accepted / drafted as a fraction 0–1 (V0 prints a fraction, V1 a percentage: normalised)
	Accepted          int64     // accepted draft tokens in the interval (V1) or since start (V0)
	Drafted           int64     // drafted tokens, same span as Accepted
	Emitted           int64     // V0 "Number of emitted tokens"
	SystemEfficiency  float64   // V0 "System efficiency", 0–1
	NumSpecTokens     int       // V0 "Number of speculative tokens" (k)
	AcceptedTokPerSec float64   // V1 "Accepted throughput", tok/s (not generation throughput)
	DraftedTokPerSec  float64   // V1 "Drafted throughput", tok/s
	PerPosition       []float64 // V1 per-position acceptance rates 0–1, position 1 first
	Has               SpecFields

	Engine int    // "Engine NNN:" when the line has one, else -1
	Stamp  string // the line's own timestamp text, "" when none
	Line   int    // 1-based line number in the parsed input (0 when streaming)
}

// ThroughputFields says which optional fields of a Throughput were present in the line.
type ThroughputFields uint16

const (
	HasPromptTokPerSec ThroughputFields = 1 << iota
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
	TokPerSec       float64          // generation tok/s reported for this rank/engine
	PromptTokPerSec float64          // vLLM "Avg prompt throughput", tok/s
	AcceptLength    float64          // speculative decoding mean accept length (incl. bonus token)
	AcceptRate      float64          // speculative decoding accept rate, 0–1
	TokenUsage      float64          // KV-cache usage fraction 0–1 (SGLang "token usage", vLLM "GPU KV cache usage" / 100)
	Tokens          int64            // SGLang "#token" / "#full token": KV-cache tokens in use
	Running         int              // #running-req / Running: N reqs
	Queued          int              // #queue-req / Waiting / Pending
	CUDAGraph       bool             // SGLang "cuda graph: True"
	Has             ThroughputFields // which optional fields above are set

	Rank   string // rank tag as printed: "TP0", "DP1 TP0", "DP3 TP3 EP3"; "" when none
	DP     int    // DP rank from the tag, -1 when none
	Engine int    // vLLM "Engine NNN:", -1 when none
	Server string // "sglang" or "vllm"
	Stamp  string // the line's own timestamp text, "" when none ("2025-10-22 10:27:58")
	Line   int    // 1-based line number in the parsed input (0 when streaming)
}

// TokRate is the server's aggregate generation rate at one point of the tok/s
// series: DP ranks reporting at the same second are summed, and SGLang's
// near-zero first line after idle is dropped (Dropped is set and the rate is
// not part of the series). It is an event payload.
type TokRate struct {
	TokPerSec    float64 // aggregate tok/s
	AcceptLength float64 // mean accept length across ranks; valid when HasAccept
	HasAccept    bool
	Ranks        int  // how many rank lines were summed
	Dropped      bool // idle-gap artefact, excluded from the series
}

// ServerReady reports a readiness line. It is an event payload.
type ServerReady struct {
	Server string // "sglang" or "vllm"
	Text   string // the line, sanitised
	URL    string // "http://0.0.0.0:8000" when the line gives one
	Line   int
}

// ServerFailureClass names a class of server failure.
type ServerFailureClass string

const (
	FailOOM               ServerFailureClass = "oom"
	FailNCCL              ServerFailureClass = "nccl"
	FailCUDAIllegalMemory ServerFailureClass = "cuda-illegal-memory"
	FailWatchdogTimeout   ServerFailureClass = "watchdog-timeout"
	FailEngineDead        ServerFailureClass = "engine-dead"
	FailTraceback         ServerFailureClass = "traceback"
	FailPortInUse         ServerFailureClass = "port-in-use"
	FailKilled            ServerFailureClass = "killed"
	// FailImport is the server's code failing to import at start-up: a
	// traceback ending in SyntaxError, IndentationError, TabError,
	// ImportError or ModuleNotFoundError (a broken checkout or build, a
	// missing package).
	FailImport ServerFailureClass = "import-error"
)

// ServerFailure reports a failure signature found in the log. It is an event payload.
type ServerFailure struct {
	Class ServerFailureClass
	Text  string // the offending line, sanitised
	Rank  string // rank tag of that line, "" when none
	Line  int
}

// LogLine is one complete log line as read from the file.
type LogLine struct {
	Offset int64  // byte offset of the line's first byte in the file
	Text   []byte // without the trailing newline; raw bytes, not sanitised
}

// LogLines is a batch of consecutive complete lines from the followed log. It
// is an event payload.
type LogLines struct {
	Path  string
	Lines []LogLine
}

// LogReset reports that the followed file was truncated, rotated or replaced,
// and reading restarted at Offset (usually 0). It is an event payload.
type LogReset struct {
	Path string
	// Reason: "truncated" (tail said so, or the content check found the
	// file rewritten in place), "replaced" (tail followed a new file at
	// the path, or the file's content changed), "rotated" (a new file
	// appeared at the path), "reopened" (the file became readable again),
	// "missing" (the file is gone).
	Reason string
	Offset int64
	// Delivered is how many bytes of the old content had been delivered
	// when the change was found (0: none, or not known).
	Delivered int64 `json:",omitempty"`
	// Unwatched is set when the change happened while the log was not
	// being followed (the connection was down, tail was restarting): lines
	// written to the old content after Delivered may be missing, they are
	// not in the new file.
	Unwatched bool `json:",omitempty"`
	// Missed is how many bytes the old content had beyond Delivered, when
	// known: the size of the rotated copy (PATH.1, as logrotate's
	// copytruncate and rotate leave it) less Delivered; -1 when not known.
	// Only set with Unwatched.
	Missed int64 `json:",omitempty"`
}

// Words describes the reset for the log window and the journal's
// reports: "log truncated, restarting at 0", and for a change while the
// log was not watched "log truncated while it was not watched (the
// connection was down): lines after byte 5133 of the old file may be
// missing (1937 bytes more in /data/server.log.1), restarting at 0".
func (r LogReset) Words() string {
	reason := r.Reason
	if reason == "" {
		reason = "reset"
	}
	s := "log " + reason
	if r.Unwatched {
		s += fmt.Sprintf(" while it was not watched (the connection was down): lines after byte %d of the old file may be missing", r.Delivered)
		switch {
		case r.Missed > 0:
			s += fmt.Sprintf(" (%d bytes more in %s.1)", r.Missed, r.Path)
		case r.Missed == 0:
			s += fmt.Sprintf(" (%s.1 has no more)", r.Path)
		}
	}
	return s + fmt.Sprintf(", restarting at %d", r.Offset)
}

// LogNotice reports a change in whether the followed file can be read: it is
// missing, not a regular file, unreadable, or it appeared (again). The
// Follower emits one when the class changes, not on every retry; Appeared
// ends the problem that an earlier Notice reported. It is an event
// payload.
type LogNotice struct {
	Path  string
	Class LogNoticeClass // NoticeMissing, NoticeNotAFile, NoticeInaccessible, NoticeAppeared
	// Text is GNU tail's message without its "tail: ", sanitised, e.g.
	// "cannot open '/data/logs/server.log' for reading: No such file or
	// directory", "error reading '/tmp': Is a directory", "'/data/logs/
	// server.log' has appeared;  following new file"; or one in the same
	// style when the Follower found the change itself ("'/data/logs/
	// server.log' has appeared").
	Text string
}

// LogNoticeClass says what a Notice reports.
type LogNoticeClass string

const (
	// NoticeMissing: the file does not exist, or a directory on its path
	// does not or is a file (ENOENT, ENOTDIR). The Follower waits for it to
	// appear.
	NoticeMissing LogNoticeClass = "missing"
	// NoticeNotAFile: the path is a directory or another kind of file
	// that tail cannot follow.
	NoticeNotAFile LogNoticeClass = "not-a-file"
	// NoticeInaccessible: the file exists but cannot be read (permission
	// denied, I/O error).
	NoticeInaccessible LogNoticeClass = "inaccessible"
	// NoticeAppeared: the file exists and is readable again (created,
	// recreated after rotation, or made readable), and is followed from
	// its first byte.
	NoticeAppeared LogNoticeClass = "appeared"
)

// PrefillFields says which optional fields of a Prefill were present.
type PrefillFields uint16

const (
	HasNewSeq PrefillFields = 1 << iota
	HasNewTokens
	HasCachedTokens
	HasCacheHitRate
	HasPrefillTokenUsage
	HasPrefillRunning
	HasPrefillQueued
	HasPrefillInputTokPerSec
	HasPrefillCUDAGraph
)

// Prefill is one SGLang "Prefill batch" line (research notes §1.3). It is
// an event payload.
type Prefill struct {
	NewSeq          int     // #new-seq: requests whose prefill is in this batch
	NewTokens       int64   // #new-token: prompt tokens computed
	CachedTokens    int64   // #cached-token: prompt tokens served by the prefix cache
	CacheHitRatePct float64 // "cache hit rate: 12.50%" as printed, percent 0–100 (2024–early 2025 builds)
	TokenUsage      float64 // KV-cache usage fraction 0–1
	Running         int     // #running-req
	Queued          int     // #queue-req
	InputTokPerSec  float64 // "input throughput (token/s)", tok/s (2026 builds, PD prefill)
	CUDAGraph       bool    // "cuda graph: True" (2026 builds)
	Has             PrefillFields

	Rank  string // rank tag as printed, "" when none
	DP    int    // DP rank, -1 when none
	Stamp string // the line's own timestamp text, "" when none
	Line  int    // 1-based line number in the parsed input (0 when streaming)
}

// CacheHitRate returns the prefix-cache hit fraction 0–1 computed as the
// newer SGLang source does, #cached-token / (#new-token + #cached-token);
// ok is false when either count is missing or both are 0.
func (p Prefill) CacheHitRate() (float64, bool) {
	if p.Has&(HasNewTokens|HasCachedTokens) != HasNewTokens|HasCachedTokens || p.NewTokens+p.CachedTokens == 0 {
		return 0, false
	}
	return float64(p.CachedTokens) / float64(p.NewTokens+p.CachedTokens), true
}

// Tiers of FailureClass.Tier, lowest first.
const (
	TierCause       = 0 // a root cause: cuda-illegal-memory, oom, nccl, watchdog-timeout, port-in-use
	TierConsequence = 1 // the engine died or the process was killed: engine-dead, killed
	TierTraceback   = 2 // only a Python traceback: traceback
	TierUnknown     = 3 // a class this package does not define
)

// Tier ranks c for choosing the failure that explains a run, lowest first:
// TierCause for root causes (cuda-illegal-memory, oom, nccl,
// watchdog-timeout, port-in-use, import-error), TierConsequence for the engine's death or
// the process being killed (engine-dead, killed), TierTraceback for a bare
// traceback, TierUnknown for any other value. Classifier.Primary (and so
// Scanner.Primary and `flightdeck parse log`'s failure_summary) picks the
// first failure found of the lowest tier; use Tier to agree with it.
func (c ServerFailureClass) Tier() int {
	switch c {
	case FailCUDAIllegalMemory, FailOOM, FailNCCL, FailWatchdogTimeout, FailPortInUse, FailImport:
		return TierCause
	case FailEngineDead, FailKilled:
		return TierConsequence
	case FailTraceback:
		return TierTraceback
	}
	return TierUnknown
}
