package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
)

// writeFixture writes a journal of host at path created at at with one
// experiment per tok/s value (e1, e2, …), its modification time at.
func writeFixture(t *testing.T, path, host string, at time.Time, toks ...float64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	var xs []ledger.Experiment
	for i, tok := range toks {
		xs = append(xs, ledgertest.Experiment("e"+string(rune('1'+i)), "nccl-ll-ring", ledgertest.HeadA, tok))
	}
	if err := ledgertest.WriteJournal(path, event.SessionHeader{Host: host, Label: "demo", Created: at}, xs...); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// TestAppendingSessionSeesItsHistory: a session appending to a journal
// (--journal SAME_FILE) gets the file's earlier experiments in its
// history with their plain ids, and its own next experiment is numbered
// after them (e3 after e1 and e2): the history and the numbering agree.
// Another journal of the host comes with qualified ids, one of another
// host not at all, and what this session writes is never history. B takes
// a qualified id, which the journal records.
func TestAppendingSessionSeesItsHistory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC)
	own := filepath.Join(dir, "gpu-box", "2026-12-01-101500-demo.jsonl")
	other := filepath.Join(dir, "gpu-box", "2026-11-30-090000-demo.jsonl")
	writeFixture(t, own, "gpu-box", t0, 89.4, 89.1)
	writeFixture(t, other, "gpu-box", t0.Add(-25*time.Hour), 88.9)
	writeFixture(t, filepath.Join(dir, "elsewhere", "2026-11-30-090000-demo.jsonl"), "elsewhere", t0.Add(-25*time.Hour), 50)

	s, err := Open(Options{Name: "gpu-box", Version: "test", Journal: JournalOptions{File: own, Dir: dir},
		Header: event.SessionHeader{Host: "gpu-box", Label: "demo"}})
	if err != nil {
		t.Fatal(err)
	}
	events := s.Subscribe(ctx, 16)
	if err := s.Attach(ctx, AttachOptions{}); err != nil {
		t.Fatal(err)
	}
	// Something of this session's is in the file before the history loads.
	if _, err := s.Note(ctx, "today"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	s.LoadHistory(done)
	<-done
	var h event.History
	for e := range events {
		if p, ok := e.Data.(event.History); ok {
			h = p
			break
		}
	}
	if len(h.Journals) != 2 || h.More != 0 || len(h.Errors) != 0 {
		t.Fatalf("history %d journals (more %d, errors %v), want 2", len(h.Journals), h.More, h.Errors)
	}
	var ids []string
	for _, j := range h.Journals {
		for _, e := range j.Events {
			switch p := e.Data.(type) {
			case event.ExperimentStart:
				ids = append(ids, p.ID)
			case event.Note:
				t.Errorf("this session's note %q is in the history", p.Text)
			}
		}
	}
	if got, want := strings.Join(ids, " "), "e1 e2 2026-11-30-090000-demo:e1"; got != want {
		t.Errorf("history experiments %q, want %q", got, want)
	}
	if !h.Journals[0].Own || h.Journals[1].Own {
		t.Errorf("own flags %v %v, want the appended file's only", h.Journals[0].Own, h.Journals[1].Own)
	}
	exps := s.HistoryExperiments()
	if len(exps) != 3 || exps[0].Result.Median != 89.4 || exps[0].Open() {
		t.Fatalf("history experiments %+v", exps)
	}
	// The next experiment continues the file's numbering.
	l, err := s.lab()
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Start(ctx, "today's", "")
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "e3" {
		t.Errorf("the new experiment is %s, want e3 (after the history's e1, e2)", st.ID)
	}
	if err := s.Baseline(ctx, "2026-11-30-090000-demo:e1"); err != nil {
		t.Errorf("baseline from an earlier journal: %v", err)
	}
	if err := s.Baseline(ctx, "2026-11-30-090000-demo:e9"); err == nil {
		t.Error("a baseline naming no experiment of the history was taken")
	}
	if err := s.Close(ctx, nil); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(own)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var marks []string
	_ = j.Scan(func(e event.Event) error {
		if b, ok := e.Data.(event.Baseline); ok {
			marks = append(marks, b.Exp)
		}
		return nil
	})
	if strings.Join(marks, " ") != "2026-11-30-090000-demo:e1" {
		t.Errorf("journal's baseline marks %q", marks)
	}
}

// TestNewSessionHistory: a session creating its journal in the host's
// directory sees the earlier journals only, not its own new file; a
// session without a journal sees them too.
func TestNewSessionHistory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFixture(t, filepath.Join(dir, "gpu-box", "2026-11-30-090000-demo.jsonl"), "gpu-box", time.Now().Add(-time.Hour), 88.9)
	for _, jo := range []JournalOptions{{Dir: dir}, {Off: true, Dir: dir}} {
		s, err := Open(Options{Name: "gpu-box", Version: "test", Journal: jo, Header: event.SessionHeader{Host: "gpu-box"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Attach(ctx, AttachOptions{}); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		s.LoadHistory(done)
		<-done
		h, ok := s.History()
		if !ok || len(h.Journals) != 1 || h.Journals[0].Own || h.Journals[0].Name != "2026-11-30-090000-demo" {
			t.Errorf("%+v: history %+v", jo, h)
		}
		if err := s.Close(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
}
