package serverlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"

	"github.com/flightdeck-dev/flightdeck/remote/jsonappend"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// WriteJSONL scans the log r (see ScanLines: 1-based physical line numbers,
// a leading "# source:" line skipped but counted) and writes one JSON object
// per finding to w, one per line, in input order; this is the output of
// `flightdeck parse log`. Fields that the line did not have are omitted.
// Shapes (field order as written):
//
//	{"type":"throughput","tok_s":178.86,"rank":"TP0","accept_length":2.17,"accept_rate":0.54,
//	 "server":"sglang","engine":0,"prompt_tok_s":0,"running":1,"queued":0,"tokens":186,
//	 "token_usage":0,"cuda_graph":true,"stamp":"2025-10-22 10:27:57","line":4}
//	{"type":"prefill","rank":"TP0","new_seq":1,"new_token":48,"cached_token":0,
//	 "cache_hit_rate_pct":0,"token_usage":0,"running":0,"queued":0,"input_tok_s":559.53,
//	 "cuda_graph":true,"stamp":"…","line":3}
//	{"type":"spec_decode","mean_acceptance_length":1,"draft_acceptance_rate":0,"accepted":0,
//	 "drafted":495,"emitted":…,"system_efficiency":…,"num_spec_tokens":…,"accepted_tok_s":0,
//	 "drafted_tok_s":1.23,"per_position":[0,0,0,0,0],"engine":0,"stamp":"…","line":3}
//	{"type":"ready","server":"vllm","url":"http://0.0.0.0:8000","line":2}
//	{"type":"failure","class":"oom","rank":"TP0","line":9,"text":"…"}
//	{"type":"bench","tool":"sglang.bench_serving","backend":"sglang","output_tok_s":…,
//	 "ttft_mean_ms":…,"ttft_median_ms":…,"ttft_p99_ms":…,"itl_mean_ms":…,"itl_median_ms":…,
//	 "itl_p99_ms":…,"tpot_mean_ms":…,"tpot_median_ms":…,"tpot_p99_ms":…,"e2e_mean_ms":…,
//	 "e2e_median_ms":…,"successful_requests":…,"failed_requests":…,"duration_s":…,
//	 "total_input_tokens":…,"total_generated_tokens":…,"request_throughput":…,
//	 "input_tok_s":…,"total_tok_s":…,"max_concurrency":…,"request_rate":…,"concurrency":…,
//	 "line":2}
//
// bench_one_batch adds "batch_size", "prefill_latency_s", "prefill_tok_s",
// "decode_tok_s" (list), "decode_median_latency_s", "decode_median_tok_s"
// (equal to output_tok_s) and "total_latency_s". token_usage and
// draft_acceptance_rate are fractions 0–1 (vLLM prints percentages). A
// "request_rate" of "inf" is written as the string "inf". Strings and
// numbers are written as encoding/json writes them (remote/jsonappend,
// without HTML escaping).
//
// A throughput record of a point that the cockpit's tok/s series drops as
// SGLang's idle artefact (the near-zero first decode line after idle; see
// Aggregator, whose rule decides) ends in "idle_artifact":true; the field
// is absent otherwise. The rule needs the next point, so records from such
// a point up to the next one are held back and written, in input order,
// once it is decided (at the end of input for the last point). Only the
// lines that make up the point are marked: with SGLang TP and no DP, the
// TP0 (or untagged) line, since the Aggregator ignores the other ranks'
// copies of it.
//
// When failures were found, a last object summarises them in the terms of
// the fixtures' MANIFEST: {"type":"failure_summary","failure":"nccl",
// "failure_also":["oom","traceback"],"rank":"…","line":N} where failure is
// the primary class (Classifier.Primary) and line is its first line.
//
// Text fields are sanitised (probes/sanitize). Input whose first KiB is
// not text (a NUL byte, gzip/zstd/xz/bzip2 or UTF-16 data, more than a
// quarter invalid UTF-8) is refused before anything is written, with an
// error wrapping ErrBinaryInput; empty input writes nothing and is not an
// error. Otherwise it returns the first read or write error. When r is an
// *os.File of a regular file of 1 MiB or more, the file is read through a
// memory mapping from its offset (then whatever was appended since, with
// read); if it is truncated meanwhile, the error wraps ErrInputShrank.
func WriteJSONL(w io.Writer, r io.Reader) error {
	if f, ok := r.(*os.File); ok {
		if mf := mapFile(f); mf != nil {
			defer mf.unmap()
			return writeJSONLMapped(w, mf)
		}
	}
	// Reads of a block or more bypass the bufio buffer once it is drained,
	// so the sniffing costs one small copy.
	br := bufio.NewReaderSize(r, 4096)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return fmt.Errorf("serverlog: read log: %w", err)
	}
	return writeJSONL(w, head, &blockSource{r: br, maxLine: MaxLineBytes}, faultGuard{})
}

