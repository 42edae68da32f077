package serverlog

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// manifestEntry is one fixture of testdata/MANIFEST.json (a copy of
// ../shared/fixtures/MANIFEST.json).
type manifestEntry struct {
	File   string                     `json:"file"`
	Kind   string                     `json:"kind"`
	Expect map[string]json.RawMessage `json:"expect"`
}

// coveredKinds are the fixture kinds whose expectations this package owns.
var coveredKinds = []string{"sglang-log", "vllm-log", "bench-table", "tgi-log", "trtllm-log"}

// ignoredKeys are expectations about start-up and configuration lines
// (KV-cache sizing, graph capture, launch args, routes, ...) that no parser
// of this slice reads. Every other key must be checked below, so a key
// added to the manifest cannot be skipped silently.
var ignoredKeys = map[string]bool{
	"note": true, "available_kv_cache_gib": true, "cuda_failure": true, "cuda_graph_bs_count": true,
	"cuda_graph_capture_end": true, "dead_worker": true, "engine_size_mib": true, "glued_records": true,
	"http_404": true, "init_engine_seconds": true, "kv_cache_bytes": true, "kv_cache_tokens": true,
	"kv_k_size_gb": true, "kv_v_size_gb": true, "load_weight_begin_avail_mem_gb": true,
	"load_weight_mem_usage_gb": true, "max_batch_size": true, "max_concurrency_tokens_per_request": true,
	"max_tokens_in_paged_kv_cache": true, "nccl_version": true, "num_gpu_blocks": true, "oom": true,
	"ranks": true, "records": true, "routes": true, "server_args": true, "warnings": true,
	"watchdog_timeout_s": true,
}

// scanned is everything Scan reported for one fixture.
type scanned struct {
	tput    []event.Throughput
	prefill []event.Prefill
	spec    []event.SpecDecode
	ready   []event.ServerReady
	fails   []event.ServerFailure
	bench   []event.LogBench
	primary event.ServerFailure
	hasPrim bool
	seen    []event.ServerFailure
}

