package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// ProgressInterval is how often Run calls its progress callback (plus a
// final call when the run ends).
const ProgressInterval = 250 * time.Millisecond

// maxErrors is how many distinct failure messages a BenchResult keeps.
const maxErrors = 5

// idleTimeout is how long NewTransport's transport keeps a connection
// idle for the next request: below the 5 s after which uvicorn, which
// serves SGLang and vLLM, closes an idle keep-alive connection (its
// --timeout-keep-alive default), so that no request is written to a
// connection the server is closing at that moment. A completion request
// is a POST, which http.Transport does not send again once any of it was
// written, so such a race would fail the request. A connection the server
// closed earlier the transport finds by the read it keeps waiting on every
// idle connection (an SSH channel's EOF too), and drops.
const idleTimeout = 4 * time.Second

// tlsHandshakeTimeout bounds an https:// target's TLS handshake, as
// http.DefaultTransport does.
const tlsHandshakeTimeout = 10 * time.Second

// NewTransport returns an HTTP/1.1 transport fit for a benchmark of
// concurrency requests at a time (below 1 counts as 1). dial opens its
// connections (nil: a net.Dialer); in the cockpit it is the SSH
// connection's dialer, and the target address is the GPU host's loopback.
// It uses no proxy, not even one from the environment: a proxy cannot
// reach the host's loopback at the far end of the SSH channel, and a
// proxied benchmark would measure the proxy. It opens at most one
// connection per concurrent request (without the cap, a dial that a
// request started and stopped waiting for, served by a connection freed
// meanwhile, adds one the server then sees) and keeps each idle for the
// next request, so that none is re-dialled mid-run, for at most
// idleTimeout (4 s, under uvicorn's 5 s keep-alive). Responses are
// not compressed (a gzip layer would hold chunks back and skew ITL). It
// sets no response header timeout: a busy server may queue a request for
// long before it answers, and Run's per-request deadline
// (BenchConfig.Timeout) bounds the headers and the stream together.
func NewTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error), concurrency int) *http.Transport {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return &http.Transport{
		Proxy:               nil, // none: see above
		DialContext:         dial,
		MaxConnsPerHost:     max(concurrency, 1),
		MaxIdleConnsPerHost: max(concurrency, 1),
		IdleConnTimeout:     idleTimeout,
		TLSHandshakeTimeout: tlsHandshakeTimeout,
		DisableCompression:  true,
	}
}

