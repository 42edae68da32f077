// Package serverlog parses an inference server's log: SGLang
// "Decode batch" / "Prefill batch" lines, vLLM V0/V1 metrics and
// spec-decode lines, readiness lines, failure signatures, and the
// sglang.bench_serving / vllm bench serve result tables.
//
// Parsers are pure functions over bytes: no I/O, no allocation on lines
// that do not match. Following the log on a host is probes/serverlog/follow's.
package serverlog
