package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer is an OpenAI-style streaming server whose behaviour each
// test sets; it records the bodies it received.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []map[string]any
	inFlight atomic.Int64
	maxIn    atomic.Int64
	models   string // GET /v1/models body
	// stream writes the response for request n (0-based, warm-up
	// included); nil streams 4 content chunks, usage and [DONE].
	stream func(n int, w http.ResponseWriter, f http.Flusher)
	n      atomic.Int64
}

func newFake(t *testing.T) *fakeServer {
	s := &fakeServer{models: `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, s.models) })
	handle := func(w http.ResponseWriter, r *http.Request) {
		in := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			m := s.maxIn.Load()
			if in <= m || s.maxIn.CompareAndSwap(m, in) {
				break
			}
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.mu.Unlock()
		n := int(s.n.Add(1) - 1)
		f := w.(http.Flusher)
		if s.stream == nil {
			defaultStream(w, f, 4, true)
			return
		}
		s.stream(n, w, f)
	}
	mux.HandleFunc("POST /v1/completions", handle)
	mux.HandleFunc("POST /v1/chat/completions", handle)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// defaultStream writes a role-only chunk, k content chunks, a finish chunk,
// a usage chunk (k completion tokens, when usage) and [DONE].
func defaultStream(w http.ResponseWriter, f http.Flusher, k int, usage bool) {
	sseHeader(w)
	fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`+"\n\n")
	for i := range k {
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"text":" t%d","finish_reason":null}],"usage":null}`+"\n\n", i)
		f.Flush()
	}
	fmt.Fprint(w, `data: {"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":null}`+"\n\n")
	if usage {
		fmt.Fprintf(w, `data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", k, k+7)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func run(t *testing.T, s *fakeServer, cfg event.BenchConfig) *event.BenchResult {
	t.Helper()
	res, err := Run(context.Background(), nil, s.URL, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunCountsAndRequestBody(t *testing.T) {
	s := newFake(t)
	res := run(t, s, event.BenchConfig{Requests: 6, Concurrency: 2, InputLen: 5, OutputLen: 4, Warmup: 2})
	if res.Completed != 6 || res.Failed != 0 || len(res.Requests) != 6 {
		t.Fatalf("completed %d failed %d requests %d: %+v", res.Completed, res.Failed, len(res.Requests), res.Errors)
	}
	if got := s.n.Load(); got != 8 {
		t.Errorf("%d requests reached the server, want 2 warm-up + 6", got)
	}
	if res.Config.Model != "fake-model" || res.Config.Endpoint != event.BenchCompletions || res.Config.Seed != 1 {
		t.Errorf("config %+v: want the model from /v1/models and defaults", res.Config)
	}
	if res.OutputTokens != 24 || res.InputTokens != 42 {
		t.Errorf("tokens in %d out %d, want 42 (usage) and 24", res.InputTokens, res.OutputTokens)
	}
	// ITL: 3 gaps per request (the role-only chunk is not content).
	if res.ITL.N != 18 || res.TTFT.N != 6 || res.TPOT.N != 6 || res.E2E.N != 6 {
		t.Errorf("dist sizes ttft %d itl %d tpot %d e2e %d", res.TTFT.N, res.ITL.N, res.TPOT.N, res.E2E.N)
	}
	for _, q := range res.Requests {
		if !q.Usage || q.OutputTokens != 4 || q.TTFT <= 0 || q.TTFT > q.E2E || q.Err != "" {
			t.Errorf("request %+v", q)
		}
		if want := (q.E2E - q.TTFT) / 3; q.TPOT != want {
			t.Errorf("TPOT %v, want (e2e-ttft)/(4-1) = %v", q.TPOT, want)
		}
	}
	if res.Duration <= 0 || res.OutputTokPerSec != 24/res.Duration.Seconds() || res.ReqPerSec != 6/res.Duration.Seconds() ||
		res.TotalTokPerSec != 66/res.Duration.Seconds() {
		t.Errorf("rates %v %v %v over %v", res.ReqPerSec, res.OutputTokPerSec, res.TotalTokPerSec, res.Duration)
	}
	body := s.bodies[len(s.bodies)-1]
	prompt, _ := body["prompt"].([]any)
	so, _ := body["stream_options"].(map[string]any)
	if len(prompt) != 5 || body["max_tokens"] != 4.0 || body["ignore_eos"] != true || body["stream"] != true ||
		so["include_usage"] != true || body["model"] != "fake-model" {
		t.Errorf("request body %v", body)
	}
	if s.maxIn.Load() > 2 {
		t.Errorf("%d requests in flight at once, concurrency 2", s.maxIn.Load())
	}
}

// TestRunWithoutUsage: tokens are counted one per content chunk, and the
// prompt length is the number of ids sent.
func TestRunWithoutUsage(t *testing.T) {
	s := newFake(t)
	s.stream = func(_ int, w http.ResponseWriter, f http.Flusher) { defaultStream(w, f, 3, false) }
	res := run(t, s, event.BenchConfig{Requests: 2, InputLen: 9, OutputLen: 3})
	if res.OutputTokens != 6 || res.InputTokens != 18 || res.Requests[0].Usage {
		t.Errorf("tokens in %d out %d usage %v, want 18, 6, false", res.InputTokens, res.OutputTokens, res.Requests[0].Usage)
	}
}

// TestRunTTFTSkipsRoleChunk: a role-only chunk sent at once, content
// 60 ms later: TTFT counts to the content.
func TestRunTTFTSkipsRoleChunk(t *testing.T) {
	s := newFake(t)
	s.stream = func(_ int, w http.ResponseWriter, f http.Flusher) {
		sseHeader(w)
		fmt.Fprint(w, `data: {"choices":[{"delta":{"role":"assistant"}}]}`+"\n\n")
		f.Flush()
		time.Sleep(60 * time.Millisecond)
		fmt.Fprint(w, `data: {"choices":[{"delta":{"content":"a"}}]}`+"\n\n"+`data: {"choices":[{"delta":{"content":"b"},"finish_reason":"stop"}]}`+"\n\n")
	}
	res := run(t, s, event.BenchConfig{Endpoint: event.BenchChat, Requests: 1, Warmup: -1})
	if q := res.Requests[0]; q.TTFT < 60 || q.OutputTokens != 2 || q.Err != "" {
		t.Errorf("request %+v: want TTFT ≥ 60 ms (the first content chunk), 2 tokens", q)
	}
	if s.n.Load() != 1 {
		t.Errorf("warm-up -1 sent %d requests", s.n.Load())
	}
	msgs, _ := s.bodies[0]["messages"].([]any)
	m0, _ := msgs[0].(map[string]any)
	if c, _ := m0["content"].(string); len(strings.Fields(c)) != event.BenchDefaultInputLen {
		t.Errorf("chat prompt %q: want %d words", c, event.BenchDefaultInputLen)
	}
}

func TestRunFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream func(w http.ResponseWriter, f http.Flusher)
		want   string
	}{
		{"HTTP error with a message", func(w http.ResponseWriter, _ http.Flusher) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			io.WriteString(w, `{"object":"error","message":"The server is not ready.","type":"ServiceUnavailableError","code":503}`)
		}, "HTTP 503: The server is not ready."},
		{"HTTP error, nested message with an escape", func(w http.ResponseWriter, _ http.Flusher) {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"bad \u001b[2J prompt"}}`)
		}, "HTTP 400: bad  prompt"}, // the escape sequence is removed
		{"in-stream error", func(w http.ResponseWriter, f http.Flusher) {
			sseHeader(w)
			io.WriteString(w, `data: {"choices":[{"text":"a"}]}`+"\n\n"+`data: {"error":{"message":"CUDA out of memory","code":500}}`+"\n\n")
		}, "server error 500: CUDA out of memory"},
		{"dropped connection", func(w http.ResponseWriter, f http.Flusher) {
			sseHeader(w)
			io.WriteString(w, `data: {"choices":[{"text":"a"}]}`+"\n\n")
			f.Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, "stream broken: unexpected EOF"},
		{"clean end without finish", func(w http.ResponseWriter, f http.Flusher) {
			sseHeader(w)
			io.WriteString(w, `data: {"choices":[{"text":"a"}]}`+"\n\n")
		}, "stream ended before finish_reason, usage or [DONE] (connection dropped?)"},
		{"aborted by the server", func(w http.ResponseWriter, f http.Flusher) {
			// SGLang's stream of an aborted request: a finish chunk with
			// "abort", usage, [DONE] — a well-formed end of a failure.
			sseHeader(w)
			io.WriteString(w, `data: {"choices":[{"text":"a","finish_reason":null}]}`+"\n\n"+
				`data: {"choices":[{"text":"","finish_reason":"abort"}]}`+"\n\n"+
				`data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":1}}`+"\n\ndata: [DONE]\n\n")
		}, `the server ended the request with finish_reason "abort" after 1 content chunks`},
		{"not a stream", func(w http.ResponseWriter, f http.Flusher) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"text":"abc"}]}`)
		}, `response is "application/json", not an event stream`},
		{"no text", func(w http.ResponseWriter, f http.Flusher) {
			sseHeader(w)
			io.WriteString(w, `data: {"choices":[{"text":"","finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
		}, "the stream carried no generated text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFake(t)
			s.stream = func(n int, w http.ResponseWriter, f http.Flusher) {
				if n == 0 {
					defaultStream(w, f, 2, true) // the warm-up succeeds
					return
				}
				tc.stream(w, f)
			}
			res := run(t, s, event.BenchConfig{Requests: 3})
			if res.Completed != 0 || res.Failed != 3 || len(res.Errors) != 1 || res.Errors[0].Count != 3 || res.Errors[0].Err != tc.want {
				t.Fatalf("completed %d failed %d errors %+v; want 3 × %q", res.Completed, res.Failed, res.Errors, tc.want)
			}
			if res.TTFT.N != 0 || res.OutputTokPerSec != 0 {
				t.Errorf("failed requests counted in the metrics: %+v", res)
			}
		})
	}
}