// Run benchmarks the OpenAI-compatible server at baseURL
// ("http://127.0.0.1:30000", with or without a trailing /v1) with cfg
// (zero fields take BenchConfig.Defaults) through client (nil: a new one from
// NewTransport). It resolves an empty model with GET /v1/models, sends
// the warm-up requests one at a time, then the measured ones, and calls
// progress (when not nil) from one goroutine every ProgressInterval and
// once at the end; BenchProgress.ID is left empty for the caller to fill.
//
// It returns an error, and no BenchResult, when cfg is not valid, the URL is
// not http(s), the model cannot be listed, the prompt file cannot be read,
// or a warm-up request fails (the server cannot serve this benchmark).
// Failed measured requests do not fail the run: they are counted in the
// BenchResult. A stream that ends without [DONE] still succeeds when the server
// sent finish_reason or usage (both follow the last token); without either
// it counts as a dropped connection. A request whose finish_reason is not
// one of a complete generation ("length", "stop", "tool_calls",
// "function_call", "content_filter") fails: "abort" is a server that gave
// up on it. A request that ends normally with fewer tokens than OutputLen
// (finish_reason "stop" on a stop string, or "length" when the server
// clipped max_tokens to its context) succeeds, as in
// sglang.bench_serving, and its tokens are counted as the server reports
// them (usage), so throughput is never inflated. When ctx ends Run stops
// sending, abandons the requests in flight (they are not counted) and
// returns the partial BenchResult with Cancelled set, and a nil error.
//
// Every request, GET /v1/models included, goes through client: with
// NewTransport's transport (the nil client's) on keep-alive connections,
// at most one per concurrent request. A request that was written is
// never sent again (http.Transport replays a POST only when none of it
// went out, on a connection that had served a request before). When
// client is nil Run closes its transport's idle connections as it
// returns; it leaves a caller's client as it is.
func Run(ctx context.Context, client *http.Client, baseURL string, cfg event.BenchConfig, progress func(event.BenchProgress)) (*event.BenchResult, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, err := apiBase(baseURL)
	if err != nil {
		return nil, err
	}
	if client == nil {
		tr := NewTransport(nil, cfg.Concurrency)
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	r := &runner{cfg: cfg, client: client, progress: progress}
	if cfg.Endpoint == event.BenchChat {
		r.url = base + "/chat/completions"
	} else {
		r.url = base + "/completions"
	}
	if cfg.PromptFile != "" {
		if r.prompts, err = readPrompts(cfg.PromptFile); err != nil {
			return nil, err
		}
	}
	if r.cfg.Model == "" {
		if r.cfg.Model, err = FirstModel(ctx, client, base); err != nil {
			return nil, err
		}
	}
	res := &event.BenchResult{Config: r.cfg, Target: strings.TrimSuffix(base, "/v1"), Started: time.Now()}
	for i := range cfg.WarmupRequests() {
		r.report(event.BenchProgress{Warmup: true, Total: cfg.Requests, Limit: cfg.Duration})
		body, prompt := r.body(i, true)
		q := r.do(ctx, body, prompt, nil)
		if ctx.Err() != nil {
			res.Cancelled = true
			r.report(event.BenchProgress{Total: cfg.Requests, Limit: cfg.Duration})
			return res, nil
		}
		if q.Err != "" {
			return nil, fmt.Errorf("warm-up request failed (check the model, lengths and endpoint): %s", q.Err)
		}
	}
	r.measure(ctx, res)
	return res, nil
}

// apiBase turns a server URL into its /v1 base, without a trailing slash.
func apiBase(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("server URL %q: want http://HOST:PORT", raw)
	}
	u.RawQuery, u.Fragment = "", ""
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, "/v1") {
		p += "/v1"
	}
	u.Path = p
	return u.String(), nil
}

// FirstModel returns the first model id of GET {base}/models (base is a
// /v1 URL). The id must be printable text (it is shown and journaled).
func FirstModel(ctx context.Context, client *http.Client, base string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("list models: %s", sanitize.String(err.Error()))
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("list models: %s", httpMessage(resp.StatusCode, b))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return "", fmt.Errorf("list models: not a model list: %s", sanitize.String(err.Error()))
	}
	if len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", errors.New("list models: the server lists no model (pass one)")
	}
	id := list.Data[0].ID
	if sanitize.String(id) != id {
		return "", fmt.Errorf("list models: model id %s has control characters (pass one)", sanitize.String(strconv.Quote(id)))
	}
	return id, nil
}

