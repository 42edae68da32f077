package serverlog

import "bytes"

// Start-up stages a server's log reports before it is ready, in order.
const (
	StageDistributed = "initialising distributed" // SGLang "Init torch distributed", vLLM "world_size"/NCCL init
	StageWeights     = "loading weights"          // SGLang "Load weight begin", vLLM "Loading model weights", safetensors shards
	StageKVCache     = "allocating KV cache"      // SGLang "KV Cache is allocated", vLLM "GPU KV cache size", "Memory profiling"
	StageCUDAGraphs  = "capturing CUDA graphs"    // SGLang "Capture cuda graph begin", vLLM "Capturing CUDA graph"
	StageHTTP        = "starting HTTP server"     // "Uvicorn running on", vLLM "Starting vLLM API server", "Application startup complete"
)

type stageKey struct {
	kw    []byte
	stage string
}

// stageKeys are matched in order; the first hit wins. SGLang's "Load weight
// end" and "Capture cuda graph end" map to the stage that follows them.
var stageKeys = []stageKey{
	{[]byte("Init torch distributed"), StageDistributed},
	{[]byte("Load weight begin"), StageWeights},
	{[]byte("Loading safetensors checkpoint shards"), StageWeights},
	{[]byte("Loading model weights"), StageWeights},
	{[]byte("Starting to load model"), StageWeights},
	{[]byte("Load weight end"), StageKVCache},
	{[]byte("Loading weights took"), StageKVCache},
	{[]byte("Model loading took"), StageKVCache},
	{[]byte("KV Cache is allocated"), StageKVCache},
	{[]byte("Memory profiling"), StageKVCache},
	{[]byte("GPU KV cache size"), StageKVCache},
	{[]byte("Capture cuda graph begin"), StageCUDAGraphs},
	{[]byte("Capturing CUDA graph"), StageCUDAGraphs},
	{[]byte("Capturing cudagraph"), StageCUDAGraphs},
	{[]byte("Capture cuda graph end"), StageHTTP},
	{[]byte("Graph capturing finished"), StageHTTP},
	{[]byte("init engine (profile, create kv cache, warmup model) took"), StageHTTP},
	{[]byte("Uvicorn running on"), StageHTTP},
	{[]byte("Starting vLLM API server"), StageHTTP},
	{[]byte("Application startup complete"), StageHTTP},
}

// ParseStage recognises a start-up progress line of SGLang or vLLM and
// returns the stage it begins (one of the Stage constants). It is meant
// for the lines a server logs before it is ready; decode lines never
// match.
func ParseStage(line []byte) (string, bool) {
	if len(line) < 12 {
		return "", false
	}
	for _, k := range stageKeys {
		if bytes.Contains(line, k.kw) {
			return k.stage, true
		}
	}
	return "", false
}
