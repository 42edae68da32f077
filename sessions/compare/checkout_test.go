package compare

import (
	"strings"
	"testing"
)

func TestDiffStat(t *testing.T) {
	patch := "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,3 @@\n-a\n+b\n+c\n d\n" +
		"diff --git a/w.bin b/w.bin\nGIT binary patch\nliteral 3\nabc\n" +
		"diff --git a/old name.txt b/new name.txt\nsimilarity index 90%\nrename from old name.txt\nrename to new name.txt\n@@ -1 +1 @@\n---x\n+++y\n"
	got := DiffStat(patch)
	want := []FileChange{{Path: "x.py", Added: 2, Deleted: 1}, {Path: "w.bin", Binary: true}, {Path: "new name.txt", Added: 1, Deleted: 1}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := DiffStatSummary(patch); s != "3 files, +3 -2, 1 binary" {
		t.Errorf("summary %q", s)
	}
	if DiffStat("not a patch\n+x\n") != nil || DiffStatSummary("") != "" {
		t.Error("text that is not a patch gave a stat")
	}
}

// FuzzDiffStat: any text gives a stat without a panic, with non-negative
// counts and sanitised paths.
func FuzzDiffStat(f *testing.F) {
	f.Add("diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n")
	f.Add("diff --git a/\x1b[31mx b/\x1b[31mx\nGIT binary patch\n")
	f.Add("+++\n---\n@@\ndiff --git \n")
	f.Fuzz(func(t *testing.T, patch string) {
		for _, fc := range DiffStat(patch) {
			if fc.Added < 0 || fc.Deleted < 0 || strings.ContainsRune(fc.Path, '\x1b') {
				t.Fatalf("%+v", fc)
			}
		}
		_ = DiffStatSummary(patch)
	})
}
