package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// gitRepoFixture is a clone of main (c1 → c2 → c3) reset to c1, so it is 2
// behind origin/main. c2 changes model/pynccl.py, c3 README.md.
type gitRepoFixture struct {
	dir        string
	c1, c2, c3 string
}

// newGitRepoFixture makes the repository, with git (the test's and the
// local host's) and flightdeck isolated from the user's configuration.
func newGitRepoFixture(t *testing.T) gitRepoFixture {
	t.Helper()
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
		"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
		"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
		"XDG_CONFIG_HOME": t.TempDir(), // no flightdeck config
	} {
		t.Setenv(k, v)
	}
	root := t.TempDir()
	seed := filepath.Join(root, "seed")
	gitT(t, root, "init", "-q", "-b", "main", seed)
	var ids []string
	for _, c := range []struct {
		msg   string
		files map[string]string
	}{
		{"Initial", map[string]string{"README.md": "# sglang\n", "model/pynccl.py": "def all_reduce(x):\n    return x\n", "weights.bin": "\x00\x01\xff weights\n"}},
		{"Fix PCG MoE Error", map[string]string{"model/pynccl.py": "def all_reduce(x):\n    sync()\n    return x\n"}},
		{"Docs", map[string]string{"README.md": "# sglang\n\nfast\n"}},
	} {
		for name, body := range c.files {
			writeFile(t, seed, name, body)
		}
		gitT(t, seed, "add", "-A")
		gitT(t, seed, "commit", "-q", "-m", c.msg)
		ids = append(ids, gitT(t, seed, "rev-parse", "HEAD"))
	}
	dir := filepath.Join(root, "sglang")
	gitT(t, root, "clone", "-q", seed, dir)
	dir, err := filepath.EvalSymlinks(dir) // as git names its top level
	if err != nil {
		t.Fatal(err)
	}
	// Stashes need an identity on any host (sshd sessions do not get the
	// test's environment).
	gitT(t, dir, "config", "user.name", "Engineer")
	gitT(t, dir, "config", "user.email", "eng@example.com")
	gitT(t, dir, "reset", "-q", "--hard", ids[0])
	return gitRepoFixture{dir: dir, c1: ids[0], c2: ids[1], c3: ids[2]}
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeDirty changes the checkout in ways a checkout of c2 carries over: a
// modified file, a modified binary, a staged new file and untracked files.
func makeDirty(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, dir, "README.md", "# sglang\n\nlocal notes\n")
	writeFile(t, dir, "weights.bin", "\x00\x02\xfe mine\n")
	writeFile(t, dir, "model/new_kernel.py", "def k(): pass\n")
	gitT(t, dir, "add", "model/new_kernel.py")
	writeFile(t, dir, "scratch/bench notes ü.txt", "89 tok/s with LL\n")
}

// treeState is every byte a user could lose: the worktree files with their
// modes, the index, HEAD and the branch.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files = append(files, fmt.Sprintf("%s %v %q", rel, info.Mode(), b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	branch, _ := exec.Command("git", "-C", dir, "symbolic-ref", "-q", "HEAD").Output()
	return fmt.Sprintf("HEAD %s\nbranch %s\nindex:\n%s\nfiles:\n%s\n", gitT(t, dir, "rev-parse", "HEAD"),
		strings.TrimSpace(string(branch)), gitT(t, dir, "ls-files", "-s"), strings.Join(files, "\n"))
}

// noTerminal makes sure confirm() finds no terminal on stdin, even when
// the tests run in one.
func noTerminal(t *testing.T) {
	t.Helper()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdin
	os.Stdin = null
	t.Cleanup(func() { os.Stdin = saved; null.Close() })
}

