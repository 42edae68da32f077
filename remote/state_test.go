package remote

import (
	"context"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"testing"
	"time"
)

func TestWatchLatestStateWins(t *testing.T) {
	h := newStateHub(event.ConnState{Host: "h", Conn: event.Connected})
	ctx, cancel := context.WithCancel(context.Background())
	ch := h.watch(ctx)
	other := h.watch(context.Background())
	for i := 1; i <= 5; i++ {
		h.set(event.ConnState{Host: "h", Conn: event.Reconnecting, Attempt: i}, false)
	}
	if s := <-ch; s.Conn != event.Reconnecting || s.Attempt != 5 {
		t.Fatalf("slow reader got %+v, want the latest (attempt 5)", s)
	}
	select {
	case s := <-ch:
		t.Fatalf("unexpected extra state %+v", s)
	default:
	}
	h.set(event.ConnState{Host: "h", Conn: event.Reconnecting, Attempt: 6}, false)
	h.set(event.ConnState{Host: "h", Conn: event.Connected}, false)
	s := <-ch
	if s.Conn != event.Connected || s.Since.IsZero() {
		t.Fatalf("got %+v", s)
	}
	cancel()
	deadline := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-deadline:
			t.Fatal("channel not closed at ctx end")
		}
	}
	// The other watcher is unaffected and sees the final state, then a close.
	h.set(event.ConnState{Host: "h", Conn: event.ConnClosed}, true)
	if s := <-other; s.Conn != event.ConnClosed {
		t.Fatalf("other watcher got %+v", s)
	}
	if _, ok := <-other; ok {
		t.Fatal("other watcher not closed after the final state")
	}
	late := h.watch(context.Background())
	if s, ok := <-late; !ok || s.Conn != event.ConnClosed {
		t.Fatalf("late watcher got %+v %v", s, ok)
	}
	if _, ok := <-late; ok {
		t.Fatal("late watcher not closed")
	}
}

func TestStateSinceKeptWithinAState(t *testing.T) {
	h := newStateHub(event.ConnState{Conn: event.Connected})
	h.set(event.ConnState{Conn: event.Reconnecting, Attempt: 1}, false)
	first := h.get().Since
	h.set(event.ConnState{Conn: event.Reconnecting, Attempt: 2}, false)
	if got := h.get().Since; !got.Equal(first) {
		t.Fatalf("Since moved within Reconnecting: %v -> %v", first, got)
	}
}