// TestRunShortGenerationsCountWhatCame: with ignore_eos a stream may
// still end before max_tokens, normally ("stop" on a stop string,
// "length" when the server clipped max_tokens): the request succeeds and
// its tokens are the server's count, so tok/s is what was generated.
func TestRunShortGenerationsCountWhatCame(t *testing.T) {
	for _, reason := range []string{"stop", "length"} {
		s := newFake(t)
		s.stream = func(_ int, w http.ResponseWriter, f http.Flusher) {
			sseHeader(w)
			io.WriteString(w, `data: {"choices":[{"text":"a","finish_reason":null}]}`+"\n\n"+
				`data: {"choices":[{"text":"b","finish_reason":"`+reason+`"}]}`+"\n\n"+
				`data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}`+"\n\ndata: [DONE]\n\n")
		}
		res := run(t, s, event.BenchConfig{Requests: 2, OutputLen: 64})
		if res.Completed != 2 || res.Failed != 0 || res.OutputTokens != 4 {
			t.Errorf("%s: completed %d failed %d, %d output tokens; want 2, 0, 4 (2 each, not 64)", reason, res.Completed, res.Failed, res.OutputTokens)
		}
	}
}

// TestSummariseCapsStoredRequests: a run of more than MaxStoredRequests
// requests keeps an even sample of them, in sending order, while its
// counts and distributions cover every request.
func TestSummariseCapsStoredRequests(t *testing.T) {
	const n = 2*MaxStoredRequests + MaxStoredRequests/2 // 2.5 per stored one
	results := make([]result, n)
	for i := range results {
		q := &results[i]
		q.Start = time.Duration(i) * time.Millisecond
		q.TTFT, q.E2E, q.OutputTokens = float64(i), float64(i)+1, 2
		if i%1000 == 999 {
			q.Err = "HTTP 503: busy"
		}
	}
	res := &event.BenchResult{Duration: time.Second}
	summarise(res, results)
	if res.RequestsTotal != n || len(res.Requests) != MaxStoredRequests {
		t.Fatalf("total %d, stored %d; want %d, %d", res.RequestsTotal, len(res.Requests), n, MaxStoredRequests)
	}
	if res.Completed+res.Failed != n || res.Failed != n/1000 || res.TTFT.N != res.Completed || res.OutputTokens != 2*res.Completed {
		t.Errorf("completed %d failed %d, TTFT over %d, %d tokens: not over all %d", res.Completed, res.Failed, res.TTFT.N, res.OutputTokens, n)
	}
	for i, q := range res.Requests {
		if want := time.Duration(i*n/MaxStoredRequests) * time.Millisecond; q.Start != want {
			t.Fatalf("stored request %d is the one sent at %v, want %v (request ⌊i·%d/%d⌋)", i, q.Start, want, n, MaxStoredRequests)
		}
	}
	if res.TTFT.Max != n-2 { // the last request failed (i = n-1 is 999 mod 1000)
		t.Errorf("TTFT max %v: the distribution does not cover the last requests", res.TTFT.Max)
	}
	small := &event.BenchResult{Duration: time.Second}
	summarise(small, results[:3])
	if small.RequestsTotal != 3 || len(small.Requests) != 3 {
		t.Errorf("a small run: %d of %d stored", len(small.Requests), small.RequestsTotal)
	}
}

