package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The benchmark over an SSH channel (the cockpit's port-forward): a
// connection that is not a socket and has no deadlines.

// channelConn stands in for an SSH direct-tcpip channel (what the
// cockpit's transport dials): not a socket, no deadlines, and,
// once the server's close has reached it (dead), writes fail with EOF
// before any byte goes out.
type channelConn struct {
	net.Conn
	dead *atomic.Bool
}

var errNoDeadline = errors.New("ssh: tcpChan: deadline not supported")

func (channelConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (channelConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (channelConn) SetWriteDeadline(time.Time) error { return errNoDeadline }

func (c channelConn) Write(p []byte) (int, error) {
	if c.dead.Load() {
		return 0, io.EOF
	}
	return c.Conn.Write(p)
}

// channelClient dials channelConns; closeAll marks those dialled so far
// dead.
func channelClient() (client *http.Client, closeAll func()) {
	var mu sync.Mutex
	var dialled []*atomic.Bool
	var d net.Dialer
	client = &http.Client{Transport: NewTransport(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dead := new(atomic.Bool)
		mu.Lock()
		dialled = append(dialled, dead)
		mu.Unlock()
		return channelConn{c, dead}, nil
	}, 1)}
	return client, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range dialled {
			d.Store(true)
		}
	}
}

// TestRetryUnwritten: a reused connection that refuses the request
// before taking any byte of it (an SSH channel the server closed) gets
// the request sent again on a new connection; the server sees it once.
func TestRetryUnwritten(t *testing.T) {
	srv := newConnServer(t, 0, func(_ int, w http.ResponseWriter, _ *http.Request) { okStream(w) })
	client, closeAll := channelClient()
	r := testRunner(t, client, srv.Server, 1)
	sendAll(t, r, 1, 1)
	closeAll()
	sendAll(t, r, 1, 1)
	if srv.reqs.Load() != 2 || srv.opened.Load() != 2 {
		t.Errorf("the server saw %d requests on %d connections, want 2 on 2", srv.reqs.Load(), srv.opened.Load())
	}
	// A new connection that refuses it is a failed request, not retried.
	var dials atomic.Int64
	var d net.Dialer
	tr := NewTransport(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dead := new(atomic.Bool)
		dead.Store(true)
		return channelConn{c, dead}, nil
	}, 1)
	defer tr.CloseIdleConnections()
	r.client = &http.Client{Transport: tr}
	body, _ := r.body(0, false)
	if q := r.do(context.Background(), body, 0, nil); q.Err != "EOF" {
		t.Errorf("request on a new dead connection: error %q, want EOF", q.Err)
	}
	if dials.Load() != 1 || srv.reqs.Load() != 2 {
		t.Errorf("%d dials and %d requests seen, want 1 and 2 (no retry)", dials.Load(), srv.reqs.Load())
	}
}

// TestNoDeadlineConnTimeout: on a connection without deadlines (an
// SSH channel), a stream that stalls past the request timeout still ends
// at the timeout: the connection is closed, and the server sees its
// request end.
func TestNoDeadlineConnTimeout(t *testing.T) {
	serverSawEnd := make(chan struct{})
	srv := newConnServer(t, 0, func(_ int, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		io.WriteString(w, `data: {"choices":[{"text":"a"}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(serverSawEnd)
	})
	client, _ := channelClient()
	res, err := Run(context.Background(), client, srv.URL, event.BenchConfig{Model: "m", Requests: 1, Warmup: -1, Timeout: 300 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 1 || res.Requests[0].Err != "timeout after 300ms" {
		t.Fatalf("failed %d %+v", res.Failed, res.Requests)
	}
	select {
	case <-serverSawEnd:
	case <-time.After(time.Minute):
		t.Fatal("the server's request never ended: the connection was not closed")
	}
}
