package bench

import (
	"bytes"
	"context"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
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

// TestNewTransport: the transport a run gets by default uses no proxy
// (an SSH-tunnelled target is the host's loopback), keeps an idle
// connection per concurrent request and opens no more, keeps them no
// longer than uvicorn's 5 s keep-alive allows, and asks for no
// compression.
func TestNewTransport(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	for _, c := range []int{0, 1, 16} {
		tr := NewTransport(nil, c)
		if tr.Proxy != nil {
			t.Errorf("concurrency %d: a proxy function is set", c)
		}
		if tr.MaxIdleConnsPerHost != max(c, 1) || tr.MaxConnsPerHost != max(c, 1) {
			t.Errorf("concurrency %d: %d connections, %d idle kept", c, tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost)
		}
		if tr.IdleConnTimeout <= 0 || tr.IdleConnTimeout >= 5*time.Second {
			t.Errorf("idle timeout %v: want under uvicorn's 5 s", tr.IdleConnTimeout)
		}
		if !tr.DisableCompression || tr.DialContext == nil {
			t.Errorf("compression disabled %v, dial set %v", tr.DisableCompression, tr.DialContext != nil)
		}
	}
}

// TestKeepAlive: N requests at concurrency c use at most c
// connections, dialled with the transport's DialContext; the request
// carries the headers http.Transport's path sends.
func TestKeepAlive(t *testing.T) {
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

// TestConnectionClose: a server that answers "Connection: close"
// gets a new connection for every request, and every request succeeds.
func TestConnectionClose(t *testing.T) {
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

// TestDroppedThenRedial: a server that closes the connection
// mid-stream fails that request; the next one dials again and succeeds.
func TestDroppedThenRedial(t *testing.T) {
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

// TestServerClosesIdle: a server that closes idle connections
// between requests: each request after a gap finds its connection closed
// before writing to it, and goes out on a new one, without failing. No
// warm-up: the first measured request would follow it at once, within
// the server's 1 ms idle timeout, and so race the server's close of its
// connection, which no client can see coming (idleTimeout is the guard
// against that); the gaps of 50 ms leave a slow request's end the same
// margin.
func TestServerClosesIdle(t *testing.T) {
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
	res, err := Run(context.Background(), nil, srv.URL, event.BenchConfig{Model: "m", Requests: 5, Rate: 20, Warmup: -1}, nil)
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

// TestContentLength: an event stream sent with Content-Length, not
// chunked, is read to its end and the connection kept.
func TestContentLength(t *testing.T) {
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

// TestErrorStatus: a non-200 answer with a body fails the request
// with the server's message; the requests after it still succeed.
func TestErrorStatus(t *testing.T) {
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

// TestCancelMidStream: cancelling the run while a stream is open
// closes its connection (the server sees its request end) and Run returns
// the partial result.
func TestCancelMidStream(t *testing.T) {
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

// TestHTTPS: an https:// target is benchmarked through the
// caller's http.Client.
func TestHTTPS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		okStream(w)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut by Close
	srv.StartTLS()
	defer srv.Close()
	res, err := Run(context.Background(), srv.Client(), srv.URL, event.BenchConfig{Model: "m", Requests: 4, Concurrency: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 4 {
		t.Fatalf("completed %d: %+v", res.Completed, res.Errors)
	}
}

// TestDialError: a target nobody listens on fails the warm-up with
// the dial error.
func TestDialError(t *testing.T) {
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

// testRunner is a runner for srv's completions through client (nil: one
// on NewTransport), for tests that send requests one by one with do.
func testRunner(t *testing.T, client *http.Client, srv *httptest.Server, concurrency int) *runner {
	t.Helper()
	if client == nil {
		tr := NewTransport(nil, concurrency)
		t.Cleanup(tr.CloseIdleConnections)
		client = &http.Client{Transport: tr}
	}
	return &runner{cfg: event.BenchConfig{Model: "m", Concurrency: concurrency, Timeout: time.Minute}.Defaults(), client: client, url: srv.URL + "/v1/completions"}
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

// closeCounter dials TCP connections and counts those closed since
// (http.Transport closes one when its read finds the server closed it).
type closeCounter struct {
	d      net.Dialer
	closed atomic.Int64
}

func (cc *closeCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := cc.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, closed: &cc.closed}, nil
}

type countedConn struct {
	net.Conn
	once   sync.Once
	closed *atomic.Int64
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.closed.Add(1) })
	return c.Conn.Close()
}

// waitClientClosed waits until the client has closed n of the
// connections cc dialled; the test fails after a minute.
func (cc *closeCounter) waitClientClosed(t *testing.T, n int64) {
	t.Helper()
	for end := time.Now().Add(time.Minute); cc.closed.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the client closed %d connections, want %d", cc.closed.Load(), n)
		}
	}
}

// TestIdleClosedByServer: several connections go idle, the server
// closes them all (as uvicorn does after 5 s idle; here after 200 ms),
// then requests at the same concurrency all succeed on new connections,
// each sent once: the dead ones are found (by the read http.Transport
// keeps on every idle connection) before a request is written to them,
// and none is taken for a retry. The requests go out once the server's
// closes have reached the client's transport; one written in the
// microseconds between a close reaching this machine and the transport's
// read returning would fail (a POST is not sent again), which
// idleTimeout, under the server's keep-alive, keeps from happening.
func TestIdleClosedByServer(t *testing.T) {
	const c = 4
	srv := newConnServer(t, 200*time.Millisecond, func(_ int, w http.ResponseWriter, _ *http.Request) {
		time.Sleep(2 * time.Millisecond) // long enough for the c requests to overlap
		okStream(w)
	})
	var cc closeCounter
	tr := NewTransport(cc.dial, c)
	defer tr.CloseIdleConnections()
	r := testRunner(t, &http.Client{Transport: tr}, srv.Server, c)
	sendAll(t, r, 4*c, c)
	opened := srv.opened.Load()
	if opened < 2 {
		t.Fatalf("%d connections before the gap: the test needs at least two idle", opened)
	}
	srv.waitClosed(t, opened) // the gap: longer than the server's idle timeout
	cc.waitClientClosed(t, opened)
	sendAll(t, r, 4*c, c)
	if got := srv.reqs.Load(); got != 8*c {
		t.Errorf("the server saw %d requests, want %d (each sent once)", got, 8*c)
	}
	if srv.opened.Load() <= opened {
		t.Errorf("no connection dialled after the gap (%d before, %d after)", opened, srv.opened.Load())
	}
}

// TestIdleTimeLimit: a connection idle longer than the transport's limit
// (idleTimeout, here 50 ms) is closed rather than reused, even though
// the server still keeps it.
func TestIdleTimeLimit(t *testing.T) {
	srv := newConnServer(t, 0, func(_ int, w http.ResponseWriter, _ *http.Request) { okStream(w) })
	tr := NewTransport(nil, 1)
	tr.IdleConnTimeout = 50 * time.Millisecond
	defer tr.CloseIdleConnections()
	r := testRunner(t, &http.Client{Transport: tr}, srv.Server, 1)
	sendAll(t, r, 2, 1)
	if srv.opened.Load() != 1 {
		t.Fatalf("%d connections for two requests in a row, want 1", srv.opened.Load())
	}
	time.Sleep(100 * time.Millisecond) // the gap
	sendAll(t, r, 1, 1)
	if srv.opened.Load() != 2 {
		t.Errorf("%d connections, want 2: the one idle past the limit was reused", srv.opened.Load())
	}
	srv.waitClosed(t, 1) // the transport closed the old one
}

// TestNoReplayAfterWrite: a server that reads a request on a reused
// connection and closes it without answering fails that request; it is
// not sent again (a completion is not idempotent), and the next request
// goes out on a new connection.
func TestNoReplayAfterWrite(t *testing.T) {
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

// TestBasicAuth: credentials in the URL go through http.Client,
// which sends them as Basic authorisation.
func TestBasicAuth(t *testing.T) {
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
