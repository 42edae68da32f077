package serverlog

import (
	"bytes"
	"math"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Benchmark tool names, as reported in Bench.Tool.
const (
	ToolSGLangBenchServing  = "sglang.bench_serving"
	ToolVLLMBenchServe      = "vllm bench serve"
	ToolSGLangBenchOneBatch = "sglang.bench_one_batch"
)

const (
	HasBackend event.LogBenchFields = 1 << iota
	HasRequestRate
	HasMaxConcurrency
	HasSuccessfulRequests
	HasFailedRequests
	HasDuration
	HasTotalInputTokens
	HasTotalGeneratedTokens
	HasRequestThroughput
	HasInputTokPerSec
	HasOutputTokPerSec
	HasTotalTokPerSec
	HasConcurrency
	HasE2EMean
	HasE2EMedian
	HasTTFTMean
	HasTTFTMedian
	HasTTFTP99
	HasTPOTMean
	HasTPOTMedian
	HasTPOTP99
	HasITLMean
	HasITLMedian
	HasITLP99
	HasBatchSize
	HasPrefillLatency
	HasPrefillTokPerSec
	HasDecodeTokPerSec
	HasDecodeMedianLatency
	HasTotalLatency
)

var (
	kwServingResult = []byte("Serving Benchmark Result")
	kwWarmupPass    = []byte("Warmup ...")
	kwBenchPass     = []byte("Benchmark ...")
	kwOBPrefill     = []byte("Prefill. latency: ")
	kwOBDecodeMed   = []byte("Decode.  median latency: ")
	kwOBDecodeOld   = []byte("Decode.  latency: ")
	kwOBTotal       = []byte("Total. latency: ")
	kwOBDecodeStep  = []byte("Decode ")
)

// BenchParser reads benchmark tool output line by line and reports each
// complete result. The zero value is ready to use; it is not safe for
// concurrent use.
type BenchParser struct {
	mode   uint8 // benchIdle, benchServing, benchOneBatch
	pass   bool  // bench_one_batch: the current pass is not the warm-up
	cur    event.LogBench
	sglang bool // a row only sglang.bench_serving prints was seen
	vllm   bool // a row only vllm bench serve prints was seen
}

const (
	benchIdle uint8 = iota
	benchServing
	benchOneBatch
)

// Feed reads the next line; it returns a result when the line completes one
// (the closing "=====" rule or the first line after the table, the "Total."
// line of a bench_one_batch Benchmark pass).
func (p *BenchParser) Feed(line []byte, lineNo int) (event.LogBench, bool) {
	b, ok, _ := p.feed(line, lineNo)
	return b, ok
}

// active reports whether the parser is inside a table or a pass.
func (p *BenchParser) active() bool { return p.mode != benchIdle }

// feed is Feed that also reports whether the line belonged to benchmark
// output (a table row, a pass line, a start marker), so that other parsers
// can skip it.
func (p *BenchParser) feed(line []byte, lineNo int) (b event.LogBench, ok, consumed bool) {
	switch p.mode {
	case benchServing:
		done, used := p.servingLine(line)
		if !done {
			return event.LogBench{}, false, true
		}
		b, ok = p.finishServing()
		if !used {
			used = p.idleLine(line, lineNo)
		}
		return b, ok, used
	case benchOneBatch:
		done, used := p.oneBatchLine(line)
		if !done && used {
			return event.LogBench{}, false, true
		}
		b, ok = p.finishOneBatch()
		if !used {
			used = p.idleLine(line, lineNo)
		}
		return b, ok, used
	}
	return event.LogBench{}, false, p.idleLine(line, lineNo)
}

// Flush reports a result cut short by the end of the input.
func (p *BenchParser) Flush() (event.LogBench, bool) {
	switch p.mode {
	case benchServing:
		return p.finishServing()
	case benchOneBatch:
		return p.finishOneBatch()
	}
	return event.LogBench{}, false
}

// isBenchStart reports whether line can start benchmark output (idleLine
// would start a result on it).
func isBenchStart(line []byte) bool {
	if bytes.Index(line, kwServingResult) >= 0 {
		return true
	}
	t := bytes.TrimSpace(line)
	return bytes.Equal(t, kwWarmupPass) || bytes.Equal(t, kwBenchPass) || bytes.HasPrefix(t, kwOBPrefill)
}

// idleLine looks for the start of a result and reports whether one started.
func (p *BenchParser) idleLine(line []byte, lineNo int) bool {
	if bytes.Index(line, kwServingResult) >= 0 {
		*p = BenchParser{mode: benchServing, cur: event.LogBench{Line: lineNo}}
		return true
	}
	t := bytes.TrimSpace(line)
	switch {
	case bytes.Equal(t, kwWarmupPass):
		*p = BenchParser{mode: benchOneBatch, cur: event.LogBench{Tool: ToolSGLangBenchOneBatch, Line: lineNo}}
	case bytes.Equal(t, kwBenchPass):
		*p = BenchParser{mode: benchOneBatch, pass: true, cur: event.LogBench{Tool: ToolSGLangBenchOneBatch, Line: lineNo}}
	case bytes.HasPrefix(t, kwOBPrefill):
		// Output without pass headers (older bench_latency).
		*p = BenchParser{mode: benchOneBatch, pass: true, cur: event.LogBench{Tool: ToolSGLangBenchOneBatch, Line: lineNo}}
		p.oneBatchLine(line)
	default:
		return false
	}
	return true
}

// servingLine reads one line inside a Serving Benchmark Result table. done
// reports the end of the table; consumed is false when the line is not
// part of it and must be looked at again.
func (p *BenchParser) servingLine(line []byte) (done, consumed bool) {
	t := bytes.TrimSpace(line)
	switch {
	case len(t) == 0:
		return true, true
	case allByte(t, '='):
		return true, true
	case t[0] == '-' && t[len(t)-1] == '-':
		return false, true // section header: ----Time to First Token----
	}
	label, value, ok := benchRow(line)
	if !ok {
		return true, false
	}
	b := &p.cur
	num := func(bit event.LogBenchFields, dst *float64) {
		if f, ok := parseFloat(value); ok {
			*dst = f
			b.Has |= bit
		}
	}
	rate := func() {
		if string(value) == "inf" { // no rate limit: all requests at once
			b.RequestRate = math.Inf(1)
			b.Has |= HasRequestRate
			return
		}
		num(HasRequestRate, &b.RequestRate)
	}
	integer := func(bit event.LogBenchFields, dst *int) {
		if n, ok := parseInt(value); ok {
			*dst = int(n)
			b.Has |= bit
		}
	}
	integer64 := func(bit event.LogBenchFields, dst *int64) {
		if n, ok := parseInt(value); ok {
			*dst = n
			b.Has |= bit
		}
	}
	switch string(label) {
	case "Backend:":
		p.sglang = true
		if len(value) > 0 {
			b.Backend = sanitize.Line(value)
			b.Has |= HasBackend
		}
	case "Traffic request rate:":
		p.sglang = true
		rate()
	case "Request rate configured (RPS):":
		p.vllm = true
		rate()
	case "Max request concurrency:", "Max reqeuest concurrency:": // v0.4.0 typo
		p.sglang = true
		integer(HasMaxConcurrency, &b.MaxConcurrency)
	case "Maximum request concurrency:":
		p.vllm = true
		integer(HasMaxConcurrency, &b.MaxConcurrency)
	case "Successful requests:":
		integer(HasSuccessfulRequests, &b.SuccessfulRequests)
	case "Failed requests:":
		p.vllm = true
		integer(HasFailedRequests, &b.FailedRequests)
	case "Benchmark duration (s):":
		num(HasDuration, &b.DurationS)
	case "Total input tokens:":
		integer64(HasTotalInputTokens, &b.TotalInputTokens)
	case "Total generated tokens:":
		integer64(HasTotalGeneratedTokens, &b.TotalGeneratedTokens)
	case "Total generated tokens (retokenized):", "Mean E2E Latency (ms):", "Median E2E Latency (ms):", "Concurrency:":
		p.sglang = true
		switch string(label) {
		case "Mean E2E Latency (ms):":
			num(HasE2EMean, &b.E2EMeanMs)
		case "Median E2E Latency (ms):":
			num(HasE2EMedian, &b.E2EMedianMs)
		case "Concurrency:":
			num(HasConcurrency, &b.Concurrency)
		}
	case "Request throughput (req/s):":
		num(HasRequestThroughput, &b.RequestThroughput)
	case "Input token throughput (tok/s):":
		num(HasInputTokPerSec, &b.InputTokPerSec)
	case "Output token throughput (tok/s):":
		num(HasOutputTokPerSec, &b.OutputTokPerSec)
	case "Total Token throughput (tok/s):": // vLLM 2025 spelling
		p.vllm = true
		num(HasTotalTokPerSec, &b.TotalTokPerSec)
	case "Total token throughput (tok/s):":
		num(HasTotalTokPerSec, &b.TotalTokPerSec)
	case "Request goodput (req/s):", "Peak output token throughput (tok/s):", "Peak concurrent requests:":
		p.vllm = true
	case "Mean TTFT (ms):":
		num(HasTTFTMean, &b.TTFTMeanMs)
	case "Median TTFT (ms):":
		num(HasTTFTMedian, &b.TTFTMedianMs)
	case "P99 TTFT (ms):":
		num(HasTTFTP99, &b.TTFTP99Ms)
	case "Mean TPOT (ms):":
		num(HasTPOTMean, &b.TPOTMeanMs)
	case "Median TPOT (ms):":
		num(HasTPOTMedian, &b.TPOTMedianMs)
	case "P99 TPOT (ms):":
		num(HasTPOTP99, &b.TPOTP99Ms)
	case "Mean ITL (ms):":
		num(HasITLMean, &b.ITLMeanMs)
	case "Median ITL (ms):":
		num(HasITLMedian, &b.ITLMedianMs)
	case "P99 ITL (ms):":
		num(HasITLP99, &b.ITLP99Ms)
	}
	return false, true
}

// benchRow splits a table row. The tools print "{:<40} {:<10}", so the
// label is line[:40] right-trimmed and the value line[41:] trimmed; when
// the padding was lost (pasted tables) the label ends at its colon.
func benchRow(line []byte) (label, value []byte, ok bool) {
	line = bytes.TrimRight(line, " \r\t")
	if len(line) > 41 && line[40] == ' ' {
		l := bytes.TrimRight(line[:40], " ")
		if len(l) > 1 && l[len(l)-1] == ':' && bytes.IndexByte(l, ':') == len(l)-1 {
			return l, bytes.TrimSpace(line[41:]), true
		}
	}
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return nil, nil, false
	}
	return bytes.TrimSpace(line[:i+1]), bytes.TrimSpace(line[i+1:]), true
}

