package sim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoCommits are the commit ids (full SHA-1) of the simulated SGLang
// repository's interesting points. The dates, authors and contents are
// fixed, so the ids are the same on every machine with the same git.
type RepoCommits struct {
	Baseline   string // last good commit: the engineer's HEAD before the pull (89 tok/s)
	Regressing string // "Fix PCG MoE Error": touches pynccl.py and parallel_state.py (×0.92)
	Latest     string // HEAD: an unrelated commit after the regression
	All        []string
}

// repoCommit is one step of the scripted history.
type repoCommit struct {
	author, email, date, subject string
	files                        map[string]string
	mark                         string // which RepoCommits field it fills
}

// BuildRepo creates a git repository at dir (which must not exist or be
// empty) shaped like SGLang, with a history whose "Fix PCG MoE Error"
// commit adds the RegressionMarker to the all-reduce path. It uses the git
// CLI with a local identity and fixed dates, and never reads the user's
// global git configuration.
func BuildRepo(ctx context.Context, dir string) (RepoCommits, error) {
	var rc RepoCommits
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rc, err
	}
	git := func(env []string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(gitEnv(), env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
	if _, err := git(nil, "init", "-q", "-b", "main"); err != nil {
		return rc, err
	}
	for _, kv := range [][2]string{{"user.name", "Sim Engineer"}, {"user.email", "engineer@gpu-box.example"},
		{"commit.gpgsign", "false"}, {"core.autocrlf", "false"}} {
		if _, err := git(nil, "config", kv[0], kv[1]); err != nil {
			return rc, err
		}
	}
	for _, c := range repoHistory() {
		for path, body := range c.files {
			p := filepath.Join(dir, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return rc, err
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return rc, err
			}
		}
		if _, err := git(nil, "add", "-A"); err != nil {
			return rc, err
		}
		env := []string{"GIT_AUTHOR_NAME=" + c.author, "GIT_AUTHOR_EMAIL=" + c.email, "GIT_AUTHOR_DATE=" + c.date,
			"GIT_COMMITTER_NAME=" + c.author, "GIT_COMMITTER_EMAIL=" + c.email, "GIT_COMMITTER_DATE=" + c.date}
		if _, err := git(env, "commit", "-q", "--no-verify", "-m", c.subject); err != nil {
			return rc, err
		}
		id, err := git(nil, "rev-parse", "HEAD")
		if err != nil {
			return rc, err
		}
		rc.All = append(rc.All, id)
		switch c.mark {
		case "baseline":
			rc.Baseline = id
		case "regressing":
			rc.Regressing = id
		}
	}
	rc.Latest = rc.All[len(rc.All)-1]
	return rc, nil
}

// gitEnv is the environment for git: the caller's, minus anything that
// would make the result depend on the machine (global/system config, hooks
// path, a redirected GIT_DIR).
func gitEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if strings.HasPrefix(k, "GIT_") {
			continue
		}
		env = append(env, e)
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
}

// The simulated files are short originals written for the sim; they only
// have to look like the real layout and carry the marker.
const pyncclGood = `# SPDX-License-Identifier: Apache-2.0
"""NCCL communicator used for tensor-parallel collectives (simulated checkout)."""

import torch

from sglang.srt.distributed.device_communicators.pynccl_wrapper import NCCLLibrary


class PyNcclCommunicator:
    def __init__(self, group, device, library_path=None):
        self.group = group
        self.device = device
        self.nccl = NCCLLibrary(library_path)
        self.disabled = False

    def all_reduce(self, tensor: torch.Tensor, op=None, stream=None):
        if self.disabled:
            return
        assert tensor.device == self.device
        stream = stream or torch.cuda.current_stream()
        self.nccl.ncclAllReduce(tensor, tensor, op, self.comm, stream)
`

const pyncclBad = `# SPDX-License-Identifier: Apache-2.0
"""NCCL communicator used for tensor-parallel collectives (simulated checkout)."""

import torch

from sglang.srt.compilation.piecewise_context_manager import is_in_piecewise_cuda_graph
from sglang.srt.distributed.device_communicators.pynccl_wrapper import NCCLLibrary


class PyNcclCommunicator:
    def __init__(self, group, device, library_path=None):
        self.group = group
        self.device = device
        self.nccl = NCCLLibrary(library_path)
        self.disabled = False

    def all_reduce(self, tensor: torch.Tensor, op=None, stream=None):
        if self.disabled:
            return
        assert tensor.device == self.device
        if is_in_piecewise_cuda_graph():
            # Captured graphs replay on their own stream; synchronise first.
            torch.cuda.current_stream().synchronize()
        stream = stream or torch.cuda.current_stream()
        self.nccl.ncclAllReduce(tensor, tensor, op, self.comm, stream)
`

const parallelStateGood = `# SPDX-License-Identifier: Apache-2.0
"""Process groups for tensor / data parallelism (simulated checkout)."""


class GroupCoordinator:
    def __init__(self, ranks, local_rank, use_pynccl=True):
        self.ranks = ranks
        self.local_rank = local_rank
        self.use_pynccl = use_pynccl
        self.pynccl_comm = None

    def all_reduce(self, input_):
        if len(self.ranks) == 1:
            return input_
        if self.pynccl_comm is not None and not self.pynccl_comm.disabled:
            self.pynccl_comm.all_reduce(input_)
            return input_
        return self._all_reduce_torch(input_)
`

