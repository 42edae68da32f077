package git

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// conflicted leaves tr.dir in the middle of a merge that conflicted in
// model/pynccl.py, with model/parallel_state.py merged cleanly (staged).
func conflicted(t *testing.T, tr testRepo) {
	t.Helper()
	gitIn(t, tr.dir, "checkout", "-q", "-b", "mine")
	write(t, tr.dir, "model/pynccl.py", "def all_reduce(x):\n    return x * 2  # mine\n")
	gitIn(t, tr.dir, "commit", "-q", "-am", "mine")
	cmdErr := func() error {
		_, err := os.Stat(filepath.Join(tr.dir, ".git", "MERGE_HEAD"))
		return err
	}
	// The merge fails with a conflict; that is the point.
	c := execGit(tr.dir, "merge", tr.c2)
	if c == nil || cmdErr() != nil {
		t.Fatalf("merge did not stop with a conflict: %v", c)
	}
}

func TestRestoreOfAConflictedMergeIsExact(t *testing.T) {
	for _, hc := range hostCases() {
		t.Run(hc.name, func(t *testing.T) {
			tr := newTestRepo(t)
			conflicted(t, tr)
			// Half the work of resolving, and notes on the side.
			write(t, tr.dir, "model/pynccl.py", "def all_reduce(x):\n    return x * 2  # RESOLVED BY HAND\n")
			write(t, tr.dir, "precious.txt", "do not lose me\n")
			write(t, tr.dir, "README.md", "# edited during the merge\n")
			before := readState(t, tr.dir)
			mergeHead, _ := os.ReadFile(filepath.Join(tr.dir, ".git", "MERGE_HEAD"))
			r := open(t, hc.host(t), tr.dir)
			ctx := ctxT(t)

			// Actions git would refuse mid-merge are refused up front.
			if _, err := r.Stash(ctx, "x", true); !errors.Is(err, ErrUnmerged) {
				t.Errorf("stash mid-merge: %v", err)
			}
			if _, err := r.Checkout(ctx, tr.c3); !errors.Is(err, ErrUnmerged) {
				t.Errorf("checkout mid-merge: %v", err)
			}
			// A revert of another file is allowed, and undoable.
			a, err := r.Revert(ctx, []string{"README.md"})
			if err != nil || !a.OK() {
				t.Fatalf("revert: %v %+v", err, a)
			}
			// Wreck everything, then undo.
			execGit(tr.dir, "merge", "--abort")
			gitIn(t, tr.dir, "clean", "-fdq")
			b, err := r.Restore(ctx, a.Snapshot)
			if err != nil || !b.OK() {
				t.Fatalf("restore: %v %+v", err, b)
			}
			if d := before.diff(readState(t, tr.dir)); len(d) > 0 {
				t.Errorf("restore of a conflicted merge is not exact:\n%s", strings.Join(d, "\n"))
			}
			if got, _ := os.ReadFile(filepath.Join(tr.dir, ".git", "MERGE_HEAD")); string(got) != string(mergeHead) {
				t.Errorf("MERGE_HEAD %q, want %q", got, mergeHead)
			}
			if u := gitIn(t, tr.dir, "ls-files", "-u"); !strings.Contains(u, "model/pynccl.py") {
				t.Errorf("conflict stages not restored: %q", u)
			}
		})
	}
}

func TestRestoreKeepsAssumeUnchangedAndIgnoredFilesACheckoutReplaces(t *testing.T) {
	tr := newTestRepo(t)
	// A file the target commit tracks, ignored and present here.
	gitIn(t, tr.dir, "checkout", "-q", "-b", "other")
	write(t, tr.dir, "cfg.local", "theirs\n")
	gitIn(t, tr.dir, "add", "-f", "cfg.local")
	gitIn(t, tr.dir, "commit", "-q", "-m", "track cfg.local")
	gitIn(t, tr.dir, "checkout", "-q", "main")
	write(t, tr.dir, ".git/info/exclude", "*.local\n")
	write(t, tr.dir, "cfg.local", "mine, ignored\n")
	// An assume-unchanged file with local edits git does not show.
	gitIn(t, tr.dir, "update-index", "--assume-unchanged", "README.md")
	write(t, tr.dir, "README.md", "# local only\n")
	before := readState(t, tr.dir)
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)

	p, err := r.Preview(ctx, "other", 0)
	if err != nil || !slices.Equal(p.Overwrites, []string{"cfg.local"}) {
		t.Fatalf("preview: %v %+v", err, p.Overwrites)
	}
	a, err := r.Checkout(ctx, "other")
	if err != nil || !a.OK() {
		t.Fatalf("checkout: %v %+v", err, a)
	}
	if b, _ := os.ReadFile(filepath.Join(tr.dir, "cfg.local")); string(b) != "theirs\n" {
		t.Fatalf("cfg.local after checkout %q", b)
	}
	if b, err := r.Restore(ctx, a.Snapshot); err != nil || !b.OK() {
		t.Fatalf("restore: %v %+v", err, b)
	}
	after := readState(t, tr.dir)
	if d := before.diff(after); len(d) > 0 {
		t.Errorf("not exact: %v", d)
	}
}

