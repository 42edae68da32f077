package sessions

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

type testPayload int

func (testPayload) Kind() string { return "test" }

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
				if got := int(e.Data.(testPayload)); got != want {
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
	if e := <-fast; int(e.Data.(testPayload)) != 1 {
		t.Fatalf("fast subscriber got %v", e.Data)
	}
	if _, ok := <-slow; ok {
		// The cancelled subscriber may have received nothing; its channel must be closed.
		t.Fatal("cancelled subscriber's channel still open")
	}
}
