package sessions

import (
	"context"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// Recorder writes the event stream to a journal: every event is encoded
// into memory at once (a log batch waits there for the throughput, prefill
// and tok/s events the log pipeline derives from it, which ride on its
// line: journal.Writer.Write), and a flusher writes it to the file every
// WriteEvery (write(2) only: a follower reading the file sees it within
// that), syncs it every FlushEvery (write and fsync), and writes and syncs
// at once after the events that must survive a crash: notes, keys,
// experiment boundaries and updates, launches, kills, git actions,
// driver-lock changes and Xids (at most one forced sync a second for
// those: an application fault can log hundreds a second, and a sync at
// the end of that second covers every one of them). A full disk never stops the stream: the writer keeps
// the bytes and retries, and the Recorder publishes a event.JournalStatus when
// the error appears, changes or clears.
type Recorder struct {
	W *journal.Writer
	// Publish receives event.JournalStatus events for the screen; nil for none.
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
	// syncHook, when set (tests), is called from Run when an urgent
	// event asks for a sync at once ("urgent"), when a gpu-xid's sync is
	// put off ("xid-held") and when the put-off sync is asked ("xid-late").
	syncHook func(what string)
	// clock and after replace time.Now and time.After (tests).
	clock func() time.Time
	after func(time.Duration) <-chan time.Time
}

// Default periods of the Recorder.
const (
	defaultSyncEvery  = time.Second
	defaultWriteEvery = 250 * time.Millisecond
)

// xidSyncEvery is the least time between two syncs forced by gpu-xid
// events (wall-clock time); an Xid within it of the last one is synced
// when it has passed (or sooner, by the periodic sync or another urgent
// kind).
const xidSyncEvery = time.Second

// xidLimiter spaces the syncs gpu-xid events force at least xidSyncEvery
// apart.
type xidLimiter struct {
	last time.Time // when an Xid last forced a sync; zero before any
	held bool      // a sync is put off until last + xidSyncEvery
}

// ask is called for an Xid written at now: sync says to sync at once;
// otherwise, when wait > 0, the caller must ask again after wait
// (calling late), and when wait is 0 a put-off sync already covers it.
func (l *xidLimiter) ask(now time.Time) (sync bool, wait time.Duration) {
	if l.last.IsZero() || now.Sub(l.last) >= xidSyncEvery || now.Before(l.last) {
		l.last = now
		return true, 0
	}
	if l.held {
		return false, 0
	}
	l.held = true
	return false, l.last.Add(xidSyncEvery).Sub(now)
}

// late is called when the put-off sync is due, at now.
func (l *xidLimiter) late(now time.Time) {
	l.held = false
	l.last = now
}

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
	kickNow := func(what string) {
		if r.syncHook != nil {
			r.syncHook(what)
		}
		select {
		case kick <- struct{}{}:
		default: // a flush is already asked for
		}
	}
	now, after := r.clock, r.after
	if now == nil {
		now = time.Now
	}
	if after == nil {
		after = time.After
	}
	var xids xidLimiter
	var xidLate <-chan time.Time // the put-off Xid sync; nil when none
	for {
		select {
		case <-ctx.Done():
			return final()
		case <-xidLate:
			xidLate = nil
			xids.late(now())
			kickNow("xid-late")
		case e, ok := <-events:
			if !ok {
				return final()
			}
			if e.Data == nil || e.Data.Kind() == (event.JournalStatus{}).Kind() {
				continue // its own status is for the screen
			}
			_ = r.W.Write(e) // a kind outside the format: skipped
			if r.hook != nil {
				r.hook("write")
			}
			switch k := e.Data.Kind(); {
			case k == event.KindXid: // urgent, its forced syncs rate-limited
				sync, wait := xids.ask(now())
				switch {
				case sync:
					kickNow("urgent")
				case wait > 0:
					xidLate = after(wait)
					if r.syncHook != nil {
						r.syncHook("xid-held")
					}
				}
			case k.Info().Urgent:
				kickNow("urgent")
			}
		}
	}
}

// flusher writes every writeEvery, writes and syncs every syncEvery and
// when kicked, and publishes the status when its error or drop count
// changes.
//
// The periodic flushes fall on the multiples of their period on the clock
// (phaseTimer), as the journal mirror's polls do: one timer, at the write
// period, whose every syncEvery-th tick also syncs. Without a write period
// shorter than the sync period every tick syncs.
func (r *Recorder) flusher(syncEvery, writeEvery time.Duration, kick <-chan struct{}, done <-chan struct{}) {
	period := min(writeEvery, syncEvery)
	t := newPhaseTimer(period)
	defer t.Stop()
	var last event.JournalStatus
	if r.Publish != nil {
		last = r.W.Status()
		r.Publish(event.Event{At: time.Now(), Data: last})
	}
	lastSync := time.Now()
	for {
		sync := true
		select {
		case <-done:
			return
		case <-kick:
		case now := <-t.C():
			t.Next()
			sync = period == syncEvery || now.Sub(lastSync) >= syncEvery-period/2
		}
		if sync {
			lastSync = time.Now()
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
