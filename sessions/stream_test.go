package sessions

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// testPayload is event number i: a tok/s point of i (the vocabulary is
// sealed, so tests number real payloads).
func testPayload(i int) event.Payload { return event.TokRate{TokPerSec: float64(i)} }

// testNumber is the number testPayload gave p.
func testNumber(p event.Payload) int { return int(p.(event.TokRate).TokPerSec) }

func TestStreamDeliversInOrderToEverySubscriber(t *testing.T) {
	s := NewStream()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := s.Subscribe(ctx, 4)
	b := s.Subscribe(ctx, 4)
	go func() {
		for i := range 100 {
			s.Publish(event.Event{Data: testPayload(i)})
		}
		s.Close()
	}()
	got := make(map[string]int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, ch := range map[string]<-chan event.Event{"a": a, "b": b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := 0
			for e := range ch {
				if got := testNumber(e.Data); got != want {
					t.Errorf("%s: got event %d, want %d", name, got, want)
					return
				}
				want++
			}
			mu.Lock()
			got[name] = want
			mu.Unlock()
		}()
	}
	wg.Wait()
	if got["a"] != 100 || got["b"] != 100 {
		t.Fatalf("received %v events, want 100 each", got)
	}
}

func TestStreamForgetsCancelledSubscriber(t *testing.T) {
	s := NewStream()
	ctx, cancel := context.WithCancel(context.Background())
	slow := s.Subscribe(ctx, 0) // never read: Publish would block on it
	_ = slow
	fast := s.Subscribe(context.Background(), 1)
	done := make(chan struct{})
	go func() {
		s.Publish(event.Event{Data: testPayload(1)})
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish stayed blocked on a cancelled subscriber")
	}
	if e := <-fast; testNumber(e.Data) != 1 {
		t.Fatalf("fast subscriber got %v", e.Data)
	}
	// The cancelled subscriber may receive the event in flight when it was
	// cancelled, nothing after it; then its channel must be closed.
	got := 0
	timeout := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-slow:
			if open {
				got++
			}
		case <-timeout:
			t.Fatal("cancelled subscriber's channel still open")
		}
	}
	if got > 1 {
		t.Fatalf("cancelled subscriber received %d events after its cancel, want at most the one in flight", got)
	}
}

// TestStreamFullSubscriberBlocksNoOther: a subscriber that never reads
// delays neither Publish nor another subscriber, which receives every
// event in order; closing the stream closes its channel after the last.
func TestStreamFullSubscriberBlocksNoOther(t *testing.T) {
	s := NewStream()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = s.Subscribe(ctx, 1) // full after one event, never read
	reader := s.Subscribe(context.Background(), 16)
	const n = 10000
	published := make(chan struct{})
	go func() {
		for i := range n {
			s.Publish(event.Event{Data: testPayload(i)})
		}
		s.Close()
		close(published)
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on the subscriber that does not read")
	}
	want := 0
	for e := range reader {
		if got := testNumber(e.Data); got != want {
			t.Fatalf("reader got event %d, want %d", got, want)
		}
		want++
	}
	if want != n {
		t.Fatalf("reader got %d events, want %d", want, n)
	}
}
