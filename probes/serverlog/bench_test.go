package serverlog

import (
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"math"
	"strings"
	"testing"
)

func benchOf(t *testing.T, text string) []event.LogBench {
	t.Helper()
	var p BenchParser
	var out []event.LogBench
	for i, l := range strings.Split(text, "\n") {
		if b, ok := p.Feed([]byte(l), i+1); ok {
			out = append(out, b)
		}
	}
	if b, ok := p.Flush(); ok {
		out = append(out, b)
	}
	return out
}

func TestBenchTableLostPaddingAndSpecialValues(t *testing.T) {
	// Pasted without padding, "inf" rate, "not set" concurrency, v0.4.0 typo,
	// then log noise after the table.
	text := `============ Serving Benchmark Result ============
Backend: sglang
Traffic request rate: inf
Max reqeuest concurrency: not set
Successful requests: 1000
Benchmark duration (s): 170.41
Total generated tokens: 326408
Output token throughput (tok/s): 1915.42
---------------Time to First Token----------------
Mean TTFT (ms): 51234.5
==================================================
[2025-01-01 00:00:00 TP0] Decode batch. gen throughput (token/s): 1.00, #queue-req: 0`
	bs := benchOf(t, text)
	if len(bs) != 1 {
		t.Fatalf("got %d results", len(bs))
	}
	b := bs[0]
	if b.Tool != ToolSGLangBenchServing || b.Backend != "sglang" || b.SuccessfulRequests != 1000 || b.DurationS != 170.41 ||
		b.TotalGeneratedTokens != 326408 || b.OutputTokPerSec != 1915.42 || b.TTFTMeanMs != 51234.5 || b.Line != 1 {
		t.Errorf("bench = %+v", b)
	}
	if b.Has&HasRequestRate == 0 || !math.IsInf(b.RequestRate, 1) {
		t.Errorf("request rate inf: %v (has %v)", b.RequestRate, b.Has&HasRequestRate != 0)
	}
	if b.Has&HasMaxConcurrency != 0 {
		t.Errorf("\"not set\" concurrency became %d", b.MaxConcurrency)
	}
	if b.Has&HasTTFTMedian != 0 || b.Has&HasITLMean != 0 {
		t.Error("rows the table does not have are marked present")
	}

	// A table cut by the end of input and one ended by a non-row line.
	cut := benchOf(t, "============ Serving Benchmark Result ============\nSuccessful requests:                     5         \nMean ITL (ms):                           2.5       ")
	if len(cut) != 1 || cut[0].SuccessfulRequests != 5 || cut[0].ITLMeanMs != 2.5 || cut[0].Tool != "" {
		t.Errorf("cut table = %+v", cut)
	}
	ended := benchOf(t, "============ Serving Benchmark Result ============\nSuccessful requests:                     5         \nsome unrelated log line without a colon\n")
	if len(ended) != 1 || ended[0].SuccessfulRequests != 5 {
		t.Errorf("table ended by noise = %+v", ended)
	}
	if got := benchOf(t, "no tables here\nSuccessful requests: 5\n"); len(got) != 0 {
		t.Errorf("rows outside a table were read: %+v", got)
	}
}

func TestBenchOneBatchWarmupOnly(t *testing.T) {
	text := "Warmup ...\nPrefill. latency: 0.02265 s, throughput:   2648.96 token/s\nTotal. latency:  0.076 s, throughput:    923.17 token/s\n"
	if got := benchOf(t, text); len(got) != 0 {
		t.Errorf("the warm-up pass was reported: %+v", got)
	}
}
