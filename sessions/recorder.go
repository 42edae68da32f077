package sessions

import (
	"context"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/journal"
)

// Recorder writes the event stream to a journal: every event is encoded
// into memory at once, and a flusher writes it to the disk every
// FlushEvery (with fsync), and at once after the events that must survive
// a crash: notes, keys, experiment boundaries and updates, launches, kills
// and git actions. A full disk never stops the stream: the writer keeps
// the bytes and retries, and the Recorder publishes a journal.Status when
// the error appears, changes or clears.
type Recorder struct {
	W *journal.Writer
	// Publish receives journal.Status events for the screen; nil for none.
	// It is called from the flusher goroutine, never from the goroutine
	// reading events (a Stream would otherwise wait on its own reader).
	Publish event.Sink
	// FlushEvery is the flush (and fsync) period; 0 means 1 s.
	FlushEvery time.Duration

	// hook, when set (tests), is called after each event written
	// ("write") and each flush ("flush").
	hook func(what string)
}

// urgent are the kinds flushed and synced as soon as they are written.
var urgent = map[string]bool{
	"note": true, "key": true, "exp-start": true, "exp-fingerprint": true, "exp-update": true, "exp-end": true,
	"server-launched": true, "server-kill": true, "git-action": true,
}

// Run writes every event from events until it closes or ctx ends, then
// flushes and syncs what is left and returns that flush's error (the
// writer stays open: the caller closes it). Encoding errors (a kind not in
// the format) skip the event. Run never waits on the disk: the flusher
// goroutine does.
func (r *Recorder) Run(ctx context.Context, events <-chan event.Event) error {
	every := r.FlushEvery
	if every <= 0 {
		every = time.Second
	}
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.flusher(every, kick, done)
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

// flusher flushes every period and when kicked, and publishes the status
// when its error or drop count changes.
func (r *Recorder) flusher(every time.Duration, kick <-chan struct{}, done <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last journal.Status
	if r.Publish != nil {
		last = r.W.Status()
		r.Publish(event.Event{At: time.Now(), Data: last})
	}
	for {
		select {
		case <-done:
			return
		case <-t.C:
		case <-kick:
		}
		_ = r.W.Flush(true) // the error shows in Status
		if r.hook != nil {
			r.hook("flush")
		}
		st := r.W.Status()
		if r.Publish != nil && (st.Err != last.Err || st.Dropped != last.Dropped) {
			r.Publish(event.Event{At: time.Now(), Data: st})
		}
		last = st
	}
}