func TestBranchWinsOverTagOfTheSameName(t *testing.T) {
	tr := newTestRepo(t)
	gitIn(t, tr.dir, "tag", "v1", tr.c2)
	gitIn(t, tr.dir, "branch", "v1", tr.c3)
	r := open(t, hostCases()[0].host(t), tr.dir)
	p, err := r.Preview(ctxT(t), "v1", 0)
	if err != nil || p.To.ID != tr.c3 || p.Branch != "v1" {
		t.Fatalf("preview %v to %s branch %q, want the branch at %s", err, p.To.ID, p.Branch, tr.c3)
	}
	a, err := r.Checkout(ctxT(t), "v1")
	if err != nil || a.To != tr.c3 || a.Branch != "v1" {
		t.Fatalf("checkout %v %+v", err, a)
	}
}

func TestStashPopKeepsTheStagedState(t *testing.T) {
	tr := newTestRepo(t)
	dirty(t, tr.dir)
	before := readState(t, tr.dir)
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	if a, err := r.Stash(ctx, "all of it", true); err != nil || !a.OK() {
		t.Fatal(err, a)
	}
	st, _ := r.Status(ctx, 0)
	a, err := r.StashApply(ctx, st.Stashes[0].ID, true)
	if err != nil || !a.OK() || len(a.Args) != 2 || a.Args[1] != "On main: all of it" {
		t.Fatalf("pop: %v %+v", err, a)
	}
	if d := before.diff(readState(t, tr.dir)); len(d) > 0 {
		t.Errorf("pop did not bring back the index too: %v", d)
	}
}

func TestUndoWritesNoReflogEntryWhenHEADStays(t *testing.T) {
	tr := newTestRepo(t)
	write(t, tr.dir, "README.md", "mine\n")
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	a, err := r.Revert(ctx, []string{"README.md"})
	if err != nil || !a.OK() {
		t.Fatal(err, a)
	}
	n := len(strings.Split(gitIn(t, tr.dir, "reflog"), "\n"))
	for range 3 {
		b, err := r.Restore(ctx, a.Snapshot)
		if err != nil || !b.OK() {
			t.Fatal(err, b)
		}
	}
	if m := len(strings.Split(gitIn(t, tr.dir, "reflog"), "\n")); m != n {
		t.Errorf("reflog grew from %d to %d entries", n, m)
	}
}

func TestRestoreKeepsTheStashOrder(t *testing.T) {
	tr := newTestRepo(t)
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	for _, name := range []string{"first", "second", "third"} {
		write(t, tr.dir, "README.md", name+"\n")
		gitIn(t, tr.dir, "stash", "push", "-q", "-m", name)
	}
	want := gitIn(t, tr.dir, "stash", "list", "--format=%H %gs")
	a, err := r.StashDrop(ctx, gitIn(t, tr.dir, "rev-parse", "stash@{1}"))
	if err != nil || !a.OK() || a.Args[1] != "On main: second" {
		t.Fatal(err, a)
	}
	b, err := r.Restore(ctx, a.Snapshot)
	if err != nil || !b.OK() || len(b.Notes) == 0 {
		t.Fatal(err, b)
	}
	if got := gitIn(t, tr.dir, "stash", "list", "--format=%H %gs"); got != want {
		t.Errorf("stash list after undo:\n%s\nwant\n%s", got, want)
	}
}

