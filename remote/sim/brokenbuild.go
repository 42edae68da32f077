package sim

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The simulated history's broken builds: commits whose code does not
// import, so that the server fails at start-up with Python's traceback and
// exit status 1, as `python -m sglang.launch_server` does on such a
// checkout. The fake server finds them from the files in --repo, like
// Python: a checkout, revert or edit that repairs the file repairs the
// launch.

// Paths of the broken builds' files, relative to the repository root.
const (
	radixCachePath = "python/sglang/srt/mem_cache/radix_cache.py"
	qwen3MoePath   = "python/sglang/srt/models/qwen3_moe.py"
	epMoePath      = "python/sglang/srt/layers/moe/ep_moe/layer.py"
	fp8Path        = "python/sglang/srt/layers/quantization/fp8.py"
	fp8FusedPath   = "python/sglang/srt/layers/quantization/fp8_kernel_fused.py"
)

// radixEvictBad is the line whose missing colon is the SyntaxError.
const radixEvictBad = "    def evict(self, num_tokens: int)\n"

func radixCache(fixed bool) string {
	def := radixEvictBad
	if fixed {
		def = "    def evict(self, num_tokens: int):\n"
	}
	return `# SPDX-License-Identifier: Apache-2.0
"""Radix tree over token ids for prefix caching (simulated checkout)."""

import heapq


class TreeNode:
    def __init__(self):
        self.children = {}
        self.parent = None
        self.lock_ref = 0
        self.last_access_time = 0.0


class RadixCache:
    def __init__(self, req_to_token_pool, token_to_kv_pool_allocator, page_size=1):
        self.req_to_token_pool = req_to_token_pool
        self.token_to_kv_pool_allocator = token_to_kv_pool_allocator
        self.page_size = page_size
        self.root_node = TreeNode()

` + def + `        leaves = self._collect_leaves()
        heapq.heapify(leaves)
        num_evicted = 0
        while num_evicted < num_tokens and leaves:
            node = heapq.heappop(leaves)
            if node.lock_ref > 0:
                continue
            num_evicted += self._delete_leaf(node)
        return num_evicted
`
}

// qwen3MoeImport is the import of a name that ep_moe.layer does not define
// until the next commit.
const qwen3MoeImport = "from sglang.srt.layers.moe.ep_moe.layer import EPMoE, get_moe_impl_class"

const qwen3Moe = `# SPDX-License-Identifier: Apache-2.0
"""Qwen3 mixture-of-experts model (simulated checkout)."""

import torch
from torch import nn

` + qwen3MoeImport + `


class Qwen3MoeSparseMoeBlock(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.experts = get_moe_impl_class()(
            num_experts=config.num_experts,
            top_k=config.num_experts_per_tok,
            hidden_size=config.hidden_size,
            intermediate_size=config.moe_intermediate_size,
            quant_config=quant_config,
            prefix=prefix + ".experts",
        )
`

// epMoeImplDef is what the fix adds to ep_moe.layer.
const epMoeImplDef = "def get_moe_impl_class():"

func epMoeLayer(fixed bool) string {
	s := `# SPDX-License-Identifier: Apache-2.0
"""Expert-parallel MoE layer (simulated checkout)."""

import torch


class EPMoE(torch.nn.Module):
    def __init__(self, num_experts, top_k, hidden_size, intermediate_size, quant_config=None, prefix=""):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
`
	if fixed {
		s += `

` + epMoeImplDef + `
    from sglang.srt.layers.moe.fused_moe_triton import FusedMoE

    return EPMoE if global_server_args_dict["enable_ep_moe"] else FusedMoE
`
	}
	return s
}

// fp8FusedImport imports a module the commit forgot to add.
const fp8FusedImport = "from sglang.srt.layers.quantization.fp8_kernel_fused import w8a8_block_fp8_matmul_fused"

const fp8Layer = `# SPDX-License-Identifier: Apache-2.0
"""FP8 linear method (simulated checkout)."""

import torch

` + fp8FusedImport + `


class Fp8LinearMethod:
    def __init__(self, quant_config):
        self.quant_config = quant_config
        self.block_quant = quant_config.weight_block_size is not None

    def apply(self, layer, x, bias=None):
        return w8a8_block_fp8_matmul_fused(x, layer.weight, layer.weight_scale_inv, bias=bias)
`

const fp8Fused = `# SPDX-License-Identifier: Apache-2.0
"""Fused FP8 block GEMM (simulated checkout)."""

import torch


def w8a8_block_fp8_matmul_fused(x, weight, weight_scale, bias=None):
    out = torch.ops.sgl_kernel.fp8_blockwise_scaled_mm(x, weight, weight_scale)
    return out if bias is None else out + bias
`

// brokenBuild is one way the checkout fails to import: file holds needle
// (a line), and either that line is the error (other and needs empty: a
// SyntaxError), or other lacks needs (the name the line imports: an
// ImportError), or other does not exist (needs empty: the module the line
// imports, a ModuleNotFoundError).
type brokenBuild struct {
	file, needle string
	other, needs string
	// via are the frames from the scheduler module's import down to the
	// import of file (paths relative to the sglang package).
	via []pyFrame
}

