package bench

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
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
	res, err := Run(context.Background(), &http.Client{Transport: tr}, srv.URL, Config{Model: "m", Requests: 60, Concurrency: 4}, nil)
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
	res, err := Run(context.Background(), nil, srv.URL, Config{Model: "m", Requests: 10, Concurrency: 2}, nil)
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
	res, err := Run(context.Background(), nil, srv.URL, Config{Model: "m", Requests: 5, Concurrency: 1}, nil)
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
// and is sent again once on a new one, without failing.
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
	res, err := Run(context.Background(), nil, srv.URL, Config{Model: "m", Requests: 5, Rate: 50}, nil)
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
	res, err := Run(context.Background(), nil, srv.URL, Config{Model: "m", Requests: 6, Concurrency: 1}, nil)
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
	res, err := Run(context.Background(), nil, srv.URL, Config{Model: "m", Requests: 6, Concurrency: 1}, nil)
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
	done := make(chan *Result, 1)
	go func() {
		res, err := Run(ctx, nil, srv.URL, Config{Model: "m", Requests: 5, Concurrency: 1, Timeout: time.Hour}, nil)
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
	res, err := Run(context.Background(), srv.Client(), srv.URL, Config{Model: "m", Requests: 4, Concurrency: 2}, nil)
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
	_, err = Run(context.Background(), nil, "http://"+addr, Config{Model: "m"}, nil)
	if want := "connect: connection refused"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one that says %q", err, want)
	}
}
