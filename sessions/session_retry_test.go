package sessions

import (
	"context"
	"errors"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
)

// redialHost is a local host that says it redials (remote.Redialer).
type redialHost struct {
	*remote.Local
	down  bool // RetryNow's answer
	calls int
}

func (h *redialHost) RetryNow() bool {
	h.calls++
	return h.down
}

// TestSessionRetryNow: the C key's action reaches the host's RetryNow,
// says when there is nothing to redial, and refuses before Attach and on a
// host without a connection.
func TestSessionRetryNow(t *testing.T) {
	ctx := context.Background()
	open := func(h remote.Host) *Session {
		s, err := Open(Options{Name: "box", Journal: JournalOptions{Off: true}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(ctx, nil) })
		if h != nil {
			if err := s.Attach(ctx, AttachOptions{Host: h, Target: config.Host{LogDir: t.TempDir()}}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	if err := open(nil).RetryNow(); !errors.Is(err, ErrNotYet) {
		t.Errorf("before attach: %v", err)
	}
	if err := open(remote.NewLocal()).RetryNow(); err == nil || errors.Is(err, ErrNothingToRedial) {
		t.Errorf("local host: %v, want no connection to redial", err)
	}
	h := &redialHost{Local: remote.NewLocal(), down: true}
	s := open(h)
	if err := s.RetryNow(); err != nil || h.calls != 1 {
		t.Errorf("while down: %v, %d calls", err, h.calls)
	}
	h.down = false
	if err := s.RetryNow(); !errors.Is(err, ErrNothingToRedial) || h.calls != 2 {
		t.Errorf("while up: %v, %d calls", err, h.calls)
	}
}
