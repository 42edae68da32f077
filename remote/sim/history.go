package sim

import (
	"fmt"
	"strings"
	"time"
)

// History lengths: how many commits upstream main has after the
// checkout's baseline (the pull brings them all in).
const (
	// DefaultHistory is enough for a real bisect: the regression, three
	// commits that fail to launch, and unrelated work around them.
	DefaultHistory = 64
	// MinHistory is the shortest story: "Fix PCG MoE Error", then the CI
	// commit on top. 3 is the short story of earlier versions (a typo fix,
	// the regression, the CI commit), with the same commit ids.
	MinHistory = 2
	// MaxHistory bounds the history (one git fast-import either way; the
	// limit keeps a typo from building a huge repository).
	MaxHistory = 1000
)

// Subjects of the story's commits, as in the history.
const (
	SubjectBaseline   = "Tune default chunked prefill size for H200"
	SubjectRegressing = "Fix PCG MoE Error"
	SubjectLatest     = "[CI] Raise the nightly benchmark timeout"
)

// historyLayout is where the story's commits sit among the n commits after
// the baseline, 1-based: the regression at reg, broken commits (each fixed
// by the next one) at broken, the CI commit at n.
type historyLayout struct {
	n      int
	reg    int
	broken []int
}

// layoutFor places the regression at 5/8 of the range and up to three
// broken commits at 3/16, 1/2 and 13/16 (the first midpoint a bisect of
// the whole range tests), dropping one that would sit at either end, next
// to the regression, or on top of another.
func layoutFor(n int) historyLayout {
	l := historyLayout{n: n, reg: (5*n + 4) / 8}
	prev := -10
	for _, b := range []int{n * 3 / 16, n / 2, n * 13 / 16} {
		if b < 2 || b+1 > n-1 || (l.reg >= b-1 && l.reg <= b+2) || b < prev+3 {
			continue
		}
		l.broken = append(l.broken, b)
		prev = b
	}
	return l
}

// repoHistory is the whole scripted history: four commits up to the
// baseline, then n after it (MinHistory ≤ n ≤ MaxHistory).
func repoHistory(n int) ([]repoCommit, error) {
	if n < MinHistory || n > MaxHistory {
		return nil, fmt.Errorf("sim repo: history of %d commits: want %d to %d", n, MinHistory, MaxHistory)
	}
	h := baseHistory()
	l := layoutFor(n)
	typo := historyTypo()
	reg, latest := historyRegressing(), historyLatest()
	base := mustTime(h[len(h)-1].date)
	// Times: evenly spread between the fixed times of the story's commits,
	// a few minutes of deterministic jitter each.
	before := mustTime(typo.date) // the typo fix sits just before the regression
	if l.reg == 1 {
		before = mustTime(reg.date)
	}
	span := func(from, to time.Time, i, of int) string {
		step := to.Sub(from) / time.Duration(of+1)
		t := from.Add(step * time.Duration(i)).Add(time.Duration((i*37)%11) * time.Minute).Truncate(time.Minute)
		return t.Format(time.RFC3339)
	}
	fill := newFiller()
	brokenAt := map[int]int{}
	for k, b := range l.broken {
		brokenAt[b] = k
	}
	for pos := 1; pos <= n; pos++ {
		var c repoCommit
		switch {
		case pos == n:
			c = latest
		case pos == l.reg:
			c = reg
		case pos == l.reg-1:
			c = typo
		default:
			if k, ok := brokenAt[pos]; ok {
				c = brokenCommits[k%len(brokenCommits)].broken
				c.mark = "broken"
			} else if k, ok := brokenAt[pos-1]; ok {
				c = brokenCommits[k%len(brokenCommits)].fix
			} else {
				c = fill.next()
			}
			if pos < l.reg {
				c.date = span(base, before, pos, l.reg-2)
			} else {
				c.date = span(mustTime(reg.date), mustTime(latest.date), pos-l.reg, n-l.reg-1)
			}
			if c.author == "" {
				a := historyAuthors[(pos*5)%len(historyAuthors)]
				c.author, c.email = a[0], a[1]
			}
		}
		h = append(h, c)
	}
	return h, nil
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic("sim repo: bad built-in date " + s) // a constant of this file
	}
	return t
}