// readPrompts reads a prompt file: one prompt a line, blank lines skipped.
func readPrompts(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("prompt file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256<<20+1))
	if err != nil {
		return nil, fmt.Errorf("prompt file: %w", err)
	}
	if len(b) > 256<<20 {
		return nil, fmt.Errorf("prompt file %s: larger than 256 MiB", path)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("prompt file %s: no prompts (one a line)", path)
	}
	return out, nil
}

type runner struct {
	cfg      event.BenchConfig
	client   *http.Client
	url      string
	prompts  []string
	progress func(event.BenchProgress)

	// notAfter, when set, is the end of a duration-bound run: a request
	// released just before it that would be sent after it is not sent.
	notAfter time.Time

	// live counters of the measured part, for progress
	done, failed, inFlight, outTokens atomic.Int64
}

func (r *runner) report(p event.BenchProgress) {
	if r.progress != nil {
		r.progress(p)
	}
}

// words are the random chat prompts' vocabulary: common words that most
// tokenizers keep as one token each.
var words = strings.Fields("the of and to in is was for on with as by at from that this it be are or an not but have had has were which one all can will their there been if more when so out up into no only time other new some could them these than then now its about over use two may first any like our also made")

// completionRequest is the JSON body of an OpenAI-compatible completion
// (/v1/completions) or chat completion (/v1/chat/completions) request.
type completionRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages,omitempty"` // chat
	Prompt        any           `json:"prompt,omitempty"`   // completions: a string, or token ids ([]int)
	MaxTokens     int           `json:"max_tokens"`
	IgnoreEOS     bool          `json:"ignore_eos"`
	Temperature   float64       `json:"temperature"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// body returns request i's JSON body and the prompt length in tokens as
// sent (0 when the server's tokenizer decides it). Prompts are a function
// of (Seed, i), so a run's requests are the same however they are
// scheduled; warm-up prompts come from their own stream.
func (r *runner) body(i int, warm bool) ([]byte, int) {
	stream := uint64(i)
	if warm {
		stream |= 1 << 62
	}
	var src rand.PCG // on the stack, with rng: no allocation per request
	src.Seed(r.cfg.Seed, stream)
	rng := rand.New(&src)
	req := completionRequest{Model: r.cfg.Model, MaxTokens: r.cfg.OutputLen, IgnoreEOS: true, Stream: true,
		StreamOptions: streamOptions{IncludeUsage: true}}
	prompt := 0
	var text string
	switch {
	case r.prompts != nil:
		text = r.prompts[i%len(r.prompts)]
	case r.cfg.Endpoint == event.BenchChat:
		var sb strings.Builder
		for k := range r.cfg.InputLen {
			if k > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[rng.IntN(len(words))])
		}
		text = sb.String()
	}
	switch {
	case r.cfg.Endpoint == event.BenchChat:
		req.Messages = []chatMessage{{Role: "user", Content: text}}
	case r.prompts != nil:
		req.Prompt = text
	default:
		// Token ids well inside every common vocabulary and clear of the
		// low ids some tokenizers reserve for special tokens.
		ids := make([]int, r.cfg.InputLen)
		for k := range ids {
			ids[k] = 100 + rng.IntN(30000)
		}
		req.Prompt = ids
		prompt = r.cfg.InputLen
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic("bench: request body: " + err.Error()) // strings, ints and bools always marshal
	}
	return b, prompt
}

// result is one request's outcome with its ITL gaps (ms).
type result struct {
	event.BenchRequest
	itl    []float64
	sent   time.Time // when the request went out
	end    time.Time
	chunks int  // content chunks received
	unsent bool // not sent: the run's duration ended first (runner.notAfter)
}

var (
	readerPool  = sync.Pool{New: func() any { return NewStreamReader(nil) }}
	scratchPool = sync.Pool{New: func() any { return new([]float64) }} // for a request's ITL median
)

// do sends one request and reads its stream. A request abandoned because
// ctx ended has Err set and ctx.Err() tells why; live, when set, counts
// content chunks as they arrive.
func (r *runner) do(ctx context.Context, body []byte, prompt int, live *atomic.Int64) result {
	t0 := time.Now()
	q := result{BenchRequest: event.BenchRequest{PromptTokens: prompt}, sent: t0}
	if !r.notAfter.IsZero() && t0.After(r.notAfter) {
		q.unsent = true
		return q
	}
	deadline := t0.Add(r.cfg.Timeout)
	fail := func(msg string) result {
		q.end = time.Now()
		if ctx.Err() == nil && !q.end.Before(deadline) {
			msg = "timeout after " + r.cfg.Timeout.String()
		}
		q.Err = clip(sanitize.String(msg))
		return q
	}
	if ctx.Err() != nil {
		return fail(ctx.Err().Error())
	}
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return fail(err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Accept-Encoding", "identity") // no gzip buffering chunks
	resp, err := r.client.Do(req)
	if err != nil {
		return fail(errText(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return fail(httpMessage(resp.StatusCode, b))
	}
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "event-stream") {
		return fail(fmt.Sprintf("response is %q, not an event stream", ct))
	}
	sr := readerPool.Get().(*StreamReader)
	defer readerPool.Put(sr)
	sr.Reset(resp.Body)
	defer sr.Reset(nil)
	var (
		c        Chunk
		first    time.Time
		last     time.Time
		chunks   int
		usage    Usage
		finished bool
		reason   string // the last finish_reason sent, "" when none
	)
	for {
		err := sr.Next(&c)
		now := time.Now()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return fail(streamErrText(err))
			}
			break
		}
		if c.Done {
			continue
		}
		if c.Content() {
			if chunks == 0 {
				first = now
				// one gap per further token: no growing on the way
				q.itl = make([]float64, 0, min(max(r.cfg.OutputLen-1, 1), 4096))
			} else {
				q.itl = append(q.itl, ms(now.Sub(last)))
			}
			last = now
			chunks++
			q.chunks = chunks
			if live != nil {
				live.Add(1)
			}
		}
		if c.Usage.OK {
			usage = c.Usage
		}
		if c.Finish != nil {
			finished = true
			if len(c.Finish) > 0 {
				reason = string(c.Finish)
			}
		}
	}
	q.end = time.Now()
	// A stream that ends without [DONE] is complete when the server said
	// so (finish_reason or usage, which follow the last token); without
	// any of them the connection was cut.
	if !sr.SawDone() && !finished && !usage.OK {
		return fail("stream ended before finish_reason, usage or [DONE] (connection dropped?)")
	}
	if reason != "" && !completeReason(reason) {
		return fail(fmt.Sprintf("the server ended the request with finish_reason %s after %d content chunks", strconv.Quote(clipRunes(reason, 40)), chunks))
	}
	if chunks == 0 {
		return fail("the stream carried no generated text")
	}
	// Read the body to its end (what follows [DONE]): http.Transport keeps
	// the connection for the next request only when the body was read to
	// EOF before Close.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	q.OutputTokens = chunks
	if usage.OK {
		q.Usage = true
		q.PromptTokens, q.OutputTokens = usage.PromptTokens, usage.CompletionTokens
	}
	q.TTFT = ms(first.Sub(t0))
	q.E2E = ms(q.end.Sub(t0))
	if q.OutputTokens > 1 {
		q.TPOT = (q.E2E - q.TTFT) / float64(q.OutputTokens-1)
	}
	if len(q.itl) > 0 {
		sp := scratchPool.Get().(*[]float64)
		s := append((*sp)[:0], q.itl...)
		slices.Sort(s)
		q.ITLMedian = Percentile(s, 50)
		*sp = s
		scratchPool.Put(sp)
	}
	return q
}

// completeReason says a finish_reason ends a generation the way the
// model or the request asked: "length" (max_tokens, or the context window
// when the server clipped it), "stop" (a stop string or token: with
// ignore_eos the server still honours stop strings), and the calls and
// filter of the OpenAI API. Anything else ("abort", "error", a reason this
// client does not know) is the server giving up on the request, which a
// benchmark must count as failed, not as a short success.
func completeReason(r string) bool {
	switch r {
	case "length", "stop", "tool_calls", "function_call", "content_filter":
		return true
	}
	return false
}

// clipRunes cuts s to n runes.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// clip cuts a failure message to 300 runes.
func clip(s string) string {
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}

// errText is a transport error without Go's `Post "URL": ` wrapping.
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

func streamErrText(err error) string {
	var ae *APIError
	var ce *ChunkError
	if errors.As(err, &ae) || errors.As(err, &ce) || errors.Is(err, ErrEventTooLong) {
		return err.Error()
	}
	return "stream broken: " + errText(err)
}

// httpMessage is "HTTP 503: The server is not ready.": the status and the
// error message of an OpenAI-style error body ({"message"} or
// {"error": {"message"}}), else the body's first line.
func httpMessage(code int, body []byte) string {
	var e struct {
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Error   json.RawMessage `json:"error"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil {
		msg = e.Message
		if msg == "" && len(e.Error) > 0 {
			var inner struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(e.Error, &inner) == nil {
				msg = inner.Message
			} else {
				json.Unmarshal(e.Error, &msg)
			}
		}
		if msg == "" && len(e.Detail) > 0 {
			if json.Unmarshal(e.Detail, &msg) != nil {
				msg = string(e.Detail)
			}
		}
	}
	if msg == "" {
		msg, _, _ = strings.Cut(strings.TrimSpace(string(body)), "\n")
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	return fmt.Sprintf("HTTP %d: %s", code, clip(sanitize.String(msg)))
}
