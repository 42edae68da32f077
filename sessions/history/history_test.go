package history

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// write creates a journal for host at path with one experiment, and sets
// its modification time to mod.
func write(t *testing.T, path, host string, created, mod time.Time) {
	t.Helper()
	w, err := journal.Create(path, event.SessionHeader{Host: host, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(event.Event{At: created.Add(time.Second), Data: event.ExperimentStart{ID: "e1", Name: "base @ a6d51c0", Trigger: event.TriggerKey}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

func TestFindListsTheHostsJournalsNewestFirst(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	old := filepath.Join(dir, "gpu-box", "2026-11-30-100000-session.jsonl")
	recent := filepath.Join(dir, "gpu-box", "2026-12-01-100000-session.jsonl")
	other := filepath.Join(dir, "other", "2026-12-01-110000-session.jsonl")
	elsewhere := filepath.Join(t.TempDir(), "mine.jsonl")
	write(t, old, "gpu-box", t0, t0.Add(time.Hour))
	write(t, recent, "gpu-box", t0.Add(24*time.Hour), t0.Add(25*time.Hour))
	write(t, other, "other-box", t0, t0.Add(30*time.Hour))
	write(t, elsewhere, "gpu-box", t0.Add(48*time.Hour), t0.Add(49*time.Hour))
	if err := os.WriteFile(filepath.Join(dir, "gpu-box", "notes.jsonl"), []byte("not a journal\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gpu-box", "empty.jsonl"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	js, err := Find(dir, "gpu-box", elsewhere, recent, filepath.Join(dir, "missing.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range js {
		got = append(got, j.Name())
	}
	want := []string{"mine", "2026-12-01-100000-session", "2026-11-30-100000-session"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Find: %v, want %v (newest first, each once, other hosts and non-journals left out)", got, want)
	}
	if js[1].Header.Host != "gpu-box" || !js[1].Header.Created.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("header %+v", js[1].Header)
	}
	// A journal copied without its times (cp, rsync without -t): the
	// session start its header records keeps its place, not the file's.
	copied := filepath.Join(dir, "gpu-box", "2026-11-01-100000-session.jsonl")
	write(t, copied, "gpu-box", t0.Add(-29*24*time.Hour), t0.Add(100*time.Hour))
	if js, err := Find(dir, "gpu-box"); err != nil || len(js) != 3 || js[2].Path != copied {
		t.Errorf("a copied old journal: %v %v, want it last", js, err)
	}
	if js, err := Find(filepath.Join(dir, "nowhere"), "gpu-box"); err != nil || len(js) != 0 {
		t.Errorf("missing dir: %v %v, want nothing and no error", js, err)
	}
	r, probs, err := Load(recent)
	if err != nil || probs.Any() {
		t.Fatalf("Load: %v %v", err, probs)
	}
	if xs := r.Ledger.Experiments(); len(xs) != 1 || xs[0].ID != "e1" {
		t.Errorf("Load: experiments %+v", xs)
	}
}

func TestQualifySplitAndMatch(t *testing.T) {
	q := Qualify("2026-12-01-101500-demo", "e3")
	if part, id, ok := Split(q); !ok || part != "2026-12-01-101500-demo" || id != "e3" {
		t.Errorf("Split(%q) = %q %q %v", q, part, id, ok)
	}
	for _, s := range []string{"e3", "baseline", ":e3", "file:"} {
		if _, id, ok := Split(s); ok || id != s {
			t.Errorf("Split(%q) = %q %v, want no journal part", s, id, ok)
		}
	}
	if part, id, ok := Split("/tmp/runs/a.jsonl:e12"); !ok || part != "/tmp/runs/a.jsonl" || id != "e12" {
		t.Errorf("path: %q %q %v", part, id, ok)
	}
	js := []Journal{{Path: "/j/2026-12-01-101500-demo.jsonl"}, {Path: "/j/2026-12-01-113000-demo.jsonl"}, {Path: "/j/2026-11-30-090000-demo.jsonl"}}
	if j, err := Match(js, "2026-11-30"); err != nil || j.Path != js[2].Path {
		t.Errorf("unique prefix: %v %v", j, err)
	}
	if j, err := Match(js, "2026-12-01-113000-demo.jsonl"); err != nil || j.Path != js[1].Path {
		t.Errorf("file name: %v %v", j, err)
	}
	if j, err := Match(js, "/j/2026-12-01-101500-demo.jsonl"); err != nil || j.Path != js[0].Path {
		t.Errorf("path: %v %v", j, err)
	}
	if _, err := Match(js, "2026-12-01"); err == nil || !strings.Contains(err.Error(), "names 2 journals: 2026-12-01-101500-demo, 2026-12-01-113000-demo") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := Match(js, "2025"); err == nil || !strings.Contains(err.Error(), `no journal "2025"`) {
		t.Errorf("no match: %v", err)
	}
}

func TestReadHeaderRefusesWhatIsNotAHeader(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "long.jsonl")
	if err := os.WriteFile(long, []byte("{"+strings.Repeat(" ", maxHeaderLineForTest)+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.ReadHeader(long); err == nil || !strings.Contains(err.Error(), "over 65536 bytes") {
		t.Errorf("long first line: %v", err)
	}
	if _, err := journal.ReadHeader(filepath.Join(dir, "none.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

const maxHeaderLineForTest = 70000 // over journal's 64 KiB bound
