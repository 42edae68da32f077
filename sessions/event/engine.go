package event

// EngineFields says which fields of an EngineSample the scrape had: a
// metric the server does not export (an older version, speculative
// decoding off, no request finished in the interval) leaves its bit clear
// and its field zero, never a guessed value.
type EngineFields uint16

const (
	HasEngineRunning      EngineFields = 1 << iota // Running
	HasEngineQueued                                // Queued
	HasEngineKVUsage                               // KVUsage
	HasEngineCacheHit                              // CacheHitRate
	HasEngineAcceptLength                          // AcceptLength
	HasEngineAcceptRate                            // AcceptRate
	HasEngineGenTokPerSec                          // GenTokPerSec
	HasEngineTTFT                                  // TTFTMean, TTFTP50, TTFTP99, TTFTCount
	HasEnginePerPosition                           // PerPosition
)

// EngineSample is one scrape of the inference server's Prometheus
// endpoint (`GET /metrics`, the text exposition format), mapped from the
// engine's own names: SGLang's `sglang:*` (server started with
// --enable-metrics) and vLLM's `vllm:*` (always on). Gauges are the
// scrape's values; rates (vLLM's prefix-cache hit rate, speculative
// acceptance, TTFT quantiles) come from the counters' and histograms'
// increase since the previous scrape of the same server, so the first
// scrape after a (re)start carries gauges only. It is an event payload;
// the event's time is the scrape's.
type EngineSample struct {
	Engine string // "sglang" or "vllm": the metric names' prefix
	Port   int    // the server's HTTP port on the host
	Has    EngineFields

	Running      float64 // requests running (decoding) now: sglang:num_running_reqs, vllm:num_requests_running
	Queued       float64 // requests waiting for admission: sglang:num_queue_reqs, vllm:num_requests_waiting
	KVUsage      float64 // KV-cache use, fraction 0–1: sglang:token_usage, vllm:kv_cache_usage_perc (older vllm:gpu_cache_usage_perc)
	CacheHitRate float64 // prefix-cache hit rate, fraction 0–1: sglang:cache_hit_rate, vLLM hits/queries over the interval
	AcceptLength float64 // speculative accept length, tokens per verify step incl. the bonus token: sglang:spec_accept_length, vLLM 1+accepted/drafts
	AcceptRate   float64 // speculative accept rate, fraction 0–1: sglang:spec_accept_rate, vLLM accepted/draft tokens
	GenTokPerSec float64 // the engine's own generation throughput, tok/s: sglang:gen_throughput, vLLM generation tokens over the interval
	// TTFT over the interval, seconds, from the time-to-first-token
	// histogram's increase (sglang:time_to_first_token_seconds,
	// vllm:time_to_first_token_seconds): the mean, and the median and 99th
	// percentile interpolated in its buckets as Prometheus's
	// histogram_quantile does; TTFTCount requests finished their first
	// token in the interval.
	TTFTMean, TTFTP50, TTFTP99 float64
	TTFTCount                  float64
	// PerPosition is vLLM's acceptance rate per draft position (0–1,
	// position 1 first) over the interval: vllm:spec_decode_num_accepted_tokens_per_pos
	// over vllm:spec_decode_num_drafts.
	PerPosition []float64
}

// EngineEndpointState says whether the server's metrics can be read.
type EngineEndpointState string

const (
	// EngineMetricsOn: `/metrics` answers with the engine's metrics.
	EngineMetricsOn EngineEndpointState = "on"
	// EngineMetricsOff: the server answers but exports no metrics
	// (SGLang without --enable-metrics answers 404); Hint says which flag
	// turns them on.
	EngineMetricsOff EngineEndpointState = "off"
	// EngineMetricsError: the scrape failed (no server listening, a
	// timeout, a body that is not the exposition format); Reason says how.
	EngineMetricsError EngineEndpointState = "error"
)

// EngineEndpoint reports the state of the server's metrics endpoint: when
// scraping starts and at every change (not at every scrape). It is an
// event payload.
type EngineEndpoint struct {
	State  EngineEndpointState
	Engine string // "sglang", "vllm", "" when not known
	Port   int    // the server's HTTP port on the host
	Path   string // "/metrics"
	// Reason is why the endpoint is off or failing ("404 Not Found",
	// "connection refused", "line 3: expected float"), sanitised; "" when on.
	Reason string
	// Hint is the one line that says how to turn metrics on ("start SGLang
	// with --enable-metrics"); "" when on or unknown.
	Hint string
}
