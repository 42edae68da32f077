package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// TestBisectCLIRefusesBadFlags: bad flags exit 2 before anything is
// dialled.
func TestBisectCLIRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bisect", "gpu-box"}, "--good and --bad"},
		{[]string{"bisect", "gpu-box", "--good", "a"}, "--good and --bad"},
		{[]string{"bisect", "gpu-box", "--good", "a", "--bad", "b", "--metric", "latency"}, `--metric "latency"`},
		{[]string{"bisect", "gpu-box", "--good", "a", "--bad", "b", "--bench"}, "--bench with --metric tok/s"},
		{[]string{"bisect", "gpu-box", "--good", "a", "--bad", "b", "--samples", "1"}, "--samples 1"},
		{[]string{"bisect", "gpu-box", "--good", "a", "--bad", "b", "--launches", "5", "--max-launches", "3"}, "above --max-launches"},
		{[]string{"bisect", "gpu-box", "--good", "a", "--bad", "b", "--no-journal"}, "needs a journal"},
		{[]string{"bisect", "gpu-box", "--good", "a", "--bad", "b", "--noise", "-1"}, "--noise -1: want a percent"},
		{[]string{"bisect", "gpu-box", "--good", "a", "--bad", "b", "--noise", "0.4", "--no-known-noise"}, "--noise and --no-known-noise"},
		{[]string{"bisect"}, "accepts 1 arg"},
	} {
		_, errOut, err := runCLI(t, nil, c.args...)
		wantRefused(t, errOut, err, c.want)
	}
}

// TestBisectCLICancelResumeCulprit: on a simulated host with a 16-commit
// history (the regression and two commits that fail to import), a bisect
// (with --noise) stopped by Ctrl-C once its first launch is measured
// exits 130, restores the checkout and the dirty work and journals
// cancelled; with that end cut from the journal (a killed process),
// --resume --journal continues the same bisect to the culprit, "Fix PCG
// MoE Error", exit 0, restores the checkout again, and journal show
// lists the bisect.
func TestBisectCLICancelResumeCulprit(t *testing.T) {
	t.Parallel()
	ctx, h, ssh, checkRestored := dirtyBisectHost(t, 9*time.Minute)
	file := filepath.Join(t.TempDir(), "bisect.jsonl")
	args := append([]string{"bisect", "sim", "--good", h.Commits.Baseline, "--bad", "origin/main", "--samples", "3", "--max-wait", "2m",
		"--noise", "0.3", "--journal", file}, ssh...) // a known noise: 3 + 3 endpoint launches, not Mann–Whitney's 7 + 7

	// Ctrl-C once the first launch is measured.
	_, stderr, err := runBin(t, ctx, func(s string, send func(os.Signal)) {
		if launchLine.MatchString(s) {
			send(os.Interrupt)
		}
	}, args...)
	wantExit(t, err, 130, "cancelled bisect:\n"+stderr)
	if !strings.Contains(stderr, "bisect b1: 17 commits from ") || !strings.Contains(stderr, "bisect b1 cancelled") {
		t.Errorf("stderr of the cancelled bisect:\n%s", stderr)
	}
	checkRestored("cancelled")

	// A killed process leaves no bisect-end: cut it.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.Contains(l, []byte(`"bisect-end"`)) {
			kept = append(kept, l)
		}
	}
	if len(kept) == len(bytes.SplitAfter(b, []byte("\n"))) {
		t.Fatal("the cancelled bisect journaled no bisect-end")
	}
	if err := os.WriteFile(file, bytes.Join(kept, nil), 0o600); err != nil {
		t.Fatal(err)
	}

	out, stderr, err := runBin(t, ctx, nil, append([]string{"bisect", "sim", "--resume", "--samples", "3", "--max-wait", "2m", "--journal", file}, ssh...)...)
	wantExit(t, err, 0, "resumed bisect:\n"+stderr+"\nstdout:\n"+out)
	reg := h.Commits.Regressing[:7]
	if !strings.Contains(out, "first bad commit "+reg+" Fix PCG MoE Error") || !strings.Contains(out, "journal: "+file) {
		t.Errorf("stdout of the resumed bisect:\n%s", out)
	}
	checkRestored("resumed")

	j, err := journal.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var starts, launches, ends int
	err = j.ScanKinds(func(e event.Event) error {
		if _, ok := e.Data.(event.BisectStart); ok {
			starts++
		}
		if p, ok := e.Data.(event.BisectLaunch); ok {
			launches++
			if p.ID != "b1" {
				t.Errorf("launch of %s, want b1", p.ID)
			}
		}
		if p, ok := e.Data.(event.BisectEnd); ok {
			ends++
			if p.Outcome != event.BisectCulprit || p.Culprit != h.Commits.Regressing {
				t.Errorf("end %+v", p)
			}
		}
		return nil
	}, event.KindBisectStart, event.KindBisectLaunch, event.KindBisectEnd)
	if err != nil || starts != 1 || ends != 1 || launches < 7 {
		t.Errorf("journal: %d starts, %d launches, %d ends, %v", starts, launches, ends, err)
	}
	show, _, err := runBin(t, ctx, nil, "journal", "show", file)
	if err != nil || !strings.Contains(show, "bisect b1: ") || !strings.Contains(show, "first bad commit "+reg) {
		t.Errorf("journal show: %v\n%s", err, show)
	}
}

