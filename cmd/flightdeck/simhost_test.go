package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
)

// simHostCLI is a `flightdeck sim host` serving in this test process: the
// CLI reaches it as a user would, through the flightdeck.toml and
// ssh_config it writes.
type simHostCLI struct {
	Dir       string // the sim directory
	Config    string // DIR/flightdeck.toml, with the host's [hosts.sim] table
	SSHConfig string // DIR/ssh_config: the throwaway identity and known_hosts
	Alias     string // "sim", the HOST argument
	Repo      string // the host's checkout, at the baseline to begin with
	Commits   sim.RepoCommits
	// Stop ends `sim host` as SIGINT does and waits for it (its servers
	// stopped); the test's cleanup calls it too.
	Stop func()
}

// Args is a command line against the host: --config, the command, then
// -F with the ssh_config.
func (s simHostCLI) Args(a ...string) []string {
	return append(append([]string{"--config", s.Config}, a...), "-F", s.SSHConfig)
}

// Git runs git in the host's checkout (the host is this machine).
func (s simHostCLI) Git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = s.Repo
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// startSimHost starts `flightdeck sim host --history N` (0: the default)
// in a temporary directory, at 4× speed with a 2 s start-up (launches take
// about half a second), and stops it when the test ends: its servers are
// stopped, and runSimHost must return nil.
func startSimHost(t *testing.T, history int) simHostCLI {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	hosts := make(chan *sim.Host, 1)
	done := make(chan error, 1)
	var out syncBuf
	go func() {
		done <- runSimHost(ctx, &out, config.Builtins(), simHostFlags{dir: dir, history: cmp.Or(history, sim.DefaultHistory), gpus: 8, profile: "none",
			timeScale: 4, startupDelay: 2 * time.Second, seed: 3}, func(h *sim.Host) { hosts <- h })
	}()
	var h *sim.Host
	select {
	case h = <-hosts:
	case err := <-done:
		cancel()
		t.Fatalf("sim host ended: %v\n%s", err, out.String())
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatalf("sim host did not start:\n%s", out.String())
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("sim host: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	s := simHostCLI{Dir: dir, Config: filepath.Join(dir, simHostConfigFile), SSHConfig: filepath.Join(dir, simHostSSHConfig),
		Alias: simHostAlias, Repo: h.RepoPath, Commits: h.Commits, Stop: stop}
	for _, want := range []string{"ssh target   " + h.Target(), "known_hosts  [127.0.0.1]:", "repository   " + h.RepoPath,
		"flightdeck --config " + s.Config + " server status sim -F " + s.SSHConfig,
		"flightdeck --config " + s.Config + " bisect sim --good " + h.Commits.Baseline[:7] + " --bad origin/main --samples 3 -F " + s.SSHConfig} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("sim host output lacks %q:\n%s", want, out.String())
		}
	}
	return s
}

// syncBuf is a bytes.Buffer safe for one writer and one reader.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestSimHostCLI: the CLI works against `flightdeck sim host` over its
// SSH with nothing but the files it writes: server status, launch and
// kill, git log and status; a launch at a commit that fails to import
// fails with import-error and exits 1, one at the fix is ready.
func TestSimHostCLI(t *testing.T) {
	s := startSimHost(t, 0)
	c := s.Commits
	if len(c.All) != 4+sim.DefaultHistory || len(c.Broken) != 3 {
		t.Fatalf("commits %+v", c)
	}
	_, _, err := runCLI(t, nil, s.Args("server", "status", s.Alias)...)
	wantExit(t, err, exitNoServer, "status before any launch")

	out, stderr, err := runCLI(t, nil, s.Args("git", "log", s.Alias, "-n", "100")...)
	wantExit(t, err, 0, "git log:\n"+stderr)
	for _, want := range []string{c.Latest[:7] + "  ", sim.SubjectLatest, c.Regressing[:7] + "  ", sim.SubjectRegressing, "[Quant] Use the fused FP8 block GEMM kernel"} {
		if !strings.Contains(out, want) {
			t.Errorf("git log lacks %q:\n%s", want, out)
		}
	}
	out, stderr, err = runCLI(t, nil, s.Args("git", "status", s.Alias)...)
	wantExit(t, err, 0, "git status:\n"+stderr)
	if !strings.Contains(out, c.Baseline[:7]) || !strings.Contains(out, "main") {
		t.Errorf("git status does not show main at the baseline %s:\n%s", c.Baseline[:7], out)
	}

	_, stderr, err = runCLI(t, nil, s.Args("server", "launch", s.Alias, "--timeout", "60s")...)
	wantExit(t, err, 0, "launch:\n"+stderr)
	if !strings.Contains(stderr, "flightdeck sim server --model-path /shared/kimi-k2.5-int4 --tp-size 8") || !strings.Contains(stderr, "ready in ") {
		t.Errorf("launch output:\n%s", stderr)
	}
	_, _, err = runCLI(t, nil, s.Args("server", "status", s.Alias)...)
	wantExit(t, err, 0, "status of the running server")
	_, stderr, err = runCLI(t, nil, s.Args("server", "kill", s.Alias, "--yes", "--grace", "2s")...)
	wantExit(t, err, 0, "kill:\n"+stderr)

	for i, want := range []string{"failed: import-error: SyntaxError: expected ':'",
		"failed: import-error: ImportError: cannot import name 'get_moe_impl_class' from 'sglang.srt.layers.moe.ep_moe.layer'",
		"failed: import-error: ModuleNotFoundError: No module named 'sglang.srt.layers.quantization.fp8_kernel_fused'"} {
		s.Git(t, "checkout", "-q", c.Broken[i])
		start := time.Now()
		_, stderr, err = runCLI(t, nil, s.Args("server", "launch", s.Alias, "--yes", "--timeout", "60s")...)
		wantExit(t, err, 1, "launch at a broken commit:\n"+stderr)
		if !strings.Contains(stderr, want) {
			t.Errorf("launch at broken commit %s: output lacks %q:\n%s", c.Broken[i][:7], want, stderr)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("a failing launch took %v", d)
		}
	}
	// The commit after the last broken one fixes it.
	s.Git(t, "checkout", "-q", c.All[slices.Index(c.All, c.Broken[2])+1])
	_, stderr, err = runCLI(t, nil, s.Args("server", "launch", s.Alias, "--yes", "--timeout", "60s")...)
	wantExit(t, err, 0, "launch at the fix:\n"+stderr)

	// Stopping the host stops the server launched on it.
	out, _, err = runCLI(t, nil, s.Args("server", "status", s.Alias, "--json")...)
	wantExit(t, err, 0, "status")
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.PID <= 0 || syscall.Kill(st.PID, 0) != nil {
		t.Fatalf("status --json: %v %+v\n%s", err, st, out)
	}
	s.Stop()
	if err := syscall.Kill(st.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server pid %d outlived sim host (signal 0: %v)", st.PID, err)
	}
}
