package history

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
)

// TestCollectCapsAndRebuilds: the newest limit journals are loaded, the
// rest counted; a journal without experiments is left out; the events
// rebuild each experiment (result, fingerprint, benchmark runs, repeat)
// under its qualified id, and the journal's baseline mark qualified too.
func TestCollectCapsAndRebuilds(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for i := range 4 {
		at := t0.Add(time.Duration(i) * 24 * time.Hour)
		path := filepath.Join(dir, "gpu-box", fmt.Sprintf("2026-11-2%d-090000-demo.jsonl", i))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		x := ledgertest.WithBench(ledgertest.Experiment("e1", "nccl-ll-ring", ledgertest.HeadA, 89+float64(i)), 89, 40)
		x.Repeat = &event.Repeat{Exp: "e1", Series: "e1", I: 1, N: 2}
		if err := ledgertest.WriteJournal(path, event.SessionHeader{Host: "gpu-box", Created: at}, x); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	// The newest journal holds no experiment: left out, not counted.
	w, err := journal.Create(filepath.Join(dir, "gpu-box", "2026-11-30-090000-empty.jsonl"), event.SessionHeader{Host: "gpu-box", Created: t0.Add(10 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	h, err := Collect(dir, "gpu-box", Own{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Journals) != 2 || h.More != 2 || h.Journals[0].Name != "2026-11-23-090000-demo" || h.Journals[1].Name != "2026-11-22-090000-demo" {
		t.Fatalf("journals %d more %d: %+v", len(h.Journals), h.More, h.Journals)
	}
	ls := Fold(h)
	xs := ls[0].Experiments()
	if len(xs) != 1 {
		t.Fatalf("experiments %+v", xs)
	}
	x := xs[0]
	q := "2026-11-23-090000-demo:e1"
	if x.ID != q || x.Open() || x.Result.Median != 92 || x.Fingerprint == nil || x.Commit() != ledgertest.HeadA ||
		len(x.Bench) != 2 || x.Bench[0].Exp != q || x.Repeat == nil || x.Repeat.Series != q {
		t.Errorf("rebuilt %+v", x)
	}
	if got := len(Experiments(ls)); got != 2 {
		t.Errorf("Experiments: %d", got)
	}
}

// TestMeasured: the median of the launches at a commit with a clean tree,
// by full or short id; none elsewhere.
func TestMeasured(t *testing.T) {
	a := func(tok float64) ledger.Experiment { return ledgertest.Experiment("e1", "none", ledgertest.HeadA, tok) }
	dirty := a(70)
	g := *dirty.Fingerprint.Git
	g.PatchBytes = 120
	fp := *dirty.Fingerprint
	fp.Git = &g
	dirty.Fingerprint = &fp
	exps := []ledger.Experiment{a(89.4), a(89.8), a(89.5), dirty, ledgertest.Experiment("e5", "none", ledgertest.HeadB, 82.1)}
	for _, tc := range []struct{ commit, want string }{
		{ledgertest.HeadA, "89.5 tok/s n=3"},
		{ledgertest.HeadA[:7], "89.5 tok/s n=3"},
		{ledgertest.HeadB, "82.1 tok/s n=1"},
		{"deadbee", "-"},
		{"", "-"},
	} {
		if got := MeasuredText(exps, tc.commit); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.commit, got, tc.want)
		}
	}
}

// TestLoadBeforeStopsAtTheSession: the own journal's history is what
// came before the session that appended at cut.
func TestLoadBeforeStopsAtTheSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	if err := ledgertest.WriteJournal(path, event.SessionHeader{Host: "gpu-box", Created: t0}, ledgertest.Experiment("e1", "none", ledgertest.HeadA, 80)); err != nil {
		t.Fatal(err)
	}
	cut := t0.Add(time.Hour)
	h, err := Collect(filepath.Dir(path), "gpu-box", Own{Path: path, Header: event.SessionHeader{Created: cut}}, 0)
	if err != nil || len(h.Journals) != 1 || !h.Journals[0].Own {
		t.Fatalf("%+v %v", h, err)
	}
	if id := h.Journals[0].Events[0].Data.(event.ExperimentStart).ID; id != "e1" {
		t.Errorf("own journal's id %q, want plain e1", id)
	}
	// A session that created the file has no history in it.
	h, err = Collect(filepath.Dir(path), "gpu-box", Own{Path: path, Header: event.SessionHeader{Created: t0}}, 0)
	if err != nil || len(h.Journals) != 0 {
		t.Errorf("own new file: %+v %v", h, err)
	}
}
