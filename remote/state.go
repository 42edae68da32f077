package remote

import (
	"context"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"sync"
	"time"
)

// stateHub fans connection states out to Watch channels. Each channel has a
// one-slot buffer that always holds the newest undelivered state, so a slow
// reader never blocks the publisher and never sees a stale state last.
type stateHub struct {
	mu     sync.Mutex
	cur    event.ConnState
	subs   map[chan event.ConnState]struct{}
	closed bool // a final state was published; new watchers get it and a closed channel
}

func newStateHub(s event.ConnState) *stateHub {
	s.Since = time.Now()
	return &stateHub{cur: s, subs: make(map[chan event.ConnState]struct{})}
}

// get returns the current state.
func (h *stateHub) get() event.ConnState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// set publishes s; Since is set here (now when Conn changes, else kept). final marks the
// last state (Closed): every channel receives it and is then closed.
func (h *stateHub) set(s event.ConnState, final bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if s.Conn != h.cur.Conn {
		s.Since = time.Now()
	} else {
		s.Since = h.cur.Since
	}
	h.cur = s
	for ch := range h.subs {
		offer(ch, s)
		if final {
			close(ch)
		}
	}
	if final {
		h.subs = nil
		h.closed = true
	}
}

// offer replaces whatever ch holds with s. Only the publisher (holding the
// hub lock) sends, so after the drain the send cannot block.
func offer(ch chan event.ConnState, s event.ConnState) {
	select {
	case <-ch:
	default:
	}
	ch <- s
}

// watch implements Host.Watch.
func (h *stateHub) watch(ctx context.Context) <-chan event.ConnState {
	ch := make(chan event.ConnState, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	ch <- h.cur
	if h.closed {
		close(ch)
		return ch
	}
	h.subs[ch] = struct{}{}
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[ch]; ok {
			delete(h.subs, ch)
			close(ch)
		}
	})
	return ch
}
