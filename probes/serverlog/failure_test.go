package serverlog

import (
	"fmt"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func classesOf(fs []event.ServerFailure) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Class))
	}
	return out
}

func TestClassifierSignatures(t *testing.T) {
	tests := []struct {
		line string
		want []string // classes reported for this line alone, in specificity order
	}{
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 616.00 MiB. GPU 0 has a total capacity of 79.10 GiB", []string{"oom"}},
		{"RuntimeError: CUDA out of memory. Tried to allocate 60.00 MiB (GPU 0; 6.00 GiB total capacity; 4.11 GiB already allocated)", []string{"oom"}},
		{"RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", []string{"oom"}},
		{"ERROR 03-02 [engine.py:1] MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the original error: OutOfMemoryError('CUDA out of memory. ...')", []string{"oom", "engine-dead"}},
		{"RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)", []string{"nccl"}},
		{"<host>:1234:5678 [0] transport/nvls.cc:157 NCCL WARN Cuda failure 1 'invalid argument'", []string{"nccl"}},
		{"ncclUnhandledCudaError: Call to CUDA function failed.", []string{"nccl"}},
		{"RuntimeError: CUDA error: an illegal memory access was encountered", []string{"cuda-illegal-memory"}},
		{"[2025-08-02 19:24:30 TP3] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", []string{"watchdog-timeout"}},
		{"[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE) ran for 600060 milliseconds before timing out.", []string{"watchdog-timeout"}},
		{"vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.", []string{"engine-dead"}},
		{"RuntimeError: Engine core initialization failed. See root cause above.", []string{"engine-dead"}},
		{"OSError: [Errno 98] Address already in use", []string{"port-in-use"}},
		{"ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use", []string{"port-in-use"}},
		{"listen tcp :8000: bind: address already in use", []string{"port-in-use"}},
		{"Killed", []string{"killed"}},
		{"Loading checkpoint shards:  75%|███████▌  | 3/4 [00:08<00:02,  2.83s/it]Killed", []string{"killed"}},
		{"[1]+  Killed                  python3 -m sglang.launch_server --model-path x", []string{"killed"}},
		{"[123.456] Out of memory: Killed process 576419 (python) total-vm:78521468kB", []string{"killed"}},
		{"Memory cgroup out of memory: Killed process 576419 (python)", []string{"killed"}},
		{"ollama.service: A process of this unit has been killed by the OOM killer.", []string{"killed"}},
		{"Traceback (most recent call last):", []string{"traceback"}},
		{`File "/x/y.py", line 12, in f`, []string{"traceback"}},
		// Not failures.
		{"[2025-04-03 04:46:21] server_args=ServerArgs(watchdog_timeout=300, enable_nccl_nvls=False, disable_cuda_graph=False)", nil},
		{"[2025-02-21 22:59:28] Received sigquit from a child process. It usually means the child failed.", nil},
		{"Setup Custom allreduce failed with CUDART error: peer access is not supported between these two devices.", nil},
		{"[TensorRT-LLM][WARNING] Using an engine plan file across different models of devices is not recommended and is likely to affect performance or even cause errors.", nil},
		{"INFO:     127.0.0.1:55504 - \"GET / HTTP/1.1\" 404 Not Found", nil},
		{"the request was Killedx by nobody", nil},
		{"SkillKilled", nil},
		{`see File "notes.txt" for details`, nil},
		// An import error's exception line counts only after a traceback's
		// frames (TestClassifierImportError).
		{"ImportError: cannot import name 'get_moe_impl_class' from 'sglang.srt.layers.moe.ep_moe.layer'", nil},
		{"ProcessGroupNCCL.cpp:1168] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL.", nil},
		{"2024-04-18T18:44:03.144-04:00   #033[2m2024-04-18T22:43:58.111453Z#033[0m #033[32m INFO#033[0m Waiting for shard to be ready... rank=0", nil},
	}
	for _, tc := range tests {
		var c Classifier
		got := classesOf(c.Feed(nil, []byte(tc.line), 1))
		if !slices.Equal(got, tc.want) {
			t.Errorf("Feed(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// TestClassifierImportError: a server whose code does not import (a broken
// checkout: SyntaxError, ImportError, ModuleNotFoundError) fails with
// import-error, the cause, not a bare traceback; the same words elsewhere
// (a warning about an optional import) are no failure.
func TestClassifierImportError(t *testing.T) {
	chain := []string{
		"Traceback (most recent call last):",
		`  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main`,
		"    return _run_code(code, main_globals, None,",
		`  File "/usr/lib/python3.10/runpy.py", line 86, in _run_code`,
		"    exec(code, run_globals)",
		`  File "/sgl-workspace/sglang/python/sglang/launch_server.py", line 7, in <module>`,
		"    from sglang.srt.entrypoints.http_server import launch_server",
		`  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 67, in <module>`,
		"    from sglang.srt.mem_cache.radix_cache import RadixCache",
	}
	for _, tc := range []struct {
		name  string
		lines []string
		want  string // the primary class, "" for none
		text  string // its line
	}{
		{"SyntaxError (Python 3.10)", append(slices.Clone(chain),
			`  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/radix_cache.py", line 25`,
			"    def evict(self, num_tokens: int)",
			"                                    ^",
			"SyntaxError: expected ':'"), "import-error", "SyntaxError: expected ':'"},
		{"ImportError", append(slices.Clone(chain),
			`  File "/sgl-workspace/sglang/python/sglang/srt/models/qwen3_moe.py", line 7, in <module>`,
			"    from sglang.srt.layers.moe.ep_moe.layer import EPMoE, get_moe_impl_class",
			"ImportError: cannot import name 'get_moe_impl_class' from 'sglang.srt.layers.moe.ep_moe.layer' (/sgl-workspace/sglang/python/sglang/srt/layers/moe/ep_moe/layer.py)"),
			"import-error", "ImportError: cannot import name 'get_moe_impl_class' from 'sglang.srt.layers.moe.ep_moe.layer' (/sgl-workspace/sglang/python/sglang/srt/layers/moe/ep_moe/layer.py)"},
		{"ModuleNotFoundError (Python 3.11 carets)", append(slices.Clone(chain),
			`  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/fp8.py", line 6, in <module>`,
			"    from sglang.srt.layers.quantization.fp8_kernel_fused import w8a8_block_fp8_matmul_fused",
			"    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
			"ModuleNotFoundError: No module named 'sglang.srt.layers.quantization.fp8_kernel_fused'"),
			"import-error", "ModuleNotFoundError: No module named 'sglang.srt.layers.quantization.fp8_kernel_fused'"},
		{"vLLM engine core, process prefix", []string{
			"(EngineCore_DP0 pid=4242) Traceback (most recent call last):",
			`(EngineCore_DP0 pid=4242)   File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/registry.py", line 512, in _try_load_model_cls`,
			"(EngineCore_DP0 pid=4242)     from vllm.model_executor.layers.fused_moe import FusedMoE",
			"(EngineCore_DP0 pid=4242) ImportError: cannot import name 'FusedMoE' from partially initialized module 'vllm.model_executor.layers.fused_moe'"},
			"import-error", "(EngineCore_DP0 pid=4242) ImportError: cannot import name 'FusedMoE' from partially initialized module 'vllm.model_executor.layers.fused_moe'"},
		{"a warning about an optional import", []string{
			"[2025-10-22 10:27:58] WARNING: Ignore import error when loading sglang.srt.models.mllama4: ImportError: No module named 'timm'",
			"[2025-10-22 10:27:58] ModuleNotFoundError: No module named 'vllm', falling back to the native kernels"}, "", ""},
		{"a traceback that ends otherwise", append(slices.Clone(chain),
			`  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/radix_cache.py", line 25, in evict`,
			"    raise ValueError(num_tokens)",
			"ValueError: 12",
			"",
			"",
			"",
			"ImportError: this line is far from the frames"), "traceback", "Traceback (most recent call last):"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Classifier
			for i, l := range tc.lines {
				c.Feed(nil, []byte(l), i+1)
			}
			p, ok := c.Primary()
			if tc.want == "" {
				if ok {
					t.Fatalf("primary %+v, want none", p)
				}
				return
			}
			if !ok || string(p.Class) != tc.want || p.Text != tc.text {
				t.Fatalf("primary %+v (%v), want %s: %q", p, ok, tc.want, tc.text)
			}
			// The parallel scanner agrees with the line-by-line classifier.
			sc, err := Scan(strings.NewReader(strings.Join(tc.lines, "\n")+"\n"), func(event.Payload) {})
			if err != nil {
				t.Fatal(err)
			}
			if sp, ok := sc.Primary(); !ok || sp.Class != p.Class || sp.Text != p.Text {
				t.Errorf("scanner primary %+v (%v), want %+v", sp, ok, p)
			}
		})
	}
}

func TestClassifierPrimaryAndDedup(t *testing.T) {
	// A traceback first, then the cause; fallout after it.
	lines := []string{
		"[2025-02-21 22:59:28 TP2] Scheduler hit an exception: Traceback (most recent call last):",
		`  File "/sgl/scheduler.py", line 1825, in run_scheduler_process`,
		"    scheduler.event_loop_overlap()",
		`  File "/sgl/pynccl.py", line 329, in NCCL_CHECK`,
		`    raise RuntimeError(f"NCCL error: {error_str}")`,
		"RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
		"(APIServer pid=1) ERROR vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
		"RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB",
	}
	var c Classifier
	var all []event.ServerFailure
	for i, l := range lines {
		all = c.Feed(all, []byte(l), i+1)
	}
	if got := classesOf(all); !slices.Equal(got, []string{"traceback", "nccl", "engine-dead", "oom"}) {
		t.Fatalf("reported %v", got)
	}
	nccl := all[1]
	if nccl.Line != 6 || nccl.Rank != "TP2" || !strings.HasPrefix(nccl.Text, "RuntimeError: NCCL error") {
		t.Errorf("nccl failure = %+v: want line 6 (the exception, not the source line), rank TP2 inherited from the traceback", nccl)
	}
	p, ok := c.Primary()
	if !ok || p.Class != event.FailNCCL {
		t.Errorf("primary = %+v, want the first cause class (nccl)", p)
	}

	// The same class within DedupLines is one incident; after it, a new one.
	var d Classifier
	var got []event.ServerFailure
	for i := range 8 {
		got = d.Feed(got, []byte(fmt.Sprintf("[2025-01-01 00:00:00 TP%d] torch.OutOfMemoryError: CUDA out of memory.", i)), i+1)
	}
	if len(got) != 1 || got[0].Rank != "TP0" {
		t.Fatalf("8 ranks printing the same OOM gave %+v, want one report from TP0", got)
	}
	for i := range DedupLines + 1 {
		got = d.Feed(got, []byte("[2025-01-01 00:00:01 TP0] Decode batch. filler"), 9+i)
	}
	got = d.Feed(got, []byte("torch.OutOfMemoryError: CUDA out of memory."), 500)
	if len(got) != 2 || got[1].Line != 500 {
		t.Errorf("a new OOM after %d quiet lines: got %+v", DedupLines, got)
	}

	// Only consequences: engine-dead wins over traceback.
	var e Classifier
	e.Feed(nil, []byte("Traceback (most recent call last):"), 1)
	e.Feed(nil, []byte("EngineDeadError: EngineCore encountered an issue."), 2)
	if p, _ := e.Primary(); p.Class != event.FailEngineDead {
		t.Errorf("primary = %q, want engine-dead", p.Class)
	}
	e.Reset()
	if _, ok := e.Primary(); ok {
		t.Error("Primary after Reset")
	}
}

func TestClassifierDoesNotAllocateOnCleanLines(t *testing.T) {
	var c Classifier
	line := []byte("[2025-10-22 10:27:57 TP0] Load weight end. type=Gemma3ForConditionalGeneration, dtype=torch.bfloat16, avail mem=131.08 GB, mem usage=8.13 GB.")
	if n := testing.AllocsPerRun(100, func() { c.Feed(nil, line, 1) }); n != 0 {
		t.Errorf("Feed allocates %v times on a clean line", n)
	}
}

func TestFailureClassTier(t *testing.T) {
	want := map[event.ServerFailureClass]int{
		event.FailCUDAIllegalMemory: event.TierCause, event.FailOOM: event.TierCause, event.FailNCCL: event.TierCause,
		event.FailWatchdogTimeout: event.TierCause, event.FailPortInUse: event.TierCause, event.FailImport: event.TierCause,
		event.FailEngineDead: event.TierConsequence, event.FailKilled: event.TierConsequence,
		event.FailTraceback: event.TierTraceback,
		"":                  event.TierUnknown, "segfault": event.TierUnknown,
	}
	for c, w := range want {
		if got := c.Tier(); got != w {
			t.Errorf("%q.Tier() = %d, want %d", c, got, w)
		}
	}
	for _, co := range classOrder {
		if _, ok := want[co.class]; !ok {
			t.Errorf("class %q has no expected tier in this test", co.class)
		}
	}
}

// TestPrimaryIsFirstOfLowestTier: Primary is the first failure found among
// those of the lowest Tier, for any order in which classes are found.
func TestPrimaryIsFirstOfLowestTier(t *testing.T) {
	lines := map[event.ServerFailureClass]string{
		event.FailOOM:               "torch.OutOfMemoryError: CUDA out of memory.",
		event.FailNCCL:              "RuntimeError: NCCL error: unhandled system error",
		event.FailCUDAIllegalMemory: "RuntimeError: CUDA error: an illegal memory access was encountered",
		event.FailWatchdogTimeout:   "Watchdog timeout (self.watchdog_timeout=300)",
		event.FailEngineDead:        "EngineDeadError: EngineCore encountered an issue.",
		event.FailTraceback:         "Traceback (most recent call last):",
		event.FailPortInUse:         "OSError: [Errno 98] Address already in use",
		event.FailKilled:            "Killed",
	}
	classes := slices.Sorted(maps.Keys(lines))
	r := rand.New(rand.NewPCG(11, 12))
	for range 500 {
		var c Classifier
		var seen []event.ServerFailure
		for i := range 1 + r.IntN(5) {
			class := classes[r.IntN(len(classes))]
			seen = c.Feed(seen, []byte(lines[class]), i+1)
		}
		want := seen[0]
		for _, f := range seen {
			if f.Class.Tier() < want.Class.Tier() {
				want = f
			}
		}
		if got, ok := c.Primary(); !ok || got.Class != want.Class || got.Line != want.Line {
			t.Fatalf("failures %v: Primary = %+v, want %+v", classesOf(seen), got, want)
		}
	}
}
