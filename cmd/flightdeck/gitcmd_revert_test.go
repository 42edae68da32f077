package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of flightdeck git revert and its undo (the fixtures are in
// gitcmd_test.go).

func TestGitRevertCLI(t *testing.T) {
	tr := newGitRepoFixture(t)
	makeDirty(t, tr.dir)
	writeFile(t, tr.dir, "-f", "dirty\n")
	before := treeState(t, tr.dir)
	out, stderr, err := runCLI(t, nil, "git", "revert", "local", "--repo", tr.dir, "--yes", "--", "README.md", "scratch/bench notes ü.txt", "-f")
	wantExit(t, err, 0, "revert:\n"+stderr)
	for _, want := range []string{"revert 3 files", " M README.md  change discarded", "?? scratch/bench notes ü.txt  untracked: will be deleted", "reverted 3 files"} {
		if !strings.Contains(out, want) {
			t.Errorf("revert output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(tr.dir, "README.md")); string(b) != "# sglang\n" {
		t.Errorf("README.md %q", b)
	}
	for _, gone := range []string{"scratch/bench notes ü.txt", "-f"} {
		if _, err := os.Stat(filepath.Join(tr.dir, gone)); err == nil {
			t.Errorf("%s not deleted", gone)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(tr.dir, "weights.bin")); string(b) != "\x00\x02\xfe mine\n" {
		t.Errorf("weights.bin touched: %q", b)
	}
	if got := gitT(t, tr.dir, "diff", "--cached", "--name-only"); got != "model/new_kernel.py" {
		t.Errorf("index touched: %q", got)
	}
	// The undo brings all three back.
	_, stderr, err = runCLI(t, nil, append(undoLine(t, out), "--yes")...)
	wantExit(t, err, 0, "undo:\n"+stderr)
	if after := treeState(t, tr.dir); after != before {
		t.Errorf("undo of the revert is not exact:\n%s\nwant\n%s", after, before)
	}
	// A clean file is refused.
	_, stderr, err = runCLI(t, nil, "git", "revert", "local", "--repo", tr.dir, "--yes", "model/pynccl.py")
	wantExit(t, err, 2, "revert of a clean file")
	if !strings.Contains(stderr, "has no uncommitted change") {
		t.Errorf("stderr %q", stderr)
	}
}
