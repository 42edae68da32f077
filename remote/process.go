package remote

import (
	"context"
	"errors"
	"net"
	"sync"
)

// Dialer opens network connections from a host's point of view: an SSH host
// dials through its connection (a direct-tcpip channel, so "127.0.0.1:8000"
// is the GPU host's loopback), the local host dials directly. It fits
// http.Transport.DialContext, for health checks of the inference server.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// ErrClosed is wrapped by errors from calls on a Host after its Close, and
// by Process.Wait after the process was stopped by Process.Close.
var ErrClosed = errors.New("remote: closed")

// stderrTailBytes is how much of a command's stderr an ExitError keeps.
const stderrTailBytes = 4 << 10

// tailBuffer keeps the last max bytes written to it. It is safe for
// concurrent use (a reader goroutine writes, Wait reads).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Bytes returns a copy of the kept tail.
func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}

// tail returns the last stderrTailBytes of b (a copy).
func tail(b []byte) []byte {
	if len(b) > stderrTailBytes {
		b = b[len(b)-stderrTailBytes:]
	}
	return append([]byte(nil), b...)
}

// withStderrTail returns err, or for an *ExitError a copy whose Stderr is
// what t holds now (Wait may return before the caller has read all of
// stderr, so the tail is taken when Wait returns, not when the command
// ended).
func withStderrTail(err error, t *tailBuffer) error {
	ee, ok := err.(*ExitError)
	if !ok || t == nil {
		return err
	}
	c := *ee
	c.Stderr = t.Bytes()
	return &c
}
