package sessions

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
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
	path, t0, w := recorderJournal(t)
	hooks := make(chan string, 100)
	var mu sync.Mutex
	var published []event.JournalStatus
	r := &Recorder{W: w, FlushEvery: time.Hour, WriteEvery: time.Hour, hook: func(s string) { hooks <- s },
		Publish: func(e event.Event) {
			mu.Lock()
			published = append(published, e.Data.(event.JournalStatus))
			mu.Unlock()
		}}
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
		events <- event.Event{At: at, Data: event.GPUSample{At: at, GPUs: []event.GPU{{Index: 0, Name: event.Text{S: "NVIDIA H200"}}}}}
		wait("write")
	}
	events <- event.Event{At: t0, Data: event.JournalStatus{Path: path}} // its own status: not written
	events <- event.Event{At: t0, Data: event.TokRate{TokPerSec: 1500, Ranks: 1}}
	wait("write")
	if n := diskLines(t, path); n != 1 {
		t.Errorf("%d lines on disk before the tick, want only the header", n)
	}
	events <- event.Event{At: t0.Add(2 * time.Second), Data: event.Note{Text: "a note is on disk at once"}}
	wait("write")
	wait("flush")
	if n := diskLines(t, path); n != 1+3+1+1 {
		t.Errorf("%d lines on disk after the note, want 6", n)
	}
	events <- event.Event{At: t0.Add(3 * time.Second), Data: event.TokRate{TokPerSec: 1400, Ranks: 1}}
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
	w, err := journal.Create(path, event.SessionHeader{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan event.Event, 1)
	events <- event.Event{At: time.Now(), Data: event.TokRate{TokPerSec: 1, Ranks: 1}}
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
	path, t0, w := recorderJournal(t)
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
	events <- event.Event{At: t0, Data: event.TokRate{TokPerSec: 1500, Ranks: 1}}
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
	events <- event.Event{At: t0.Add(time.Second), Data: event.DriverState{Host: "gpu-box", Role: event.RoleDriving}}
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

func TestXidLimiter(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	type step struct {
		late bool          // the put-off sync fires (instead of an Xid)
		at   time.Duration // since t0
		sync bool
		wait time.Duration
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"the first syncs", []step{{at: 0, sync: true}}},
		{"a storm: one sync, one put off to the end of the second", []step{
			{at: 0, sync: true}, {at: 10 * time.Millisecond, wait: 990 * time.Millisecond},
			{at: 20 * time.Millisecond}, {at: 999 * time.Millisecond},
		}},
		{"a second later syncs again", []step{{at: 0, sync: true}, {at: time.Second, sync: true}, {at: 2500 * time.Millisecond, sync: true}}},
		{"after the put-off sync, the next second counts from it", []step{
			{at: 0, sync: true}, {at: 300 * time.Millisecond, wait: 700 * time.Millisecond},
			{late: true, at: time.Second}, {at: 1500 * time.Millisecond, wait: 500 * time.Millisecond},
			{at: 1600 * time.Millisecond}, {late: true, at: 2 * time.Second}, {at: 3 * time.Second, sync: true},
		}},
		{"a clock that goes back syncs", []step{{at: time.Second, sync: true}, {at: 0, sync: true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l xidLimiter
			for i, s := range c.steps {
				if s.late {
					l.late(t0.Add(s.at))
					continue
				}
				sync, wait := l.ask(t0.Add(s.at))
				if sync != s.sync || wait != s.wait {
					t.Errorf("step %d at %v: sync %v wait %v, want %v %v", i, s.at, sync, wait, s.sync, s.wait)
				}
			}
		})
	}
}

// TestRecorderRateLimitsXidSyncs: a storm of Xids forces one sync at
// once and one at the end of the second, not one per Xid; other urgent
// kinds still sync at once.
func TestRecorderRateLimitsXidSyncs(t *testing.T) {
	path, t0, w := recorderJournal(t)
	var mu sync.Mutex
	clock := t0
	timer := make(chan time.Time, 1)
	var waits []time.Duration
	writes, syncs := make(chan struct{}, 1000), make(chan string, 1000)
	r := &Recorder{W: w, FlushEvery: time.Hour, WriteEvery: time.Hour,
		hook: func(s string) {
			if s == "write" {
				writes <- struct{}{}
			}
		},
		syncHook: func(s string) { syncs <- s },
		clock:    func() time.Time { mu.Lock(); defer mu.Unlock(); return clock },
		after: func(d time.Duration) <-chan time.Time {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return timer
		},
	}
	events := make(chan event.Event)
	errc := make(chan error, 1)
	go func() { errc <- r.Run(context.Background(), events) }()
	send := func(p event.Payload) {
		t.Helper()
		events <- event.Event{At: t0, Data: p}
		<-writes
	}
	// settled returns the sync requests so far: a plain event after them
	// is written once Run has handled them (one goroutine, in order).
	settled := func() []string {
		t.Helper()
		send(event.TokRate{TokPerSec: 1, Ranks: 1})
		var got []string
		for {
			select {
			case s := <-syncs:
				got = append(got, s)
			default:
				return got
			}
		}
	}
	step := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	want := func(what string, got []string, w ...string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(w, ",") {
			t.Errorf("%s: sync requests %q, want %q", what, got, w)
		}
	}

	send(event.Xid{Index: 0, Code: 13})
	want("the first Xid", settled(), "urgent")
	step(time.Millisecond)
	for i := range 199 {
		send(event.Xid{Index: i % 8, Code: 13})
	}
	want("199 more a millisecond later", settled(), "xid-held")
	mu.Lock()
	if len(waits) != 1 || waits[0] != xidSyncEvery-time.Millisecond {
		t.Errorf("put off by %v, want one wait of %v", waits, xidSyncEvery-time.Millisecond)
	}
	mu.Unlock()
	// Another urgent kind is not held back.
	send(event.Note{Text: "still at once"})
	want("a note during the storm", settled(), "urgent")
	// The put-off sync comes when the timer fires.
	step(990 * time.Millisecond)
	timer <- clock
	want("the timer", settled(), "xid-late")
	// The next Xid within a second of that sync waits again.
	send(event.Xid{Index: 0, Code: 13})
	want("an Xid just after", settled(), "xid-held")
	timer <- clock
	settled()
	step(xidSyncEvery)
	send(event.Xid{Index: 0, Code: 79})
	want("an Xid a second later", settled(), "urgent")

	close(events)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if n := j.Len(); n != 200+1+2+7 {
		t.Errorf("journal holds %d events, want every Xid, note and rate (210)", n)
	}
}

// recorderJournal creates a journal for a recorder test (closed at the
// test's end): its path, its start time and its writer.
func recorderJournal(t *testing.T) (string, time.Time, *journal.Writer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	t0 := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	w, err := journal.Create(path, event.SessionHeader{Created: t0, Host: "gpu-box"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return path, t0, w
}
