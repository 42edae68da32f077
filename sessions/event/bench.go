package event

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// BenchEndpoint is the API a benchmark calls.
type BenchEndpoint string

const (
	// Completions is POST /v1/completions ("prompt", "choices[0].text").
	BenchCompletions BenchEndpoint = "completions"
	// Chat is POST /v1/chat/completions ("messages",
	// "choices[0].delta.content").
	BenchChat BenchEndpoint = "chat"
)

// BenchConfig is one benchmark run. The zero value of a field takes the default
// named in its comment (see Config.Defaults).
type BenchConfig struct {
	Endpoint BenchEndpoint `json:"endpoint"`        // default Completions
	Model    string        `json:"model,omitempty"` // "" = the first id of GET /v1/models
	// InputLen and OutputLen are the prompt and generation lengths in
	// tokens (defaults 128 and 128). Random prompts are InputLen random
	// token ids (/v1/completions) or InputLen random words (chat, where the
	// server's tokenizer decides the count: the measured count comes from
	// usage). OutputLen is sent as max_tokens with ignore_eos.
	InputLen  int `json:"input_len"`
	OutputLen int `json:"output_len"`
	// PromptFile names a local file of prompts, one per line (blank lines
	// skipped), used in turn instead of random prompts; "" = random.
	PromptFile string `json:"prompt_file,omitempty"`
	// Concurrency is the most requests in flight (default 1).
	Concurrency int `json:"concurrency"`
	// Requests is how many measured requests to send; when 0, Duration
	// bounds the run instead: no request starts after it, and those in
	// flight finish. Exactly one of them is set (default 32 requests).
	Requests int           `json:"requests,omitempty"`
	Duration time.Duration `json:"duration,omitempty"` // ns in JSON
	// Rate is the request arrival rate in requests/s; 0 sends as fast as
	// Concurrency allows. Poisson draws exponential gaps (as bench_serving
	// does), else the gaps are even.
	Rate    float64 `json:"rate,omitempty"`
	Poisson bool    `json:"poisson,omitempty"`
	// Warmup requests run first, one at a time, and are left out of every
	// metric (default 1, as sglang.bench_serving's --warmup-requests; -1
	// means none: 0 is the default). Use WarmupRequests for the count.
	Warmup int `json:"warmup"`
	// Seed makes random prompts and Poisson gaps repeatable (default 1).
	Seed uint64 `json:"seed"`
	// Timeout bounds one request, from sending it to the end of its
	// stream (default 10 min); ns in JSON (a Go time.Duration).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Dist is a latency distribution in milliseconds, computed as
// sglang.bench_serving does (numpy mean, median, percentiles with linear
// interpolation, population standard deviation). All zero when N is 0.
type Dist struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean_ms"`
	Median float64 `json:"median_ms"`
	P90    float64 `json:"p90_ms"`
	P99    float64 `json:"p99_ms"`
	Std    float64 `json:"std_ms"`
	Max    float64 `json:"max_ms"`
}

// BenchRequest is one measured request, in the order they were sent.
type BenchRequest struct {
	// Start is when the request was sent, as an offset from
	// Result.Started; ns in JSON (a Go time.Duration).
	Start time.Duration `json:"start"`
	// TTFT is the time from sending to the first chunk that carries
	// content (a role-only first chunk does not count), ms.
	TTFT float64 `json:"ttft_ms"`
	// E2E is the time from sending to the end of the stream, ms.
	E2E float64 `json:"e2e_ms"`
	// TPOT is (E2E − TTFT) / (OutputTokens − 1), ms; 0 when
	// OutputTokens ≤ 1.
	TPOT float64 `json:"tpot_ms"`
	// ITLMedian is the median gap between consecutive content chunks, ms;
	// 0 with fewer than two chunks.
	ITLMedian float64 `json:"itl_median_ms"`
	// PromptTokens is from usage; else the number of token ids sent (random
	// completions prompts), or 0 when the server's count is unknown (text
	// prompts without usage).
	PromptTokens int `json:"prompt_tokens"`
	OutputTokens int `json:"output_tokens"` // from usage; else one per content chunk
	// Usage says the token counts came from the server's usage chunk.
	Usage bool   `json:"usage"`
	Err   string `json:"err,omitempty"` // "" when it succeeded
}