const parallelStateBad = `# SPDX-License-Identifier: Apache-2.0
"""Process groups for tensor / data parallelism (simulated checkout)."""

from sglang.srt.compilation.piecewise_context_manager import is_in_piecewise_cuda_graph


class GroupCoordinator:
    def __init__(self, ranks, local_rank, use_pynccl=True):
        self.ranks = ranks
        self.local_rank = local_rank
        self.use_pynccl = use_pynccl
        self.pynccl_comm = None

    def all_reduce(self, input_):
        if len(self.ranks) == 1:
            return input_
        if is_in_piecewise_cuda_graph():
            # MoE layers under piecewise graphs must not take the custom path.
            return self._all_reduce_torch(input_)
        if self.pynccl_comm is not None and not self.pynccl_comm.disabled:
            self.pynccl_comm.all_reduce(input_)
            return input_
        return self._all_reduce_torch(input_)
`

func repoHistory() []repoCommit {
	return []repoCommit{
		{"Mira Chen", "mira@sglang-sim.example", "2025-10-01T09:12:00+00:00", "Initial import of the serving runtime", map[string]string{
			"README.md":                                       "# SGLang (simulated checkout)\n\nA fast serving framework for large language models. This copy exists for\n`flightdeck demo`; only the layout matters.\n",
			"python/pyproject.toml":                           "[project]\nname = \"sglang\"\nversion = \"0.5.4\"\nrequires-python = \">=3.10\"\n",
			"python/sglang/__init__.py":                       "from sglang.version import __version__\n",
			"python/sglang/version.py":                        "__version__ = \"0.5.4\"\n",
			"python/sglang/launch_server.py":                  "\"\"\"python -m sglang.launch_server --model-path PATH ...\"\"\"\n\nif __name__ == \"__main__\":\n    from sglang.srt.entrypoints.http_server import launch_server\n    launch_server()\n",
			PyncclPath:                                        pyncclGood,
			"python/sglang/srt/distributed/parallel_state.py": parallelStateGood,
			"python/sglang/srt/managers/scheduler.py":         "DECODE_LOG_INTERVAL = 40\n\n\ndef log_decode_stats(num_running, num_tokens, throughput):\n    pass\n",
		}, ""},
		{"Jonas Weber", "jonas@sglang-sim.example", "2025-10-06T14:03:00+00:00", "[Docs] Describe the NCCL tuning knobs", map[string]string{
			"docs/nccl.md": "# NCCL tuning\n\nOn PCIe-only boxes try NCCL_PROTO=LL NCCL_ALGO=Ring NCCL_P2P_LEVEL=SYS.\n",
		}, ""},
		{"Mira Chen", "mira@sglang-sim.example", "2025-10-09T11:40:00+00:00", "Add decode_log_interval server argument", map[string]string{
			"python/sglang/srt/managers/scheduler.py": "DECODE_LOG_INTERVAL = 40\n\n\ndef log_decode_stats(num_running, num_tokens, throughput, interval=DECODE_LOG_INTERVAL):\n    pass\n",
		}, ""},
		{"Priya Nair", "priya@sglang-sim.example", "2025-10-14T16:25:00+00:00", "Tune default chunked prefill size for H200", map[string]string{
			"python/sglang/srt/server_args.py": "CHUNKED_PREFILL_SIZE = 8192\nCUDA_GRAPH_MAX_BS = 160\n",
		}, "baseline"},
		{"Jonas Weber", "jonas@sglang-sim.example", "2025-10-20T08:55:00+00:00", "[Misc] Fix typo in scheduler log message", map[string]string{
			"python/sglang/srt/managers/scheduler.py": "DECODE_LOG_INTERVAL = 40\n\n\ndef log_decode_stats(num_running, num_tokens, throughput, interval=DECODE_LOG_INTERVAL):\n    \"\"\"Log one decode line every interval forward steps.\"\"\"\n",
		}, ""},
		{"Kai Tanaka", "kai@sglang-sim.example", "2025-10-21T19:30:00+00:00", "Fix PCG MoE Error", map[string]string{
			PyncclPath: pyncclBad,
			"python/sglang/srt/distributed/parallel_state.py":            parallelStateBad,
			"python/sglang/srt/compilation/piecewise_context_manager.py": "_IN_PCG = False\n\n\ndef is_in_piecewise_cuda_graph():\n    return _IN_PCG\n",
		}, "regressing"},
		{"Priya Nair", "priya@sglang-sim.example", "2025-10-22T10:05:00+00:00", "[CI] Raise the nightly benchmark timeout", map[string]string{
			".github/workflows/nightly.yml": "name: nightly\non:\n  schedule:\n    - cron: '0 3 * * *'\njobs:\n  bench:\n    runs-on: h200\n    timeout-minutes: 90\n",
		}, ""},
	}
}
