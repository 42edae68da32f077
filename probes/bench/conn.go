package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// connPool is the runner's own HTTP/1.1 client for a plain http:// target:
// each request in flight takes a keep-alive connection from idle (or
// dials one), writes a request whose request line and headers were
// serialised once per run, and reads the response with
// http.ReadResponse, so net/http still parses the status, the headers and
// the chunked or Content-Length framing. What it leaves out is
// http.Transport's per-request machinery: the read and write goroutines
// of every connection and the hand-offs between them and the caller, the
// URL parsing and header maps of a new http.Request, all of which cost
// more CPU per request than the benchmark's own work against a fast
// server. Targets it does not handle (https, a proxy, a RoundTripper
// that is not a plain *http.Transport, credentials in the URL) stay on
// the http.Client.
//
// Idle connections are reused last in, first out (as http.Transport
// does), so a low request rate keeps reusing the same few and the rest
// age out. One idle for longer than maxIdleTime is closed, not reused,
// and one the server has closed or reset meanwhile is found by a
// non-blocking peek at its socket before a request is written to it
// (pconn.alive), which is what http.Transport learns from the read it
// keeps waiting on every idle connection, a goroutine per connection
// this pool does without.
type connPool struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	addr        string        // host:port to dial
	head        []byte        // "POST /v1/completions HTTP/1.1\r\nHost: …\r\n…Content-Length: "
	req         *http.Request // for http.ReadResponse (it reads only the method)
	maxIdle     int           // idle connections kept, Concurrency
	maxIdleTime time.Duration // idleTimeout; shorter in tests

	mu     sync.Mutex
	idle   []*pconn // idle connections, oldest first (pconn.idleAt ascending)
	closed bool     // close was called: released connections are closed
}

// idleTimeout is how long a connection may stay idle and still carry a
// request: below the 5 s after which uvicorn, which serves SGLang and
// vLLM, closes an idle keep-alive connection (its --timeout-keep-alive
// default), so that no request is written to a connection the server is
// closing at that moment, which the liveness check cannot see coming.
// Over an SSH channel, where there is no socket to check, it is the only
// guard against reusing a connection the server closed.
const idleTimeout = 4 * time.Second

// maxResponseHeaderBytes bounds a response's status line and headers, as
// http.Transport's default MaxResponseHeaderBytes does.
const maxResponseHeaderBytes = 10 << 20

// errHeaderTooLong fails a response whose headers exceed maxResponseHeaderBytes.
var errHeaderTooLong = errors.New("server response headers exceeded 10 MiB")

// pastDeadline is a deadline already over: setting it ends a connection's
// blocked read or write at once.
var pastDeadline = time.Unix(1, 0)

// newConnPool returns the pool for requests to endpoint (an absolute URL)
// through client, or nil when the request must go through client: the URL
// is not http://, carries credentials (user:password@, which http.Client
// sends as Basic authorisation), client has a Timeout or a cookie Jar,
// its Transport is not an *http.Transport (nil is http.DefaultTransport),
// or that transport would use a proxy for endpoint, disables keep-alives,
// dials with the deprecated Dial, or speaks unencrypted HTTP/2. It dials with the
// transport's DialContext (a zero net.Dialer when nil), as the transport
// would.
func newConnPool(client *http.Client, endpoint string, concurrency int) *connPool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || client.Timeout != 0 || client.Jar != nil {
		return nil
	}
	rt := client.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	tr, ok := rt.(*http.Transport)
	if !ok || tr.DisableKeepAlives || (tr.Dial != nil && tr.DialContext == nil) ||
		(tr.Protocols != nil && tr.Protocols.UnencryptedHTTP2()) {
		return nil
	}
	req, err := http.NewRequest(http.MethodPost, endpoint, nil)
	if err != nil {
		return nil
	}
	if tr.Proxy != nil {
		if p, err := tr.Proxy(req); err != nil || p != nil {
			return nil
		}
	}
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	var head bytes.Buffer
	head.WriteString("POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	http.Header{
		"User-Agent":      {"Go-http-client/1.1"}, // what http.Transport sends
		"Content-Type":    {"application/json"},
		"Accept":          {"text/event-stream"},
		"Accept-Encoding": {"identity"}, // no gzip buffering chunks
	}.Write(&head)
	head.WriteString("Content-Length: ")
	return &connPool{
		dial:        dial,
		addr:        net.JoinHostPort(u.Hostname(), port),
		head:        head.Bytes(),
		req:         req,
		maxIdle:     max(concurrency, 1),
		maxIdleTime: idleTimeout,
	}
}

// pconn is one of the pool's connections.
type pconn struct {
	c       net.Conn
	peek    *peeker     // c's socket, for alive; nil when c has none (an SSH channel)
	lim     limitReader // c, with a byte budget while headers are read
	br      *bufio.Reader
	bw      *bufio.Writer // writes to connWriter(pc), which counts written
	written int64         // bytes of the current request c accepted
	reused  bool          // it served a request before
	idleAt  time.Time     // when it was last released to the pool
	cut     func()        // ends a blocked read or write (context.AfterFunc)
	stop    func() bool
	cancel  context.CancelFunc // of the request's deadline context, when c has no deadlines
}

// connWriter is a pconn's connection, counting the bytes it accepts.
type connWriter pconn

func (w *connWriter) Write(p []byte) (int, error) {
	n, err := w.c.Write(p)
	w.written += int64(n)
	return n, err
}