func TestRunTimeout(t *testing.T) {
	s := newFake(t)
	release := make(chan struct{})
	defer close(release)
	s.stream = func(n int, w http.ResponseWriter, f http.Flusher) {
		if n == 0 {
			defaultStream(w, f, 2, true)
			return
		}
		sseHeader(w)
		f.Flush()
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
	}
	res := run(t, s, event.BenchConfig{Requests: 1, Timeout: 100 * time.Millisecond})
	if res.Failed != 1 || res.Errors[0].Err != "timeout after 100ms" {
		t.Fatalf("errors %+v, want a timeout", res.Errors)
	}
}

func TestRunWarmupFailureIsAnError(t *testing.T) {
	s := newFake(t)
	s.stream = func(_ int, w http.ResponseWriter, _ http.Flusher) {
		w.WriteHeader(404)
		io.WriteString(w, `{"message":"The model 'x' does not exist."}`)
	}
	_, err := Run(context.Background(), nil, s.URL, event.BenchConfig{Model: "x"}, nil)
	if err == nil || !strings.Contains(err.Error(), "warm-up request failed") || !strings.Contains(err.Error(), "HTTP 404: The model 'x' does not exist.") {
		t.Fatalf("error %v", err)
	}
}

func TestRunRefusedInput(t *testing.T) {
	s := newFake(t)
	for _, tc := range []struct {
		name string
		url  string
		cfg  event.BenchConfig
		want string
	}{
		{"bad URL", "ftp://x", event.BenchConfig{}, "want http://HOST:PORT"},
		{"bad endpoint", s.URL, event.BenchConfig{Endpoint: "embeddings"}, `endpoint "embeddings"`},
		{"negative concurrency", s.URL, event.BenchConfig{Concurrency: -1}, "concurrency -1"},
		{"both bounds", s.URL, event.BenchConfig{Requests: 3, Duration: time.Second}, "requests or duration, not both"},
		{"poisson without rate", s.URL, event.BenchConfig{Poisson: true}, "poisson arrivals need a rate"},
		{"missing prompt file", s.URL, event.BenchConfig{PromptFile: filepath.Join(t.TempDir(), "none")}, "prompt file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(context.Background(), nil, tc.url, tc.cfg, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	s.models = `{"data":[{"id":"evil\u001b]52;c;x\u0007"}]}`
	if _, err := Run(context.Background(), nil, s.URL, event.BenchConfig{}, nil); err == nil || !strings.Contains(err.Error(), "control characters") {
		t.Fatalf("model id with escapes: %v", err)
	}
	s.models = `{"data":[]}`
	if _, err := Run(context.Background(), nil, s.URL+"/v1/", event.BenchConfig{}, nil); err == nil || !strings.Contains(err.Error(), "lists no model") {
		t.Fatalf("no model: %v", err)
	}
}

func TestRunPromptFile(t *testing.T) {
	s := newFake(t)
	path := filepath.Join(t.TempDir(), "prompts.txt")
	os.WriteFile(path, []byte("first prompt\r\n\n  \nsecond \"quoted\" prompt\n"), 0o644)
	run(t, s, event.BenchConfig{PromptFile: path, Requests: 3, Warmup: -1})
	var got []string
	for _, b := range s.bodies {
		p, _ := b["prompt"].(string)
		got = append(got, p)
	}
	if strings.Join(got, "|") != `first prompt|second "quoted" prompt|first prompt` {
		t.Errorf("prompts sent %q", got)
	}
}

func TestPromptsDeterministic(t *testing.T) {
	r := &runner{cfg: event.BenchConfig{Model: "m", InputLen: 16, OutputLen: 4, Seed: 7}.Defaults()}
	a, n := r.body(3, false)
	b, _ := r.body(3, false)
	c, _ := r.body(4, false)
	w, _ := r.body(3, true)
	if string(a) != string(b) || string(a) == string(c) || string(a) == string(w) || n != 16 {
		t.Errorf("bodies not a function of (seed, i, warm-up): %s / %s / %s / %s", a, b, c, w)
	}
	r.cfg.Seed = 8
	if d, _ := r.body(3, false); string(d) == string(a) {
		t.Error("the seed does not change the prompt")
	}
	var v map[string]any
	if err := json.Unmarshal(a, &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, a)
	}
}

