package git

import (
	"errors"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestStatusOfADirtyCheckout(t *testing.T) {
	for _, hc := range hostCases() {
		t.Run(hc.name, func(t *testing.T) {
			tr := newTestRepo(t)
			write(t, tr.dir, "README.md", "stashed\n")
			gitIn(t, tr.dir, "stash", "push", "-q", "-m", "try LL128")
			stashID := gitIn(t, tr.dir, "rev-parse", "stash@{0}")
			dirty(t, tr.dir)
			r := open(t, hc.host(t), tr.dir)
			st, err := r.Status(ctxT(t), 0)
			if err != nil {
				t.Fatal(err)
			}
			if st.Branch != "main" || st.Head.ID != tr.c1 || st.Head.Subject != "Initial" {
				t.Errorf("branch %q head %+v", st.Branch, st.Head)
			}
			if st.Upstream != "origin/main" || st.Ahead != 0 || st.Behind != 2 {
				t.Errorf("upstream %q ahead %d behind %d, want origin/main 0 2", st.Upstream, st.Ahead, st.Behind)
			}
			got := map[string]event.GitFile{}
			for _, f := range st.Files {
				got[f.Path] = f
			}
			want := []struct {
				path       string
				xy         string
				add, del   int
				bin, track bool
			}{
				{"README.md", " M", 2, 0, false, true},
				{"model/parallel_state.py", "MM", 2, 1, false, true},
				{"model/new_kernel.py", "A ", 1, 0, false, true},
				{"weights.bin", " M", -1, -1, true, true},
				{"scratch/bench notes ü.txt", "??", -1, -1, false, false},
				{"scratch/profile.bin", "??", -1, -1, false, false},
			}
			if len(st.Files) != len(want) {
				t.Errorf("%d files, want %d: %+v", len(st.Files), len(want), st.Files)
			}
			for _, w := range want {
				f, ok := got[w.path]
				if !ok {
					t.Errorf("%s missing", w.path)
					continue
				}
				if string([]byte{f.X, f.Y}) != w.xy || f.Added != w.add || f.Deleted != w.del || f.Binary != w.bin || f.Untracked() == w.track {
					t.Errorf("%s: %+v, want %+v", w.path, f, w)
				}
			}
			staged, unstaged, untracked, conflicted := st.Counts()
			if staged != 2 || unstaged != 3 || untracked != 2 || conflicted != 0 {
				t.Errorf("counts %d %d %d %d", staged, unstaged, untracked, conflicted)
			}
			if len(st.Reflog) == 0 || st.Reflog[0].Action != "reset" || st.Reflog[0].ID != tr.c1 {
				t.Errorf("reflog %+v", st.Reflog)
			}
			if len(st.Stashes) != 1 || st.Stashes[0].ID != stashID || st.Stashes[0].Message != "On main: try LL128" || st.Stashes[0].Ref() != "stash@{0}" {
				t.Errorf("stashes %+v", st.Stashes)
			}
		})
	}
}

func TestCheckoutThenRestoreGivesBackEveryByte(t *testing.T) {
	for _, hc := range hostCases() {
		t.Run(hc.name, func(t *testing.T) {
			tr := newTestRepo(t)
			dirty(t, tr.dir)
			// The checkout must carry the dirty files over, so leave out
			// the ones c2 changes, except that the snapshot must have them.
			gitIn(t, tr.dir, "restore", "--staged", "--worktree", "--", "model/parallel_state.py")
			write(t, tr.dir, "model/untouched.txt", "local\n")
			before := readState(t, tr.dir)
			r := open(t, hc.host(t), tr.dir)
			ctx := ctxT(t)

			p, err := r.Preview(ctx, tr.c2[:10], 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.ForwardCount != 1 || p.BackCount != 0 || p.To.ID != tr.c2 || len(p.Files) != 2 || len(p.Blocking) != 0 {
				t.Errorf("preview %+v", p)
			}

			a, err := r.Checkout(ctx, tr.c2[:10])
			if err != nil || !a.OK() {
				t.Fatalf("checkout: %v %+v", err, a)
			}
			if a.From != tr.c1 || a.To != tr.c2 || a.Branch != "" || a.Snapshot == "" {
				t.Errorf("action %+v", a)
			}
			// The files the move brings in, for the journal's reports.
			if a.FilesTotal != len(p.Files) || len(a.Files) != len(p.Files) || a.Files[0] != p.Files[0].Path {
				t.Errorf("action files %q (%d), preview %+v", a.Files, a.FilesTotal, p.Files)
			}
			if got := gitIn(t, tr.dir, "rev-parse", "HEAD"); got != tr.c2 {
				t.Fatalf("HEAD %s", got)
			}
			// Lose some work on purpose, the way a hurried engineer would.
			gitIn(t, tr.dir, "reset", "-q", "--hard")
			gitIn(t, tr.dir, "clean", "-fdq")
			write(t, tr.dir, "later.txt", "made after the checkout\n")

			b, err := r.Restore(ctx, a.Snapshot)
			if err != nil || !b.OK() {
				t.Fatalf("restore: %v %+v", err, b)
			}
			after := readState(t, tr.dir)
			after.files["later.txt"] = before.files["later.txt"] // removed by restore, but saved:
			if d := before.diff(after); len(d) > 0 {
				t.Errorf("restore is not exact:\n%s", strings.Join(d, "\n"))
			}
			// The restore itself was snapshotted: the file made after the
			// checkout is in it.
			snaps, err := r.Snapshots(ctx)
			if err != nil || len(snaps) != 2 || snaps[0].ID != b.Snapshot || snaps[1].ID != a.Snapshot {
				t.Fatalf("snapshots %v %+v", err, snaps)
			}
			if snaps[0].Head != tr.c2 || snaps[1].Head != tr.c1 || snaps[1].Branch != "main" || snaps[1].Files != 6 || snaps[1].Untracked != 3 {
				t.Errorf("snapshots %+v", snaps)
			}
			c, err := r.Restore(ctx, b.Snapshot)
			if err != nil || !c.OK() {
				t.Fatalf("restore back: %v %+v", err, c)
			}
			if got, _ := os.ReadFile(filepath.Join(tr.dir, "later.txt")); string(got) != "made after the checkout\n" {
				t.Errorf("later.txt %q", got)
			}
		})
	}
}

func TestCheckoutBlockedByDirtyFileChangesNothing(t *testing.T) {
	tr := newTestRepo(t)
	dirty(t, tr.dir)
	before := readState(t, tr.dir)
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	p, err := r.Preview(ctx, "origin/main", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Blocking, "model/parallel_state.py") || !slices.Contains(p.Blocking, "README.md") || p.ForwardCount != 2 {
		t.Errorf("preview %+v", p)
	}
	a, err := r.Checkout(ctx, "origin/main")
	if err != nil {
		t.Fatal(err)
	}
	if a.OK() || !strings.Contains(a.Err, "would be overwritten") || a.To != tr.c1 {
		t.Errorf("action %+v", a)
	}
	if d := before.diff(readState(t, tr.dir)); len(d) > 0 {
		t.Errorf("refused checkout changed the tree: %v", d)
	}
}

func TestDiffstatFollowsRenames(t *testing.T) {
	tr := newTestRepo(t)
	long := strings.Repeat("# a line of the parallel state module\n", 20)
	write(t, tr.dir, "model/parallel_state.py", long)
	gitIn(t, tr.dir, "commit", "-q", "-am", "longer")
	gitIn(t, tr.dir, "mv", "model/parallel_state.py", "model/state.py")
	write(t, tr.dir, "model/state.py", long+"PCG = False\n")
	r := open(t, hostCases()[0].host(t), tr.dir)
	st, err := r.Status(ctxT(t), 0)
	if err != nil || len(st.Files) != 1 {
		t.Fatalf("%v %+v", err, st.Files)
	}
	if f := st.Files[0]; f.Path != "model/state.py" || f.Orig != "model/parallel_state.py" || f.Added != 1 || f.Deleted != 0 {
		t.Errorf("%+v, want the rename with +1 -0", f)
	}
}

func TestStatusOfARepositoryWithoutCommits(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	r := open(t, hostCases()[0].host(t), dir)
	if _, err := r.Status(ctxT(t), 0); err == nil || !strings.Contains(err.Error(), "no commits yet") {
		t.Errorf("err %v", err)
	}
}

func TestCheckoutBranchByName(t *testing.T) {
	tr := newTestRepo(t)
	gitIn(t, tr.dir, "branch", "feature", tr.c2)
	r := open(t, hostCases()[0].host(t), tr.dir)
	a, err := r.Checkout(ctxT(t), "feature")
	if err != nil || !a.OK() || a.Branch != "feature" || a.To != tr.c2 {
		t.Fatalf("%v %+v", err, a)
	}
	a, err = r.Checkout(ctxT(t), "main")
	if err != nil || !a.OK() || a.Branch != "main" || a.To != tr.c1 {
		t.Fatalf("%v %+v", err, a)
	}
}

func TestStashPopConflictKeepsStashAndLosesNothing(t *testing.T) {
	for _, hc := range hostCases() {
		t.Run(hc.name, func(t *testing.T) {
			tr := newTestRepo(t)
			write(t, tr.dir, "model/pynccl.py", "def all_reduce(x):\n    return x * 2  # mine\n")
			write(t, tr.dir, "notes.txt", "untracked\n")
			r := open(t, hc.host(t), tr.dir)
			ctx := ctxT(t)
			a, err := r.Stash(ctx, "before pull: my all_reduce", true)
			if err != nil || !a.OK() {
				t.Fatalf("stash: %v %+v", err, a)
			}
			st, err := r.Status(ctx, 0)
			if err != nil || len(st.Files) != 0 || len(st.Stashes) != 1 || st.Stashes[0].Message != "On main: before pull: my all_reduce" {
				t.Fatalf("after stash: %v %+v", err, st)
			}
			stash := st.Stashes[0]
			gitIn(t, tr.dir, "merge", "-q", "--ff-only", "origin/main") // the pull: c2 changes pynccl.py
			before := readState(t, tr.dir)

			a, err = r.StashApply(ctx, stash.ID, true)
			if err != nil {
				t.Fatal(err)
			}
			if a.OK() || !slices.Equal(a.Conflict, []string{"model/pynccl.py"}) || !strings.Contains(a.Err, "the stash is kept") {
				t.Errorf("pop: %+v", a)
			}
			st, err = r.Status(ctx, 0)
			if err != nil || len(st.Stashes) != 1 || st.Stashes[0].ID != stash.ID {
				t.Fatalf("stash not kept: %v %+v", err, st.Stashes)
			}
			// Undo: the tree as before the pop, and the stash still there.
			b, err := r.Restore(ctx, a.Snapshot)
			if err != nil || !b.OK() {
				t.Fatalf("restore: %v %+v", err, b)
			}
			if d := before.diff(readState(t, tr.dir)); len(d) > 0 {
				t.Errorf("undo of the pop is not exact: %v", d)
			}
			if got := gitIn(t, tr.dir, "stash", "list", "--format=%H"); got != stash.ID {
				t.Errorf("stash list %q", got)
			}
		})
	}
}

func TestStashDropIsUndoable(t *testing.T) {
	tr := newTestRepo(t)
	write(t, tr.dir, "README.md", "mine\n")
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	if a, err := r.Stash(ctx, "one", false); err != nil || !a.OK() {
		t.Fatal(err, a)
	}
	id := gitIn(t, tr.dir, "rev-parse", "stash@{0}")
	a, err := r.StashDrop(ctx, id)
	if err != nil || !a.OK() {
		t.Fatal(err, a)
	}
	if got := gitIn(t, tr.dir, "stash", "list"); got != "" {
		t.Fatalf("not dropped: %q", got)
	}
	if _, err := r.Restore(ctx, a.Snapshot); err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, tr.dir, "stash", "list", "--format=%H %gs"); got != id+" On main: one" {
		t.Errorf("stash not brought back: %q", got)
	}
}

func TestStashOfCleanTreeSaysSo(t *testing.T) {
	tr := newTestRepo(t)
	r := open(t, hostCases()[0].host(t), tr.dir)
	write(t, tr.dir, "notes.txt", "untracked only\n")
	if a, err := r.Stash(ctxT(t), "x", false); !errors.Is(err, ErrNothingToStash) || a.Snapshot != "" {
		t.Errorf("only untracked files, not included: %v %+v", err, a)
	}
	os.Remove(filepath.Join(tr.dir, "notes.txt"))
	if _, err := r.Stash(ctxT(t), "x", true); !errors.Is(err, ErrNothingToStash) {
		t.Errorf("clean tree: %v", err)
	}
	if snaps, _ := r.Snapshots(ctxT(t)); len(snaps) != 0 {
		t.Errorf("refused stashes took snapshots: %d", len(snaps))
	}
}

func TestRevertTouchesOnlyChosenFiles(t *testing.T) {
	for _, hc := range hostCases() {
		t.Run(hc.name, func(t *testing.T) {
			tr := newTestRepo(t)
			dirty(t, tr.dir)
			before := readState(t, tr.dir)
			r := open(t, hc.host(t), tr.dir)
			chosen := []string{"model/parallel_state.py", "scratch/bench notes ü.txt", "model/new_kernel.py"}
			a, err := r.Revert(ctxT(t), chosen)
			if err != nil || !a.OK() {
				t.Fatalf("%v %+v", err, a)
			}
			after := readState(t, tr.dir)
			for name := range before.files {
				switch {
				case name == "model/parallel_state.py":
					if after.files[name] != "-rw-r--r--\nTP = 8\n" {
						t.Errorf("%s not reverted: %q", name, after.files[name])
					}
				case slices.Contains(chosen, name):
					if _, ok := after.files[name]; ok {
						t.Errorf("%s still there", name)
					}
				default:
					if after.files[name] != before.files[name] {
						t.Errorf("%s changed", name)
					}
				}
			}
			if strings.Contains(after.index, "new_kernel") || strings.Contains(after.index, "TP = 4") {
				t.Errorf("index %s", after.index)
			}
			if _, err := r.Revert(ctxT(t), []string{"model/pynccl.py"}); err == nil {
				t.Error("revert of a clean file did not fail")
			}
		})
	}
}

func TestRefusedRefsAndPaths(t *testing.T) {
	tr := newTestRepo(t)
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	marker := filepath.Join(tr.dir, "pwned")
	for _, ref := range []string{"--orphan=x", "-f", "-", "$(touch pwned)", "`touch pwned`", ";rm -rf .", "a b", "main\nrm", "", " main", "ma\x1bin", "main\xff"} {
		if _, err := r.Resolve(ctx, ref); !errors.Is(err, ErrBadRef) {
			t.Errorf("Resolve(%q) = %v, want ErrBadRef", ref, err)
		}
		if _, err := r.Checkout(ctx, ref); !errors.Is(err, ErrBadRef) {
			t.Errorf("Checkout(%q) = %v, want ErrBadRef", ref, err)
		}
	}
	for _, p := range []string{"", "/etc/passwd", "../x", "a/../../x", "a\nb", "\x1b[2J"} {
		if _, err := r.Revert(ctx, []string{p}); !errors.Is(err, ErrBadPath) {
			t.Errorf("Revert(%q) = %v, want ErrBadPath", p, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a ref was executed")
	}
	if got := gitIn(t, tr.dir, "branch", "--list", "--format=%(refname)"); got != "refs/heads/main" {
		t.Errorf("branches %q", got)
	}
	if _, err := r.StashApply(ctx, "stash@{0}", true); !errors.Is(err, ErrBadRef) {
		t.Errorf("StashApply by index: %v", err)
	}
	for _, id := range []string{"../../etc", "20261129-215807.123-3f9a"} {
		if _, err := r.Restore(ctx, id); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("Restore(%q) = %v, want ErrBadSnapshot", id, err)
		}
	}
	if snaps, _ := r.Snapshots(ctx); len(snaps) != 0 {
		t.Errorf("refused actions took snapshots: %+v", snaps)
	}
}

func TestHostileNamesAreLiteral(t *testing.T) {
	for _, hc := range hostCases() {
		t.Run(hc.name, func(t *testing.T) {
			tr := newTestRepo(t)
			names := []string{"-f", "$(touch pwned)", ";rm -rf .", "a b.txt", "ветка.py", "*", ":(glob)x", "--orphan=x"}
			for _, n := range names {
				write(t, tr.dir, n, "dirty "+n+"\n")
			}
			write(t, tr.dir, "keep.txt", "keep\n")
			// A branch and a tag with unicode and shell characters.
			gitIn(t, tr.dir, "branch", "ветка-$x", tr.c2)
			r := open(t, hc.host(t), tr.dir)
			ctx := ctxT(t)
			if a, err := r.Stash(ctx, "$(touch pwned) `id`; rm -rf /", true); err != nil || !a.OK() {
				t.Fatal(err, a)
			}
			if got := gitIn(t, tr.dir, "stash", "list", "--format=%gs"); got != "On main: $(touch pwned) `id`; rm -rf /" {
				t.Errorf("stash message %q", got)
			}
			id := gitIn(t, tr.dir, "rev-parse", "stash@{0}")
			if a, err := r.StashApply(ctx, id, true); err != nil || !a.OK() {
				t.Fatal(err, a)
			}
			a, err := r.Revert(ctx, names[:4])
			if err != nil || !a.OK() {
				t.Fatalf("%v %+v", err, a)
			}
			for i, n := range names {
				_, err := os.Stat(filepath.Join(tr.dir, n))
				if gone := os.IsNotExist(err); gone != (i < 4) {
					t.Errorf("%q: gone=%v", n, gone)
				}
			}
			if _, err := os.Stat(filepath.Join(tr.dir, "keep.txt")); err != nil {
				t.Error("keep.txt gone")
			}
			if _, err := os.Stat(filepath.Join(tr.dir, "pwned")); err == nil {
				t.Error("a name was executed")
			}
			a, err = r.Checkout(ctx, "ветка-$x")
			if err != nil || !a.OK() || a.Branch != "ветка-$x" || a.To != tr.c2 {
				t.Errorf("unicode branch: %v %+v", err, a)
			}
		})
	}
}
