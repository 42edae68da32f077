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
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
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

// TestWriteJSONEscapesWhatATerminalActsOnOrHides: the JSON a command
// prints keeps its values (they decode back the same) while C1 controls
// and invisible characters — bidi controls, zero-width, the BOM, tag
// characters (as a surrogate pair) — arrive as \u escapes (issue 19,
// item 8).
func TestWriteJSONEscapesWhatATerminalActsOnOrHides(t *testing.T) {
	in := map[string]string{"subject": "fix\u009b31m \u202eexe\u200b\ufeff tag\U000e0041 ok 🚀"}
	var b bytes.Buffer
	if err := writeJSON(&b, in); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`\u009b`, `\u202e`, `\u200b`, `\ufeff`, `\udb40\udc41`, "🚀"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s: %s", want, out)
		}
	}
	for _, r := range out {
		if sanitize.Invisible(r) || r >= 0x80 && r < 0xa0 {
			t.Errorf("output holds %U raw: %q", r, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["subject"] != in["subject"] {
		t.Errorf("decoded %q (%v), want %q", back["subject"], err, in["subject"])
	}
}
