package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// Tests of flightdeck git status and git log (the fixtures are in
// gitcmd_test.go).

func TestGitStatusCLI(t *testing.T) {
	tr := newGitRepoFixture(t)
	writeFile(t, tr.dir, "README.md", "stashed\n")
	gitT(t, tr.dir, "stash", "push", "-q", "-m", "try LL128")
	makeDirty(t, tr.dir)
	evil := "evil\x1b]0;pwned\x07\x1b[2J.txt"
	writeFile(t, tr.dir, evil, "x\n")
	repo := []string{"--repo", tr.dir}

	out, stderr, err := runCLI(t, nil, append([]string{"git", "status", "local"}, repo...)...)
	wantExit(t, err, 0, "status:\n"+stderr)
	squashed := squash(out)
	for _, want := range []string{
		"branch main, 2 behind origin/main",
		"HEAD " + tr.c1[:7] + " Initial (",
		"changes 5 files: 1 staged, 2 unstaged, 2 untracked",
		"\nM README.md +2 -0\n",
		"\nM weights.bin bin\n",
		"\nA model/new_kernel.py +1 -0\n",
		"\n?? scratch/bench notes ü.txt new\n",
		// Shown escaped, not stripped: "evil.txt" is another file (issue 19).
		"\n?? evil\\x1b]0;pwned\\x07\\x1b[2J.txt new\n",
		"stash@{0} ",
		"On main: try LL128",
		"reflog last 3\n",
		"reset: moving to " + tr.c1,
	} {
		if !strings.Contains(squashed, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("status printed a raw control character:\n%q", out)
	}

	out, stderr, err = runCLI(t, nil, append([]string{"git", "status", "local", "--json", "-n", "2"}, repo...)...)
	wantExit(t, err, 0, "status --json:\n"+stderr)
	var st gitStatusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if st.Branch != "main" || st.Detached || st.Head.ID != tr.c1 || st.Head.Subject != "Initial" || st.Upstream != "origin/main" ||
		st.Ahead != 0 || st.Behind != 2 || st.Operation != "" || st.ReadAt.IsZero() {
		t.Errorf("status %+v", st)
	}
	files := map[string]gitFileJSON{}
	for _, f := range st.Files {
		files[f.Path] = f
	}
	if f := files["README.md"]; f.XY != " M" || f.Added == nil || *f.Added != 2 || *f.Deleted != 0 || !f.Unstaged || f.Staged {
		t.Errorf("README.md %+v", f)
	}
	if f := files["weights.bin"]; !f.Binary || f.Added != nil {
		t.Errorf("weights.bin %+v", f)
	}
	if f := files[evil]; !f.Untracked || f.XY != "??" || f.Added != nil {
		t.Errorf("%q %+v (files %+v)", evil, f, st.Files)
	}
	if len(st.Stashes) != 1 || st.Stashes[0].Ref != "stash@{0}" || st.Stashes[0].Message != "On main: try LL128" || len(st.Stashes[0].ID) != 40 {
		t.Errorf("stashes %+v", st.Stashes)
	}
	if len(st.Reflog) != 2 || st.Reflog[0].Action != "reset" || st.Reflog[0].ID != tr.c1 {
		t.Errorf("reflog %+v", st.Reflog)
	}
	for _, key := range []string{`"read_at"`, `"detached"`, `"added": null`, `"xy"`} {
		if !strings.Contains(out, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("JSON has a raw control character")
	}

	out, _, err = runCLI(t, nil, append([]string{"git", "log", "local", "-n", "2"}, repo...)...)
	wantExit(t, err, 0, "log")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], tr.c3[:7]) || !strings.Contains(lines[0], "Docs (origin/main, origin/HEAD)") {
		t.Errorf("log:\n%s", out)
	}
}