// BenchResult is a finished (or cancelled) benchmark run.
type BenchResult struct {
	Config  BenchConfig `json:"config"` // with defaults filled in and the model resolved
	Target  string      `json:"target"` // what was benchmarked: "http://127.0.0.1:30000 via gpu-box"
	Started time.Time   `json:"started"`
	// Duration is the measured part's wall time, from the first measured
	// request sent to the last one finished (warm-up excluded); ns in JSON
	// (a Go time.Duration).
	Duration time.Duration `json:"duration"`
	// Cancelled says the run was stopped before it finished; the metrics
	// cover the requests that finished.
	Cancelled bool `json:"cancelled,omitempty"`

	Completed int `json:"completed"` // successful requests
	Failed    int `json:"failed"`
	// Errors are the distinct failure messages with counts, most common
	// first, at most 5, sanitised ("HTTP 503: The server is not ready." ×3).
	Errors []BenchErrorCount `json:"errors,omitempty"`

	InputTokens  int `json:"input_tokens"`  // Σ prompt tokens of successful requests
	OutputTokens int `json:"output_tokens"` // Σ output tokens of successful requests
	// ReqPerSec is Completed / Duration; OutputTokPerSec and
	// TotalTokPerSec are OutputTokens and Input+OutputTokens over Duration
	// (the bench tables' "Output token throughput (tok/s)").
	ReqPerSec       float64 `json:"req_per_s"`
	OutputTokPerSec float64 `json:"output_tok_s"`
	TotalTokPerSec  float64 `json:"total_tok_s"`
	// Concurrency is the achieved mean concurrency: Σ E2E / Duration.
	Concurrency float64 `json:"concurrency"`

	TTFT Dist `json:"ttft"`
	ITL  Dist `json:"itl"` // over every gap between content chunks of every request
	TPOT Dist `json:"tpot"`
	E2E  Dist `json:"e2e"`

	// Requests are the measured requests (not the warm-up) in the order
	// they were sent, for statistics across runs; their ITL lists are
	// summarised by ITLMedian. A run of more than MaxStoredRequests keeps
	// an even sample of MaxStoredRequests of them (every k-th in sending
	// order, k = RequestsTotal / MaxStoredRequests, not a whole number in
	// general: request ⌊i·RequestsTotal/MaxStoredRequests⌋ for i = 0, 1,
	// …), so that a long run's journal line stays small; the counts,
	// rates and distributions above are always over every request.
	Requests []BenchRequest `json:"requests,omitempty"`
	// RequestsTotal is how many measured requests finished (Completed +
	// Failed): len(Requests) when every one is stored, more when Requests
	// is a sample. 0 in results recorded before the field existed (then
	// len(Requests) is the count).
	RequestsTotal int `json:"requests_total,omitempty"`
}

// BenchErrorCount is one failure message and how many requests failed with it.
type BenchErrorCount struct {
	Err   string `json:"err"`
	Count int    `json:"count"`
}

// BenchStarted announces a benchmark run on the event stream. It is an event
// payload (kind "bench-start").
type BenchStarted struct {
	ID     string      `json:"id"`            // "b1", "b2", … in session order
	Exp    string      `json:"exp,omitempty"` // the experiment open at the start, "" when none
	Target string      `json:"target"`
	Config BenchConfig `json:"config"`
}

// BenchProgress is a running benchmark's state, published a few times a second
// (never journaled). It is an event payload (kind "bench-progress").
type BenchProgress struct {
	ID     string `json:"id"`
	Warmup bool   `json:"warmup,omitempty"` // still in the warm-up requests
	Done   int    `json:"done"`             // measured requests finished (ok or failed)
	Failed int    `json:"failed"`
	Total  int    `json:"total"` // Config.Requests; 0 when bounded by Duration
	// Elapsed is the measured part's time so far, and Limit is
	// Config.Duration when the run is bounded by it (else 0); both ns in
	// JSON (Go time.Durations).
	Elapsed   time.Duration `json:"elapsed"`
	Limit     time.Duration `json:"limit,omitempty"`
	InFlight  int           `json:"in_flight"`
	OutTokens int           `json:"out_tokens"` // output tokens so far
	// TokPerSec is the output tok/s over the measured part so far.
	TokPerSec float64 `json:"tok_s"`
}