// alive says whether pc, idle since its last response, may carry another
// request: its socket is neither at EOF nor reset, and holds no bytes that
// no request asked for. A connection without a socket (an SSH channel) is
// taken as alive.
func (pc *pconn) alive() bool {
	return pc.peek == nil || pc.peek.alive()
}

// limitReader reads r until its budget n is spent, then fails with
// errHeaderTooLong.
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeaderTooLong
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// get returns the most recently used idle connection that is still alive
// (closing those idle too long or found dead), or, with none or when
// fresh, dials a new one (by deadline).
func (p *connPool) get(ctx context.Context, deadline time.Time, fresh bool) (*pconn, error) {
	if !fresh {
		for pc := p.takeIdle(); pc != nil; pc = p.takeIdle() {
			if pc.alive() {
				return pc, nil
			}
			pc.c.Close()
		}
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := p.dial(dctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	pc := &pconn{c: c, peek: newPeeker(c)}
	pc.lim.r = c
	pc.br = bufio.NewReaderSize(&pc.lim, 4<<10)
	pc.bw = bufio.NewWriterSize((*connWriter)(pc), 4<<10)
	pc.cut = func() {
		if c.SetDeadline(pastDeadline) != nil {
			c.Close() // no deadlines (an SSH channel): only closing ends a read
		}
	}
	return pc, nil
}

// takeIdle removes and returns the most recently idle connection, nil
// when there is none, and closes those idle longer than maxIdleTime.
func (p *connPool) takeIdle() *pconn {
	now := time.Now()
	var stale []*pconn
	p.mu.Lock()
	n := 0 // idle is oldest first: those idle too long are its head
	for n < len(p.idle) && now.Sub(p.idle[n].idleAt) > p.maxIdleTime {
		n++
	}
	if n > 0 {
		stale = append(stale, p.idle[:n]...)
		p.idle = append(p.idle[:0], p.idle[n:]...)
		clear(p.idle[len(p.idle):cap(p.idle)])
	}
	var pc *pconn
	if k := len(p.idle) - 1; k >= 0 {
		pc = p.idle[k]
		p.idle[k] = nil
		p.idle = p.idle[:k]
	}
	p.mu.Unlock()
	for _, s := range stale {
		s.c.Close()
	}
	return pc
}

// roundTrip sends a request with body and reads the response's status
// and headers on a connection of the pool. Until release, ctx's end or
// deadline ends any blocked read or write on it.
//
// A request is sent a second time, on a newly dialled connection, only
// when writing it to a reused connection failed with the connection's end
// (EOF, reset, broken pipe) before the connection accepted any byte of it:
// the server cannot have seen it. A request that was written (all of it,
// or part) and then failed is a failed request, never sent again, since a
// completion request is not idempotent (http.Transport does not replay a
// POST it has written either). A connection the server closed while it
// was idle is not written to at all: get finds it dead first (alive),
// and drops those idle for longer than idleTimeout, before the server's
// own keep-alive timeout can close them under a request.
func (p *connPool) roundTrip(ctx context.Context, deadline time.Time, body []byte) (*pconn, *http.Response, error) {
	for attempt := 0; ; attempt++ {
		pc, err := p.get(ctx, deadline, attempt > 0)
		if err != nil {
			return nil, nil, err
		}
		p.arm(ctx, pc, deadline)
		pc.written = 0
		pc.bw.Write(p.head)
		pc.bw.Write(strconv.AppendInt(pc.bw.AvailableBuffer(), int64(len(body)), 10))
		pc.bw.WriteString("\r\n\r\n")
		pc.bw.Write(body)
		if err := pc.bw.Flush(); err != nil {
			retry := pc.reused && attempt == 0 && pc.written == 0 && closedIdle(err) &&
				ctx.Err() == nil && time.Now().Before(deadline)
			p.release(pc, false)
			if retry {
				continue
			}
			return nil, nil, err
		}
		pc.lim.n = maxResponseHeaderBytes
		resp, err := http.ReadResponse(pc.br, p.req)
		pc.lim.n = math.MaxInt64
		if err != nil {
			p.release(pc, false)
			return nil, nil, err
		}
		return pc, resp, nil
	}
}

// arm makes ctx's end, or deadline, end any blocked read or write on pc
// until release: by pc's own deadline, or, on a connection without
// deadlines (an SSH channel, whose SetDeadline fails), by closing it when
// a context with that deadline ends.
func (p *connPool) arm(ctx context.Context, pc *pconn, deadline time.Time) {
	if pc.c.SetDeadline(deadline) == nil {
		pc.stop = context.AfterFunc(ctx, pc.cut)
		return
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	pc.stop = context.AfterFunc(dctx, pc.cut)
	pc.cancel = cancel
}

// closedIdle says err is what writing a request to a connection the
// server has closed gives.
func closedIdle(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// release gives pc back to the pool when reuse says its response was read
// to the end and the connection may carry another (and no deadline or
// cancellation cut it meanwhile, and the pool is not closed and has room),
// else closes it.
func (p *connPool) release(pc *pconn, reuse bool) {
	if !pc.stop() || pc.br.Buffered() > 0 {
		reuse = false // cut by ctx, or bytes no request asked for
	}
	if pc.cancel != nil {
		pc.cancel()
		pc.cancel = nil
	}
	if reuse {
		pc.reused = true
		pc.idleAt = time.Now()
		p.mu.Lock()
		if !p.closed && len(p.idle) < p.maxIdle {
			p.idle = append(p.idle, pc)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	pc.c.Close()
}

// close closes the idle connections, and those released after it.
func (p *connPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, pc := range idle {
		pc.c.Close()
	}
}
