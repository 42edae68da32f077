package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// simHostConfig starts a simulated host (served by its in-process SSH
// server) and writes a config naming it "sim".
func simHostConfig(t *testing.T) (*sim.Host, string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The short story (3 commits after the baseline): the pull that the
	// server tests name, with its files.
	h, err := sim.Start(ctx, sim.Options{TimeScale: 4, StartupDelay: 2 * time.Second, Seed: 3, History: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	cfg := filepath.Join(t.TempDir(), "config.toml")
	body := fmt.Sprintf(`[hosts.sim]
target  = %q
log_dir = %q
repo    = %q
preset  = "sim"
model   = "/shared/kimi-k2.5-int4"
tp      = 8
port    = %d
`, h.Target(), filepath.Dir(h.LogPath), h.RepoPath, h.ServerPort)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ssh := []string{"--config", cfg, "-F", os.DevNull, "-i", h.IdentityPath, "--known-hosts", h.KnownHostsPath}
	return h, cfg, ssh
}

func wantExit(t *testing.T, err error, code int, what string) {
	t.Helper()
	var ec exitCode
	switch {
	case code == 0 && err != nil:
		t.Fatalf("%s: %v", what, err)
	case code != 0 && (!errors.As(err, &ec) || int(ec) != code):
		t.Fatalf("%s: err %v, want exit status %d", what, err, code)
	}
}

// TestServerCLI: the CLI does what the cockpit's keys do, with exit
// statuses for scripts.
func TestServerCLI(t *testing.T) {
	_, _, ssh := simHostConfig(t)
	args := func(a ...string) []string { return append(a, ssh...) }

	_, _, err := runCLI(t, nil, args("server", "status", "sim")...)
	wantExit(t, err, exitNoServer, "status before any launch")

	_, stderr, err := runCLI(t, nil, args("server", "launch", "sim", "--profile", "nccl-ll-ring", "--timeout", "60s")...)
	wantExit(t, err, 0, "launch:\n"+stderr)
	for _, want := range []string{"command: env NCCL_ALGO=Ring", "flightdeck sim server --model-path /shared/kimi-k2.5-int4 --tp-size 8", "launching", "ready in "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("launch output lacks %q:\n%s", want, stderr)
		}
	}

	out, _, err := runCLI(t, nil, args("server", "status", "sim", "--json")...)
	wantExit(t, err, 0, "status")
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if !st.Running || !st.Healthy || st.How != "pidfile" || st.Profile != "nccl-ll-ring" || st.Env["NCCL_PROTO"] != "LL" || st.Preset != "sim" {
		t.Errorf("status %+v", st)
	}

	out, _, err = runCLI(t, nil, args("server", "logs", "sim", "-n", "400")...)
	wantExit(t, err, 0, "logs")
	if !strings.Contains(out, "The server is fired up and ready to roll!") {
		t.Errorf("logs lack the ready line:\n%s", out)
	}

	// A relaunch replaces a running server: never without a confirmation.
	_, _, err = runCLI(t, strings.NewReader("y\n"), args("server", "launch", "sim")...)
	if err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("relaunch without a terminal or --yes: %v", err)
	}

	_, stderr, err = runCLI(t, nil, args("server", "kill", "sim", "--yes", "--grace", "2s")...)
	wantExit(t, err, 0, "kill:\n"+stderr)
	if !strings.Contains(stderr, "kill: done") || !strings.Contains(stderr, "GPU memory free") {
		t.Errorf("kill output:\n%s", stderr)
	}
	_, _, err = runCLI(t, nil, args("server", "status", "sim")...)
	wantExit(t, err, exitNoServer, "status after the kill")
	_, _, err = runCLI(t, nil, args("server", "kill", "sim", "--yes")...)
	wantExit(t, err, exitNoServer, "kill with nothing running")

	// A launch that fails says why and exits 1.
	_, stderr, err = runCLI(t, nil, args("server", "launch", "sim", "--extra", "--sim-fail oom", "--timeout", "60s")...)
	wantExit(t, err, 1, "failing launch:\n"+stderr)
	if !strings.Contains(stderr, "failed: oom: torch.OutOfMemoryError: CUDA out of memory.") {
		t.Errorf("failing launch output:\n%s", stderr)
	}

	// --no-wait returns once the process runs.
	start := time.Now()
	_, stderr, err = runCLI(t, nil, args("server", "launch", "sim", "--no-wait", "--yes")...)
	wantExit(t, err, 0, "launch --no-wait:\n"+stderr)
	if strings.Contains(stderr, "ready in") || time.Since(start) > 10*time.Second {
		t.Errorf("--no-wait waited (%v):\n%s", time.Since(start), stderr)
	}
	_, _, err = runCLI(t, nil, args("server", "kill", "sim", "--yes", "--grace", "2s")...)
	wantExit(t, err, 0, "kill")
}

func TestConfigCLI(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "flightdeck", "config.toml")
	out, _, err := runCLI(t, nil, "config", "init", "--config", path)
	wantExit(t, err, 0, "init")
	if !strings.Contains(out, path) {
		t.Errorf("init output %q", out)
	}
	_, _, err = runCLI(t, nil, "config", "init", "--config", path)
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("init over an existing file: %v", err)
	}
	out, _, err = runCLI(t, nil, "config", "check", "--config", path)
	wantExit(t, err, 0, "check of the example")
	if !strings.Contains(out, "ok") {
		t.Errorf("check output %q", out)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[hosts.box]\ntarget = \"root@box\"\npreset = \"sglang-fp9\"\n\n[profiles.mine]\nenv = { nccl_proto = \"LL\" }\n\n[presets.x]\ncommand = \"python3 -m sglang.launch_server --model-path {modle}\"\n"), 0o644)
	_, stderr, err := runCLI(t, nil, "config", "check", "--config", bad)
	wantExit(t, err, 1, "check of a bad file")
	for _, want := range []string{"bad.toml:3", "sglang-fp9", "bad.toml:6", "nccl_proto", "bad.toml:9", "{modle}"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check output lacks %q:\n%s", want, stderr)
		}
	}
	os.WriteFile(bad, []byte("[hosts.box\ntarget = 1\n"), 0o644)
	_, stderr, err = runCLI(t, nil, "config", "check", "--config", bad)
	wantExit(t, err, 1, "check of broken TOML")
	if !strings.Contains(stderr, "bad.toml:1:") {
		t.Errorf("syntax error without line and column:\n%s", stderr)
	}
	// Any command reports a broken --config before doing anything.
	_, _, err = runCLI(t, nil, "server", "status", "local", "--config", bad)
	if err == nil || !strings.Contains(err.Error(), "bad.toml:1:") {
		t.Errorf("server status with a broken config: %v", err)
	}
}

func TestUnknownSubcommandFails(t *testing.T) {
	for _, group := range []string{"parse", "server", "config", "sim"} {
		_, errOut, err := runCLI(t, nil, group, "bogus")
		if err == nil || !strings.Contains(errOut, `unknown command "bogus"`) {
			t.Errorf("%s bogus: %v, stderr %q", group, err, errOut)
		}
	}
}