// BenchDone ends a benchmark run on the event stream: its result, or why it
// could not run. It is an event payload (kind "bench-done").
type BenchDone struct {
	ID     string       `json:"id"`
	Exp    string       `json:"exp,omitempty"` // as in Started
	Result *BenchResult `json:"result,omitempty"`
	Err    string       `json:"err,omitempty"` // "" when Result is set
}

// Defaults of Config's zero fields.
const (
	BenchDefaultInputLen  = 128
	BenchDefaultOutputLen = 128
	BenchDefaultRequests  = 32
	BenchDefaultWarmup    = 1
	BenchDefaultSeed      = 1
	BenchDefaultTimeout   = 10 * time.Minute
)

// Limits a Config must stay within (Validate).
const (
	BenchMaxLen         = 1 << 20 // tokens of input or output
	BenchMaxConcurrency = 100000
	BenchMaxRequests    = 10000000
	BenchMaxWarmup      = 10000
)

// Defaults returns c with each zero field set to its default: endpoint
// completions, 128 input and 128 output tokens, concurrency 1, 32
// requests (when Duration is 0 too), 1 warm-up request, seed 1, a 10 min
// timeout per request. A negative Warmup (none) is kept, so that Defaults
// is idempotent: WarmupRequests gives the count.
func (c BenchConfig) Defaults() BenchConfig {
	if c.Endpoint == "" {
		c.Endpoint = BenchCompletions
	}
	if c.InputLen == 0 {
		c.InputLen = BenchDefaultInputLen
	}
	if c.OutputLen == 0 {
		c.OutputLen = BenchDefaultOutputLen
	}
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.Requests == 0 && c.Duration == 0 {
		c.Requests = BenchDefaultRequests
	}
	if c.Warmup == 0 {
		c.Warmup = BenchDefaultWarmup
	} else if c.Warmup < 0 {
		c.Warmup = -1
	}
	if c.Seed == 0 {
		c.Seed = BenchDefaultSeed
	}
	if c.Timeout == 0 {
		c.Timeout = BenchDefaultTimeout
	}
	return c
}

// Validate reports the first field of c (after Defaults) that is out of
// range, naming it as the CLI flag does; nil when c can run.
func (c BenchConfig) Validate() error {
	switch {
	case c.Endpoint != BenchCompletions && c.Endpoint != BenchChat:
		return fmt.Errorf("endpoint %q: want %q or %q", c.Endpoint, BenchCompletions, BenchChat)
	case c.InputLen < 1 || c.InputLen > BenchMaxLen:
		return fmt.Errorf("input length %d tokens: want 1..%d", c.InputLen, BenchMaxLen)
	case c.OutputLen < 1 || c.OutputLen > BenchMaxLen:
		return fmt.Errorf("output length %d tokens: want 1..%d", c.OutputLen, BenchMaxLen)
	case c.Concurrency < 1 || c.Concurrency > BenchMaxConcurrency:
		return fmt.Errorf("concurrency %d: want 1..%d", c.Concurrency, BenchMaxConcurrency)
	case c.Requests < 0 || c.Requests > BenchMaxRequests:
		return fmt.Errorf("requests %d: want 1..%d", c.Requests, BenchMaxRequests)
	case c.Duration < 0:
		return fmt.Errorf("duration %v: must not be negative", c.Duration)
	case c.Requests > 0 && c.Duration > 0:
		return errors.New("requests or duration, not both")
	case c.Requests == 0 && c.Duration == 0:
		return errors.New("set requests or a duration")
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0:
		return fmt.Errorf("rate %v req/s: want a finite rate ≥ 0 (0: as fast as concurrency allows)", c.Rate)
	case c.Poisson && c.Rate == 0:
		return errors.New("poisson arrivals need a rate")
	case c.Warmup > BenchMaxWarmup:
		return fmt.Errorf("warm-up %d requests: want 0..%d", c.Warmup, BenchMaxWarmup)
	case c.Timeout < 0:
		return fmt.Errorf("timeout %v: must not be negative", c.Timeout)
	}
	return nil
}

// WarmupRequests is how many warm-up requests c runs: Warmup, 0 when it is
// negative (none), DefaultWarmup when it is 0.
func (c BenchConfig) WarmupRequests() int {
	switch {
	case c.Warmup < 0:
		return 0
	case c.Warmup == 0:
		return BenchDefaultWarmup
	}
	return c.Warmup
}
