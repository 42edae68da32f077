// Package sessions wires flightdeck's event stream: live sources (probes
// running against a remote.Host) publish typed events, and consumers (the
// TUI, later the journal recorder) subscribe to the same stream, so what the
// screen shows is what is recorded.
package sessions

import (
	"context"
	"sync"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Stream fans events out to every subscriber, in publish order. Publish
// never drops an event and never waits for a subscriber: each has a queue
// of its own, drained into its channel by a goroutine of its own, so a
// subscriber that is full (a screen busy rendering) delays no other (the
// recorder) and no producer. A subscriber that stops reading only holds
// memory for what it has not read, until its context ends.
type Stream struct {
	mu     sync.Mutex
	subs   []*subscriber
	closed bool
}

// subscriber is one Subscribe: its queue and the channel its pump fills.
type subscriber struct {
	ch   chan event.Event
	done <-chan struct{} // the subscriber's context
	wake chan struct{}   // 1-buffered: the queue grew or the stream closed

	mu     sync.Mutex
	queue  []event.Event // published, not yet sent on ch
	closed bool          // the stream closed: send the queue, then close ch
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{} }

// Subscribe returns a channel that receives every event published after the
// call, buffered to buf events. The channel is closed when ctx ends (an
// event in flight may still arrive first) or, once every event published
// before has been received, when the stream is closed.
func (s *Stream) Subscribe(ctx context.Context, buf int) <-chan event.Event {
	sub := &subscriber{ch: make(chan event.Event, buf), done: ctx.Done(), wake: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(sub.ch)
		return sub.ch
	}
	s.subs = append(s.subs, sub)
	go sub.pump()
	context.AfterFunc(ctx, func() { s.remove(sub) })
	return sub.ch
}

// remove forgets a subscriber whose context ended; its pump sees the
// context and closes its channel.
func (s *Stream) remove(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.subs {
		if x == sub {
			s.subs = append(s.subs[:i], s.subs[i+1:]...)
			return
		}
	}
}

// Publish queues e for every current subscriber and returns: it never
// blocks on one. It is safe for concurrent use; events from one goroutine
// keep their order, and every subscriber sees all events in one order.
func (s *Stream) Publish(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range s.subs {
		sub.push(e)
	}
}

// Sink returns Publish as an event.Sink for producers.
func (s *Stream) Sink() event.Sink { return s.Publish }

// Close ends the stream: each subscriber's channel is closed once it has
// received what was published before; later Publish calls do nothing.
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, sub := range s.subs {
		sub.end()
	}
	s.subs = nil
}

func (sub *subscriber) push(e event.Event) {
	sub.mu.Lock()
	sub.queue = append(sub.queue, e)
	sub.mu.Unlock()
	sub.poke()
}

func (sub *subscriber) end() {
	sub.mu.Lock()
	sub.closed = true
	sub.mu.Unlock()
	sub.poke()
}

func (sub *subscriber) poke() {
	select {
	case sub.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// pump sends the queue on ch in order until the stream closes (then it
// closes ch) or the subscriber's context ends.
func (sub *subscriber) pump() {
	defer close(sub.ch)
	var batch []event.Event
	for {
		sub.mu.Lock()
		batch, sub.queue = sub.queue, batch[:0] // the two buffers take turns
		closed := sub.closed
		sub.mu.Unlock()
		for _, e := range batch {
			select {
			case <-sub.done:
				return // not a single send after the context ended, when it can be told
			default:
			}
			select {
			case sub.ch <- e:
			case <-sub.done:
				return
			}
		}
		clear(batch) // hold no payloads the subscriber has received
		switch {
		case len(batch) > 0:
			continue // more may have come while sending
		case closed:
			return
		}
		select {
		case <-sub.wake:
		case <-sub.done:
			return
		}
	}
}