// squash trims each line of s and collapses its runs of spaces.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// undoLine returns the words of the "undo: flightdeck ..." line of out,
// without "flightdeck".
func undoLine(t *testing.T, out string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if cmd, ok := strings.CutPrefix(l, "undo: "); ok {
			words, err := config.SplitWords(cmd)
			if err != nil || len(words) < 5 || words[0] != "flightdeck" {
				t.Fatalf("undo line %q: %v", l, err)
			}
			return words[1:]
		}
	}
	t.Fatalf("no undo line in:\n%s", out)
	return nil
}

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
		"\n?? evil.txt new\n",
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

// exitStatus is the status main exits with for err.
func exitStatus(err error) int {
	var ec exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return int(ec)
	}
	return 1
}

// TestGitNeedsARepo: no repository, or one that is not a git checkout, is
// input refused before anything runs (exit status 2), with the reason.
func TestGitNeedsARepo(t *testing.T) {
	newGitRepoFixture(t) // empty XDG_CONFIG_HOME: no config file
	plain := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no --repo, no config repo", []string{"git", "status", "local"}, exitRefused,
			[]string{"--repo PATH", `repo = "/path/to/checkout" in [hosts.local]`}},
		{"no repo for an action", []string{"git", "checkout", "local", "main", "--yes"}, exitRefused, []string{"no repository for local"}},
		{"a plain directory", []string{"git", "status", "local", "--repo", plain}, exitRefused, []string{"is not a git checkout"}},
		{"a missing directory", []string{"git", "stash", "local", "--repo", filepath.Join(plain, "nope")}, exitRefused, []string{"is not a git checkout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, err := runCLI(t, nil, c.args...)
			if got := exitStatus(err); got != c.code {
				t.Errorf("exit status %d, want %d (%v)", got, c.code, err)
			}
			text := stderr
			if err != nil {
				text += err.Error()
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("no %q in %q", w, text)
				}
			}
		})
	}
	_, errOut, err := runCLI(t, nil, "git", "bogus")
	if err == nil || !strings.Contains(errOut, `unknown command "bogus"`) {
		t.Errorf("git bogus: %v, stderr %q", err, errOut)
	}
}

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

// TestGitReportNotes: an action's notes follow its success line, each
// line "note: ...", sanitised, before the undo command.
func TestGitReportNotes(t *testing.T) {
	const id = "20261129-215807.123-3f9a"
	cases := []struct {
		name  string
		notes []string
		want  string
	}{
		{"none", nil, "restored x (snapshot before it: " + id + ")\nundo: flightdeck git restore box " + id + "\n"},
		{"two", []string{"main has moved since the snapshot: restored at 3207427, detached", "stashes brought back; the list is as it was"},
			"restored x (snapshot before it: " + id + ")\nnote: main has moved since the snapshot: restored at 3207427, detached\n" +
				"note: stashes brought back; the list is as it was\nundo: flightdeck git restore box " + id + "\n"},
		{"remote text", []string{"stash 3f9a could not be brought back: On main: \x1b]0;pwn\x07x\nsecond line"},
			"restored x (snapshot before it: " + id + ")\nnote: stash 3f9a could not be brought back: On main: x\nnote: second line\nundo: flightdeck git restore box " + id + "\n"},
	}
	saved := configPath // a global set by --config
	configPath = ""
	t.Cleanup(func() { configPath = saved })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := &cobra.Command{}
			cmd.SetOut(&out)
			tg := &gitTarget{alias: "box", cmd: cmd, f: &gitFlags{}, repo: &git.Repo{Path: "/root/sglang"}}
			if err := tg.report(event.GitAction{Op: "restore", Snapshot: id, Notes: c.notes}, "restored x"); err != nil {
				t.Fatal(err)
			}
			if out.String() != c.want {
				t.Errorf("output\n%s\nwant\n%s", out.String(), c.want)
			}
		})
	}
}

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

