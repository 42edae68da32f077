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
// never drops an event: it waits for a slow subscriber (backpressure on the
// probes) until that subscriber's context ends, after which the subscriber
// is forgotten.
type Stream struct {
	mu     sync.Mutex
	subs   []*subscriber
	closed bool
}

type subscriber struct {
	ch   chan event.Event
	done <-chan struct{}
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{} }

// Subscribe returns a channel that receives every event published after the
// call, buffered to buf events. The channel is closed when ctx ends or the
// stream is closed.
func (s *Stream) Subscribe(ctx context.Context, buf int) <-chan event.Event {
	sub := &subscriber{ch: make(chan event.Event, buf), done: ctx.Done()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(sub.ch)
		return sub.ch
	}
	s.subs = append(s.subs, sub)
	context.AfterFunc(ctx, func() { s.remove(sub) })
	return sub.ch
}

func (s *Stream) remove(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.subs {
		if x == sub {
			s.subs = append(s.subs[:i], s.subs[i+1:]...)
			close(sub.ch)
			return
		}
	}
}

// Publish delivers e to every current subscriber. It is safe for concurrent
// use; events from one goroutine keep their order.
func (s *Stream) Publish(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range s.subs {
		select {
		case sub.ch <- e:
		case <-sub.done:
			// The subscriber is leaving; its AfterFunc removes it once we unlock.
		}
	}
}

// Sink returns Publish as an event.Sink for producers.
func (s *Stream) Sink() event.Sink { return s.Publish }

// Close closes every subscriber's channel; later Publish calls do nothing.
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, sub := range s.subs {
		close(sub.ch)
	}
	s.subs = nil
}
