package git

import (
	"bytes"
	"testing"
)

// statusSample is real status script output: a branch behind its
// upstream, a staged rename, a binary file, an untracked unicode name, a
// stash and two reflog entries.
var statusSample = []byte("9aef32eb363d0e33e176b1e465db46e34256a2e4\x1f9aef32e\x1f1764450000\x1fTest\x1fInitial\n\x1e\x1e\n" +
	"main\n\x1e\x1e\n" +
	"origin/main\n0\t2\n\x1e\x1e\n" +
	"\x1e\x1e\n" +
	"R  new.py\x00old.py\x00 M weights.bin\x00?? notes ü.txt\x00\x1e\x1e\n" +
	"0\t0\tnew.py\x000\t3\told.py\x00-\t-\tweights.bin\x00\x1e\x1e\n" +
	"802ecc5f227223312f80fff25f6f364750ff89aa\x1f1764450100\x1fOn main: try LL128\x00\x1e\x1e\n" +
	"9aef32eb363d0e33e176b1e465db46e34256a2e4\x1f9aef32e\x1fHEAD@{1764450200}\x1freset: moving to HEAD\x00" +
	"d2ffd57819e9fe927f4a462162106c995a99fa97\x1fd2ffd57\x1fHEAD@{1764450100}\x1fpull: Fast-forward\x00\x1e\x1e\n")

func TestParseStatusSample(t *testing.T) {
	st, err := ParseStatus(statusSample)
	if err != nil {
		t.Fatal(err)
	}
	if st.Branch != "main" || st.Upstream != "origin/main" || st.Behind != 2 || len(st.Files) != 3 {
		t.Fatalf("%+v", st)
	}
	if f := st.Files[0]; f.Path != "new.py" || f.Orig != "old.py" || f.Added != 0 || !f.Staged() || f.Unstaged() {
		t.Errorf("rename %+v", f)
	}
	if f := st.Files[1]; !f.Binary || f.Added != -1 {
		t.Errorf("binary %+v", f)
	}
	if f := st.Files[2]; f.Path != "notes ü.txt" || !f.Untracked() {
		t.Errorf("untracked %+v", f)
	}
	if len(st.Stashes) != 1 || st.Stashes[0].Message != "On main: try LL128" {
		t.Errorf("stashes %+v", st.Stashes)
	}
	if len(st.Reflog) != 2 || st.Reflog[1].Action != "pull" || st.Reflog[1].Time.Unix() != 1764450100 {
		t.Errorf("reflog %+v", st.Reflog)
	}
}

func TestParseStatusRejectsGarbage(t *testing.T) {
	for name, in := range map[string][]byte{
		"empty":           nil,
		"missing section": bytes.Replace(statusSample, []byte("main\n\x1e\x1e\n"), nil, 1),
		"bad head":        bytes.Replace(statusSample, []byte("9aef32eb363d0e33e176b1e465db46e34256a2e4\x1f9aef32e\x1f1764450000"), []byte("zz\x1f9aef32e\x1f1764450000"), 1),
		"bad counts":      bytes.Replace(statusSample, []byte("0\t2"), []byte("0\tx"), 1),
		"torn porcelain":  bytes.Replace(statusSample, []byte("?? notes ü.txt\x00"), []byte("?? notes ü.txt"), 1),
		"bad numstat":     bytes.Replace(statusSample, []byte("0\t3\told.py"), []byte("a\t3\told.py"), 1),
		"bad reflog time": bytes.Replace(statusSample, []byte("HEAD@{1764450200}"), []byte("HEAD@{0x}"), 1),
	} {
		if _, err := ParseStatus(in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add(statusSample)
	f.Add([]byte("\x1e\x1e\n\x1e\x1e\n\x1e\x1e\n\x1e\x1e\n\x1e\x1e\n\x1e\x1e\n\x1e\x1e\n\x1e\x1e\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStatus(b)
		if err != nil {
			return
		}
		for _, x := range st.Files {
			if x.Path == "" {
				t.Fatalf("file without a path: %+v", x)
			}
		}
		if st.Ahead < 0 || st.Behind < 0 {
			t.Fatalf("negative counts %+v", st)
		}
	})
}

func FuzzParseLogAndPreview(f *testing.F) {
	f.Add([]byte("9aef32eb363d0e33e176b1e465db46e34256a2e4\x1f9aef32e\x1f1764450000\x1fTest\x1fInitial\x1fHEAD -> main, origin/main\x00"))
	f.Add([]byte("M\x00a\x00R100\x00b\x00c\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if cs, err := ParseLog(b); err == nil {
			for _, c := range cs {
				if !IsCommitID(c.ID) {
					t.Fatalf("bad id %q", c.ID)
				}
			}
		}
		_, _ = parseNameStatus(b)
		_, _ = parsePreview(b)
		_ = parseSnapshots("/s", b)
	})
}
