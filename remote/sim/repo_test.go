package sim

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// buildRepo builds the simulated upstream and checkout in a temporary directory.
func buildRepo(t *testing.T) (upstream, dir string, rc RepoCommits) {
	t.Helper()
	root := t.TempDir()
	upstream, dir = filepath.Join(root, "upstream.git"), filepath.Join(root, "repo")
	rc, err := BuildRepo(context.Background(), upstream, dir)
	if err != nil {
		t.Fatal(err)
	}
	return upstream, dir, rc
}

func TestBuildRepo(t *testing.T) {
	upstream, dir, rc := buildRepo(t)
	if len(rc.All) != 7 || rc.Latest != rc.All[6] || rc.Regressing != rc.All[5] || rc.Baseline != rc.All[3] {
		t.Fatalf("commits %+v", rc)
	}
	// The engineer's checkout sits at the baseline, behind its upstream.
	if head := git(t, dir, "rev-parse", "HEAD"); head != rc.Baseline {
		t.Errorf("HEAD %s, want baseline %s", head, rc.Baseline)
	}
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("fresh repo is dirty: %q", st)
	}
	if b := git(t, dir, "branch", "--show-current"); b != "main" {
		t.Errorf("branch %q", b)
	}
	if u := git(t, dir, "rev-parse", "--abbrev-ref", "main@{upstream}"); u != "origin/main" {
		t.Errorf("main tracks %q, want origin/main", u)
	}
	if url := git(t, dir, "remote", "get-url", "origin"); url != upstream {
		t.Errorf("origin %q, want %q", url, upstream)
	}
	if tip := git(t, upstream, "rev-parse", "main"); tip != rc.Latest {
		t.Errorf("upstream main %s, want latest %s", tip, rc.Latest)
	}
	if n := git(t, dir, "rev-list", "--count", "HEAD..origin/main"); n != "3" {
		t.Errorf("checkout is %s commits behind origin/main, want 3", n)
	}
	if s := git(t, dir, "log", "-1", "--format=%s", rc.Regressing); s != "Fix PCG MoE Error" {
		t.Errorf("regressing subject %q", s)
	}
	files := strings.Split(git(t, dir, "show", "--name-only", "--format=", rc.Regressing), "\n")
	for _, f := range []string{PyncclPath, "python/sglang/srt/distributed/parallel_state.py"} {
		if !slices.Contains(files, f) {
			t.Errorf("regressing commit does not touch %s: %v", f, files)
		}
	}
	if diff := git(t, dir, "show", rc.Regressing, "--", PyncclPath); !strings.Contains(diff, "+        if "+RegressionMarker+":") {
		t.Errorf("regressing diff lacks the marker in the all-reduce path:\n%s", diff)
	}
	if rec, err := readCommits(context.Background(), dir); err != nil || !slices.Equal(rec.All, rc.All) || rec.Baseline != rc.Baseline || rec.Latest != rc.Latest {
		t.Errorf("readCommits %+v (%v), want %+v", rec, err, rc)
	}
	// The unrecorded pull: a fast-forward onto the regression.
	git(t, dir, "pull", "-q", "--ff-only")
	if head := git(t, dir, "rev-parse", "HEAD"); head != rc.Latest {
		t.Errorf("after pull HEAD %s, want latest %s", head, rc.Latest)
	}
	if rec, err := readCommits(context.Background(), dir); err != nil || rec.Baseline != rc.Baseline {
		t.Errorf("readCommits after the pull: %+v (%v)", rec, err)
	}
	// Fixed identities and dates: the same ids on every build.
	_, _, again := buildRepo(t)
	if !slices.Equal(again.All, rc.All) {
		t.Errorf("second build gave different ids: %v", again.All)
	}
}

// TestRegressionFollowsWorkingTree: the fake server decides from the file
// contents, so pull, checkout, revert and stash change its speed like real
// code.
func TestRegressionFollowsWorkingTree(t *testing.T) {
	_, dir, rc := buildRepo(t)
	check := func(step string, want bool) {
		t.Helper()
		got, err := TreeRegressed(dir)
		if err != nil || got != want {
			t.Errorf("%s: regressed = %v (%v), want %v", step, got, err, want)
		}
	}
	check("HEAD at baseline", false)
	git(t, dir, "pull", "-q", "--ff-only")
	check("pulled to latest", true)
	git(t, dir, "checkout", "-q", rc.Baseline)
	check("checkout baseline", false)
	git(t, dir, "checkout", "-q", rc.Regressing)
	check("checkout regressing", true)
	git(t, dir, "checkout", "-q", "main")
	git(t, dir, "checkout", "-q", rc.Baseline, "--", PyncclPath)
	check("pynccl.py restored from baseline (uncommitted)", false)
	git(t, dir, "stash", "-q")
	check("stashed the fix", true)
	git(t, dir, "stash", "pop", "-q")
	check("popped the fix", false)

	if ok, err := TreeRegressed(t.TempDir()); ok || err != nil {
		t.Errorf("no pynccl.py: %v, %v", ok, err)
	}
	if err := os.Chmod(filepath.Join(dir, PyncclPath), 0); err == nil && os.Getuid() != 0 {
		if _, err := TreeRegressed(dir); err == nil {
			t.Error("unreadable pynccl.py gave no error")
		}
	}
}

func TestModelTokPerSec(t *testing.T) {
	for _, tc := range []struct {
		tuned, regressed, eagle bool
		want                    float64
	}{
		{false, false, false, 62.5}, {true, false, false, 89}, {true, true, false, 81.88},
		{false, true, false, 57.5}, {true, false, true, 94}, {true, true, true, 60},
	} {
		if got := ModelTokPerSec(tc.tuned, tc.regressed, tc.eagle); got < tc.want-0.01 || got > tc.want+0.01 {
			t.Errorf("ModelTokPerSec(%v, %v, %v) = %.3f, want %.2f", tc.tuned, tc.regressed, tc.eagle, got, tc.want)
		}
	}
	env := profileEnv()
	if !HasNCCLProfile(env) || HasNCCLProfile(env[1:]) || HasNCCLProfile(append(env, "NCCL_PROTO=Simple")) {
		t.Error("HasNCCLProfile: need all six, with the profile's values, last one wins")
	}
}