// historyAuthors are the filler commits' authors.
var historyAuthors = [][2]string{
	{"Mira Chen", "mira@sglang-sim.example"}, {"Jonas Weber", "jonas@sglang-sim.example"},
	{"Priya Nair", "priya@sglang-sim.example"}, {"Kai Tanaka", "kai@sglang-sim.example"},
	{"Lucía Romero", "lucia@sglang-sim.example"}, {"Omar Haddad", "omar@sglang-sim.example"},
	{"Sven Lindqvist", "sven@sglang-sim.example"}, {"Ada Okafor", "ada@sglang-sim.example"},
}

// filler hands out the unrelated commits: each appends its line to its
// file, so every commit changes the tree; a second round of the list is
// a follow-up of the first.
type filler struct {
	i     int
	files map[string][]string
}

func newFiller() *filler { return &filler{files: map[string][]string{}} }

func (f *filler) next() repoCommit {
	t := fillerCommits[f.i%len(fillerCommits)]
	round := f.i / len(fillerCommits)
	f.i++
	subject, line := t.subject, t.line
	if round > 0 {
		subject = fmt.Sprintf("%s (follow-up %d)", subject, round)
		if strings.HasSuffix(t.path, ".md") {
			line += fmt.Sprintf(" (revised, round %d)", round+1)
		} else {
			line += fmt.Sprintf("  # revised in round %d", round+1)
		}
	}
	f.files[t.path] = append(f.files[t.path], line)
	head := "# SPDX-License-Identifier: Apache-2.0\n\"\"\"" + t.doc + " (simulated checkout).\"\"\"\n\n"
	if strings.HasSuffix(t.path, ".md") {
		head = "# " + t.doc + "\n\n"
	} else if strings.HasSuffix(t.path, ".yml") || strings.HasSuffix(t.path, ".toml") {
		head = "# " + t.doc + "\n"
	}
	return repoCommit{subject: subject, files: map[string]string{t.path: head + strings.Join(f.files[t.path], "\n") + "\n"}}
}

// fillerCommit is one unrelated change: its subject, the file it touches
// (never pynccl.py, parallel_state.py or a broken commit's file), the
// file's docstring, and the line it adds.
type fillerCommit struct{ subject, path, doc, line string }

