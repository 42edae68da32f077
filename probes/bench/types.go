// Package bench is flightdeck's serving benchmark client: it drives an
// OpenAI-compatible server (SGLang, vLLM) with streaming /v1/completions or
// /v1/chat/completions requests and measures what sglang.bench_serving and
// `vllm bench serve` measure, with the same definitions: request and token
// throughput, TTFT, ITL, TPOT and end-to-end latency.
package bench

// MaxStoredRequests is the most requests an event.BenchResult keeps in
// Requests.
const MaxStoredRequests = 10000
