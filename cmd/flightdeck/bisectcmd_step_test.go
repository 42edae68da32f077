package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// commitAs writes files (path relative to the checkout → content) in the
// sim host's checkout and commits them with subject, as a developer
// would.
func (s simHostCLI) commitAs(t *testing.T, subject string, files map[string]string) string {
	t.Helper()
	for p, body := range files {
		if err := os.WriteFile(filepath.Join(s.Repo, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Git(t, "add", p)
	}
	s.Git(t, "-c", "user.name=Test Dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", subject)
	return s.Git(t, "rev-parse", "HEAD")
}

// readRepoFile is a file of the sim host's checkout.
func (s simHostCLI) readRepoFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Repo, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBisectCLINotSingleStep: on `flightdeck sim host`, a branch from the
// baseline whose first commit breaks the build (the radix cache's
// SyntaxError, as the simulated server finds it in the checkout) and
// whose second fixes it and adds the regression (sim.RegressionMarker in
// sim.PyncclPath): the only commit between good and bad cannot be
// launched, so the change is in one of the two. The bisect exits 4 with
// both as suspects, on stdout and in the journal's bisect-end, and puts
// the checkout back on main at the baseline.
func TestBisectCLINotSingleStep(t *testing.T) {
	t.Parallel()
	s := startSimHost(t, 16)
	const radix = "python/sglang/srt/mem_cache/radix_cache.py"
	if _, err := os.Stat(filepath.Join(s.Repo, radix)); err == nil {
		t.Fatalf("the baseline has %s already", radix)
	}
	cache := func(def string) string {
		return "class RadixCache:\n" + def + "        return self._evict_leaves(num_tokens)\n"
	}
	s.Git(t, "checkout", "-q", "-b", "refactor")
	if err := os.MkdirAll(filepath.Join(s.Repo, filepath.Dir(radix)), 0o755); err != nil {
		t.Fatal(err)
	}
	broken := s.commitAs(t, "[Feature] radix cache: evict by leaf", map[string]string{
		radix: cache("    def evict(self, num_tokens: int)\n")}) // the missing colon the simulated server finds
	pynccl := s.readRepoFile(t, sim.PyncclPath)
	fixes := s.commitAs(t, "[Fix] radix cache syntax; all-reduce: piecewise graph check", map[string]string{
		radix:          cache("    def evict(self, num_tokens: int):\n"),
		sim.PyncclPath: pynccl + "\n\ndef _graph_guard():\n    return " + sim.RegressionMarker + "\n"})
	s.Git(t, "checkout", "-q", "main")

	file := filepath.Join(t.TempDir(), "step.jsonl")
	out, stderr, err := runBin(t, context.Background(), nil, s.Args("bisect", s.Alias, "--good", s.Commits.Baseline, "--bad", "refactor",
		"--samples", "3", "--max-wait", "2m", "--noise", "0.3", "--journal", file)...) // 3 + 3 endpoint launches
	wantExit(t, err, 4, "bisect over an unlaunchable commit:\n"+stderr+"\nstdout:\n"+out)
	suspects := "(suspects " + broken[:7] + " " + fixes[:7] + ")"
	for _, want := range []string{"not-single-step: the change is in one of " + broken[:7] + " or " + fixes[:7], suspects, "journal: " + file} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "  "+broken[:7]+": failed (import-error)") {
		t.Errorf("stderr does not show the broken commit's failed launch:\n%s", stderr)
	}
	if head := s.Git(t, "rev-parse", "HEAD"); head != s.Commits.Baseline {
		t.Errorf("HEAD %s, want the baseline %s", head, s.Commits.Baseline)
	}
	if b := s.Git(t, "branch", "--show-current"); b != "main" {
		t.Errorf("branch %q, want main", b)
	}
	if st := s.Git(t, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("the checkout is not clean:\n%s", st)
	}

	j, err := journal.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var ends []event.BisectEnd
	err = j.ScanKinds(func(e event.Event) error {
		if p, ok := e.Data.(event.BisectEnd); ok {
			ends = append(ends, p)
		}
		return nil
	}, event.KindBisectEnd)
	if err != nil || len(ends) != 1 {
		t.Fatalf("bisect-ends %+v, %v", ends, err)
	}
	e := ends[0]
	if e.Outcome != event.BisectNotSingleStep || len(e.Suspects) != 2 || e.Suspects[0] != broken || e.Suspects[1] != fixes || e.Culprit != "" {
		t.Errorf("bisect-end %+v, want not-single-step with suspects %s %s", e, broken, fixes)
	}
	if !strings.Contains(e.Restored, "main at "+s.Commits.Baseline[:7]) {
		t.Errorf("bisect-end restored %q", e.Restored)
	}
}

// bisectRecords are the bisect-start and the bisect-launches of the
// journal at path.
func bisectRecords(t *testing.T, path string) ([]event.BisectStart, []event.BisectLaunch, []event.BisectEnd) {
	t.Helper()
	r, err := sessions.ReadBisects(path)
	if err != nil {
		t.Fatal(err)
	}
	return r.Starts, r.Launches, r.Ends
}

// TestBisectCLIKnownNoise: after `server repeat` (5 launches of the
// baseline) on `flightdeck sim host`, a bisect appended to the repeat's
// journal takes the host's A/A noise of that launch: its bisect-start
// holds it and the 5 launches, its first lines say so, and it finds the
// culprit in fewer launches than the endpoints alone need without it.
func TestBisectCLIKnownNoise(t *testing.T) {
	t.Parallel()
	s := startSimHost(t, 16)
	_, stderr, err := runBin(t, context.Background(), nil, s.Args("server", "launch", s.Alias, "--timeout", "60s")...)
	wantExit(t, err, 0, "launch:\n"+stderr)
	file := filepath.Join(t.TempDir(), "noise.jsonl")
	_, stderr, err = runBin(t, context.Background(), nil, s.Args("server", "repeat", s.Alias, "-n", "4", "--samples", "3", "--max-wait", "2m", "--journal", file)...)
	wantExit(t, err, 0, "repeat:\n"+stderr)

	bisect := func(file string, extra ...string) (string, string) {
		t.Helper()
		out, stderr, err := runBin(t, context.Background(), nil, s.Args(append([]string{"bisect", s.Alias, "--good", s.Commits.Baseline, "--bad", "origin/main",
			"--samples", "3", "--max-wait", "2m", "--journal", file}, extra...)...)...)
		wantExit(t, err, 0, "bisect:\n"+stderr+"\nstdout:\n"+out)
		if !strings.Contains(out, "first bad commit "+s.Commits.Regressing[:7]) {
			t.Errorf("stdout:\n%s", out)
		}
		return out, stderr
	}
	_, stderr = bisect(file)
	starts, known, _ := bisectRecords(t, file)
	if len(starts) != 1 || !(starts[0].Noise > 0) || starts[0].NoiseLaunches != 5 {
		t.Fatalf("bisect-start %+v, want the noise of the repeat's 5 launches", starts)
	}
	if !strings.Contains(stderr, "  A/A noise sd ") || !strings.Contains(stderr, " from 5 earlier launches of this configuration: the endpoints 3 launches each (Student's t)") {
		t.Errorf("stderr does not say the noise:\n%s", stderr)
	}

	endpoints := 0
	for _, l := range known {
		if l.Commit == s.Commits.Baseline || l.Commit == s.Commits.Latest {
			endpoints++
		}
	}
	// Student's t on the known noise separates the 8 % at the endpoints'
	// first 3 launches each; Mann–Whitney, all a bisect without the noise
	// has, cannot before 7 + 7 (its smallest p at n + n is 2/C(2n, n),
	// above the looks' level until then: sessions/bisect's tests), so the
	// whole bisect here takes fewer launches than its endpoints alone would
	// without the noise. (--no-known-noise is the driver's test:
	// TestBisectKnownNoise.)
	if endpoints != 6 || len(known) >= 14 {
		t.Errorf("launches: %d (%d at the endpoints) with the known noise: want 3 + 3 at the endpoints, fewer than 14 in all", len(known), endpoints)
	}
	t.Logf("launches: %d with the known noise", len(known))
}