// launchLine matches a bisect launch's line on stderr ("  65b09bf: 1234
// (x3, 21s)"), not the indented A/A noise line under the start.
var launchLine = regexp.MustCompile(`(?m)^  [0-9a-f]{7}: `)

// dirtyBisectHost is bisectSimHost with dirtyCheckout's untracked file,
// under a context that ends after limit (or with the test).
func dirtyBisectHost(t *testing.T, limit time.Duration) (context.Context, *sim.Host, []string, func(what string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	h, ssh := bisectSimHost(t, ctx)
	return ctx, h, ssh, dirtyCheckout(t, h)
}

// dirtyCheckout leaves an untracked file in h's checkout (work a bisect
// must put back) and returns the check that the checkout is as it was:
// main at the baseline, the file there.
func dirtyCheckout(t *testing.T, h *sim.Host) (checkRestored func(what string)) {
	t.Helper()
	dirty := filepath.Join(h.RepoPath, "notes-untracked.txt")
	if err := os.WriteFile(dirty, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(what string) {
		t.Helper()
		if head := strings.TrimSpace(gitOut(t, h.RepoPath, "rev-parse", "HEAD")); head != h.Commits.Baseline {
			t.Errorf("%s: HEAD %s, want the baseline %s", what, head, h.Commits.Baseline)
		}
		if b := strings.TrimSpace(gitOut(t, h.RepoPath, "branch", "--show-current")); b != "main" {
			t.Errorf("%s: branch %q, want main", what, b)
		}
		if b, err := os.ReadFile(dirty); err != nil || string(b) != "mine\n" {
			t.Errorf("%s: the dirty file: %q, %v", what, b, err)
		}
	}
}

// gitOut runs git in dir (the simulated host is this machine) and returns
// its stdout.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %q: %v", args, err)
	}
	return string(out)
}

// bisectSimHost starts a simulated host with a 16-commit history (the
// regression at 10, broken commits at 3 and 13) and returns it with the
// CLI's flags to reach it.
func bisectSimHost(t *testing.T, ctx context.Context) (*sim.Host, []string) {
	t.Helper()
	h, err := sim.Start(ctx, sim.Options{TimeScale: 10, StartupDelay: time.Second, Seed: 5, History: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	body := fmt.Sprintf("[hosts.sim]\ntarget  = %q\nlog_dir = %q\nrepo    = %q\npreset  = \"sim\"\nmodel   = \"/shared/kimi-k2.5-int4\"\ntp      = 8\nport    = %d\n",
		h.Target(), filepath.Dir(h.LogPath), h.RepoPath, h.ServerPort)
	if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ssh := []string{"--config", cfgPath, "-F", os.DevNull, "-i", h.IdentityPath, "--known-hosts", h.KnownHostsPath}
	return h, ssh
}

// TestBisectCLIEndpointsDoNotDiffer: between the baseline and a commit
// before the regression the endpoints do not differ: exit 3, the reason
// on stdout, the checkout as it was.
func TestBisectCLIEndpointsDoNotDiffer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	h, ssh := bisectSimHost(t, ctx)
	var before string
	for i, id := range h.Commits.All {
		if id == h.Commits.Regressing {
			before = h.Commits.All[i-1]
		}
	}
	file := filepath.Join(t.TempDir(), "same.jsonl")
	out, stderr, err := runBin(t, ctx, nil, append([]string{"bisect", "sim", "--good", h.Commits.Baseline, "--bad", before,
		"--samples", "3", "--max-launches", "4", "--max-wait", "2m", "--journal", file}, ssh...)...)
	wantExit(t, err, 3, "bisect of a range without the regression:\n"+stderr+"\nstdout:\n"+out)
	if !strings.Contains(out, "no-difference: ") || !strings.Contains(out, "journal: "+file) {
		t.Errorf("stdout:\n%s", out)
	}
	if head := strings.TrimSpace(gitOut(t, h.RepoPath, "rev-parse", "HEAD")); head != h.Commits.Baseline {
		t.Errorf("HEAD %s, want the baseline %s", head, h.Commits.Baseline)
	}
}
