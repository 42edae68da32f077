package git

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRangeBetweenTwoCommits(t *testing.T) {
	for _, hc := range hostCases() {
		t.Run(hc.name, func(t *testing.T) {
			tr := newTestRepo(t)
			r := open(t, hc.host(t), tr.dir)
			short := func(id string) string { return gitIn(t, tr.dir, "rev-parse", "--short", id) }
			for _, tc := range []struct {
				name        string
				from, to    string
				limit       int
				ahead       []string
				behind      []string
				files       []string
				aheadTotal  int
				behindTotal int
				filesTotal  int
			}{
				{name: "forward", from: tr.c1, to: tr.c3,
					ahead:      []string{short(tr.c3) + " Docs", short(tr.c2) + " Fix PCG MoE Error"},
					files:      []string{"README.md", "model/parallel_state.py", "model/pynccl.py"},
					aheadTotal: 2, filesTotal: 3},
				{name: "back to an older commit", from: tr.c3, to: tr.c2,
					behind:      []string{short(tr.c3) + " Docs"},
					files:       []string{"README.md"},
					behindTotal: 1, filesTotal: 1},
				{name: "cut at the limit, counted in full", from: short(tr.c1), to: "origin/main", limit: 1,
					ahead:      []string{short(tr.c3) + " Docs"},
					files:      []string{"README.md"},
					aheadTotal: 2, filesTotal: 3},
				{name: "the same commit", from: tr.c2, to: tr.c2},
			} {
				t.Run(tc.name, func(t *testing.T) {
					got, err := r.Range(ctxT(t), tc.from, tc.to, tc.limit)
					if err != nil {
						t.Fatal(err)
					}
					wantFrom := gitIn(t, tr.dir, "rev-parse", tc.from)
					wantTo := gitIn(t, tr.dir, "rev-parse", tc.to)
					if got.From != wantFrom || got.To != wantTo {
						t.Errorf("from %s to %s, want %s to %s", got.From, got.To, wantFrom, wantTo)
					}
					if !slices.Equal(got.Ahead, tc.ahead) || !slices.Equal(got.Behind, tc.behind) || !slices.Equal(got.Files, tc.files) {
						t.Errorf("ahead %q behind %q files %q, want %q %q %q", got.Ahead, got.Behind, got.Files, tc.ahead, tc.behind, tc.files)
					}
					if got.AheadTotal != tc.aheadTotal || got.BehindTotal != tc.behindTotal || got.FilesTotal != tc.filesTotal {
						t.Errorf("totals %d %d %d, want %d %d %d", got.AheadTotal, got.BehindTotal, got.FilesTotal, tc.aheadTotal, tc.behindTotal, tc.filesTotal)
					}
				})
			}
		})
	}
}

// TestRangeRefusesOrNamesBadCommits: a ref that would be read as an
// option is refused before git sees it; an unknown commit, and text a
// shell would expand, are named in the error, and nothing runs.
func TestRangeRefusesOrNamesBadCommits(t *testing.T) {
	tr := newTestRepo(t)
	r := open(t, hostCases()[0].host(t), tr.dir)
	if _, err := r.Range(ctxT(t), "--output=/tmp/x", tr.c1, 0); !errors.Is(err, ErrBadRef) {
		t.Errorf("option-like ref: %v, want ErrBadRef", err)
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, bad := range []string{strings.Repeat("0", 40), "$(touch " + marker + ")", "nope; touch " + marker} {
		_, err := r.Range(ctxT(t), tr.c1, bad, 0)
		var ge *GitError
		if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "unknown commit "+bad) {
			t.Errorf("%q: %v, want a GitError naming the unknown commit", bad, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a ref was run by the shell")
	}
}

func TestParseRangeRefusesOtherShapes(t *testing.T) {
	id := strings.Repeat("a", 40)
	ok := id + " " + id + "\n\x1e\x1e\nabc1234 s\n\x1e\x1e\n1\n\x1e\x1e\n\x1e\x1e\n0\n\x1e\x1e\nx\x00\x1e\x1e\n"
	if rg, err := parseRange([]byte(ok), 50); err != nil || rg.AheadTotal != 1 || len(rg.Ahead) != 1 || rg.FilesTotal != 1 {
		t.Fatalf("%+v, %v", rg, err)
	}
	for _, bad := range []string{
		"",
		strings.Replace(ok, id+" ", "", 1), // one id
		strings.Replace(ok, "abc1234 s", "not a log", 1), // not a --oneline line
		strings.Replace(ok, "\n1\n", "\nmany\n", 1),      // a count that is no number
		strings.TrimSuffix(ok, "\x1e\x1e\n"),             // a section missing
		ok + "extra",                                     // trailing output
	} {
		if _, err := parseRange([]byte(bad), 50); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseRange(f *testing.F) {
	id := strings.Repeat("a", 40)
	f.Add([]byte(id+" "+id+"\n\x1e\x1e\nabc1234 s\n\x1e\x1e\n1\n\x1e\x1e\n\x1e\x1e\n0\n\x1e\x1e\nx\x00\x1e\x1e\n"), 1)
	f.Fuzz(func(t *testing.T, b []byte, limit int) {
		if limit <= 0 || limit > 100 {
			limit = 50
		}
		rg, err := parseRange(b, limit)
		if err != nil {
			return
		}
		if len(rg.Ahead) > limit || len(rg.Behind) > limit || len(rg.Files) > limit || len(rg.Files) > rg.FilesTotal {
			t.Fatalf("lists over the limit %d: %+v", limit, rg)
		}
	})
}
