package remote

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// fakePeer answers keepalive requests per its mode.
type fakePeer struct {
	mode  atomic.Int32 // 0 answer, 1 never answer, 2 fail
	sent  atomic.Int32
	block chan struct{} // released at test end
}

func (f *fakePeer) SendRequest(name string, wantReply bool, payload []byte) (bool, []byte, error) {
	f.sent.Add(1)
	switch f.mode.Load() {
	case 1:
		<-f.block
		return false, nil, errors.New("closed")
	case 2:
		return false, nil, errors.New("EOF")
	}
	return false, nil, nil // OpenSSH answers unknown requests with failure: still alive
}

func TestKeepalive(t *testing.T) {
	const interval = 20 * time.Millisecond
	t.Run("alive until ctx end", func(t *testing.T) {
		p := &fakePeer{block: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- keepalive(ctx, p, interval, 3) }()
		for p.sent.Load() < 10 {
			time.Sleep(interval)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("keepalive = %v", err)
		}
	})
	t.Run("frozen peer", func(t *testing.T) {
		p := &fakePeer{block: make(chan struct{})}
		defer close(p.block)
		p.mode.Store(1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		start := time.Now()
		err := keepalive(ctx, p, interval, 3)
		if !errors.Is(err, errKeepaliveTimeout) {
			t.Fatalf("keepalive = %v", err)
		}
		if d := time.Since(start); d < 3*interval {
			t.Errorf("declared dead after %v, before 3 intervals", d)
		}
		if n := p.sent.Load(); n != 3 {
			t.Errorf("%d requests sent, want 3 (each in its own goroutine)", n)
		}
	})
	t.Run("connection gone", func(t *testing.T) {
		p := &fakePeer{}
		p.mode.Store(2)
		if err := keepalive(context.Background(), p, interval, 3); err == nil || errors.Is(err, errKeepaliveTimeout) {
			t.Fatalf("keepalive = %v, want the send error", err)
		}
	})
}

func TestBackoff(t *testing.T) {
	min, max := 250*time.Millisecond, 30*time.Second
	for n := 1; n < 100; n++ {
		want := max
		if n < 20 {
			want = min << (n - 1)
			if want > max {
				want = max
			}
		}
		for range 20 {
			if d := backoff(n, min, max); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", n, d, want/2, want)
			}
		}
	}
}
