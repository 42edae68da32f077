package serverlog

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestParseStage(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"[2025-10-22 10:20:01 TP3] Init torch distributed ends. mem usage=1.96 GB", StageDistributed},
		{"[2025-10-22 10:20:02 TP0] Load weight begin. avail mem=138.33 GB", StageWeights},
		{"Loading safetensors checkpoint shards:  45% Completed | 29/64 [00:31<00:38,  1.13s/it]", StageWeights},
		{"(VllmWorker rank=0 pid=1) INFO 08-19 14:58:01 [gpu_model_runner.py:1] Loading model weights took 13.5 GiB", StageWeights},
		{"[2025-10-22 10:21:40 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=64.91 GB, mem usage=71.62 GB.", StageKVCache},
		{"(EngineCore_0 pid=1399537) INFO 08-19 14:58:40 [kv_cache_utils.py:849] GPU KV cache size: 922,496 tokens", StageKVCache},
		{"[2025-10-22 10:21:50 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=11.2 GB", StageCUDAGraphs},
		{"[2025-10-22 10:22:30 TP0] Capture cuda graph end. Time elapsed: 40.1 s. mem usage=1.0 GB. avail mem=10.1 GB.", StageHTTP},
		{"INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)", StageHTTP},
		{"(APIServer pid=84002) INFO 12-16 06:49:33 [api_server.py:1333] Starting vLLM API server 0 on http://0.0.0.0:8000", StageHTTP},
		{"[2025-10-22 10:27:58 TP0] Decode batch. #running-req: 1, #token: 9263, token usage: 0.01, cuda graph: True, gen throughput (token/s): 82.41, #queue-req: 0", ""},
		{"short", ""},
	} {
		got, ok := ParseStage([]byte(tc.line))
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ParseStage(%q) = %q, %v; want %q", tc.line, got, ok, tc.want)
		}
	}
}

// TestParseStageFixtures: every real start-up log yields its stages in
// order, and the ready line comes after them.
func TestParseStageFixtures(t *testing.T) {
	order := map[string]int{StageDistributed: 0, StageWeights: 1, StageKVCache: 2, StageCUDAGraphs: 3, StageHTTP: 4}
	for _, name := range []string{"sglang-startup-cudagraph-v0.4.4.txt", "sglang-startup-multi-tp-2025-10.txt", "vllm-startup-engine-init-2025-08.txt", "vllm-startup-api-server-0-2025-12.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var seen []string
		last := -1
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if st, ok := ParseStage(sc.Bytes()); ok {
				seen = append(seen, st)
				if order[st] < last {
					t.Errorf("%s: stage %q after a later one (%v)", name, st, seen)
				}
				last = order[st]
			}
		}
		if len(seen) == 0 {
			t.Errorf("%s: no start-up stage found", name)
		}
	}
}
