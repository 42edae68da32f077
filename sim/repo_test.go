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

func TestBuildRepo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	rc, err := BuildRepo(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.All) != 7 || rc.Latest != rc.All[6] || rc.Regressing != rc.All[5] || rc.Baseline != rc.All[3] {
		t.Fatalf("commits %+v", rc)
	}
	if head := git(t, dir, "rev-parse", "HEAD"); head != rc.Latest {
		t.Errorf("HEAD %s, want latest %s", head, rc.Latest)
	}
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("fresh repo is dirty: %q", st)
	}
	if b := git(t, dir, "branch", "--show-current"); b != "main" {
		t.Errorf("branch %q", b)
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
	// Fixed identities and dates: the same ids on every build.
	again, err := BuildRepo(context.Background(), filepath.Join(t.TempDir(), "repo"))
	if err != nil || !slices.Equal(again.All, rc.All) {
		t.Errorf("second build gave different ids: %v (%v)", again.All, err)
	}
}

// TestRegressionFollowsWorkingTree: the fake server decides from the file
// contents, so checkout, revert and stash change its speed like real code.
func TestRegressionFollowsWorkingTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	rc, err := BuildRepo(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, want bool) {
		t.Helper()
		got, err := TreeRegressed(dir)
		if err != nil || got != want {
			t.Errorf("%s: regressed = %v (%v), want %v", step, got, err, want)
		}
	}
	check("HEAD at latest", true)
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
