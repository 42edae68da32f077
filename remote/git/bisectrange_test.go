package git

import (
	"strings"
	"testing"
)

func TestParseFirstParent(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	rec := func(id, parents, subj string, files ...string) string {
		s := "\x1e" + id + "\x1f" + id[:7] + "\x1f" + parents + "\x1fAda\x1f1700000000\x1f" + subj + "\n"
		if len(files) > 0 {
			s += "\n" + strings.Join(files, "\n") + "\n"
		}
		return s
	}
	many := make([]string, 25)
	for i := range many {
		many[i] = "f" + strings.Repeat("x", i)
	}
	tests := []struct {
		name    string
		out     string
		want    int // commits
		wantErr string
	}{
		{"chain", rec(a, "", "root", "a.py") + rec(b, a, "second", "b.py") + rec(c, b+" "+a, "merge"), 3, ""},
		{"not first parent", rec(a, "", "root") + rec(c, b, "elsewhere"), 0, "does not follow"},
		{"garbage", "hello", 0, "unexpected output"},
		{"bad line", "\x1enot-an-id\x1f", 0, "unexpected commit line"},
		{"bad date", "\x1e" + a + "\x1fa\x1f\x1fAda\x1fsoon\x1fs\n", 0, "author date"},
		{"many files", rec(a, "", "root", many...), 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := ParseFirstParent([]byte(tt.out))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(cs) != tt.want {
				t.Fatalf("%d commits, %v; want %d", len(cs), err, tt.want)
			}
			if cs[0].ID != a || cs[0].Author != "Ada" || cs[0].Date.Unix() != 1700000000 {
				t.Errorf("first commit %+v", cs[0])
			}
			if tt.name == "many files" && (len(cs[0].Files) != MaxBisectFiles || cs[0].FilesTotal != 25) {
				t.Errorf("files %d of %d, want %d of 25", len(cs[0].Files), cs[0].FilesTotal, MaxBisectFiles)
			}
		})
	}
}

func FuzzParseFirstParent(f *testing.F) {
	f.Add([]byte("\x1e" + strings.Repeat("a", 40) + "\x1fa\x1f\x1fAda\x1f1\x1fs\n\nx.py\n"))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseFirstParent(b) })
}

// TestFirstParentOfARealRepository: on a checkout with c1 → c2 → c3, the
// range c1..origin/main is the three commits oldest first, with their
// subjects and files; one commit twice, a swapped pair and an unknown ref
// are refused with errors that say which.
func TestFirstParentOfARealRepository(t *testing.T) {
	tr := newTestRepo(t)
	r := open(t, hostCases()[0].host(t), tr.dir)
	cs, err := r.FirstParent(ctxT(t), tr.c1, "origin/main")
	if err != nil || len(cs) != 3 || cs[0].ID != tr.c1 || cs[1].ID != tr.c2 || cs[2].ID != tr.c3 {
		t.Fatalf("%v %+v", err, cs)
	}
	if cs[1].Subject != "Fix PCG MoE Error" || cs[1].FilesTotal != 2 || cs[1].Author == "" {
		t.Errorf("c2 %+v", cs[1])
	}
	for _, c := range []struct{ good, bad, want string }{
		{tr.c2, tr.c2, "both are commit " + tr.c2[:7] + ": nothing lies between"},
		{"origin/main", tr.c1, "origin/main is not an ancestor of " + tr.c1 + ": it comes after it (--good and --bad swapped?)"},
		{"nosuchref", "origin/main", "unknown commit nosuchref"},
	} {
		_, err := r.FirstParent(ctxT(t), c.good, c.bad)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FirstParent(%s, %s): %v, want %q", c.good, c.bad, err, c.want)
		}
	}
}
