package sim

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// buildRepo builds the simulated upstream and checkout in a temporary
// directory, with history commits after the baseline (0: the default).
func buildRepo(t *testing.T, history int) (upstream, dir string, rc RepoCommits) {
	t.Helper()
	root := t.TempDir()
	upstream, dir = filepath.Join(root, "upstream.git"), filepath.Join(root, "repo")
	rc, err := BuildRepo(context.Background(), upstream, dir, history)
	if err != nil {
		t.Fatal(err)
	}
	return upstream, dir, rc
}

func TestBuildRepo(t *testing.T) {
	for _, tc := range []struct {
		history, regAt int // regAt: the regression's index in All
		broken         []int
		// ids: the ids a history must have on every machine (the short
		// story's are the ones of flightdeck before --history).
		baseline, regressing, latest string
	}{
		{history: 2, regAt: 4},
		{history: 3, regAt: 5, baseline: "a6d51c005def07f605f0dd44ce0da458e97c7d62",
			regressing: "65b09bf806504cd742b00f95e732678c903fe23d", latest: "e7b9c70604004ba4bd11dd60d3b77b812e09e711"},
		{history: 16, regAt: 3 + 10, broken: []int{3 + 3, 3 + 13}},
		{history: 0, regAt: 3 + 40, broken: []int{3 + 12, 3 + 32, 3 + 52}, baseline: "a6d51c005def07f605f0dd44ce0da458e97c7d62",
			regressing: "6690b1822d040b1599e2b1694d57fd2572b547b4", latest: "1298cded844517efbe03690975ec3e52f1beb45c"},
	} {
		t.Run(strconv.Itoa(tc.history), func(t *testing.T) {
			n := cmp.Or(tc.history, DefaultHistory)
			upstream, dir, rc := buildRepo(t, tc.history)
			if len(rc.All) != 4+n || rc.Latest != rc.All[3+n] || rc.Regressing != rc.All[tc.regAt] || rc.Baseline != rc.All[3] {
				t.Fatalf("commits %+v", rc)
			}
			var broken []string
			for _, i := range tc.broken {
				broken = append(broken, rc.All[i])
			}
			if !slices.Equal(rc.Broken, broken) {
				t.Errorf("broken %v, want %v", rc.Broken, broken)
			}
			for _, want := range [][2]string{{tc.baseline, rc.Baseline}, {tc.regressing, rc.Regressing}, {tc.latest, rc.Latest}} {
				if want[0] != "" && want[0] != want[1] {
					t.Errorf("id %s, want %s", want[1], want[0])
				}
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
			if got := git(t, dir, "rev-list", "--count", "HEAD..origin/main"); got != strconv.Itoa(n) {
				t.Errorf("checkout is %s commits behind origin/main, want %d", got, n)
			}
			if s := git(t, dir, "log", "-1", "--format=%s", rc.Regressing); s != SubjectRegressing {
				t.Errorf("regressing subject %q", s)
			}
			if s := git(t, dir, "log", "-1", "--format=%s", rc.Latest); s != SubjectLatest {
				t.Errorf("latest subject %q", s)
			}
			if s := git(t, dir, "log", "-1", "--format=%s", rc.Baseline); s != SubjectBaseline {
				t.Errorf("baseline subject %q", s)
			}
			// Every commit changes the tree (none is empty), and only the
			// regressing one touches pynccl.py after the baseline.
			for _, id := range rc.All[4:] {
				files := git(t, dir, "show", "--name-only", "--format=", id)
				if files == "" {
					t.Errorf("commit %s changes nothing", id)
				}
				if id != rc.Regressing && strings.Contains(files, PyncclPath) {
					t.Errorf("commit %s touches %s", id, PyncclPath)
				}
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
			if rec, err := readCommits(context.Background(), dir); err != nil || !slices.Equal(rec.All, rc.All) || rec.Baseline != rc.Baseline ||
				rec.Latest != rc.Latest || rec.Regressing != rc.Regressing || !slices.Equal(rec.Broken, rc.Broken) {
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
			_, _, again := buildRepo(t, tc.history)
			if !slices.Equal(again.All, rc.All) {
				t.Errorf("second build gave different ids: %v", again.All)
			}
		})
	}
	for _, n := range []int{-1, 1, MaxHistory + 1} {
		if _, err := BuildRepo(context.Background(), filepath.Join(t.TempDir(), "u.git"), t.TempDir(), n); err == nil {
			t.Errorf("history %d: no error", n)
		}
	}
}

// TestHistoryLayout: in every history length the regression sits inside
// the range, no broken commit is at either end or next to the regression,
// and each broken one is followed by its fix.
func TestHistoryLayout(t *testing.T) {
	for n := MinHistory; n <= 200; n++ {
		l := layoutFor(n)
		if l.reg < 1 || l.reg >= n || (n >= 3 && l.reg < 2) {
			t.Errorf("history %d: regression at %d", n, l.reg)
		}
		if n >= 24 && len(l.broken) != 3 {
			t.Errorf("history %d: %d broken commits, want 3", n, len(l.broken))
		}
		for i, b := range l.broken {
			if b < 2 || b+1 >= n || (l.reg >= b-1 && l.reg <= b+2) || (i > 0 && b < l.broken[i-1]+3) {
				t.Errorf("history %d: broken commit at %d (regression at %d, broken %v)", n, b, l.reg, l.broken)
			}
		}
	}
}

// TestRegressionFollowsWorkingTree: the fake server decides from the file
// contents, so pull, checkout, revert and stash change its speed like real
// code.
func TestRegressionFollowsWorkingTree(t *testing.T) {
	_, dir, rc := buildRepo(t, 3)
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

// BenchmarkBuildRepo: the demo builds the repository at every start, so
// it must stay a matter of milliseconds.
func BenchmarkBuildRepo(b *testing.B) {
	for b.Loop() {
		root := b.TempDir()
		if _, err := BuildRepo(context.Background(), filepath.Join(root, "upstream.git"), filepath.Join(root, "repo"), 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStartReusesItsHistory: a sim directory keeps its repository across
// starts with the same history; one of another length is refused, saying
// what to remove, rather than silently serving the old story.
func TestStartReusesItsHistory(t *testing.T) {
	dir := t.TempDir()
	start := func(history int) (*Host, error) {
		h, err := Start(context.Background(), Options{Dir: dir, NoSSH: true, History: history})
		if h != nil {
			t.Cleanup(func() { h.Close() })
		}
		return h, err
	}
	h, err := start(3)
	if err != nil {
		t.Fatal(err)
	}
	first := h.Commits
	h.Close()
	h, err = start(3)
	if err != nil || !slices.Equal(h.Commits.All, first.All) || h.Commits.Regressing != first.Regressing || h.Commits.Baseline != first.Baseline {
		t.Fatalf("restart: %+v, %v; want %+v", h, err, first)
	}
	h.Close()
	if _, err := start(0); err == nil || !strings.Contains(err.Error(), "holds a history of 3 commits after the baseline, not 64") {
		t.Errorf("another length: %v", err)
	}
}