var brokenBuilds = []brokenBuild{
	{file: radixCachePath, needle: radixEvictBad,
		via: []pyFrame{{"srt/managers/scheduler.py", 67, "<module>", "from sglang.srt.mem_cache.radix_cache import RadixCache"}}},
	{file: qwen3MoePath, needle: qwen3MoeImport, other: epMoePath, needs: epMoeImplDef,
		via: append(toModelRunner(), pyFrame{"srt/model_executor/model_runner.py", 91, "<module>", "from sglang.srt.models.qwen3_moe import Qwen3MoeForCausalLM"})},
	{file: fp8Path, needle: fp8FusedImport, other: fp8FusedPath,
		via: append(toModelRunner(),
			pyFrame{"srt/model_executor/model_runner.py", 64, "<module>", "from sglang.srt.layers.quantization import monkey_patch_isinstance_for_vllm_base_layer"},
			pyFrame{"srt/layers/quantization/__init__.py", 41, "<module>", "from sglang.srt.layers.quantization.fp8 import Fp8Config"})},
}

// toModelRunner are the frames from the scheduler module down to the
// import of the model runner.
func toModelRunner() []pyFrame {
	return []pyFrame{
		{"srt/managers/scheduler.py", 58, "<module>", "from sglang.srt.managers.tp_worker import TpModelWorker"},
		{"srt/managers/tp_worker.py", 30, "<module>", "from sglang.srt.model_executor.model_runner import ModelRunner"},
	}
}

// importFailure returns the Python traceback (lines, without newlines) of
// the first broken build found in the checkout at repo, or nil when the
// code imports. A file that cannot be read counts as absent.
func importFailure(repo string) []string {
	abs, err := filepath.Abs(repo)
	if err != nil {
		abs = repo
	}
	sg := filepath.Join(abs, "python", "sglang")
	read := func(rel string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(abs, rel))
		return string(b), err == nil
	}
	for _, bb := range brokenBuilds {
		src, ok := read(bb.file)
		i := strings.Index(src, bb.needle)
		if !ok || i < 0 {
			continue
		}
		line := strings.Count(src[:i], "\n") + 1
		code := strings.TrimSpace(bb.needle)
		mod := func(rel string) string {
			return strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(rel, "python/"), ".py"), "/", ".")
		}
		var exc []string
		switch {
		case bb.other == "" && bb.needs == "": // the line itself does not parse
			indent := len(bb.needle) - len(strings.TrimLeft(bb.needle, " "))
			exc = []string{"    " + code, "    " + strings.Repeat(" ", len(strings.TrimRight(bb.needle, "\n"))-indent) + "^", "SyntaxError: expected ':'"}
		case bb.needs != "":
			other, ok := read(bb.other)
			if ok && strings.Contains(other, bb.needs) {
				continue
			}
			name := strings.TrimSuffix(strings.TrimPrefix(bb.needs, "def "), "():")
			exc = []string{"    " + code, fmt.Sprintf("ImportError: cannot import name '%s' from '%s' (%s)", name, mod(bb.other), filepath.Join(abs, bb.other))}
		default:
			if _, err := os.Stat(filepath.Join(abs, bb.other)); !errors.Is(err, fs.ErrNotExist) {
				continue
			}
			exc = []string{"    " + code, fmt.Sprintf("ModuleNotFoundError: No module named '%s'", mod(bb.other))}
		}
		frames := []pyFrame{
			{"/usr/lib/python3.10/runpy.py", 196, "_run_module_as_main", "return _run_code(code, main_globals, None,"},
			{"/usr/lib/python3.10/runpy.py", 86, "_run_code", "exec(code, run_globals)"},
			{sg + "/launch_server.py", 7, "<module>", "from sglang.srt.entrypoints.http_server import launch_server"},
			{sg + "/srt/entrypoints/http_server.py", 48, "<module>", "from sglang.srt.entrypoints.engine import _launch_subprocesses"},
			{sg + "/srt/entrypoints/engine.py", 43, "<module>", "from sglang.srt.managers.scheduler import run_scheduler_process"},
		}
		for _, f := range bb.via {
			f.file = sg + "/" + f.file
			frames = append(frames, f)
		}
		out := []string{"Traceback (most recent call last):"}
		for _, f := range frames {
			out = append(out, fmt.Sprintf(`  File "%s", line %d, in %s`, f.file, f.line, f.fn), "    "+f.src)
		}
		if bb.needs == "" && bb.other == "" {
			out = append(out, fmt.Sprintf(`  File "%s", line %d`, filepath.Join(abs, bb.file), line))
		} else {
			out = append(out, fmt.Sprintf(`  File "%s", line %d, in <module>`, filepath.Join(abs, bb.file), line))
		}
		return append(out, exc...)
	}
	return nil
}

// writeLines writes lines, each ended by a newline, in one write.
func writeLines(w io.Writer, lines []string) {
	io.WriteString(w, strings.Join(lines, "\n")+"\n")
}
