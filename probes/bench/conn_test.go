package bench

import (
	"bytes"
	"context"
	"errors"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer serves the POST completions endpoints with handle (n is
// the request's number, 0-based) and counts the connections it accepted.
func countingServer(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns, reqs atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		handle(int(reqs.Add(1)-1), w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func okStream(w http.ResponseWriter) { defaultStream(w, w.(http.Flusher), 3, true) }

// TestDirectPathChosen: plain http:// targets through a plain transport
// take the runner's own connections; https, proxies, other round
// trippers and clients with a timeout or a cookie jar stay on http.Client.
func TestDirectPathChosen(t *testing.T) {
	const ep = "http://127.0.0.1:30000/v1/completions"
	proxied := NewTransport(nil, 1)
	proxied.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.example:3128"})
	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
		direct bool
	}{
		{"NewTransport", &http.Client{Transport: NewTransport(nil, 4)}, ep, true},
		{"default transport (no proxy for loopback)", &http.Client{}, ep, true},
		{"no port", &http.Client{}, "http://localhost/v1/completions", true},
		{"https", &http.Client{Transport: NewTransport(nil, 4)}, "https://127.0.0.1:30000/v1/completions", false},
		{"proxy", &http.Client{Transport: proxied}, ep, false},
		{"other round tripper", &http.Client{Transport: roundTripFunc(http.DefaultTransport.RoundTrip)}, ep, false},
		{"client timeout", &http.Client{Transport: NewTransport(nil, 4), Timeout: time.Minute}, ep, false},
		{"userinfo (Basic auth)", &http.Client{}, "http://user:secret@127.0.0.1:30000/v1/completions", false},
		{"user without password", &http.Client{}, "http://user@127.0.0.1:30000/v1/completions", false},
	} {
		p := newConnPool(tc.client, tc.url, 4)
		if (p != nil) != tc.direct {
			t.Errorf("%s: direct %v, want %v", tc.name, p != nil, tc.direct)
		}
		if tc.name == "no port" && p != nil && p.addr != "localhost:80" {
			t.Errorf("no port: dials %s", p.addr)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestDirectKeepAlive: N requests at concurrency c use at most c
// connections, dialled with the transport's DialContext; the request
// carries the headers http.Transport's path sends.
func TestDirectKeepAlive(t *testing.T) {
	var header atomic.Value
	srv, conns := countingServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			header.Store(r.Header.Clone())
		}
		okStream(w)
	})
	var dials atomic.Int64
	d := &net.Dialer{}
	tr := NewTransport(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}, 4)
	defer tr.CloseIdleConnections()
	res, err := Run(context.Background(), &http.Client{Transport: tr}, srv.URL, event.BenchConfig{Model: "m", Requests: 60, Concurrency: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 60 {
		t.Fatalf("completed %d: %+v", res.Completed, res.Errors)
	}
	if n := conns.Load(); n > 4 || n != dials.Load() {
		t.Errorf("%d connections for 61 requests at concurrency 4 (%d dialled by the transport's dial)", n, dials.Load())
	}
	h, _ := header.Load().(http.Header)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "text/event-stream", "Accept-Encoding": "identity", "User-Agent": "Go-http-client/1.1"} {
		if h.Get(k) != v {
			t.Errorf("header %s: %q, want %q", k, h.Get(k), v)
		}
	}
}

// TestDirectConnectionClose: a server that answers "Connection: close"
// gets a new connection for every request, and every request succeeds.
func TestDirectConnectionClose(t *testing.T) {
	srv, conns := countingServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		okStream(w)
	})
	res, err := Run(context.Background(), nil, srv.URL, event.BenchConfig{Model: "m", Requests: 10, Concurrency: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 10 || conns.Load() != 11 {
		t.Fatalf("completed %d on %d connections (want 10 on 11, warm-up included): %+v", res.Completed, conns.Load(), res.Errors)
	}
}

// TestDirectDroppedThenRedial: a server that closes the connection
// mid-stream fails that request; the next one dials again and succeeds.
func TestDirectDroppedThenRedial(t *testing.T) {
	srv, conns := countingServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n != 2 {
			okStream(w)
			return
		}
		sseHeader(w)
		io.WriteString(w, `data: {"choices":[{"text":"a"}]}`+"\n\n")
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	})
	res, err := Run(context.Background(), nil, srv.URL, event.BenchConfig{Model: "m", Requests: 5, Concurrency: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 4 || res.Failed != 1 || res.Errors[0].Err != "stream broken: unexpected EOF" {
		t.Fatalf("completed %d failed %d %+v", res.Completed, res.Failed, res.Errors)
	}
	if conns.Load() != 2 {
		t.Errorf("%d connections, want 2 (one redial after the drop)", conns.Load())
	}
	if !res.Requests[2].Usage || res.Requests[1].Err == "" {
		t.Errorf("the request after the drop: %+v; the dropped one: %+v", res.Requests[2], res.Requests[1])
	}
}

// TestDirectServerClosesIdle: a server that closes idle connections
// between requests: each request after a gap finds its connection closed
// before writing to it, and goes out on a new one, without failing.
func TestDirectServerClosesIdle(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		okStream(w)
	}))
	srv.Config.IdleTimeout = time.Millisecond
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	res, err := Run(context.Background(), nil, srv.URL, event.BenchConfig{Model: "m", Requests: 5, Rate: 50}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 5 {
		t.Fatalf("completed %d: %+v", res.Completed, res.Errors)
	}
	if conns.Load() < 2 {
		t.Errorf("%d connections: the server's idle timeout did not close any", conns.Load())
	}
}

// TestDirectContentLength: an event stream sent with Content-Length, not
// chunked, is read to its end and the connection kept.
func TestDirectContentLength(t *testing.T) {
	var buf bytes.Buffer
	rec := httptest.NewRecorder()
	defaultStream(rec, rec, 3, true)
	buf.Write(rec.Body.Bytes())
	srv, conns := countingServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.Write(buf.Bytes())
	})
	res, err := Run(context.Background(), nil, srv.URL, event.BenchConfig{Model: "m", Requests: 6, Concurrency: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 6 || res.OutputTokens != 18 || conns.Load() != 1 {
		t.Fatalf("completed %d, %d tokens, %d connections: %+v", res.Completed, res.OutputTokens, conns.Load(), res.Errors)
	}
}

// TestDirectErrorStatus: a non-200 answer with a body fails the request
// with the server's message; the requests after it still succeed.
func TestDirectErrorStatus(t *testing.T) {
	srv, _ := countingServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n%2 == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"object":"error","message":"The server is not ready.","code":503}`)
			return
		}
		okStream(w)
	})
	res, err := Run(context.Background(), nil, srv.URL, event.BenchConfig{Model: "m", Requests: 6, Concurrency: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 3 || res.Failed != 3 || res.Errors[0].Err != "HTTP 503: The server is not ready." {
		t.Fatalf("completed %d failed %d %+v", res.Completed, res.Failed, res.Errors)
	}
}

// TestDirectCancelMidStream: cancelling the run while a stream is open
// closes its connection (the server sees its request end) and Run returns
// the partial result.
func TestDirectCancelMidStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streaming, serverSawEnd := make(chan struct{}), make(chan struct{})
	srv, _ := countingServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 2 {
			okStream(w)
			return
		}
		sseHeader(w)
		io.WriteString(w, `data: {"choices":[{"text":"a"}]}`+"\n\n")
		w.(http.Flusher).Flush()
		close(streaming)
		select {
		case <-r.Context().Done(): // the client closed the connection
			close(serverSawEnd)
		case <-time.After(time.Minute):
		}
	})
	go func() {
		<-streaming
		cancel()
	}()
	done := make(chan *event.BenchResult, 1)
	go func() {
		res, err := Run(ctx, nil, srv.URL, event.BenchConfig{Model: "m", Requests: 5, Concurrency: 1, Timeout: time.Hour}, nil)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case res := <-done:
		if res == nil || !res.Cancelled || res.Completed != 1 || res.Failed != 0 {
			t.Fatalf("result %+v", res)
		}
	case <-serverSawEnd:
		// the connection was cut; Run returns next
		if res := <-done; res == nil || !res.Cancelled || res.Completed != 1 {
			t.Fatalf("result %+v", res)
		}
	}
	select {
	case <-serverSawEnd:
	case <-time.After(30 * time.Second):
		t.Fatal("the server's request never ended: the connection was not closed")
	}
}

// TestHTTPSFallback: an https:// target is benchmarked through the
// caller's http.Client.
func TestHTTPSFallback(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		okStream(w)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut by Close
	srv.StartTLS()
	defer srv.Close()
	if newConnPool(srv.Client(), srv.URL+"/v1/completions", 2) != nil {
		t.Fatal("an https URL took the direct path")
	}
	res, err := Run(context.Background(), srv.Client(), srv.URL, event.BenchConfig{Model: "m", Requests: 4, Concurrency: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 4 {
		t.Fatalf("completed %d: %+v", res.Completed, res.Errors)
	}
}

// TestDirectDialError: a target nobody listens on fails the warm-up with
// the dial error.
func TestDirectDialError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = Run(context.Background(), nil, "http://"+addr, event.BenchConfig{Model: "m"}, nil)
	if want := "connect: connection refused"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one that says %q", err, want)
	}
}

// connServer serves the completions endpoint with handle (n is the
// request's number, 0-based, as the server saw them) and counts the
// connections it accepted and closed.
type connServer struct {
	*httptest.Server
	reqs, opened, closed atomic.Int64
}

func newConnServer(t *testing.T, idle time.Duration, handle func(n int, w http.ResponseWriter, r *http.Request)) *connServer {
	t.Helper()
	s := &connServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		handle(int(s.reqs.Add(1)-1), w, r)
	}))
	s.Config.IdleTimeout = idle
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// waitClosed waits until the server has closed (or handed over) n
// connections; the test fails after a minute.
func (s *connServer) waitClosed(t *testing.T, n int64) {
	t.Helper()
	for end := time.Now().Add(time.Minute); s.closed.Load() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the server closed %d connections, want %d", s.closed.Load(), n)
		}
	}
}

// directRunner is a runner on the direct path to srv, for tests that send
// requests one by one with do.
func directRunner(t *testing.T, client *http.Client, srv *httptest.Server, concurrency int) *runner {
	t.Helper()
	if client == nil {
		client = &http.Client{Transport: NewTransport(nil, concurrency)}
	}
	r := &runner{cfg: event.BenchConfig{Model: "m", Concurrency: concurrency, Timeout: time.Minute}.Defaults(), client: client, url: srv.URL + "/v1/completions"}
	r.direct = newConnPool(client, r.url, concurrency)
	if r.direct == nil {
		t.Fatal("the direct path was not chosen")
	}
	t.Cleanup(r.direct.close)
	return r
}

// sendAll sends n requests, c at a time, and fails the test on any error.
func sendAll(t *testing.T, r *runner, n, c int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	next := atomic.Int64{}
	for range c {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				body, prompt := r.body(i, false)
				if q := r.do(context.Background(), body, prompt, nil); q.Err != "" {
					errs <- q.Err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("request failed: %s", e)
	}
}

// TestDirectIdleClosedByServer: several connections go idle, the server
// closes them all (as uvicorn does after 5 s idle; here after 200 ms),
// then requests at the same concurrency all succeed on new connections,
// each sent once: the dead ones are found before a request is written to
// them, and none is taken for a retry.
func TestDirectIdleClosedByServer(t *testing.T) {
	const c = 4
	srv := newConnServer(t, 200*time.Millisecond, func(_ int, w http.ResponseWriter, _ *http.Request) { okStream(w) })
	r := directRunner(t, nil, srv.Server, c)
	sendAll(t, r, 4*c, c)
	opened := srv.opened.Load()
	if opened < 2 {
		t.Fatalf("%d connections before the gap: the test needs at least two idle", opened)
	}
	srv.waitClosed(t, opened) // the gap: longer than the server's idle timeout
	sendAll(t, r, 4*c, c)
	if got := srv.reqs.Load(); got != 8*c {
		t.Errorf("the server saw %d requests, want %d (each sent once)", got, 8*c)
	}
	if srv.opened.Load() <= opened {
		t.Errorf("no connection dialled after the gap (%d before, %d after)", opened, srv.opened.Load())
	}
}

// TestDirectIdleTimeLimit: a connection idle longer than the pool's limit
// (idleTimeout, here 50 ms) is closed rather than reused, even though
// the server still keeps it.
func TestDirectIdleTimeLimit(t *testing.T) {
	srv := newConnServer(t, 0, func(_ int, w http.ResponseWriter, _ *http.Request) { okStream(w) })
	r := directRunner(t, nil, srv.Server, 1)
	r.direct.maxIdleTime = 50 * time.Millisecond
	sendAll(t, r, 2, 1)
	if srv.opened.Load() != 1 {
		t.Fatalf("%d connections for two requests in a row, want 1", srv.opened.Load())
	}
	time.Sleep(100 * time.Millisecond) // the gap
	sendAll(t, r, 1, 1)
	if srv.opened.Load() != 2 {
		t.Errorf("%d connections, want 2: the one idle past the limit was reused", srv.opened.Load())
	}
	srv.waitClosed(t, 1) // the pool closed the old one
}

// TestDirectNoReplayAfterWrite: a server that reads a request on a reused
// connection and closes it without answering fails that request; it is
// not sent again (a completion is not idempotent), and the next request
// goes out on a new connection.
func TestDirectNoReplayAfterWrite(t *testing.T) {
	srv := newConnServer(t, 0, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 { // the first measured request, on the warm-up's connection
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		okStream(w)
	})
	res, err := Run(context.Background(), nil, srv.URL, event.BenchConfig{Model: "m", Requests: 2, Concurrency: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 1 || res.Failed != 1 || res.Requests[0].Err == "" {
		t.Fatalf("completed %d failed %d %+v", res.Completed, res.Failed, res.Errors)
	}
	if got := srv.reqs.Load(); got != 3 {
		t.Errorf("the server saw %d requests, want 3 (warm-up, the failed one once, the next)", got)
	}
	if srv.opened.Load() != 2 {
		t.Errorf("%d connections, want 2", srv.opened.Load())
	}
}

// channelConn stands in for an SSH direct-tcpip channel (what the
// cockpit's transport dials): no socket to peek at, no deadlines, and,
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

// TestDirectRetryUnwritten: a reused connection that refuses the request
// before taking any byte of it (an SSH channel the server closed) gets
// the request sent again on a new connection; the server sees it once.
func TestDirectRetryUnwritten(t *testing.T) {
	srv := newConnServer(t, 0, func(_ int, w http.ResponseWriter, _ *http.Request) { okStream(w) })
	client, closeAll := channelClient()
	r := directRunner(t, client, srv.Server, 1)
	sendAll(t, r, 1, 1)
	closeAll()
	sendAll(t, r, 1, 1)
	if srv.reqs.Load() != 2 || srv.opened.Load() != 2 {
		t.Errorf("the server saw %d requests on %d connections, want 2 on 2", srv.reqs.Load(), srv.opened.Load())
	}
	// A new connection that refuses it is a failed request, not retried.
	closeAll()
	r.direct.close()
	r.direct = newConnPool(client, r.url, 1)
	d := r.direct.dial
	var dials atomic.Int64
	r.direct.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		c, err := d(ctx, network, addr)
		if err == nil {
			c.(channelConn).dead.Store(true)
		}
		return c, err
	}
	body, _ := r.body(0, false)
	if q := r.do(context.Background(), body, 0, nil); q.Err != "EOF" {
		t.Errorf("request on a new dead connection: error %q, want EOF", q.Err)
	}
	if dials.Load() != 1 || srv.reqs.Load() != 2 {
		t.Errorf("%d dials and %d requests seen, want 1 and 2 (no retry)", dials.Load(), srv.reqs.Load())
	}
}

// TestDirectNoDeadlineConnTimeout: on a connection without deadlines (an
// SSH channel), a stream that stalls past the request timeout still ends
// at the timeout: the connection is closed, and the server sees its
// request end.
func TestDirectNoDeadlineConnTimeout(t *testing.T) {
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

// TestDirectAlive: the liveness check of an idle connection, against a
// raw TCP peer: alive while the peer is quiet; dead once the peer has
// closed it, reset it or sent bytes nobody asked for.
func TestDirectAlive(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		name string
		peer func(net.Conn) // what the server does to its end
	}{
		{"quiet", nil},
		{"closed", func(c net.Conn) { c.Close() }},
		{"reset", func(c net.Conn) { c.(*net.TCPConn).SetLinger(0); c.Close() }},
		{"unsolicited bytes", func(c net.Conn) { io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\n\r\n") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sc, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			pc := &pconn{c: c, peek: newPeeker(c)}
			if pc.peek == nil {
				t.Skip("no socket checks on this system")
			}
			if !pc.alive() {
				t.Fatal("a fresh connection is not alive")
			}
			if tc.peer == nil {
				if !pc.alive() {
					t.Fatal("a quiet connection is not alive on a second look")
				}
				return
			}
			tc.peer(sc)
			// What the peer did reaches this end shortly; wait for it.
			for end := time.Now().Add(time.Minute); pc.alive(); time.Sleep(time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("still alive a minute after the peer's move")
				}
			}
			if pc.alive() {
				t.Error("alive again after being found dead")
			}
		})
	}
	if (&pconn{c: channelConn{}}).alive() != true {
		t.Error("a connection without a socket is not taken as alive")
	}
}

// TestDirectBasicAuth: credentials in the URL go through http.Client,
// which sends them as Basic authorisation.
func TestDirectBasicAuth(t *testing.T) {
	var bad atomic.Int64
	srv := newConnServer(t, 0, func(_ int, w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "secret" {
			bad.Add(1)
		}
		okStream(w)
	})
	u := strings.Replace(srv.URL, "http://", "http://user:secret@", 1)
	res, err := Run(context.Background(), nil, u, event.BenchConfig{Model: "m", Requests: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 3 || bad.Load() != 0 {
		t.Fatalf("completed %d, %d requests without the credentials: %+v", res.Completed, bad.Load(), res.Errors)
	}
}

// BenchmarkConnReuse: what taking an idle connection costs the pool: the
// idle list, the liveness check (one recv(MSG_PEEK) system call on a
// loopback TCP socket) and giving it back.
func BenchmarkConnReuse(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	p := newConnPool(&http.Client{}, "http://"+l.Addr().String()+"/v1/completions", 1)
	defer p.close()
	ctx := context.Background()
	deadline := time.Now().Add(time.Hour)
	pc, err := p.get(ctx, deadline, false)
	if err != nil {
		b.Fatal(err)
	}
	pc.stop = func() bool { return true }
	p.release(pc, true)
	b.ReportAllocs()
	for b.Loop() {
		pc, err := p.get(ctx, deadline, false)
		if err != nil || !pc.reused {
			b.Fatalf("not the idle connection: %v", err)
		}
		p.release(pc, true)
	}
}