// writeJSONLMapped is WriteJSONL for a mapped file.
func writeJSONLMapped(w io.Writer, mf *mappedFile) error {
	src, err := mf.source(MaxLineBytes)
	if err != nil {
		return fmt.Errorf("serverlog: read log: %w", err)
	}
	guard := faultGuard{mf}
	var head []byte
	if err := guard.run(func() { head = append(head, mf.data[:min(len(mf.data), sniffLen)]...) }); err != nil {
		return err
	}
	if err := writeJSONL(w, head, src, guard); err != nil {
		return err
	}
	if mf.shrank() {
		// Pages past the new end may have read as zeros.
		return fmt.Errorf("serverlog: read log: %w", ErrInputShrank)
	}
	return nil
}

// writeJSONL is WriteJSONL over src, whose first bytes are head (up to
// sniffLen of them).
func writeJSONL(w io.Writer, head []byte, src lineSource, guard faultGuard) error {
	if why := sanitize.NotText(head, len(head) == sniffLen); why != "" {
		return fmt.Errorf("serverlog: %w: %s", ErrBinaryInput, why)
	}
	enc := jsonlWriter{w: w, buf: make([]byte, 0, 64<<10)}
	// The workers encode the parsers' findings; the ordered merge passes
	// them to the idle marker (and encodes the few findings of the
	// stateful part), which writes them out in order.
	mark := newIdleMarker(enc.write)
	pre, emit := jsonlPre(mark, true, enc.endRun)
	s, err := scanSource(src, guard, emit, &pre, runtime.GOMAXPROCS(0), scanBlockSize)
	mark.flush()
	if err != nil {
		enc.flush()
		return err
	}
	if p, ok := s.Primary(); ok {
		enc.summary(p, s.Failures())
	}
	return enc.flush()
}

// jsonlPre returns WriteJSONL's preEncoder and emit, which pass the
// records in order to mark: the workers encode the parsers' findings (and,
// with fast, write the records of SGLang's batch lines from their text);
// emit encodes the few findings of the stateful part. blockDone is called
// when a block's records have been passed on.
func jsonlPre(mark *idleMarker, fast bool, blockDone func()) (preEncoder, func(event.Payload)) {
	var scratch []byte
	emit := func(p event.Payload) {
		scratch = appendPayload(scratch[:0], p)
		mark.record(p, scratch, false)
	}
	return preEncoder{
		encode:    appendPayload,
		item:      func(p event.Payload, enc []byte) { mark.record(p, enc, true) },
		fast:      fast,
		point:     mark.recordPoint,
		prefill:   func(enc []byte) { mark.pass(enc, true, false, 0) },
		blockDone: blockDone,
	}, emit
}

// jsonlWriter writes JSON records out in large pieces: records that stay
// valid until their block ends (the workers' encodings, which lie one
// after another in the block's buffer) are gathered as one run of that
// buffer and written with one Write, others are copied to buf. Output is
// buf, then run. It remembers the first write error and then stops
// writing.
type jsonlWriter struct {
	w   io.Writer
	buf []byte
	run []byte // stable records not yet written, after buf
	err error
}

func (e *jsonlWriter) flush() error {
	e.endRun()
	return e.err
}

// endRun writes buf and run out; a block's records must be written
// before its buffer is reused.
func (e *jsonlWriter) endRun() {
	e.put(e.buf)
	e.buf = e.buf[:0]
	e.put(e.run)
	e.run = nil
}

func (e *jsonlWriter) put(b []byte) {
	if e.err == nil && len(b) > 0 {
		_, e.err = e.w.Write(b)
	}
}