func TestRunCancelReturnsPartialResult(t *testing.T) {
	s := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.stream = func(n int, w http.ResponseWriter, f http.Flusher) {
		if n < 3 { // warm-up and two measured requests finish
			defaultStream(w, f, 2, true)
			return
		}
		cancel()
		sseHeader(w)
		f.Flush()
		time.Sleep(50 * time.Millisecond)
	}
	res, err := Run(ctx, nil, s.URL, event.BenchConfig{Requests: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.Completed != 2 || res.Failed != 0 {
		t.Fatalf("cancelled %v completed %d failed %d %+v", res.Cancelled, res.Completed, res.Failed, res.Errors)
	}
}

// TestRunDurationBound: a duration-bound run sends requests until the
// deadline and none after it (Start ≤ Duration exactly: a request released
// just before the deadline but not yet sent is not sent), and those in
// flight finish.
func TestRunDurationBound(t *testing.T) {
	s := newFake(t)
	s.stream = func(_ int, w http.ResponseWriter, f http.Flusher) {
		time.Sleep(15 * time.Millisecond)
		defaultStream(w, f, 2, true)
	}
	const limit = 200 * time.Millisecond
	res := run(t, s, event.BenchConfig{Duration: limit, Concurrency: 2})
	if res.Completed < 2 || res.Duration < limit || res.Failed != 0 {
		t.Fatalf("completed %d in %v", res.Completed, res.Duration)
	}
	if res.RequestsTotal != res.Completed || len(res.Requests) != res.Completed {
		t.Errorf("%d requests stored, total %d, completed %d", len(res.Requests), res.RequestsTotal, res.Completed)
	}
	for i, q := range res.Requests {
		if q.Start > limit {
			t.Errorf("request %d started at %v, after the %v deadline", i, q.Start, limit)
		}
	}
	if got := int(s.n.Load()) - 1; got != res.Completed { // less the warm-up
		t.Errorf("%d measured requests reached the server, %d counted", got, res.Completed)
	}
}

// TestArrivalsSchedule: the send schedule is exact: due times 0, 1/rate,
// 2/rate … for even arrivals; for Poisson arrivals the running sum of the
// seeded exponential draws (their own PCG stream of the seed), whose mean
// is 1/rate; all 0 without a rate.
func TestArrivalsSchedule(t *testing.T) {
	a := newArrivals(event.BenchConfig{Rate: 50, Seed: 1})
	for i := range 10 {
		if got, want := a.next(), time.Duration(i)*20*time.Millisecond; got != want {
			t.Fatalf("even: request %d due at %v, want %v", i, got, want)
		}
	}
	const rate, n = 8.0, 20000
	p := newArrivals(event.BenchConfig{Rate: rate, Poisson: true, Seed: 7})
	draws := rand.New(rand.NewPCG(7, 1<<61))
	var want time.Duration
	for i := range n {
		if got := p.next(); got != want {
			t.Fatalf("poisson: request %d due at %v, want %v (the seeded draws' sum)", i, got, want)
		}
		want += time.Duration(draws.ExpFloat64() / rate * float64(time.Second))
	}
	if mean := want.Seconds() / n; math.Abs(mean-1/rate)/(1/rate) > 0.03 {
		t.Errorf("poisson: mean gap %.4f s, want 1/%g = %.4f s", mean, rate, 1/rate)
	}
	p7, p8 := newArrivals(event.BenchConfig{Rate: rate, Poisson: true, Seed: 7}), newArrivals(event.BenchConfig{Rate: rate, Poisson: true, Seed: 8})
	p7.next()
	p8.next() // both 0
	if p7.next() == p8.next() {
		t.Error("the seed does not change the poisson schedule")
	}
	z := newArrivals(event.BenchConfig{Seed: 1})
	for range 3 {
		if d := z.next(); d != 0 {
			t.Fatalf("no rate: due at %v, want 0", d)
		}
	}
}

// TestRunRate: the run follows the schedule: no request is sent before
// it is due, in order, and (a loose bound, 50 gaps, not a timing test)
// none is held back past it.
func TestRunRate(t *testing.T) {
	for _, cfg := range []event.BenchConfig{
		{Requests: 5, Rate: 50, Concurrency: 5},
		{Requests: 5, Rate: 50, Poisson: true, Concurrency: 5, Seed: 3},
	} {
		s := newFake(t)
		res := run(t, s, cfg)
		if res.Completed != 5 {
			t.Fatalf("%+v: %d completed %+v", cfg, res.Completed, res.Errors)
		}
		sched := newArrivals(res.Config)
		for i, q := range res.Requests {
			due := sched.next()
			if q.Start < due || q.Start > due+time.Second {
				t.Errorf("poisson %v: request %d sent at %v, due at %v", cfg.Poisson, i, q.Start, due)
			}
		}
	}
}

// TestRunConcurrencyReached: with requests held until c are in flight,
// exactly c are.
func TestRunConcurrencyReached(t *testing.T) {
	s := newFake(t)
	const c = 4
	s.stream = func(n int, w http.ResponseWriter, f http.Flusher) {
		for n > 0 && s.inFlight.Load() < c && s.n.Load() < 1+c {
			time.Sleep(time.Millisecond)
		}
		defaultStream(w, f, 2, true)
	}
	res := run(t, s, event.BenchConfig{Requests: c, Concurrency: c})
	if s.maxIn.Load() != c || res.Completed != c {
		t.Fatalf("max in flight %d, completed %d; want %d", s.maxIn.Load(), res.Completed, c)
	}
	if res.Concurrency <= 0 {
		t.Errorf("achieved concurrency %v", res.Concurrency)
	}
}

func TestRunProgress(t *testing.T) {
	s := newFake(t)
	var mu sync.Mutex
	var calls []event.BenchProgress
	busy := atomic.Bool{}
	s.stream = func(_ int, w http.ResponseWriter, f http.Flusher) {
		time.Sleep(30 * time.Millisecond)
		defaultStream(w, f, 3, true)
	}
	res, err := Run(context.Background(), nil, s.URL, event.BenchConfig{Requests: 12, Concurrency: 1}, func(p event.BenchProgress) {
		if !busy.CompareAndSwap(false, true) {
			t.Error("progress called concurrently")
		}
		mu.Lock()
		calls = append(calls, p)
		mu.Unlock()
		busy.Store(false)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 2 || !calls[0].Warmup {
		t.Fatalf("progress calls %+v: want the warm-up first", calls)
	}
	last := calls[len(calls)-1]
	if last.Done != 12 || last.Total != 12 || last.OutTokens != 36 || last.InFlight != 0 || last.TokPerSec != res.OutputTokPerSec {
		t.Errorf("final progress %+v (result %v tok/s)", last, res.OutputTokPerSec)
	}
	// ≤ 4 Hz: no more than one call per interval, plus warm-up and final.
	if max := int(res.Duration/ProgressInterval) + 3; len(calls) > max {
		t.Errorf("%d progress calls over %v", len(calls), res.Duration)
	}
}

func TestConfigDefaults(t *testing.T) {
	c := event.BenchConfig{}.Defaults()
	if c.Endpoint != event.BenchCompletions || c.InputLen != 128 || c.OutputLen != 128 || c.Concurrency != 1 || c.Requests != 32 ||
		c.Warmup != 1 || c.Seed != 1 || c.Timeout != 10*time.Minute {
		t.Errorf("defaults %+v", c)
	}
	if c := (event.BenchConfig{Duration: time.Second}).Defaults(); c.Requests != 0 {
		t.Errorf("a duration-bound run got %d requests", c.Requests)
	}
	// -1 is none, and stays none however often Defaults runs (the CLI and
	// the cockpit default a config, then Run defaults it again).
	for _, w := range []int{-1, -7} {
		c := event.BenchConfig{Warmup: w}.Defaults().Defaults()
		if c.Warmup != -1 || c.WarmupRequests() != 0 {
			t.Errorf("warm-up %d became %d (%d requests)", w, c.Warmup, c.WarmupRequests())
		}
	}
	if n := (event.BenchConfig{}).WarmupRequests(); n != event.BenchDefaultWarmup {
		t.Errorf("zero config: %d warm-up requests", n)
	}
}
