// Package bench is flightdeck's serving benchmark client: it drives an
// OpenAI-compatible server (SGLang, vLLM) with streaming /v1/completions or
// /v1/chat/completions requests and measures what sglang.bench_serving and
// `vllm bench serve` measure, with the same definitions: request and token
// throughput, TTFT, ITL, TPOT and end-to-end latency.
package bench

import "time"

// Endpoint is the API a benchmark calls.
type Endpoint string

const (
	// Completions is POST /v1/completions ("prompt", "choices[0].text").
	Completions Endpoint = "completions"
	// Chat is POST /v1/chat/completions ("messages",
	// "choices[0].delta.content").
	Chat Endpoint = "chat"
)

// Config is one benchmark run. The zero value of a field takes the default
// named in its comment (see Config.Defaults).
type Config struct {
	Endpoint Endpoint `json:"endpoint"`        // default Completions
	Model    string   `json:"model,omitempty"` // "" = the first id of GET /v1/models
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

// Request is one measured request, in the order they were sent.
type Request struct {
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

// Result is a finished (or cancelled) benchmark run.
type Result struct {
	Config  Config    `json:"config"` // with defaults filled in and the model resolved
	Target  string    `json:"target"` // what was benchmarked: "http://127.0.0.1:30000 via gpu-box"
	Started time.Time `json:"started"`
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
	Errors []ErrorCount `json:"errors,omitempty"`

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
	Requests []Request `json:"requests,omitempty"`
	// RequestsTotal is how many measured requests finished (Completed +
	// Failed): len(Requests) when every one is stored, more when Requests
	// is a sample. 0 in results recorded before the field existed (then
	// len(Requests) is the count).
	RequestsTotal int `json:"requests_total,omitempty"`
}

// MaxStoredRequests is the most requests a Result keeps in Requests.
const MaxStoredRequests = 10000

// ErrorCount is one failure message and how many requests failed with it.
type ErrorCount struct {
	Err   string `json:"err"`
	Count int    `json:"count"`
}

// Started announces a benchmark run on the event stream. It is an event
// payload (kind "bench-start").
type Started struct {
	ID     string `json:"id"`            // "b1", "b2", … in session order
	Exp    string `json:"exp,omitempty"` // the experiment open at the start, "" when none
	Target string `json:"target"`
	Config Config `json:"config"`
}

// Kind implements event.Payload.
func (Started) Kind() string { return "bench-start" }

// Progress is a running benchmark's state, published a few times a second
// (never journaled). It is an event payload (kind "bench-progress").
type Progress struct {
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

// Kind implements event.Payload.
func (Progress) Kind() string { return "bench-progress" }

// Done ends a benchmark run on the event stream: its result, or why it
// could not run. It is an event payload (kind "bench-done").
type Done struct {
	ID     string  `json:"id"`
	Exp    string  `json:"exp,omitempty"` // as in Started
	Result *Result `json:"result,omitempty"`
	Err    string  `json:"err,omitempty"` // "" when Result is set
}

// Kind implements event.Payload.
func (Done) Kind() string { return "bench-done" }
