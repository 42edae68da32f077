package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Tests of flightdeck git checkout: its preview, the checkout, and its undo
// with git restore and git snapshots (the fixtures are in gitcmd_test.go).

func TestGitCheckoutAndUndoCLI(t *testing.T) {
	tr := newGitRepoFixture(t)
	makeDirty(t, tr.dir)
	before := treeState(t, tr.dir)
	repo := []string{"--repo", tr.dir}

	// No terminal and no --yes: the preview, then nothing.
	noTerminal(t)
	out, _, err := runCLI(t, nil, append([]string{"git", "checkout", "local", tr.c2[:10]}, repo...)...)
	if err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("checkout without --yes: %v", err)
	}
	for _, want := range []string{"brings in 1 commit\n  + " + tr.c2[:7] + " Fix PCG MoE Error\n", "leaves 0 commits", "files touched: 1\n  M model/pynccl.py"} {
		if !strings.Contains(out, want) {
			t.Errorf("preview lacks %q:\n%s", want, out)
		}
	}
	if got := treeState(t, tr.dir); got != before {
		t.Fatal("checkout without confirmation changed the tree")
	}

	out, stderr, err := runCLI(t, nil, append([]string{"git", "checkout", "local", tr.c2[:10], "--yes"}, repo...)...)
	wantExit(t, err, 0, "checkout:\n"+stderr)
	if got := gitT(t, tr.dir, "rev-parse", "HEAD"); got != tr.c2 {
		t.Fatalf("HEAD %s, want %s", got, tr.c2)
	}
	if !strings.Contains(out, "checked out "+tr.c2[:10]+": HEAD "+tr.c2[:7]+" (detached), was "+tr.c1[:7]+" on main") {
		t.Errorf("checkout output:\n%s", out)
	}
	undo := undoLine(t, out)
	if strings.Join(undo[:3], " ") != "git restore local" || undo[4] != "--repo" || undo[5] != tr.dir {
		t.Errorf("undo %q", undo)
	}
	// Lose work on purpose, then undo.
	gitT(t, tr.dir, "reset", "-q", "--hard")
	gitT(t, tr.dir, "clean", "-fdq")
	out, stderr, err = runCLI(t, nil, append(undo, "--yes")...)
	wantExit(t, err, 0, "undo:\n"+stderr)
	if after := treeState(t, tr.dir); after != before {
		t.Errorf("undo is not exact:\n%s\nwant\n%s", after, before)
	}
	if len(undoLine(t, out)) == 0 {
		t.Errorf("restore printed no undo:\n%s", out)
	}

	out, _, err = runCLI(t, nil, append([]string{"git", "snapshots", "local", "--json"}, repo...)...)
	wantExit(t, err, 0, "snapshots")
	var snaps []gitSnapshotJSON
	if err := json.Unmarshal([]byte(out), &snaps); err != nil || len(snaps) != 2 || snaps[1].ID != undo[3] || snaps[1].Head != tr.c1 ||
		snaps[1].Branch != "main" || snaps[1].Files != 4 || snaps[1].Reason != "checkout "+tr.c2[:10] {
		t.Errorf("snapshots %v %+v", err, snaps)
	}
	out, _, err = runCLI(t, nil, append([]string{"git", "snapshots", "local"}, repo...)...)
	wantExit(t, err, 0, "snapshots")
	if !strings.Contains(out, snaps[0].ID) || !strings.Contains(out, "restore "+undo[3]) {
		t.Errorf("snapshots:\n%s", out)
	}

	// A checkout git refuses: the dirty README.md is in c3.
	out, stderr, err = runCLI(t, nil, append([]string{"git", "checkout", "local", "origin/main", "-y"}, repo...)...)
	wantExit(t, err, 1, "blocked checkout")
	if !strings.Contains(out, "git will refuse: stash them first\n  README.md") || !strings.Contains(stderr, "would be overwritten") {
		t.Errorf("blocked checkout:\nstdout:\n%s\nstderr:\n%s", out, stderr)
	}
	if after := treeState(t, tr.dir); after != before {
		t.Error("blocked checkout changed the tree")
	}
}

func TestGitCheckoutPreviewCutsLongLists(t *testing.T) {
	tr := newGitRepoFixture(t)
	gitT(t, tr.dir, "switch", "-q", "-c", "long")
	for i := range 25 {
		gitT(t, tr.dir, "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("step %d", i))
	}
	gitT(t, tr.dir, "switch", "-q", "main")
	noTerminal(t)
	out, _, err := runCLI(t, nil, "git", "checkout", "local", "long", "--repo", tr.dir)
	if err == nil {
		t.Fatal("checkout without --yes and without a terminal went ahead")
	}
	if !strings.Contains(out, "(branch long)") || !strings.Contains(out, "brings in 25 commits\n  + ") || !strings.Contains(out, "  + "+gitT(t, tr.dir, "rev-parse", "--short", "long~19")+" step 5\n  ... and 5 more\n") {
		t.Errorf("preview:\n%s", out)
	}
	if got := gitT(t, tr.dir, "branch", "--show-current"); got != "main" {
		t.Errorf("on %s", got)
	}
}