// write writes records that appendPayload encoded; stable says that they
// stay valid until endRun.
func (e *jsonlWriter) write(records []byte, stable bool) {
	if len(records) == 0 {
		return
	}
	if stable {
		// The next records in the same buffer extend the run.
		if rest := e.run[len(e.run):cap(e.run)]; len(e.run) > 0 && len(rest) >= len(records) && &rest[0] == &records[0] {
			e.run = e.run[:len(e.run)+len(records)]
			return
		}
		if len(e.run) > 0 || len(e.buf) >= 60<<10 {
			e.endRun()
		}
		e.run = records
		return
	}
	if len(e.run) > 0 {
		e.endRun()
	}
	if len(records) >= 16<<10 {
		e.endRun()
		e.put(records)
		return
	}
	e.buf = append(e.buf, records...)
	if len(e.buf) >= 60<<10 {
		e.endRun()
	}
}

// appendPayload appends the JSON record of p and its newline to b;
// payloads of other kinds append nothing.
func appendPayload(b []byte, p event.Payload) []byte {
	switch v := p.(type) {
	case event.Throughput:
		b = appendThroughput(b, v)
	case event.Prefill:
		b = appendPrefill(b, v)
	case event.SpecDecode:
		b = appendSpec(b, v)
	case event.ServerReady:
		b = append(b, `{"type":"ready"`...)
		b = strField(b, `,"server":`, v.Server)
		b = strField(b, `,"url":`, v.URL)
		b = intField(b, `,"line":`, int64(v.Line))
		b = append(b, "}\n"...)
	case event.ServerFailure:
		b = append(b, `{"type":"failure"`...)
		b = strField(b, `,"class":`, string(v.Class))
		b = strField(b, `,"rank":`, v.Rank)
		b = intField(b, `,"line":`, int64(v.Line))
		b = appendKey(b, `,"text":`)
		b = jsonappend.String(b, v.Text)
		b = append(b, "}\n"...)
	case event.LogBench:
		b = appendBench(b, v)
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState,
		event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale,
		event.GitAction, event.GitMoved, event.GitStatus, event.JournalStatus, event.Key,
		event.KillStep, event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset,
		event.Note, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
		event.ServerHealthy, event.ServerLaunched, event.ServerObserved, event.ServerStatus,
		event.Session, event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// not a parser's output
	}
	return b
}