func (p *BenchParser) finishServing() (event.LogBench, bool) {
	b, ok := p.cur, p.cur.Has != 0
	switch {
	case p.sglang:
		b.Tool = ToolSGLangBenchServing
	case p.vllm:
		b.Tool = ToolVLLMBenchServe
	}
	*p = BenchParser{}
	return b, ok
}

// oneBatchLine reads one line of a bench_one_batch pass. done reports the
// "Total." line; consumed is false for a line that is not part of a pass.
func (p *BenchParser) oneBatchLine(line []byte) (done, consumed bool) {
	t := bytes.TrimSpace(line)
	b := &p.cur
	switch {
	case bytes.HasPrefix(t, kwOBPrefill):
		lat, thr, ok := latencyThroughput(t[len(kwOBPrefill)-len("latency: "):])
		if ok {
			b.PrefillLatencyS, b.PrefillTokPerSec = lat, thr
			b.Has |= HasPrefillLatency | HasPrefillTokPerSec
		}
	case bytes.HasPrefix(t, kwOBDecodeMed):
		lat, thr, ok := latencyThroughput(t[len("Decode.  "):])
		if ok {
			b.DecodeMedianLatencyS, b.OutputTokPerSec = lat, thr
			b.Has |= HasDecodeMedianLatency | HasOutputTokPerSec
		}
	case bytes.HasPrefix(t, kwOBDecodeOld):
		if _, thr, ok := latencyThroughput(t[len("Decode.  "):]); ok {
			b.DecodeTokPerSec = append(b.DecodeTokPerSec, thr)
			b.Has |= HasDecodeTokPerSec
		}
	case bytes.HasPrefix(t, kwOBTotal):
		lat, thr, ok := latencyThroughput(t[len("Total. "):])
		if ok {
			b.TotalLatencyS, b.TotalTokPerSec = lat, thr
			b.Has |= HasTotalLatency | HasTotalTokPerSec
		}
		return true, true
	case bytes.HasPrefix(t, kwOBDecodeStep) && len(t) > len(kwOBDecodeStep) && isDigit(t[len(kwOBDecodeStep)]):
		// "Decode 0. Batch size: 1, latency: 0.00637 s, throughput:    157.09 token/s"
		dot := bytes.IndexByte(t, '.')
		if dot < 0 {
			return false, true
		}
		it := kvIter{rest: bytes.TrimSpace(t[dot+1:])}
		for {
			key, val, _, ok := it.next()
			if !ok {
				break
			}
			switch string(key) {
			case "Batch size":
				if n, ok := parseInt(val); ok {
					b.BatchSize = int(n)
					b.Has |= HasBatchSize
				}
			case "throughput":
				if v, ok := cutSuffix(val, "token/s"); ok {
					if f, ok := parseFloat(v); ok {
						b.DecodeTokPerSec = append(b.DecodeTokPerSec, f)
						b.Has |= HasDecodeTokPerSec
					}
				}
			}
		}
	case bytes.Equal(t, kwWarmupPass), bytes.Equal(t, kwBenchPass):
		return false, false // a new pass starts
	case len(t) == 0:
	default:
		return false, false
	}
	return false, true
}

// latencyThroughput reads "[median ]latency: 0.00572 s, [median ]throughput:
// 174.85 token/s".
func latencyThroughput(s []byte) (lat, thr float64, ok bool) {
	var haveLat, haveThr bool
	it := kvIter{rest: s}
	for {
		key, val, _, more := it.next()
		if !more {
			break
		}
		switch string(key) {
		case "latency", "median latency":
			if v, ok := cutSuffix(val, "s"); ok {
				lat, haveLat = parseFloat(v)
			}
		case "throughput", "median throughput":
			if v, ok := cutSuffix(val, "token/s"); ok {
				thr, haveThr = parseFloat(v)
			}
		}
	}
	return lat, thr, haveLat && haveThr
}

func (p *BenchParser) finishOneBatch() (event.LogBench, bool) {
	b, ok := p.cur, p.pass && p.cur.Has != 0
	*p = BenchParser{}
	return b, ok
}

func allByte(b []byte, c byte) bool {
	for _, x := range b {
		if x != c {
			return false
		}
	}
	return len(b) > 0
}
