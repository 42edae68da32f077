package sessions

import (
	"context"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/journal"
)

// Recorder writes the event stream to a journal: every event is encoded
// into memory at once, and a flusher writes it to the file every
// WriteEvery (write(2) only: a follower reading the file sees it within
// that), syncs it every FlushEvery (write and fsync), and writes and syncs
// at once after the events that must survive a crash: notes, keys,
// experiment boundaries and updates, launches, kills, git actions and
// driver-lock changes. A full disk never stops the stream: the writer keeps
// the bytes and retries, and the Recorder publishes a journal.Status when
// the error appears, changes or clears.
type Recorder struct {
	W *journal.Writer
	// Publish receives journal.Status events for the screen; nil for none.
	// It is called from the flusher goroutine, never from the goroutine
	// reading events (a Stream would otherwise wait on its own reader).
	Publish event.Sink
	// FlushEvery is the sync period (write and fsync); 0 means 1 s.
	FlushEvery time.Duration
	// WriteEvery is the write period (write(2) without fsync), so that a
	// follower tailing the file (flightdeck follow, a journal mirror)
	// sees events within it; 0 means 250 ms. A WriteEvery not shorter
	// than FlushEvery only syncs.
	WriteEvery time.Duration

	// hook, when set (tests), is called after each event written
	// ("write"), each flush with fsync ("flush") and each without
	// ("flush-nosync").
	hook func(what string)
}

// urgent are the kinds flushed and synced as soon as they are written.
var urgent = map[string]bool{
	"note": true, "key": true, "exp-start": true, "exp-fingerprint": true, "exp-update": true, "exp-end": true,
	"server-launched": true, "server-kill": true, "git-action": true, "driver": true,
	"gpu-xid": true, // a driver error: the host may hang or reboot next
}

// Default periods of the Recorder.
const (
	defaultSyncEvery  = time.Second
	defaultWriteEvery = 250 * time.Millisecond
)

// Run writes every event from events until it closes or ctx ends, then
// flushes and syncs what is left and returns that flush's error (the
// writer stays open: the caller closes it). Encoding errors (a kind not in
// the format) skip the event. Run never waits on the disk: the flusher
// goroutine does.
func (r *Recorder) Run(ctx context.Context, events <-chan event.Event) error {
	syncEvery, writeEvery := r.FlushEvery, r.WriteEvery
	if syncEvery <= 0 {
		syncEvery = defaultSyncEvery
	}
	if writeEvery <= 0 {
		writeEvery = defaultWriteEvery
	}
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.flusher(syncEvery, writeEvery, kick, done)
	}()
	// The last flush comes after the flusher has stopped.
	final := func() error {
		close(done)
		wg.Wait()
		return r.W.Flush(true)
	}
	for {
		select {
		case <-ctx.Done():
			return final()
		case e, ok := <-events:
			if !ok {
				return final()
			}
			if e.Data == nil || e.Data.Kind() == (journal.Status{}).Kind() {
				continue // its own status is for the screen
			}
			_ = r.W.Write(e) // a kind outside the format: skipped
			if r.hook != nil {
				r.hook("write")
			}
			if urgent[e.Data.Kind()] {
				select {
				case kick <- struct{}{}:
				default: // a flush is already asked for
				}
			}
		}
	}
}

// flusher writes every writeEvery, writes and syncs every syncEvery and
// when kicked, and publishes the status when its error or drop count
// changes.
func (r *Recorder) flusher(syncEvery, writeEvery time.Duration, kick <-chan struct{}, done <-chan struct{}) {
	t := time.NewTicker(syncEvery)
	defer t.Stop()
	// Without a write period shorter than the sync period the write
	// ticker never fires.
	var writes <-chan time.Time
	if writeEvery < syncEvery {
		wt := time.NewTicker(writeEvery)
		defer wt.Stop()
		writes = wt.C
	}
	var last journal.Status
	if r.Publish != nil {
		last = r.W.Status()
		r.Publish(event.Event{At: time.Now(), Data: last})
	}
	for {
		sync := true
		select {
		case <-done:
			return
		case <-t.C:
		case <-kick:
		case <-writes:
			sync = false
		}
		_ = r.W.Flush(sync) // the error shows in Status
		if r.hook != nil {
			if sync {
				r.hook("flush")
			} else {
				r.hook("flush-nosync")
			}
		}
		st := r.W.Status()
		if r.Publish != nil && (st.Err != last.Err || st.Dropped != last.Dropped) {
			r.Publish(event.Event{At: time.Now(), Data: st})
		}
		last = st
	}
}