// TestGitRefusesOptionLikeRefs: a ref that git could read as an option or
// a shell could run is refused before anything runs, with or without "--".
func TestGitRefusesOptionLikeRefs(t *testing.T) {
	tr := newGitRepoFixture(t)
	makeDirty(t, tr.dir)
	before := treeState(t, tr.dir)
	marker := filepath.Join(t.TempDir(), "pwned")
	repo := []string{"--repo", tr.dir, "--yes"}
	for _, ref := range []string{"--orphan=x", "-f", "$(touch x)", "$(touch " + marker + ")", "`touch x`", "-", ""} {
		for _, args := range [][]string{
			append(append([]string{"git", "checkout", "local"}, repo...), "--", ref),
			append(append([]string{"git", "checkout", "local"}, repo...), ref),
			{"git", "stash", "local", "--repo", tr.dir, "apply", "--", ref},
			{"git", "stash", "local", "--repo", tr.dir, "drop", ref},
			append(append([]string{"git", "restore", "local"}, repo...), "--", ref),
		} {
			_, stderr, err := runCLI(t, nil, args...)
			wantExit(t, err, 2, fmt.Sprintf("%q", args))
			if stderr == "" {
				t.Errorf("%q: exit 2 without a reason", args)
			}
		}
	}
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", "a\nb"} {
		_, _, err := runCLI(t, nil, "git", "revert", "local", "--repo", tr.dir, "--yes", "--", p)
		wantExit(t, err, 2, "revert "+p)
	}
	for _, f := range []string{filepath.Join(tr.dir, "x"), "x", marker} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s exists: a ref was executed", f)
		}
	}
	if got := gitT(t, tr.dir, "branch", "--list", "--format=%(refname)"); got != "refs/heads/main" {
		t.Errorf("branches %q", got)
	}
	if after := treeState(t, tr.dir); after != before {
		t.Errorf("a refused command changed the tree")
	}
	if _, err := os.Stat(filepath.Join(tr.dir, ".git", "flightdeck")); err == nil {
		t.Errorf("a refused command took a snapshot")
	}
}

// TestGitOverSSH: status, checkout and its undo on a real sshd, the host
// named by a config alias that also names the repository.
func TestGitOverSSH(t *testing.T) {
	tr := newGitRepoFixture(t)
	srv := sshdtest.Start(t, sshdtest.Options{Env: map[string]string{"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1"}})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "[hosts.box]\ntarget = %q\nrepo = %q\n", srv.Target(), tr.dir), 0o644); err != nil {
		t.Fatal(err)
	}
	ssh := []string{"--config", cfg, "-F", os.DevNull, "-i", srv.ClientKeyPath(), "--known-hosts", known}
	makeDirty(t, tr.dir)
	before := treeState(t, tr.dir)

	out, stderr, err := runCLI(t, nil, append([]string{"git", "status", "box"}, ssh...)...)
	wantExit(t, err, 0, "status:\n"+stderr)
	if !strings.Contains(out, "branch     main, 2 behind origin/main") || !strings.Contains(out, "?? scratch/bench notes ü.txt") {
		t.Errorf("status:\n%s", out)
	}
	out, stderr, err = runCLI(t, nil, append([]string{"git", "checkout", "box", "origin/main~1", "--yes"}, ssh...)...)
	wantExit(t, err, 0, "checkout:\n"+stderr)
	if got := gitT(t, tr.dir, "rev-parse", "HEAD"); got != tr.c2 {
		t.Fatalf("HEAD %s, want %s", got, tr.c2)
	}
	undo := undoLine(t, out)
	if want := append([]string{"git", "restore", "box", undo[3]}, ssh...); strings.Join(undo, " ") != strings.Join(want, " ") {
		t.Errorf("undo %q, want %q", undo, want)
	}
	writeFile(t, tr.dir, "README.md", "changed after the checkout\n")
	_, stderr, err = runCLI(t, nil, append(undo, "--yes")...)
	wantExit(t, err, 0, "undo:\n"+stderr)
	if after := treeState(t, tr.dir); after != before {
		t.Errorf("undo over ssh is not exact:\n%s\nwant\n%s", after, before)
	}
}
