package sessions

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/journal"
	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
)

func diskLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}

func TestRecorderFlushPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	t0 := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	w, err := journal.Create(path, journal.Header{Created: t0, Host: "gpu-box"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	hooks := make(chan string, 100)
	var mu sync.Mutex
	var published []journal.Status
	r := &Recorder{W: w, FlushEvery: time.Hour, WriteEvery: time.Hour, hook: func(s string) { hooks <- s },
		Publish: func(e event.Event) { mu.Lock(); published = append(published, e.Data.(journal.Status)); mu.Unlock() }}
	events := make(chan event.Event)
	errc := make(chan error, 1)
	go func() { errc <- r.Run(context.Background(), events) }()
	wait := func(what string) {
		t.Helper()
		if got := <-hooks; got != what {
			t.Fatalf("hook %q, want %q", got, what)
		}
	}

	for i := range 3 {
		at := t0.Add(time.Duration(i) * 500 * time.Millisecond)
		events <- event.Event{At: at, Data: gpu.Sample{At: at, GPUs: []gpu.GPU{{Index: 0, Name: gpu.Text{S: "NVIDIA H200"}}}}}
		wait("write")
	}
	events <- event.Event{At: t0, Data: journal.Status{Path: path}} // its own status: not written
	events <- event.Event{At: t0, Data: serverlog.Rate{TokPerSec: 1500, Ranks: 1}}
	wait("write")
	if n := diskLines(t, path); n != 1 {
		t.Errorf("%d lines on disk before the tick, want only the header", n)
	}
	events <- event.Event{At: t0.Add(2 * time.Second), Data: journal.Note{Text: "a note is on disk at once"}}
	wait("write")
	wait("flush")
	if n := diskLines(t, path); n != 1+3+1+1 {
		t.Errorf("%d lines on disk after the note, want 6", n)
	}
	events <- event.Event{At: t0.Add(3 * time.Second), Data: serverlog.Rate{TokPerSec: 1400, Ranks: 1}}
	wait("write")
	if n := diskLines(t, path); n != 6 {
		t.Errorf("%d lines after a rate, want it to wait for the tick", n)
	}
	close(events)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := diskLines(t, path); n != 7 {
		t.Errorf("%d lines after Run returned, want 7 (the final flush)", n)
	}
	mu.Lock()
	if len(published) != 1 || published[0].Path != path || published[0].Err != "" {
		t.Errorf("published %+v, want the first status only", published)
	}
	mu.Unlock()

	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.Len() != 6 || j.Problems().Any() {
		t.Errorf("journal: %d events, %s", j.Len(), j.Problems())
	}
}

func TestRecorderStopsWithContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := journal.Create(path, journal.Header{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan event.Event, 1)
	events <- event.Event{At: time.Now(), Data: serverlog.Rate{TokPerSec: 1, Ranks: 1}}
	hooks := make(chan string, 10)
	r := &Recorder{W: w, WriteEvery: time.Hour, hook: func(s string) { hooks <- s }}
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx, events) }()
	<-hooks // written
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := diskLines(t, path); n != 2 {
		t.Errorf("%d lines after cancel, want the header and the rate", n)
	}
}

// TestRecorderWritesBeforeSyncing: a follower tailing the journal sees a
// plain event at the write tick, long before the sync tick; a driver-lock
// change is written and synced at once.
func TestRecorderWritesBeforeSyncing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	t0 := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	w, err := journal.Create(path, journal.Header{Created: t0, Host: "gpu-box"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	hooks := make(chan string, 1000)
	// The hook never blocks the flusher: the test stops reading before Run
	// returns.
	r := &Recorder{W: w, FlushEvery: time.Hour, WriteEvery: 5 * time.Millisecond, hook: func(s string) {
		select {
		case hooks <- s:
		default:
		}
	}}
	events := make(chan event.Event)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx, events) }()
	events <- event.Event{At: t0, Data: serverlog.Rate{TokPerSec: 1500, Ranks: 1}}
	// Wait for the first write flush after the event was written.
	written := false
	for h := range hooks {
		if h == "write" {
			written = true
		}
		if h == "flush" {
			t.Fatal("synced before the sync period")
		}
		if written && h == "flush-nosync" {
			break
		}
	}
	if n := diskLines(t, path); n != 2 {
		t.Errorf("%d lines on disk after the write tick, want the header and the rate", n)
	}
	events <- event.Event{At: t0.Add(time.Second), Data: driver.State{Host: "gpu-box", Role: driver.RoleDriving}}
	for h := range hooks {
		if h == "flush" {
			break // urgent: synced at once, not at the hour's tick
		}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