var fillerCommits = []fillerCommit{
	{"[Docs] Add the EAGLE-3 speculative decoding guide", "docs/speculative_decoding.md", "Speculative decoding", "Use --speculative-algorithm EAGLE3 with a draft model trained for the target."},
	{"[Perf] Tune the triton decode attention block size for H200", "python/sglang/srt/layers/attention/triton_ops/decode_attention.py", "Triton decode attention kernels", "BLOCK_N_H200 = 64"},
	{"Support Qwen3-Next tool-call parser", "python/sglang/srt/function_call/qwen3_detector.py", "Tool-call detector for Qwen3 models", "TOOL_CALL_START = \"<tool_call>\""},
	{"[CI] Pin flashinfer in the AMD runner", ".github/workflows/pr-test-amd.yml", "PR tests on AMD runners", "flashinfer-version: 0.4.1"},
	{"[Bugfix] Handle empty stop strings in the detokenizer", "python/sglang/srt/managers/detokenizer_manager.py", "Detokenizer process", "SKIP_EMPTY_STOP_STR = True"},
	{"[Router] Add cache-aware routing metrics", "sgl-router/py_src/sglang_router/metrics.py", "Router metrics", "CACHE_HIT_RATE = \"sgl_router_cache_hit_rate\""},
	{"[Model] Add GLM-4.6 support", "python/sglang/srt/models/glm4_moe.py", "GLM-4 MoE model", "ARCHITECTURES = [\"Glm4MoeForCausalLM\"]"},
	{"[Perf] Overlap the schedule with the forward pass for DP attention", "python/sglang/srt/managers/scheduler_dp_attn_mixin.py", "DP attention scheduling", "OVERLAP_DP_ATTENTION = True"},
	{"[Docs] Document --mem-fraction-static for large TP", "docs/server_arguments.md", "Server arguments", "--mem-fraction-static: lower it when CUDA graphs run out of memory at large TP."},
	{"Refactor the LoRA manager's adapter cache", "python/sglang/srt/lora/lora_manager.py", "LoRA adapter manager", "MAX_LOADED_ADAPTERS = 8"},
	{"[Bugfix] Fix the reasoning parser for DeepSeek-R1 streaming", "python/sglang/srt/reasoning_parser.py", "Reasoning parsers", "THINK_END = \"</think>\""},
	{"[Kernel] Add an sgl-kernel build for SM100", "sgl-kernel/CMakeLists.txt.py", "sgl-kernel build options", "SM100_ARCHS = [\"100a\"]"},
	{"[CI] Split the unit tests into four shards", ".github/workflows/pr-test.yml", "PR tests", "shards: 4"},
	{"[Metrics] Export the time to first token histogram buckets", "python/sglang/srt/metrics/collector.py", "Prometheus metrics", "TTFT_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10]"},
	{"[Model] Fix the rope scaling of Llama-4 Scout", "python/sglang/srt/models/llama4.py", "Llama 4 model", "ROPE_SCALING_FACTOR = 8.0"},
	{"Add --enable-hierarchical-cache docs and defaults", "python/sglang/srt/mem_cache/hiradix_cache.py", "Hierarchical radix cache", "HOST_MEM_RATIO = 2.0"},
	{"[Bugfix] Release the KV cache of aborted requests", "python/sglang/srt/managers/schedule_batch.py", "Schedule batch", "FREE_ON_ABORT = True"},
	{"[Perf] Use the fused MoE config for H200 at bs 160", "python/sglang/srt/layers/moe/fused_moe_triton/configs/E=384,N=256,device_name=NVIDIA_H200.json.py", "Fused MoE tuning table", "BS160 = {\"BLOCK_SIZE_M\": 64, \"BLOCK_SIZE_N\": 128}"},
	{"[Docs] Add a Kimi-K2 deployment example", "docs/references/kimi_k2.md", "Kimi-K2 deployment", "python -m sglang.launch_server --model-path moonshotai/Kimi-K2-Instruct --tp 8"},
	{"[Misc] Silence the tokenizer warning at start-up", "python/sglang/srt/hf_transformers_utils.py", "Hugging Face helpers", "TOKENIZERS_PARALLELISM = \"false\""},
	{"[Router] Retry a failed worker once before removing it", "sgl-router/py_src/sglang_router/launch_router.py", "Router launcher", "WORKER_RETRIES = 1"},
	{"[Bugfix] Correct the logprob offsets with chunked prefill", "python/sglang/srt/layers/logits_processor.py", "Logits processor", "LOGPROB_OFFSET_FIX = True"},
	{"[Perf] Cache the sampling info between decode steps", "python/sglang/srt/sampling/sampling_batch_info.py", "Sampling batch info", "REUSE_SAMPLING_INFO = True"},
	{"[CI] Run the nightly accuracy test on GSM8K", ".github/workflows/nightly-test.yml", "Nightly tests", "accuracy: gsm8k"},
	{"[Model] Support MiniMax-M2", "python/sglang/srt/models/minimax_m2.py", "MiniMax-M2 model", "ARCHITECTURES = [\"MiniMaxM2ForCausalLM\"]"},
	{"[Docs] Explain the decode log interval", "docs/advanced_features/observability.md", "Observability", "--decode-log-interval N logs one Decode batch line every N steps."},
	{"[Bugfix] Keep the OpenAI usage field on streamed responses", "python/sglang/srt/entrypoints/openai/serving_chat.py", "OpenAI chat serving", "STREAM_USAGE = True"},
	{"[Perf] Enable torch.compile for small batch sizes by default", "python/sglang/srt/model_executor/compile_config.py", "torch.compile settings", "COMPILE_MAX_BS = 32"},
	{"[Misc] Bump the version to 0.5.4.post1", "python/sglang/version_info.py", "Version information", "POST_RELEASE = 1"},
	{"[Bugfix] Fix the grammar backend timeout with xgrammar", "python/sglang/srt/constrained/xgrammar_backend.py", "xgrammar backend", "COMPILE_TIMEOUT_S = 30"},
	{"[Router] Add a /workers endpoint", "sgl-router/py_src/sglang_router/router_args.py", "Router arguments", "WORKERS_ENDPOINT = \"/workers\""},
	{"[Perf] Tune the NCCL symmetric memory threshold", "python/sglang/srt/distributed/device_communicators/symm_mem.py", "Symmetric memory all-reduce", "SYMM_MEM_MAX_BYTES = 8 << 20"},
	{"[Docs] Fix broken links in the router guide", "docs/router/router.md", "SGLang router", "See sgl-router/README.md for the cache-aware policy."},
	{"[Bugfix] Fix the JSON schema constraint with nested arrays", "python/sglang/srt/constrained/outlines_jump_forward.py", "Jump-forward decoding", "MAX_NESTING = 32"},
	{"[Perf] Skip the logprob gather when no request asks for it", "python/sglang/srt/layers/sampler.py", "Sampler", "SKIP_UNUSED_LOGPROBS = True"},
	{"[Model] Support Gemma-3 sliding window attention", "python/sglang/srt/models/gemma3_causal.py", "Gemma 3 model", "SLIDING_WINDOW = 4096"},
	{"[CI] Cache the pip wheels between jobs", ".github/workflows/pr-test-cache.yml", "PR test caches", "cache: pip"},
	{"[Misc] Log the CUDA graph capture time", "python/sglang/srt/model_executor/cuda_graph_runner.py", "CUDA graph runner", "LOG_CAPTURE_TIME = True"},
	{"[Bugfix] Fix the health check during weight updates", "python/sglang/srt/entrypoints/health.py", "Health endpoint", "HEALTH_DURING_UPDATE = \"busy\""},
	{"[Kernel] Add a fused RMSNorm + residual kernel for Blackwell", "sgl-kernel/python/sgl_kernel/elementwise.py", "sgl-kernel elementwise ops", "FUSED_ADD_RMSNORM_SM100 = True"},
	{"[Perf] Raise the default max running requests for H200", "python/sglang/srt/managers/scheduler_policy.py", "Scheduling policy", "DEFAULT_MAX_RUNNING_REQUESTS_H200 = 4096"},
	{"[Docs] Add a troubleshooting section for NCCL timeouts", "docs/references/troubleshooting.md", "Troubleshooting", "NCCL timeouts at start-up: check NCCL_P2P_LEVEL and the PCIe topology."},
	{"[Router] Honour the request id header", "sgl-router/py_src/sglang_router/request_id.py", "Router request ids", "REQUEST_ID_HEADER = \"x-request-id\""},
	{"[Bugfix] Fix the tokenizer manager's abort race", "python/sglang/srt/managers/tokenizer_manager.py", "Tokenizer manager", "ABORT_LOCK = True"},
	{"[Model] Fix the DeepSeek-V3 MTP weight loading", "python/sglang/srt/models/deepseek_nextn.py", "DeepSeek NextN (MTP) model", "MTP_LAYER_INDEX = 61"},
	{"[Perf] Use the TRT-LLM MLA kernel on SM100", "python/sglang/srt/layers/attention/trtllm_mla_backend.py", "TRT-LLM MLA attention backend", "MIN_SM = 100"},
	{"[CI] Add an 8-GPU H200 performance test", ".github/workflows/pr-test-h200.yml", "H200 performance tests", "gpus: 8"},
	{"[Misc] Deprecate --enable-flashinfer-mla", "python/sglang/srt/deprecated_args.py", "Deprecated server arguments", "DEPRECATED = [\"--enable-flashinfer-mla\"]"},
	{"[Bugfix] Keep the chat template's generation prompt", "python/sglang/srt/conversation.py", "Chat templates", "ADD_GENERATION_PROMPT = True"},
	{"[Metrics] Count the retracted requests", "python/sglang/srt/metrics/scheduler_metrics.py", "Scheduler metrics", "RETRACTED_REQS = \"sglang:num_retracted_reqs\""},
	{"[Docs] Describe the PD disaggregation setup", "docs/advanced_features/pd_disaggregation.md", "PD disaggregation", "Run the prefill and decode servers with --disaggregation-mode prefill|decode."},
	{"[Perf] Pin the detokenizer to its own CPU core", "python/sglang/srt/utils/affinity.py", "CPU affinity helpers", "DETOKENIZER_CORE = -1"},
	{"[Model] Support Qwen3-VL image inputs", "python/sglang/srt/models/qwen3_vl.py", "Qwen3-VL model", "MAX_IMAGE_TOKENS = 16384"},
	{"[Bugfix] Fix the EAGLE draft KV cache size", "python/sglang/srt/speculative/eagle_worker.py", "EAGLE worker", "DRAFT_KV_RATIO = 0.1"},
	{"[Router] Add the power-of-two load balancing policy", "sgl-router/py_src/sglang_router/policies.py", "Router policies", "POLICIES = [\"cache_aware\", \"round_robin\", \"power_of_two\"]"},
	{"[CI] Retry flaky downloads from the model hub", ".github/workflows/retry.yml", "Download retries", "retries: 3"},
	{"[Misc] Print the NCCL version at start-up", "python/sglang/srt/utils/nccl_info.py", "NCCL information", "PRINT_NCCL_VERSION = True"},
	{"[Perf] Tune the chunked prefill size for MoE models", "python/sglang/srt/server_args_moe.py", "MoE server defaults", "MOE_CHUNKED_PREFILL_SIZE = 16384"},
	{"[Bugfix] Fix the weight update from a distributed checkpoint", "python/sglang/srt/model_executor/weight_update.py", "Online weight updates", "CHECK_SHAPES = True"},
	{"[Docs] Update the benchmark instructions", "docs/developer_guide/benchmark.md", "Benchmarking", "python -m sglang.bench_serving --backend sglang --num-prompts 1000"},
}

