package sessions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// openJournal opens a session's journal as Open does with o (nil with
// Off), for a session of the host name with header h.
func openJournal(o JournalOptions, name string, h event.SessionHeader) (*journal.Writer, error) {
	r, err := openRecording(Options{Name: name, Header: h, Version: "test", Journal: o})
	if r == nil || err != nil {
		return nil, err
	}
	return r.w, nil
}

// TestJournalFlags: the cockpit's journal is created 0600 under the
// default directory with the session's header, or appended to; a second
// writer is refused with the lock's message; --no-journal writes nothing;
// a file that is not a journal is never written over.
func TestJournalFlags(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	h := event.SessionHeader{Host: "root@10.0.0.1:22", Label: "demo"}

	w, err := openJournal(JournalOptions{Off: true}, "gpu-box", h)
	if w != nil || err != nil {
		t.Fatalf("--no-journal: %v %v", w, err)
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Fatalf("--no-journal wrote %v", ents)
	}

	w1, err := openJournal(JournalOptions{Name: "bisect"}, "gpu-box", h)
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	dir := filepath.Join(state, "flightdeck", "journals", "gpu-box")
	if filepath.Dir(w1.Path()) != dir || !strings.HasSuffix(w1.Path(), "-bisect.jsonl") {
		t.Errorf("path %s, want %s/<time>-bisect.jsonl", w1.Path(), dir)
	}
	if fi, err := os.Stat(w1.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v, want 0600", fi.Mode(), err)
	}
	// Same second, same name: the next is "-2", not refused.
	w2, err := openJournal(JournalOptions{Name: "bisect"}, "gpu-box", h)
	if err == nil {
		defer w2.Close()
		if w2.Path() == w1.Path() {
			t.Errorf("two journals on one file %s", w2.Path())
		}
	}
	if err := w1.Write(event.Event{At: time.Now(), Data: event.Note{Text: "first"}}); err != nil {
		t.Fatal(err)
	}
	if err := w1.Flush(true); err != nil {
		t.Fatal(err)
	}

	// --journal FILE while another cockpit writes it: refused, with who.
	_, err = openJournal(JournalOptions{File: w1.Path()}, "gpu-box", h)
	var locked *journal.LockedError
	if !errors.As(err, &locked) || !strings.Contains(err.Error(), "is being written by flightdeck pid") {
		t.Fatalf("err = %v, want the lock message", err)
	}
	w1.Close()
	j, err := journal.Open(w1.Path())
	if err != nil {
		t.Fatal(err)
	}
	hdr := j.Header()
	j.Close()
	if hdr.Name != "bisect" || hdr.Label != "demo" || hdr.Host != "root@10.0.0.1:22" || hdr.PID != os.Getpid() || hdr.Flightdeck == "" || hdr.User == "" {
		t.Errorf("header %+v", hdr)
	}
	// After it closes, --journal appends.
	w3, err := openJournal(JournalOptions{File: w1.Path()}, "gpu-box", h)
	if err != nil {
		t.Fatal(err)
	}
	w3.Write(event.Event{At: time.Now(), Data: event.Note{Text: "second"}})
	w3.Write(event.Event{At: time.Now(), Data: event.ExperimentStart{ID: "e2", Name: "b", Trigger: event.TriggerKey}})
	w3.Close()
	j, _ = journal.Open(w1.Path())
	if j.Len() != 4 {
		t.Errorf("%d events after appending, want 4 (a note, the second session, a note, e2's start)", j.Len())
	}
	j.Close()
	// A session appended to it numbers its experiments after e2.
	rec, err := openRecording(Options{Name: "gpu-box", Header: h, Version: "test", Journal: JournalOptions{File: w1.Path()}})
	if err != nil {
		t.Fatal(err)
	}
	if rec.prior != 2 {
		t.Errorf("appending after e2: prior %d, want 2", rec.prior)
	}
	rec.w.Close()

	// A file that is not a journal is refused and left alone.
	other := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(other, []byte("my notes\n"), 0o644)
	if _, err := openJournal(JournalOptions{File: other}, "gpu-box", h); err == nil || !strings.Contains(err.Error(), "not a flightdeck journal") {
		t.Errorf("err = %v", err)
	}
	if b, _ := os.ReadFile(other); string(b) != "my notes\n" {
		t.Errorf("non-journal rewritten: %q", b)
	}
	// A new file by --journal.
	fresh := filepath.Join(t.TempDir(), "sub", "s.jsonl")
	w4, err := openJournal(JournalOptions{File: fresh}, "gpu-box", h)
	if err != nil {
		t.Fatal(err)
	}
	w4.Close()
}

// --journal: a directory is refused saying "journal" once; an empty file
// is a new journal; an existing journal gets a session event.
func TestJournalFlagFiles(t *testing.T) {
	h := event.SessionHeader{Host: "demo", Label: "demo"}
	dir := t.TempDir()
	_, err := openJournal(JournalOptions{File: dir}, "demo", h)
	if err == nil || strings.Count(err.Error(), "journal") != 2 || !strings.Contains(err.Error(), "--journal "+dir+" is a directory: give a file in it") {
		t.Errorf("a directory: %v", err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	w, err := openJournal(JournalOptions{File: empty}, "demo", h)
	if err != nil {
		t.Fatalf("an empty file: %v", err)
	}
	w.Close()
	j, err := journal.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	if hd := j.Header(); hd.Host != "demo" || hd.PID != os.Getpid() || j.Len() != 0 {
		t.Errorf("empty file: header %+v, %d events", hd, j.Len())
	}
	j.Close()
	w, err = openJournal(JournalOptions{File: empty}, "demo", h)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	j, err = journal.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	marks := j.Marks()
	if len(marks) != 1 || marks[0].Kind != event.KindSession || !strings.Contains(marks[0].Text, "pid ") {
		t.Errorf("marks after appending %+v, want the session's", marks)
	}
	other := filepath.Join(dir, "notes.txt")
	os.WriteFile(other, []byte("my notes\n"), 0o644)
	if _, err := openJournal(JournalOptions{File: other}, "demo", h); err == nil || strings.Count(err.Error(), "journal") != 2 {
		t.Errorf("not a journal: %v", err)
	}
}

// TestJournalNameTakenTheSameSecond: two cockpits started in the same
// second (a pair pressing enter together) get two journals, not a refusal.
func TestJournalNameTakenTheSameSecond(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir, err := journal.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, d := range []time.Duration{0, time.Second} {
		w, err := journal.Create(journal.NewPath(dir, "same-second", "pair", now.Add(d)), event.SessionHeader{Label: "pair"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
	}
	w, err := openJournal(JournalOptions{}, "same-second", event.SessionHeader{Label: "pair"})
	if err != nil {
		t.Fatalf("second cockpit's journal: %v", err)
	}
	defer w.Close()
	if !strings.HasSuffix(w.Path(), "-pair-2.jsonl") {
		t.Errorf("journal %s, want the -2 name", w.Path())
	}
}