func scanFixture(t *testing.T, file string) scanned {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", filepath.Base(file)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out scanned
	s, err := Scan(f, func(p event.Payload) {
		switch v := p.(type) {
		case event.Throughput:
			out.tput = append(out.tput, v)
		case event.Prefill:
			out.prefill = append(out.prefill, v)
		case event.SpecDecode:
			out.spec = append(out.spec, v)
		case event.ServerReady:
			out.ready = append(out.ready, v)
		case event.ServerFailure:
			out.fails = append(out.fails, v)
		case event.LogBench:
			out.bench = append(out.bench, v)
		default:
			t.Errorf("unexpected payload %T", p)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	out.primary, out.hasPrim = s.Primary()
	out.seen = s.Failures()
	return out
}

func loadManifest(t *testing.T) []manifestEntry {
	t.Helper()
	raw, err := os.ReadFile("testdata/MANIFEST.json")
	if err != nil {
		t.Fatal(err)
	}
	var all []manifestEntry
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	var out []manifestEntry
	for _, e := range all {
		if slices.Contains(coveredKinds, e.Kind) {
			out = append(out, e)
		}
	}
	return out
}

func TestFixtures(t *testing.T) {
	entries := loadManifest(t)
	if len(entries) < 30 {
		t.Fatalf("only %d covered fixtures in the manifest copy", len(entries))
	}
	for _, e := range entries {
		t.Run(filepath.Base(e.File), func(t *testing.T) {
			got := scanFixture(t, e.File)
			for key, raw := range e.Expect {
				if ignoredKeys[key] {
					continue
				}
				if !checkKey(t, e, key, raw, got) {
					t.Errorf("manifest key %q is not checked by this test", key)
				}
			}
			if e.Kind == "tgi-log" || e.Kind == "trtllm-log" {
				if len(got.tput)+len(got.ready)+len(got.fails)+len(got.prefill)+len(got.spec)+len(got.bench) != 0 {
					t.Errorf("%s fixture gave findings: %+v", e.Kind, got)
				}
			}
		})
	}
}

// checkKey checks one expectation; it returns false for a key it does not
// know.
func checkKey(t *testing.T, e manifestEntry, key string, raw json.RawMessage, got scanned) bool {
	t.Helper()
	switch key {
	case "gen_throughput":
		var want []struct {
			TokS   float64  `json:"tok_s"`
			Rank   *string  `json:"rank"`
			Prompt *float64 `json:"prompt_tok_s"`
			Engine *int     `json:"engine"`
		}
		mustDecode(t, raw, &want)
		if len(got.tput) != len(want) {
			t.Fatalf("gen_throughput: got %d values %v, want %d", len(got.tput), tokS(got.tput), len(want))
		}
		for i, w := range want {
			g := got.tput[i]
			wantRank := ""
			if w.Rank != nil {
				wantRank = *w.Rank
			}
			if g.TokPerSec != w.TokS || g.Rank != wantRank {
				t.Errorf("gen_throughput[%d] = %v %q, want %v %q", i, g.TokPerSec, g.Rank, w.TokS, wantRank)
			}
			if w.Prompt != nil && (g.Has&event.HasPromptTokPerSec == 0 || g.PromptTokPerSec != *w.Prompt) {
				t.Errorf("prompt_tok_s[%d] = %v (has %v), want %v", i, g.PromptTokPerSec, g.Has&event.HasPromptTokPerSec != 0, *w.Prompt)
			}
			if w.Engine != nil && g.Engine != *w.Engine {
				t.Errorf("engine[%d] = %d, want %d", i, g.Engine, *w.Engine)
			}
			if w.Prompt == nil && g.Has&event.HasPromptTokPerSec != 0 {
				t.Errorf("gen_throughput[%d]: prompt_tok_s %v present but not in the manifest", i, g.PromptTokPerSec)
			}
		}
	case "accept_length":
		var want []float64
		mustDecode(t, raw, &want)
		var have []float64
		for _, v := range got.tput {
			if v.Has&event.HasAcceptLength != 0 {
				have = append(have, v.AcceptLength)
			}
		}
		for _, s := range got.spec {
			if s.Has&HasMeanAcceptLength != 0 {
				have = append(have, s.MeanAcceptLength)
			}
		}
		equalFloats(t, key, have, want)
	case "accept_rate":
		var want []float64
		mustDecode(t, raw, &want)
		var have []float64
		for _, v := range got.tput {
			if v.Has&event.HasAcceptRate != 0 {
				have = append(have, v.AcceptRate)
			}
		}
		equalFloats(t, key, have, want)
	case "cuda_graph":
		var want []bool
		mustDecode(t, raw, &want)
		var have []bool
		for _, v := range got.tput {
			if v.Has&event.HasCUDAGraph != 0 {
				have = append(have, v.CUDAGraph)
			}
		}
		if !slices.Equal(have, want) {
			t.Errorf("cuda_graph = %v, want %v", have, want)
		}
	case "running_req", "running", "waiting":
		var want []int
		mustDecode(t, raw, &want)
		var have []int
		for _, v := range got.tput {
			if key == "waiting" {
				if v.Has&event.HasQueued != 0 {
					have = append(have, v.Queued)
				}
			} else if v.Has&event.HasRunning != 0 {
				have = append(have, v.Running)
			}
		}
		if !slices.Equal(have, want) {
			t.Errorf("%s = %v, want %v", key, have, want)
		}
	case "gpu_kv_cache_pct":
		var want []float64
		mustDecode(t, raw, &want)
		var have []float64
		for _, v := range got.tput {
			if v.Has&event.HasTokenUsage != 0 {
				have = append(have, v.TokenUsage*100)
			}
		}
		equalFloats(t, key, have, want)
	case "ready":
		var want bool
		mustDecode(t, raw, &want)
		if (len(got.ready) > 0) != want {
			t.Errorf("ready = %v (%+v), want %v", len(got.ready) > 0, got.ready, want)
		}
	case "ready_line":
		var want string
		mustDecode(t, raw, &want)
		if len(got.ready) != 1 || !strings.Contains(got.ready[0].Text, want) {
			t.Errorf("ready line = %+v, want one containing %q", got.ready, want)
		}
	case "url":
		var want string
		mustDecode(t, raw, &want)
		if len(got.ready) != 1 || got.ready[0].URL != want {
			t.Errorf("ready url = %+v, want %q", got.ready, want)
		}
	case "failure":
		var want *string
		mustDecode(t, raw, &want)
		if want == nil {
			if len(got.fails) != 0 {
				t.Errorf("failures %+v, want none", got.fails)
			}
			return true
		}
		if !got.hasPrim || string(got.primary.Class) != *want {
			t.Errorf("primary failure = %q (found %v), want %q", got.primary.Class, got.hasPrim, *want)
		}
		var also []string
		if r, ok := e.Expect["failure_also"]; ok {
			mustDecode(t, r, &also)
		}
		wantSet := append([]string{*want}, also...)
		var haveSet []string
		for _, f := range got.seen {
			haveSet = append(haveSet, string(f.Class))
		}
		slices.Sort(wantSet)
		slices.Sort(haveSet)
		if !slices.Equal(haveSet, wantSet) {
			t.Errorf("failure classes = %v, want %v", haveSet, wantSet)
		}
	case "failure_also":
		// Checked with "failure".
	case "failing_rank":
		var want string
		mustDecode(t, raw, &want)
		if got.primary.Rank != want {
			t.Errorf("failing rank = %q, want %q", got.primary.Rank, want)
		}
	case "exception":
		var want *string
		mustDecode(t, raw, &want)
		if want != nil && got.primary.Text != *want {
			t.Errorf("primary failure text = %q, want %q", got.primary.Text, *want)
		}
	case "prefill":
		var want []struct {
			NewToken     int64    `json:"new_token"`
			CachedToken  int64    `json:"cached_token"`
			CacheHitRate *float64 `json:"cache_hit_rate_pct"`
			QueueReq     *int     `json:"queue_req"`
		}
		mustDecode(t, raw, &want)
		if len(got.prefill) != len(want) {
			t.Fatalf("prefill: got %d lines, want %d", len(got.prefill), len(want))
		}
		for i, w := range want {
			g := got.prefill[i]
			if g.NewTokens != w.NewToken || g.CachedTokens != w.CachedToken {
				t.Errorf("prefill[%d] new/cached = %d/%d, want %d/%d", i, g.NewTokens, g.CachedTokens, w.NewToken, w.CachedToken)
			}
			if w.CacheHitRate != nil && (g.Has&event.HasCacheHitRate == 0 || g.CacheHitRatePct != *w.CacheHitRate) {
				t.Errorf("prefill[%d] cache hit rate = %v, want %v", i, g.CacheHitRatePct, *w.CacheHitRate)
			}
			if w.CacheHitRate == nil && g.Has&event.HasCacheHitRate != 0 {
				t.Errorf("prefill[%d] has a cache hit rate the line does not print", i)
			}
			if w.QueueReq != nil && (g.Has&event.HasPrefillQueued == 0 || g.Queued != *w.QueueReq) {
				t.Errorf("prefill[%d] queue = %d, want %d", i, g.Queued, *w.QueueReq)
			}
		}
	case "spec_decode":
		var want []map[string]any
		mustDecode(t, raw, &want)
		if len(got.spec) != len(want) {
			t.Fatalf("spec_decode: got %d lines, want %d", len(got.spec), len(want))
		}
		for i, w := range want {
			checkSpec(t, i, got.spec[i], w)
		}
	case "sum_over_dp_ranks_same_second":
		var want float64
		mustDecode(t, raw, &want)
		var agg Aggregator
		var rates []event.TokRate
		for _, v := range got.tput {
			rates = agg.Add(rates, v)
		}
		rates = agg.Flush(rates)
		if len(rates) != 1 || rates[0].Dropped || math.Abs(rates[0].TokPerSec-want) > 1e-9 || rates[0].Ranks != len(got.tput) {
			t.Errorf("aggregated rates = %+v, want one point of %v over %d ranks", rates, want, len(got.tput))
		}
	case "tool", "backend", "successful_requests", "output_tok_s", "ttft_mean_ms", "ttft_median_ms",
		"ttft_p99_ms", "itl_mean_ms", "itl_median_ms", "tpot_mean_ms", "tpot_median_ms", "duration_s",
		"total_generated_tokens", "max_concurrency", "request_rate", "passes", "batch_size":
		if e.Kind != "bench-table" {
			return ignoredKeys[key] || key == "max_concurrency" || key == "batch_size" // other meanings outside tables
		}
		checkBench(t, e, key, raw, got)
	default:
		return false
	}
	return true
}

func checkBench(t *testing.T, e manifestEntry, key string, raw json.RawMessage, got scanned) {
	t.Helper()
	if len(got.bench) != 1 {
		t.Fatalf("bench results: got %d, want 1", len(got.bench))
	}
	b := got.bench[0]
	num := func(bit event.LogBenchFields, have float64) {
		var want float64
		mustDecode(t, raw, &want)
		if b.Has&bit == 0 || have != want {
			t.Errorf("%s = %v (present %v), want %v", key, have, b.Has&bit != 0, want)
		}
	}
	switch key {
	case "tool":
		var want string
		mustDecode(t, raw, &want)
		if b.Tool != want {
			t.Errorf("tool = %q, want %q", b.Tool, want)
		}
	case "backend":
		var want string
		mustDecode(t, raw, &want)
		if b.Backend != want {
			t.Errorf("backend = %q, want %q", b.Backend, want)
		}
	case "successful_requests":
		num(HasSuccessfulRequests, float64(b.SuccessfulRequests))
	case "output_tok_s":
		num(HasOutputTokPerSec, b.OutputTokPerSec)
	case "ttft_mean_ms":
		num(HasTTFTMean, b.TTFTMeanMs)
	case "ttft_median_ms":
		num(HasTTFTMedian, b.TTFTMedianMs)
	case "ttft_p99_ms":
		num(HasTTFTP99, b.TTFTP99Ms)
	case "itl_mean_ms":
		num(HasITLMean, b.ITLMeanMs)
	case "itl_median_ms":
		num(HasITLMedian, b.ITLMedianMs)
	case "tpot_mean_ms":
		num(HasTPOTMean, b.TPOTMeanMs)
	case "tpot_median_ms":
		num(HasTPOTMedian, b.TPOTMedianMs)
	case "duration_s":
		num(HasDuration, b.DurationS)
	case "total_generated_tokens":
		num(HasTotalGeneratedTokens, float64(b.TotalGeneratedTokens))
	case "max_concurrency":
		num(HasMaxConcurrency, float64(b.MaxConcurrency))
	case "request_rate":
		num(HasRequestRate, b.RequestRate)
	case "batch_size":
		num(HasBatchSize, float64(b.BatchSize))
	case "passes":
		var passes []struct {
			Name                 string    `json:"name"`
			PrefillLatencyS      float64   `json:"prefill_latency_s"`
			PrefillTokS          float64   `json:"prefill_tok_s"`
			DecodeTokS           []float64 `json:"decode_tok_s"`
			DecodeMedianLatencyS float64   `json:"decode_median_latency_s"`
			DecodeMedianTokS     float64   `json:"decode_median_tok_s"`
			TotalLatencyS        float64   `json:"total_latency_s"`
			TotalTokS            float64   `json:"total_tok_s"`
		}
		mustDecode(t, raw, &passes)
		i := slices.IndexFunc(passes, func(p struct {
			Name                 string    `json:"name"`
			PrefillLatencyS      float64   `json:"prefill_latency_s"`
			PrefillTokS          float64   `json:"prefill_tok_s"`
			DecodeTokS           []float64 `json:"decode_tok_s"`
			DecodeMedianLatencyS float64   `json:"decode_median_latency_s"`
			DecodeMedianTokS     float64   `json:"decode_median_tok_s"`
			TotalLatencyS        float64   `json:"total_latency_s"`
			TotalTokS            float64   `json:"total_tok_s"`
		}) bool {
			return p.Name == "Benchmark"
		})
		if i < 0 {
			t.Fatal("manifest has no Benchmark pass")
		}
		w := passes[i]
		if b.PrefillLatencyS != w.PrefillLatencyS || b.PrefillTokPerSec != w.PrefillTokS ||
			!slices.Equal(b.DecodeTokPerSec, w.DecodeTokS) || b.DecodeMedianLatencyS != w.DecodeMedianLatencyS ||
			b.OutputTokPerSec != w.DecodeMedianTokS || b.TotalLatencyS != w.TotalLatencyS || b.TotalTokPerSec != w.TotalTokS {
			t.Errorf("bench_one_batch Benchmark pass = %+v, want %+v", b, w)
		}
	}
}

func checkSpec(t *testing.T, i int, g event.SpecDecode, w map[string]any) {
	t.Helper()
	for k, v := range w {
		want, _ := v.(float64)
		var have float64
		var bit event.SpecFields
		switch k {
		case "draft_acceptance_rate":
			have, bit = g.DraftAcceptRate, HasDraftAcceptRate
		case "draft_acceptance_rate_pct":
			have, bit = g.DraftAcceptRate*100, HasDraftAcceptRate
		case "system_efficiency":
			have, bit = g.SystemEfficiency, HasSystemEfficiency
		case "num_spec_tokens":
			have, bit = float64(g.NumSpecTokens), HasNumSpecTokens
		case "accepted":
			have, bit = float64(g.Accepted), HasAccepted
		case "drafted":
			have, bit = float64(g.Drafted), HasDrafted
		case "emitted":
			have, bit = float64(g.Emitted), HasEmitted
		case "mean_acceptance_length":
			have, bit = g.MeanAcceptLength, HasMeanAcceptLength
		case "drafted_throughput_tok_s":
			have, bit = g.DraftedTokPerSec, HasDraftedTokPerSec
		case "per_position":
			var list []float64
			for _, x := range v.([]any) {
				list = append(list, x.(float64))
			}
			if g.Has&HasPerPosition == 0 || !slices.Equal(g.PerPosition, list) {
				t.Errorf("spec_decode[%d] per_position = %v, want %v", i, g.PerPosition, list)
			}
			continue
		default:
			t.Errorf("spec_decode[%d]: key %q not checked", i, k)
			continue
		}
		if g.Has&bit == 0 || math.Abs(have-want) > 1e-9 {
			t.Errorf("spec_decode[%d] %s = %v (present %v), want %v", i, k, have, g.Has&bit != 0, want)
		}
	}
}

func mustDecode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("manifest value %s: %v", raw, err)
	}
}

func equalFloats(t *testing.T, key string, have, want []float64) {
	t.Helper()
	if len(have) != len(want) {
		t.Errorf("%s = %v, want %v", key, have, want)
		return
	}
	for i := range want {
		if math.Abs(have[i]-want[i]) > 1e-9 {
			t.Errorf("%s = %v, want %v", key, have, want)
			return
		}
	}
}

func tokS(v []event.Throughput) []float64 {
	var out []float64
	for _, x := range v {
		out = append(out, x.TokPerSec)
	}
	return out
}