// brokenCommit is a commit that fails to launch and the commit after it
// that fixes it.
type brokenCommit struct{ broken, fix repoCommit }

// The broken builds, in order along the history: a SyntaxError, an
// ImportError and a ModuleNotFoundError, each found by the fake server at
// start-up (brokenBuilds) the way Python finds them on import.
var brokenCommits = []brokenCommit{
	{
		repoCommit{author: "Omar Haddad", email: "omar@sglang-sim.example", subject: "[Refactor] Move radix cache eviction into RadixCache.evict",
			files: map[string]string{radixCachePath: radixCache(false)}},
		repoCommit{author: "Mira Chen", email: "mira@sglang-sim.example", subject: "[Hotfix] Fix the missing colon in RadixCache.evict",
			files: map[string]string{radixCachePath: radixCache(true)}},
	},
	{
		repoCommit{author: "Sven Lindqvist", email: "sven@sglang-sim.example", subject: "[Model] Use the EP MoE layer in Qwen3-MoE",
			files: map[string]string{qwen3MoePath: qwen3Moe, epMoePath: epMoeLayer(false)}},
		repoCommit{author: "Kai Tanaka", email: "kai@sglang-sim.example", subject: "[MoE] Add get_moe_impl_class to ep_moe.layer",
			files: map[string]string{epMoePath: epMoeLayer(true)}},
	},
	{
		repoCommit{author: "Ada Okafor", email: "ada@sglang-sim.example", subject: "[Quant] Use the fused FP8 block GEMM kernel",
			files: map[string]string{fp8Path: fp8Layer}},
		repoCommit{author: "Ada Okafor", email: "ada@sglang-sim.example", subject: "[Quant] Add the missing fp8_kernel_fused module",
			files: map[string]string{fp8FusedPath: fp8Fused}},
	},
}
