package git

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPatchOfADirtyCheckout(t *testing.T) {
	for _, hc := range hostCases() {
		t.Run(hc.name, func(t *testing.T) {
			tr := newTestRepo(t)
			write(t, tr.dir, "model/pynccl.py", "def all_reduce(x):\n    return x * 2\n")
			write(t, tr.dir, "weights.bin", binary(7))
			write(t, tr.dir, "new.py", "staged = True\n")
			gitIn(t, tr.dir, "add", "new.py")
			write(t, tr.dir, "untracked.txt", "not in the patch\n")
			// An external diff driver must not change what is recorded.
			gitIn(t, tr.dir, "config", "diff.external", "false")
			r := open(t, hc.host(t), tr.dir)

			p, err := r.Patch(ctxT(t), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			diff := exec.Command("git", "-C", tr.dir, "diff", "HEAD", "--binary", "--no-ext-diff")
			diff.Env = gitEnv()
			out, err := diff.Output()
			if err != nil {
				t.Fatal(err)
			}
			want := string(out)
			sum := sha256.Sum256([]byte(want))
			if p.Text != want || p.Bytes != int64(len(want)) || p.SHA256 != hex.EncodeToString(sum[:]) || p.Truncated {
				t.Fatalf("patch of %d bytes (sha %s, truncated %v), want %d bytes sha %x:\n%s", p.Bytes, p.SHA256, p.Truncated, len(want), sum, p.Text)
			}
			// It applies to HEAD and gives the dirty tracked files back.
			clone := filepath.Join(t.TempDir(), "c")
			gitIn(t, t.TempDir(), "clone", "-q", tr.upstream, clone)
			gitIn(t, clone, "checkout", "-q", tr.c1)
			apply := exec.Command("git", "-C", clone, "apply", "--binary", "--index")
			apply.Env = gitEnv()
			apply.Stdin = strings.NewReader(p.Text)
			if out, err := apply.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v: %s", err, out)
			}
			for _, f := range []string{"model/pynccl.py", "weights.bin", "new.py"} {
				if a, b := readState(t, tr.dir).files[f], readState(t, clone).files[f]; a != b {
					t.Errorf("%s differs after applying the patch", f)
				}
			}

			cut, err := r.Patch(ctxT(t), 100)
			if err != nil {
				t.Fatal(err)
			}
			if cut.Text != want[:100] || !cut.Truncated || cut.Bytes != p.Bytes || cut.SHA256 != p.SHA256 {
				t.Errorf("cut patch: %d bytes kept of %d, truncated %v, sha %s", len(cut.Text), cut.Bytes, cut.Truncated, cut.SHA256)
			}
		})
	}
}

func TestPatchOfACleanCheckoutAndOfNoCommits(t *testing.T) {
	tr := newTestRepo(t)
	h := hostCases()[0].host(t)
	p, err := open(t, h, tr.dir).Patch(ctxT(t), 1<<20)
	empty := sha256.Sum256(nil)
	if err != nil || p.Text != "" || p.Bytes != 0 || p.Truncated || p.SHA256 != hex.EncodeToString(empty[:]) {
		t.Errorf("clean: %+v, %v", p, err)
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main", dir)
	_, err = open(t, h, dir).Patch(ctxT(t), 1<<20)
	var ge *GitError
	if !errors.As(err, &ge) || ge.Code == 0 || ge.Stderr == "" {
		t.Errorf("no commits: %v", err)
	}
}
