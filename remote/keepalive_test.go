package remote

import (
	"context"
	"errors"
	"sync"
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
		go func() { done <- keepalive(ctx, p, interval, 3, keepaliveWatch{}) }()
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
		err := keepalive(ctx, p, interval, 3, keepaliveWatch{})
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
		if err := keepalive(context.Background(), p, interval, 3, keepaliveWatch{}); err == nil || errors.Is(err, errKeepaliveTimeout) {
			t.Fatalf("keepalive = %v, want the send error", err)
		}
	})
}

// gatePeer answers keepalive requests at once, or, while frozen, when it
// thaws.
type gatePeer struct {
	mu   sync.Mutex
	gate chan struct{} // nil: not frozen
}

func (g *gatePeer) SendRequest(name string, wantReply bool, payload []byte) (bool, []byte, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return true, nil, nil
}

func (g *gatePeer) freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
}

func (g *gatePeer) thaw() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
	g.gate = nil
}

func TestKeepaliveQuiet(t *testing.T) {
	const interval = 20 * time.Millisecond
	t.Run("quiet after an interval unanswered, answered again", func(t *testing.T) {
		p := &gatePeer{}
		type quietAt struct{ at, heard, dead time.Time }
		quiet := make(chan quietAt, 10)
		answered := make(chan time.Time, 10)
		w := keepaliveWatch{
			quiet:    func(heard, dead time.Time) { quiet <- quietAt{time.Now(), heard, dead} },
			answered: func() { answered <- time.Now() },
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- keepalive(ctx, p, interval, 50, w) }()
		time.Sleep(3 * interval)
		frozen := time.Now()
		p.freeze()
		q := <-quiet
		if d := q.at.Sub(frozen); d < interval || d > 2*time.Second {
			t.Errorf("quiet %v after the freeze, want between 1 and 2 intervals", d)
		}
		if q.heard.After(frozen.Add(interval)) || frozen.Sub(q.heard) > time.Second { // a reply under way may come just after
			t.Errorf("last heard %v before the freeze", frozen.Sub(q.heard))
		}
		if d := q.dead.Sub(q.at); d < 48*interval || d > 50*interval {
			t.Errorf("dead %v after quiet, want 49 intervals", d)
		}
		p.thaw()
		select {
		case <-answered:
		case err := <-done:
			t.Fatalf("keepalive ended: %v", err)
		case <-time.After(5 * time.Second):
			t.Fatal("a thawed peer was not reported answering")
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("keepalive = %v", err)
		}
		if len(quiet) != 0 {
			t.Errorf("quiet reported %d more times", len(quiet))
		}
	})
	t.Run("data heard keeps a slow peer alive", func(t *testing.T) {
		p := &gatePeer{}
		p.freeze()
		defer p.thaw()
		w := keepaliveWatch{
			heard: time.Now, // data arrives all the time
			quiet: func(heard, dead time.Time) { t.Error("quiet while data arrives") },
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*interval)
		defer cancel()
		if err := keepalive(ctx, p, interval, 3, w); err != nil {
			t.Errorf("keepalive = %v while data arrives", err)
		}
	})
	t.Run("silent peer dead after countMax", func(t *testing.T) {
		p := &gatePeer{}
		p.freeze()
		defer p.thaw()
		var last atomic.Int64
		w := keepaliveWatch{heard: func() time.Time { return heardAt(&last) }}
		start := time.Now()
		if err := keepalive(context.Background(), p, interval, 3, w); !errors.Is(err, errKeepaliveTimeout) {
			t.Fatalf("keepalive = %v", err)
		}
		if d := time.Since(start); d < 3*interval {
			t.Errorf("declared dead after %v, before 3 intervals", d)
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
