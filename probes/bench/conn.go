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
// that is not a plain *http.Transport) stay on the http.Client.
type connPool struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	addr string        // host:port to dial
	head []byte        // "POST /v1/completions HTTP/1.1\r\nHost: …\r\n…Content-Length: "
	req  *http.Request // for http.ReadResponse (it reads only the method)
	idle chan *pconn   // idle connections, at most Concurrency
}

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
// is not http://, client has a Timeout or a cookie Jar, its Transport is
// not an *http.Transport (nil is http.DefaultTransport), or that transport
// would use a proxy for endpoint, disables keep-alives, dials with the
// deprecated Dial, or speaks unencrypted HTTP/2. It dials with the
// transport's DialContext (a zero net.Dialer when nil), as the transport
// would.
func newConnPool(client *http.Client, endpoint string, concurrency int) *connPool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" || u.Host == "" || client.Timeout != 0 || client.Jar != nil {
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
		dial: dial,
		addr: net.JoinHostPort(u.Hostname(), port),
		head: head.Bytes(),
		req:  req,
		idle: make(chan *pconn, max(concurrency, 1)),
	}
}

// pconn is one of the pool's connections.
type pconn struct {
	c      net.Conn
	lim    limitReader // c, with a byte budget while headers are read
	br     *bufio.Reader
	bw     *bufio.Writer
	reused bool   // it served a request before
	cut    func() // ends a blocked read or write (context.AfterFunc)
	stop   func() bool
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

// get returns an idle connection or dials a new one (by deadline).
func (p *connPool) get(ctx context.Context, deadline time.Time) (*pconn, error) {
	select {
	case pc := <-p.idle:
		return pc, nil
	default:
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := p.dial(dctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	pc := &pconn{c: c}
	pc.lim.r = c
	pc.br = bufio.NewReaderSize(&pc.lim, 4<<10)
	pc.bw = bufio.NewWriterSize(c, 4<<10)
	pc.cut = func() { c.SetDeadline(pastDeadline) }
	return pc, nil
}

// roundTrip sends a request with body and reads the response's status
// and headers on a connection of the pool. Until release, ctx's end or
// deadline ends any blocked read or write on it. A request that fails on
// a reused connection with the connection's end (EOF, reset, broken pipe)
// before any byte of a response came is sent once more on a new
// connection: the server closed that one while it was idle (uvicorn,
// which serves SGLang and vLLM, does after 5 s), which http.Transport
// notices with a read it keeps waiting on every idle connection, a cost
// per request this pool does not pay.
func (p *connPool) roundTrip(ctx context.Context, deadline time.Time, body []byte) (*pconn, *http.Response, error) {
	for attempt := 0; ; attempt++ {
		pc, err := p.get(ctx, deadline)
		if err != nil {
			return nil, nil, err
		}
		pc.c.SetDeadline(deadline)
		pc.stop = context.AfterFunc(ctx, pc.cut)
		pc.bw.Write(p.head)
		pc.bw.Write(strconv.AppendInt(pc.bw.AvailableBuffer(), int64(len(body)), 10))
		pc.bw.WriteString("\r\n\r\n")
		pc.bw.Write(body)
		err = pc.bw.Flush()
		var resp *http.Response
		nothing := true // nothing of a response came
		if err == nil {
			pc.lim.n = maxResponseHeaderBytes
			resp, err = http.ReadResponse(pc.br, p.req)
			nothing = pc.lim.n == maxResponseHeaderBytes
			pc.lim.n = math.MaxInt64
		}
		if err == nil {
			return pc, resp, nil
		}
		retry := pc.reused && attempt == 0 && nothing && closedIdle(err) && ctx.Err() == nil && time.Now().Before(deadline)
		p.release(pc, false)
		if !retry {
			return nil, nil, err
		}
	}
}

// closedIdle says err is what writing a request to, or reading a response
// from, a connection the server has closed gives (http.ReadResponse
// reports an end of the connection before any byte as
// io.ErrUnexpectedEOF).
func closedIdle(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// release gives pc back to the pool when reuse says its response was read
// to the end and the connection may carry another (and no deadline or
// cancellation cut it meanwhile), else closes it.
func (p *connPool) release(pc *pconn, reuse bool) {
	if !pc.stop() || pc.br.Buffered() > 0 {
		reuse = false // cut by ctx, or bytes no request asked for
	}
	if reuse {
		pc.reused = true
		select {
		case p.idle <- pc:
			return
		default:
		}
	}
	pc.c.Close()
}

// close closes the idle connections.
func (p *connPool) close() {
	if p == nil {
		return
	}
	for {
		select {
		case pc := <-p.idle:
			pc.c.Close()
		default:
			return
		}
	}
}
