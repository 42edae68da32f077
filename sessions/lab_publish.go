package sessions

// How the Lab publishes what it decides: its actions queue events with l.mu
// held, and one publisher at a time drains the outbox in order without it
// (Publish may call Observe).

import (
	"context"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// act is the frame of Start, End, Update and Note: it returns ctx's error
// if ctx is done, ErrLabClosed after Close, or decide's error; otherwise,
// once decide (called with l.mu held) has queued its events, it publishes
// them, returning ctx's error if ctx ends while it waits for an earlier
// publisher (see flush).
func (l *Lab) act(ctx context.Context, decide func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	l.initLocked()
	if l.closed {
		l.mu.Unlock()
		return ErrLabClosed
	}
	if err := decide(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.mu.Unlock()
	return l.flush(ctx)
}

// decideLocked applies one of the Lab's own events to the ledger and queues
// it for publishing. Call with l.mu held.
func (l *Lab) decideLocked(at time.Time, p event.Payload) {
	e := event.Event{At: at, Data: p}
	l.ledger.Apply(e)
	l.outbox = append(l.outbox, e)
}

// kickLocked makes sure a goroutine publishes the outbox. Call with l.mu
// held.
func (l *Lab) kickLocked() {
	if l.flushing || len(l.outbox) == 0 {
		return
	}
	l.flushing = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.pubMu.Lock()
		defer l.pubMu.Unlock()
		l.drainLocked()
	}()
}

// flush publishes the outbox, waiting for an earlier publisher to finish
// first (the order is the outbox's). ctx bounds only the wait for that
// earlier publisher, not a Publish in progress.
func (l *Lab) flush(ctx context.Context) error {
	got := make(chan struct{})
	go func() {
		l.pubMu.Lock()
		close(got)
	}()
	select {
	case <-got:
	case <-ctx.Done():
		// The goroutine takes the lock later: it publishes then.
		go func() { <-got; l.drainLocked(); l.pubMu.Unlock() }()
		return ctx.Err()
	}
	l.drainLocked()
	l.pubMu.Unlock()
	return nil
}

// drainLocked publishes the outbox in order. Call with pubMu held (not
// l.mu: Publish may call Observe).
func (l *Lab) drainLocked() {
	for {
		l.mu.Lock()
		if len(l.outbox) == 0 {
			l.flushing = false
			l.mu.Unlock()
			return
		}
		e := l.outbox[0]
		l.outbox[0] = event.Event{}
		l.outbox = l.outbox[1:]
		l.mu.Unlock()
		if l.Publish != nil {
			l.Publish(e)
		}
	}
}