func (e *jsonlWriter) summary(primary event.ServerFailure, all []event.ServerFailure) {
	if len(e.run) > 0 {
		e.endRun() // buf is written before run
	}
	b := append(e.buf, `{"type":"failure_summary"`...)
	b = strField(b, `,"failure":`, string(primary.Class))
	b = appendKey(b, `,"failure_also":`)
	b = append(b, '[')
	n := 0
	for _, f := range all {
		if f.Class == primary.Class {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = jsonappend.String(b, string(f.Class))
		n++
	}
	b = append(b, ']')
	b = strField(b, `,"rank":`, primary.Rank)
	b = intField(b, `,"line":`, int64(primary.Line))
	e.buf = append(b, "}\n"...)
}

func appendThroughput(b []byte, t event.Throughput) []byte {
	b = append(b, `{"type":"throughput"`...)
	b = floatField(b, `,"tok_s":`, t.TokPerSec)
	b = strField(b, `,"rank":`, t.Rank)
	if t.Has&event.HasAcceptLength != 0 {
		b = floatField(b, `,"accept_length":`, t.AcceptLength)
	}
	if t.Has&event.HasAcceptRate != 0 {
		b = floatField(b, `,"accept_rate":`, t.AcceptRate)
	}
	b = strField(b, `,"server":`, t.Server)
	if t.Engine >= 0 {
		b = intField(b, `,"engine":`, int64(t.Engine))
	}
	if t.Has&event.HasPromptTokPerSec != 0 {
		b = floatField(b, `,"prompt_tok_s":`, t.PromptTokPerSec)
	}
	if t.Has&event.HasRunning != 0 {
		b = intField(b, `,"running":`, int64(t.Running))
	}
	if t.Has&event.HasQueued != 0 {
		b = intField(b, `,"queued":`, int64(t.Queued))
	}
	if t.Has&event.HasTokens != 0 {
		b = intField(b, `,"tokens":`, t.Tokens)
	}
	if t.Has&event.HasTokenUsage != 0 {
		b = floatField(b, `,"token_usage":`, round9(t.TokenUsage))
	}
	if t.Has&event.HasCUDAGraph != 0 {
		b = boolField(b, `,"cuda_graph":`, t.CUDAGraph)
	}
	b = strField(b, `,"stamp":`, t.Stamp)
	b = intField(b, `,"line":`, int64(t.Line))
	return append(b, "}\n"...)
}

func appendPrefill(b []byte, p event.Prefill) []byte {
	b = append(b, `{"type":"prefill"`...)
	b = strField(b, `,"rank":`, p.Rank)
	if p.Has&event.HasNewSeq != 0 {
		b = intField(b, `,"new_seq":`, int64(p.NewSeq))
	}
	if p.Has&event.HasNewTokens != 0 {
		b = intField(b, `,"new_token":`, p.NewTokens)
	}
	if p.Has&event.HasCachedTokens != 0 {
		b = intField(b, `,"cached_token":`, p.CachedTokens)
	}
	if p.Has&event.HasCacheHitRate != 0 {
		b = floatField(b, `,"cache_hit_rate_pct":`, p.CacheHitRatePct)
	}
	if p.Has&event.HasPrefillTokenUsage != 0 {
		b = floatField(b, `,"token_usage":`, p.TokenUsage)
	}
	if p.Has&event.HasPrefillRunning != 0 {
		b = intField(b, `,"running":`, int64(p.Running))
	}
	if p.Has&event.HasPrefillQueued != 0 {
		b = intField(b, `,"queued":`, int64(p.Queued))
	}
	if p.Has&event.HasPrefillInputTokPerSec != 0 {
		b = floatField(b, `,"input_tok_s":`, p.InputTokPerSec)
	}
	if p.Has&event.HasPrefillCUDAGraph != 0 {
		b = boolField(b, `,"cuda_graph":`, p.CUDAGraph)
	}
	b = strField(b, `,"stamp":`, p.Stamp)
	b = intField(b, `,"line":`, int64(p.Line))
	return append(b, "}\n"...)
}

func appendSpec(b []byte, s event.SpecDecode) []byte {
	b = append(b, `{"type":"spec_decode"`...)
	if s.Has&HasMeanAcceptLength != 0 {
		b = floatField(b, `,"mean_acceptance_length":`, s.MeanAcceptLength)
	}
	if s.Has&HasDraftAcceptRate != 0 {
		b = floatField(b, `,"draft_acceptance_rate":`, round9(s.DraftAcceptRate))
	}
	if s.Has&HasAccepted != 0 {
		b = intField(b, `,"accepted":`, s.Accepted)
	}
	if s.Has&HasDrafted != 0 {
		b = intField(b, `,"drafted":`, s.Drafted)
	}
	if s.Has&HasEmitted != 0 {
		b = intField(b, `,"emitted":`, s.Emitted)
	}
	if s.Has&HasSystemEfficiency != 0 {
		b = floatField(b, `,"system_efficiency":`, s.SystemEfficiency)
	}
	if s.Has&HasNumSpecTokens != 0 {
		b = intField(b, `,"num_spec_tokens":`, int64(s.NumSpecTokens))
	}
	if s.Has&HasAcceptedTokPerSec != 0 {
		b = floatField(b, `,"accepted_tok_s":`, s.AcceptedTokPerSec)
	}
	if s.Has&HasDraftedTokPerSec != 0 {
		b = floatField(b, `,"drafted_tok_s":`, s.DraftedTokPerSec)
	}
	if s.Has&HasPerPosition != 0 {
		b = floatList(b, `,"per_position":`, s.PerPosition)
	}
	if s.Engine >= 0 {
		b = intField(b, `,"engine":`, int64(s.Engine))
	}
	b = strField(b, `,"stamp":`, s.Stamp)
	b = intField(b, `,"line":`, int64(s.Line))
	return append(b, "}\n"...)
}

func appendBench(b []byte, v event.LogBench) []byte {
	b = append(b, `{"type":"bench"`...)
	b = strField(b, `,"tool":`, v.Tool)
	b = strField(b, `,"backend":`, v.Backend)
	fields := []struct {
		bit event.LogBenchFields
		key string
		val float64
	}{
		{HasOutputTokPerSec, `,"output_tok_s":`, v.OutputTokPerSec},
		{HasTTFTMean, `,"ttft_mean_ms":`, v.TTFTMeanMs},
		{HasTTFTMedian, `,"ttft_median_ms":`, v.TTFTMedianMs},
		{HasTTFTP99, `,"ttft_p99_ms":`, v.TTFTP99Ms},
		{HasITLMean, `,"itl_mean_ms":`, v.ITLMeanMs},
		{HasITLMedian, `,"itl_median_ms":`, v.ITLMedianMs},
		{HasITLP99, `,"itl_p99_ms":`, v.ITLP99Ms},
		{HasTPOTMean, `,"tpot_mean_ms":`, v.TPOTMeanMs},
		{HasTPOTMedian, `,"tpot_median_ms":`, v.TPOTMedianMs},
		{HasTPOTP99, `,"tpot_p99_ms":`, v.TPOTP99Ms},
		{HasE2EMean, `,"e2e_mean_ms":`, v.E2EMeanMs},
		{HasE2EMedian, `,"e2e_median_ms":`, v.E2EMedianMs},
	}
	for _, f := range fields {
		if v.Has&f.bit != 0 {
			b = floatField(b, f.key, f.val)
		}
	}
	if v.Has&HasSuccessfulRequests != 0 {
		b = intField(b, `,"successful_requests":`, int64(v.SuccessfulRequests))
	}
	if v.Has&HasFailedRequests != 0 {
		b = intField(b, `,"failed_requests":`, int64(v.FailedRequests))
	}
	if v.Has&HasDuration != 0 {
		b = floatField(b, `,"duration_s":`, v.DurationS)
	}
	if v.Has&HasTotalInputTokens != 0 {
		b = intField(b, `,"total_input_tokens":`, v.TotalInputTokens)
	}
	if v.Has&HasTotalGeneratedTokens != 0 {
		b = intField(b, `,"total_generated_tokens":`, v.TotalGeneratedTokens)
	}
	if v.Has&HasRequestThroughput != 0 {
		b = floatField(b, `,"request_throughput":`, v.RequestThroughput)
	}
	if v.Has&HasInputTokPerSec != 0 {
		b = floatField(b, `,"input_tok_s":`, v.InputTokPerSec)
	}
	if v.Has&HasTotalTokPerSec != 0 {
		b = floatField(b, `,"total_tok_s":`, v.TotalTokPerSec)
	}
	if v.Has&HasMaxConcurrency != 0 {
		b = intField(b, `,"max_concurrency":`, int64(v.MaxConcurrency))
	}
	if v.Has&HasRequestRate != 0 {
		b = floatField(b, `,"request_rate":`, v.RequestRate)
	}
	if v.Has&HasConcurrency != 0 {
		b = floatField(b, `,"concurrency":`, v.Concurrency)
	}
	if v.Tool == ToolSGLangBenchOneBatch {
		if v.Has&HasBatchSize != 0 {
			b = intField(b, `,"batch_size":`, int64(v.BatchSize))
		}
		if v.Has&HasPrefillLatency != 0 {
			b = floatField(b, `,"prefill_latency_s":`, v.PrefillLatencyS)
		}
		if v.Has&HasPrefillTokPerSec != 0 {
			b = floatField(b, `,"prefill_tok_s":`, v.PrefillTokPerSec)
		}
		if v.Has&HasDecodeTokPerSec != 0 {
			b = floatList(b, `,"decode_tok_s":`, v.DecodeTokPerSec)
		}
		if v.Has&HasDecodeMedianLatency != 0 {
			b = floatField(b, `,"decode_median_latency_s":`, v.DecodeMedianLatencyS)
		}
		if v.Has&HasOutputTokPerSec != 0 {
			b = floatField(b, `,"decode_median_tok_s":`, v.OutputTokPerSec)
		}
		if v.Has&HasTotalLatency != 0 {
			b = floatField(b, `,"total_latency_s":`, v.TotalLatencyS)
		}
	}
	b = intField(b, `,"line":`, int64(v.Line))
	return append(b, "}\n"...)
}

// appendKey appends key, which carries its punctuation: `,"name":`.
func appendKey(b []byte, key string) []byte {
	return append(b, key...)
}

// strField writes a string field, omitted when empty.
func strField(b []byte, key, val string) []byte {
	if val == "" {
		return b
	}
	return jsonappend.String(appendKey(b, key), val)
}

func intField(b []byte, key string, v int64) []byte {
	return strconv.AppendInt(appendKey(b, key), v, 10)
}

func boolField(b []byte, key string, v bool) []byte {
	return strconv.AppendBool(appendKey(b, key), v)
}

func floatField(b []byte, key string, v float64) []byte {
	return jsonappend.Float(appendKey(b, key), v)
}

func floatList(b []byte, key string, v []float64) []byte {
	b = append(appendKey(b, key), '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonappend.Float(b, f)
	}
	return append(b, ']')
}

// round9 rounds a fraction computed from a printed percentage (95.9/100 =
// 0.9590000000000001) back to the digits the log had.
func round9(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) || math.Abs(v) > 1e9 {
		return v
	}
	return math.Round(v*1e9) / 1e9
}
