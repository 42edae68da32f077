package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestBisectCLIResumeAfterKill: a bisect killed (SIGKILL: no restore, no
// bisect-end, its driver lock left behind) once its first launch is
// measured (at the baseline, the commit it started from) leaves the dirty
// work aside in its stash; --resume --take-over continues the same bisect
// from the journal to the culprit and puts back what the killed process
// took: main at the baseline, the dirty file.
func TestBisectCLIResumeAfterKill(t *testing.T) {
	t.Parallel()
	ctx, h, ssh, checkRestored := dirtyBisectHost(t, 6*time.Minute)
	file := filepath.Join(t.TempDir(), "killed.jsonl")
	_, stderr, err := runBin(t, ctx, func(s string, send func(os.Signal)) {
		if launchLine.MatchString(s) {
			send(syscall.SIGKILL)
		}
	}, append([]string{"bisect", "sim", "--good", h.Commits.Baseline, "--bad", "origin/main", "--samples", "3", "--max-wait", "2m",
		"--noise", "0.3", "--journal", file}, ssh...)...)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the killed bisect: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(h.RepoPath, "notes-untracked.txt")); err == nil {
		t.Errorf("after the kill: the dirty file is in the checkout, want it kept aside")
	}

	out, stderr, err := runBin(t, ctx, nil, append([]string{"bisect", "sim", "--resume", "--take-over", "--samples", "3", "--max-wait", "2m", "--journal", file}, ssh...)...)
	wantExit(t, err, 0, "resumed bisect:\n"+stderr+"\nstdout:\n"+out)
	if !strings.Contains(out, "first bad commit "+h.Commits.Regressing[:7]+" Fix PCG MoE Error") {
		t.Errorf("stdout of the resumed bisect:\n%s", out)
	}
	checkRestored("resumed after the kill")
	starts, launches, ends := bisectRecords(t, file)
	if len(starts) != 1 || len(ends) != 1 || ends[0].Outcome != event.BisectCulprit || len(launches) < 7 {
		t.Errorf("journal: %d starts, %d launches, ends %+v", len(starts), len(launches), ends)
	}
}

// TestBisectCLITakeOverKeepsTheWork: a second bisect with --take-over
// while one runs (its dirty work in its stash) refuses to start, naming
// the first's stash: nothing starts from the first's checkout. The first
// either never noticed the short take-over (its next heartbeat found the
// lock free again) and ends as usual, the work restored, or it stopped,
// its restore refused (read-only) with how to undo by hand, and git
// stash pop gives the work back.
func TestBisectCLITakeOverKeepsTheWork(t *testing.T) {
	t.Parallel()
	ctx, h, ssh, checkRestored := dirtyBisectHost(t, 5*time.Minute)
	args := func(file string, extra ...string) []string {
		return append(append([]string{"bisect", "sim", "--good", h.Commits.Baseline, "--bad", "origin/main", "--samples", "3", "--max-wait", "2m",
			"--noise", "0.3", "--journal", filepath.Join(t.TempDir(), file)}, extra...), ssh...)
	}
	second := make(chan string, 1)
	var once sync.Once
	_, first, err := runBin(t, ctx, func(s string, _ func(os.Signal)) {
		if launchLine.MatchString(s) {
			once.Do(func() {
				go func() {
					_, stderr, err := runBin(t, ctx, nil, args("second.jsonl", "--take-over")...)
					if err == nil {
						t.Errorf("the second bisect started:\n%s", stderr)
					}
					second <- stderr
				}()
			})
		}
	}, args("first.jsonl")...)
	if stderr := <-second; !strings.Contains(stderr, "bisect b1's dirty work is still in stash@{0}") {
		t.Errorf("the second bisect did not refuse for the first's stash:\n%s", stderr)
	}
	if err != nil && !strings.Contains(first, "dirty work restored") { // stopped, and its restore refused
		wantExit1(t, err, "the first bisect:\n"+first)
		if !strings.Contains(first, "not restored: ") || !strings.Contains(first, "flightdeck git restore HOST ") {
			t.Errorf("the first bisect's stderr does not say how to undo:\n%s", first)
		}
		gitOut(t, h.RepoPath, "checkout", "-q", "main")
		gitOut(t, h.RepoPath, "stash", "pop", "-q")
	}
	checkRestored("after the take-over")
}
