package sim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// RepoCommits are the commit ids (full SHA-1) of the simulated SGLang
// repository's interesting points. The dates, authors and contents are
// fixed, so the ids are the same on every machine with the same git.
type RepoCommits struct {
	Baseline   string // last good commit: the checkout's HEAD at start, before the pull (89 tok/s)
	Regressing string // "Fix PCG MoE Error": touches pynccl.py and parallel_state.py (×0.92)
	Latest     string // origin/main: "[CI] Raise the nightly benchmark timeout"
	// Broken are the commits that fail to launch (their code does not
	// import: a SyntaxError, an ImportError, a ModuleNotFoundError), oldest
	// first; the commit after each fixes it. None in a short history.
	Broken []string
	All    []string // the whole history, oldest first: the baseline is All[3]
}

// repoCommit is one step of the scripted history.
type repoCommit struct {
	author, email, date, subject string
	files                        map[string]string
	mark                         string // which RepoCommits field it fills
}

// BuildRepo builds the simulated SGLang repository the way the seeds' story
// needs it: a bare repository at upstream holding the whole history —
// the baseline, then history commits (0: DefaultHistory; MinHistory to
// MaxHistory) among which "Fix PCG MoE Error" adds the RegressionMarker to
// the all-reduce path at 5/8 of the range, up to three commits fail to
// launch (RepoCommits.Broken, each fixed by the next commit), and "[CI]
// Raise the nightly benchmark timeout" is the newest — and at dir (which must not exist or be empty) a clone of it —
// remote origin, branch main tracking origin/main — reset to the baseline
// commit. The engineer's checkout is thus behind, and `git pull`
// fast-forwards it onto the regression, as the unrecorded pull did.
//
// It uses the git CLI with a local identity and fixed dates, and never
// reads the user's global git configuration. The history is written by one
// `git fast-import` (four git commands in all, not several per commit):
// the demo builds it at every start, and it must look alive within seconds
// on a loaded laptop.
func BuildRepo(ctx context.Context, upstream, dir string, history int) (RepoCommits, error) {
	var rc RepoCommits
	if history == 0 {
		history = DefaultHistory
	}
	commits, err := repoHistory(history)
	if err != nil {
		return rc, err
	}
	upstream, err = filepath.Abs(upstream)
	if err != nil {
		return rc, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rc, err
	}
	git := func(in string, stdin []byte, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = in
		cmd.Env = gitEnv()
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
	if _, err := git(dir, nil, "init", "-q", "--bare", "-b", "main", upstream); err != nil {
		return rc, err
	}
	stream, err := fastImportStream(commits)
	if err != nil {
		return rc, err
	}
	marks := filepath.Join(upstream, "sim-marks")
	if _, err := git(upstream, stream, "fast-import", "--quiet", "--date-format=raw", "--export-marks="+marks); err != nil {
		return rc, err
	}
	mb, err := os.ReadFile(marks)
	os.Remove(marks)
	if err != nil {
		return rc, err
	}
	ids := make(map[string]string, len(commits))
	for _, line := range strings.Split(strings.TrimSpace(string(mb)), "\n") {
		if mark, id, ok := strings.Cut(line, " "); ok {
			ids[mark] = id
		}
	}
	for i, c := range commits {
		id := ids[":"+strconv.Itoa(i+1)]
		if id == "" {
			return rc, fmt.Errorf("git fast-import: no commit for mark %d", i+1)
		}
		rc.All = append(rc.All, id)
		switch c.mark {
		case "baseline":
			rc.Baseline = id
		case "regressing":
			rc.Regressing = id
		case "broken":
			rc.Broken = append(rc.Broken, id)
		}
	}
	rc.Latest = rc.All[len(rc.All)-1]

	if _, err := git(dir, nil, "clone", "-q", upstream, "."); err != nil {
		return rc, err
	}
	// The engineer's identity for commits made later in the demo, written
	// straight into .git/config (the file git itself would write).
	cfg, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return rc, err
	}
	_, err = cfg.WriteString("[user]\n\tname = Sim Engineer\n\temail = engineer@gpu-box.example\n" +
		"[commit]\n\tgpgsign = false\n[core]\n\tautocrlf = false\n")
	if cerr := cfg.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rc, err
	}
	if _, err := git(dir, nil, "reset", "-q", "--hard", rc.Baseline); err != nil {
		return rc, err
	}
	return rc, nil
}

// fastImportStream renders the history as a `git fast-import` stream whose
// commit objects are byte-identical to `git commit -m SUBJECT` ones: same
// trees, identities, raw dates and "SUBJECT\n" messages.
func fastImportStream(history []repoCommit) ([]byte, error) {
	var b bytes.Buffer
	data := func(s string) { fmt.Fprintf(&b, "data %d\n%s\n", len(s), s) }
	for i, c := range history {
		when, err := time.Parse(time.RFC3339, c.date)
		if err != nil {
			return nil, fmt.Errorf("sim repo: commit %q date: %w", c.subject, err)
		}
		_, off := when.Zone()
		sign := '+'
		if off < 0 {
			sign, off = '-', -off
		}
		ident := fmt.Sprintf("%s <%s> %d %c%02d%02d", c.author, c.email, when.Unix(), sign, off/3600, off%3600/60)
		fmt.Fprintf(&b, "commit refs/heads/main\nmark :%d\nauthor %s\ncommitter %s\n", i+1, ident, ident)
		data(c.subject + "\n")
		paths := make([]string, 0, len(c.files))
		for p := range c.files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(&b, "M 100644 inline %s\n", p)
			data(c.files[p])
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
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

// baseHistory is the history up to the baseline: the checkout's HEAD
// before the pull. Its commits are the same whatever the history length,
// and so is the baseline's id.
func baseHistory() []repoCommit {
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
	}
}

// historyTypo is the unrelated commit just before the regression.
func historyTypo() repoCommit {
	return repoCommit{"Jonas Weber", "jonas@sglang-sim.example", "2025-10-20T08:55:00+00:00", "[Misc] Fix typo in scheduler log message", map[string]string{
		"python/sglang/srt/managers/scheduler.py": "DECODE_LOG_INTERVAL = 40\n\n\ndef log_decode_stats(num_running, num_tokens, throughput, interval=DECODE_LOG_INTERVAL):\n    \"\"\"Log one decode line every interval forward steps.\"\"\"\n",
	}, ""}
}

// historyRegressing is "Fix PCG MoE Error": the RegressionMarker in the
// all-reduce path.
func historyRegressing() repoCommit {
	return repoCommit{"Kai Tanaka", "kai@sglang-sim.example", "2025-10-21T19:30:00+00:00", "Fix PCG MoE Error", map[string]string{
		PyncclPath: pyncclBad,
		"python/sglang/srt/distributed/parallel_state.py":            parallelStateBad,
		"python/sglang/srt/compilation/piecewise_context_manager.py": "_IN_PCG = False\n\n\ndef is_in_piecewise_cuda_graph():\n    return _IN_PCG\n",
	}, "regressing"}
}

// historyLatest is origin/main: an unrelated commit after the regression.
func historyLatest() repoCommit {
	return repoCommit{"Priya Nair", "priya@sglang-sim.example", "2025-10-22T10:05:00+00:00", "[CI] Raise the nightly benchmark timeout", map[string]string{
		".github/workflows/nightly.yml": "name: nightly\non:\n  schedule:\n    - cron: '0 3 * * *'\njobs:\n  bench:\n    runs-on: h200\n    timeout-minutes: 90\n",
	}, ""}
}