func TestBigUntrackedFilesAreNeitherCopiedNorDeleted(t *testing.T) {
	tr := newTestRepo(t)
	big := filepath.Join(tr.dir, "dump.nsys-rep")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(BigFile + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	write(t, tr.dir, "small.txt", "small\n")
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	a, err := r.Revert(ctx, []string{"dump.nsys-rep"})
	if err != nil || a.OK() || !strings.Contains(a.Err, "not saved") {
		t.Fatalf("revert of a big file: %v %+v", err, a)
	}
	if len(a.Notes) == 0 || !strings.Contains(a.Notes[0], "not copied") {
		t.Errorf("notes %q", a.Notes)
	}
	snaps, _ := r.Snapshots(ctx)
	if len(snaps) != 1 || snaps[0].Skipped != 1 || snaps[0].Untracked != 1 || snaps[0].Bytes > 1<<20 {
		t.Fatalf("snapshot %+v", snaps)
	}
	b, err := r.Revert(ctx, []string{"small.txt"})
	if err != nil || !b.OK() {
		t.Fatal(err, b)
	}
	if c, err := r.Restore(ctx, snaps[0].ID); err != nil || !c.OK() {
		t.Fatalf("restore beside a big file: %v %+v", err, c)
	}
	if fi, err := os.Stat(big); err != nil || fi.Size() != BigFile+1 {
		t.Errorf("big file after restore: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(tr.dir, "small.txt")); string(b) != "small\n" {
		t.Errorf("small.txt %q", b)
	}
}

// onOther makes branch other at c1 plus a commit that tracks name with
// content, and leaves the checkout on other.
func onOther(t *testing.T, tr testRepo, name, content string) {
	t.Helper()
	gitIn(t, tr.dir, "checkout", "-q", "-b", "other")
	write(t, tr.dir, name, content)
	gitIn(t, tr.dir, "add", "-f", name)
	gitIn(t, tr.dir, "commit", "-q", "-m", "track "+name)
}

func TestRestoreRefusesToOverwriteABigUntrackedFile(t *testing.T) {
	tr := newTestRepo(t)
	write(t, tr.dir, "dump.bin", "small\n")
	write(t, tr.dir, "README.md", "mine\n")
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	a, err := r.Revert(ctx, []string{"README.md"})
	if err != nil || !a.OK() {
		t.Fatal(err, a)
	}
	big := filepath.Join(tr.dir, "dump.bin")
	if err := os.Truncate(big, BigFile+10); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Restore(ctx, a.Snapshot); !errors.Is(err, ErrRestoreBlocked) || !strings.Contains(err.Error(), "dump.bin") {
		t.Fatalf("restore over a big file: %v", err)
	}
	if fi, _ := os.Stat(big); fi.Size() != BigFile+10 {
		t.Errorf("big file changed: %d bytes", fi.Size())
	}
	if left, _ := filepath.Glob(filepath.Join(r.SnapshotDir, "*.overwrite")); len(left) > 0 {
		t.Errorf("a refused restore left %v", left)
	}
}

func TestRestoreRefusesToWriteThroughASymlink(t *testing.T) {
	tr := newTestRepo(t)
	write(t, tr.dir, "data/notes.txt", "old notes\n")
	write(t, tr.dir, "README.md", "mine\n")
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	a, err := r.Revert(ctx, []string{"README.md"})
	if err != nil || !a.OK() {
		t.Fatal(err, a)
	}
	shared := t.TempDir()
	if err := os.Rename(filepath.Join(tr.dir, "data"), filepath.Join(shared, "data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(shared, "data"), filepath.Join(tr.dir, "data")); err != nil {
		t.Fatal(err)
	}
	write(t, tr.dir, ".git/info/exclude", "data\n")
	write(t, shared, "data/notes.txt", "new shared notes\n")
	if _, err := r.Restore(ctx, a.Snapshot); !errors.Is(err, ErrRestoreBlocked) || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("restore through a symlink: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(shared, "data/notes.txt")); string(b) != "new shared notes\n" {
		t.Errorf("wrote through the symlink: %q", b)
	}
}

func TestRestoreSavesTheIgnoredFilesItReplaces(t *testing.T) {
	tr := newTestRepo(t)
	onOther(t, tr, "x.log", "tracked in other\n")
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	s, err := r.Snapshot(ctx, "on other")
	if err != nil {
		t.Fatal(err)
	}
	gitIn(t, tr.dir, "checkout", "-q", "main")
	write(t, tr.dir, ".git/info/exclude", "*.log\n")
	write(t, tr.dir, "x.log", "NEW, today's run\n")
	a, err := r.Restore(ctx, s.ID)
	if err != nil || !a.OK() {
		t.Fatal(err, a)
	}
	if b, _ := os.ReadFile(filepath.Join(tr.dir, "x.log")); string(b) != "tracked in other\n" {
		t.Fatalf("x.log after restore %q", b)
	}
	if b, err := r.Restore(ctx, a.Snapshot); err != nil || !b.OK() {
		t.Fatal(err, b)
	}
	if b, _ := os.ReadFile(filepath.Join(tr.dir, "x.log")); string(b) != "NEW, today's run\n" {
		t.Errorf("the ignored x.log was not saved before the restore replaced it: %q", b)
	}
}

func TestRestoreOverAnUntrackedFileOfTheSameName(t *testing.T) {
	tr := newTestRepo(t)
	onOther(t, tr, "y.txt", "theirs\n")
	r := open(t, hostCases()[0].host(t), tr.dir)
	ctx := ctxT(t)
	s, err := r.Snapshot(ctx, "on other")
	if err != nil {
		t.Fatal(err)
	}
	gitIn(t, tr.dir, "checkout", "-q", "main")
	write(t, tr.dir, "y.txt", "mine, untracked\n")
	a, err := r.Restore(ctx, s.ID)
	if err != nil || !a.OK() {
		t.Fatalf("%v %+v", err, a)
	}
	if got := gitIn(t, tr.dir, "status", "--porcelain"); got != "" {
		t.Errorf("status after restore %q", got)
	}
	if b, err := r.Restore(ctx, a.Snapshot); err != nil || !b.OK() {
		t.Fatal(err, b)
	}
	if b, _ := os.ReadFile(filepath.Join(tr.dir, "y.txt")); string(b) != "mine, untracked\n" {
		t.Errorf("y.txt %q", b)
	}
}
