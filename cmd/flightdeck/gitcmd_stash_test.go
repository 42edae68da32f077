package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of flightdeck git stash: push, list, pop (one that conflicts
// too) and drop, the STASH forms refused, and the question apply, pop and
// drop ask (the fixtures are in gitcmd_test.go).

func TestGitStashCLI(t *testing.T) {
	tr := newGitRepoFixture(t)
	writeFile(t, tr.dir, "model/pynccl.py", "def all_reduce(x):\n    return x * 2  # mine\n")
	writeFile(t, tr.dir, "notes.txt", "untracked\n")
	before := treeState(t, tr.dir)
	git := func(args ...string) []string {
		return append(append([]string{"git", "stash", "local"}, args...), "--repo", tr.dir)
	}

	out, stderr, err := runCLI(t, nil, git("push", "before pull: my all_reduce", "-u")...)
	wantExit(t, err, 0, "push:\n"+stderr)
	if !strings.Contains(out, "stashed as stash@{0}: before pull: my all_reduce") || len(undoLine(t, out)) == 0 {
		t.Errorf("push output:\n%s", out)
	}
	out, _, err = runCLI(t, nil, git()...)
	wantExit(t, err, 0, "list")
	if !strings.Contains(out, "stash@{0}") || !strings.Contains(out, "On main: before pull: my all_reduce") {
		t.Errorf("list:\n%s", out)
	}
	if got := gitT(t, tr.dir, "status", "--porcelain"); got != "" {
		t.Fatalf("tree not clean after the stash: %q", got)
	}
	out, stderr, err = runCLI(t, nil, git("pop", "stash@{0}", "--yes")...)
	wantExit(t, err, 0, "pop:\n"+stderr)
	if !strings.Contains(out, "pop stash@{0} (") || !strings.Contains(out, "applies it to the worktree, then drops it; if the apply conflicts, the stash is kept") ||
		!strings.Contains(out, "popped stash@{0}") {
		t.Errorf("pop output:\n%s", out)
	}
	if after := treeState(t, tr.dir); after != before {
		t.Errorf("pop did not restore the tree:\n%s\nwant\n%s", after, before)
	}

	// A pop that conflicts keeps the stash and exits 1.
	_, _, err = runCLI(t, nil, git("push", "mine")...)
	wantExit(t, err, 0, "push")
	gitT(t, tr.dir, "merge", "-q", "--ff-only", "origin/main") // the pull: c2 changes pynccl.py
	out, stderr, err = runCLI(t, nil, git("pop", "0", "-y")...)
	wantExit(t, err, 1, "conflicting pop")
	if !strings.Contains(stderr, "the stash is kept") || !strings.Contains(stderr, "conflicts:\n  model/pynccl.py") || len(undoLine(t, stderr)) == 0 {
		t.Errorf("conflicting pop:\nstdout:\n%s\nstderr:\n%s", out, stderr)
	}
	out, _, err = runCLI(t, nil, git("list")...)
	wantExit(t, err, 0, "list")
	if !strings.Contains(out, "On main: mine") {
		t.Errorf("stash gone after the conflict:\n%s", out)
	}

	// Junk after a stash ref is refused, though git itself would read
	// "stash@{0}xyz" or "stash@{0}:f.txt" as stash@{0}.
	for _, bad := range []string{"stash@{0}xyz", "stash@{0}:model/pynccl.py", "stash@{ 0}", "stash@{0}; touch pwned", "0x1"} {
		_, stderr, err = runCLI(t, nil, git("drop", bad, "--yes")...)
		wantExit(t, err, 2, "drop "+bad)
		if !strings.Contains(stderr, "is not stash@{N}, N or a stash's commit id") {
			t.Errorf("drop %q: %s", bad, stderr)
		}
	}

	// By commit id; a commit that is no stash is refused.
	id := gitT(t, tr.dir, "rev-parse", "stash@{0}")
	_, stderr, err = runCLI(t, nil, git("drop", tr.c1[:10], "--yes")...)
	wantExit(t, err, 2, "drop of a commit that is no stash")
	if !strings.Contains(stderr, "is commit "+tr.c1[:7]+", not one of the 1 stash ") {
		t.Errorf("drop of a non-stash: %s", stderr)
	}
	out, stderr, err = runCLI(t, nil, git("drop", id[:8], "--yes")...)
	wantExit(t, err, 0, "drop by id:\n"+stderr)
	if !strings.Contains(out, "drop stash@{0} ("+id[:7]+") in "+tr.dir+": On main: mine\n  drops commit "+id+"; the printed undo command brings the stash back") {
		t.Errorf("drop output:\n%s", out)
	}
	if got := gitT(t, tr.dir, "stash", "list"); got != "" {
		t.Errorf("stash list after the drop: %q", got)
	}
}

// TestGitStashOpsConfirm: apply, pop and drop say what they will do and
// need a confirmation: without a terminal and without --yes they refuse
// (exit status 1) and change nothing.
func TestGitStashOpsConfirm(t *testing.T) {
	tr := newGitRepoFixture(t)
	writeFile(t, tr.dir, "model/pynccl.py", "def all_reduce(x):\n    return x * 2  # mine\n")
	gitT(t, tr.dir, "stash", "push", "-q", "-m", "try LL128")
	id := gitT(t, tr.dir, "rev-parse", "stash@{0}")
	writeFile(t, tr.dir, "notes.txt", "untracked\n")
	before := treeState(t, tr.dir)
	noTerminal(t)
	cases := []struct {
		verb string
		want string
	}{
		{"apply", "applies it to the worktree; the stash is kept"},
		{"pop", "applies it to the worktree, then drops it; if the apply conflicts, the stash is kept"},
		{"drop", "drops commit " + id + "; the printed undo command brings the stash back"},
	}
	for _, c := range cases {
		t.Run(c.verb, func(t *testing.T) {
			out, stderr, err := runCLI(t, nil, "git", "stash", "local", c.verb, "stash@{0}", "--repo", tr.dir)
			if got := exitStatus(err); got != 1 || !strings.Contains(err.Error(), "no terminal to confirm on: pass --yes") {
				t.Errorf("exit status %d (%v), want 1 asking for --yes\n%s", got, err, stderr)
			}
			for _, w := range []string{c.verb + " stash@{0} (" + id[:7] + ") in " + tr.dir + ": On main: try LL128\n", c.want} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if after := treeState(t, tr.dir); after != before {
				t.Errorf("unconfirmed %s changed the tree:\n%s", c.verb, after)
			}
			if got := gitT(t, tr.dir, "rev-parse", "stash@{0}"); got != id {
				t.Errorf("stash@{0} is %s, want %s", got, id)
			}
			if _, err := os.Stat(filepath.Join(tr.dir, ".git", "flightdeck")); err == nil {
				t.Error("an unconfirmed action took a snapshot")
			}
		})
	}
}
