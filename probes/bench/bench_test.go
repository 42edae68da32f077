package bench

import (
	"bytes"
	"context"
	"fmt"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sglangStream is a realistic SGLang /v1/completions stream: n content
// chunks, the finish chunk, the usage chunk, [DONE].
func sglangStream(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `data: {"id":"7c3d1a2b9e8f4a5b8c6d7e8f9a0b1c2d","object":"text_completion","created":1740386451,"model":"kimi-k2.5","choices":[{"index":0,"text":" token%d","logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}`+"\n\n", i)
	}
	b.WriteString(`data: {"id":"7c3d1a2b9e8f4a5b8c6d7e8f9a0b1c2d","object":"text_completion","created":1740386451,"model":"kimi-k2.5","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length","matched_stop":null}],"usage":null}` + "\n\n")
	b.WriteString(`data: {"id":"7c3d1a2b9e8f4a5b8c6d7e8f9a0b1c2d","object":"text_completion","created":1740386451,"model":"kimi-k2.5","choices":[],"usage":{"prompt_tokens":128,"total_tokens":256,"completion_tokens":128}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkStreamReader: the SSE reader and chunk decoder on a 128-chunk
// SGLang stream; the per-chunk cost is ns/op ÷ 130.
func BenchmarkStreamReader(b *testing.B) {
	body := sglangStream(128)
	r := NewStreamReader(nil)
	var c Chunk
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(bytes.NewReader(body))
		n := 0
		for r.Next(&c) == nil {
			n++
		}
		if n != 131 {
			b.Fatalf("%d events", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/131, "ns/chunk")
}

// instantServer streams k content chunks per request with no delay,
// flushing each (an infinitely fast inference server).
func instantServer(k int) *httptest.Server {
	body := sglangStream(k)
	events := bytes.SplitAfter(body, []byte("\n\n"))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"data":[{"id":"m"}]}`)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for _, e := range events {
			w.Write(e)
			f.Flush()
		}
	})
	return httptest.NewServer(mux)
}

// envInstantServer makes this test binary an instant server (TestMain):
// the benchmarks run it as another process, so the client's CPU time is
// its own.
const envInstantServer = "FLIGHTDECK_BENCH_INSTANT_SERVER"

func TestMain(m *testing.M) {
	if k, err := strconv.Atoi(os.Getenv(envInstantServer)); err == nil {
		srv := instantServer(k)
		fmt.Println(srv.URL)
		io.Copy(io.Discard, os.Stdin) // until the benchmark closes stdin
		srv.Close()
		return
	}
	os.Exit(m.Run())
}

// startInstantServer runs an instant server streaming k chunks in another
// process and returns its URL.
func startInstantServer(b *testing.B, k int) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envInstantServer+"="+strconv.Itoa(k))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line := make([]byte, 64)
	n, err := stdout.Read(line)
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(line[:n]))
}

// cpuTime is this process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkClientOverhead: the most requests/s the client sustains
// against an instant server (8 chunks a request, each flushed; another
// process on this machine), at concurrency 1 and 16, and the client's CPU
// time per request. With /usr/bin/python3 and aiohttp present (and
// tqdm, for sglang's progress bar), the same server is also driven by
// testdata/aiohttp_client.py, a stand-in for sglang.bench_serving's client
// (a session per request, as sglang's request functions do, and one shared
// session, as vllm bench serve does), for the comparison in
// docs/performance.md.
func BenchmarkClientOverhead(b *testing.B) {
	url := startInstantServer(b, 8)
	for _, c := range []int{1, 16} {
		b.Run("flightdeck/c"+strconv.Itoa(c), func(b *testing.B) {
			tr := NewTransport(nil, c)
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			b.ReportAllocs()
			cpu := cpuTime()
			res, err := Run(context.Background(), client, url, event.BenchConfig{Model: "m", InputLen: 4, OutputLen: 8, Concurrency: c, Requests: b.N, Warmup: -1}, nil)
			cpu = cpuTime() - cpu
			if err != nil {
				b.Fatal(err)
			}
			if res.Completed != b.N {
				b.Fatalf("%d of %d completed: %+v", res.Completed, b.N, res.Errors)
			}
			b.ReportMetric(res.ReqPerSec, "req/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
		})
		for _, mode := range []string{"per-request", "shared"} {
			b.Run("python-aiohttp-"+mode+"/c"+strconv.Itoa(c), func(b *testing.B) {
				python := "/usr/bin/python3"
				if exec.Command(python, "-c", "import aiohttp").Run() != nil {
					b.Skip("no /usr/bin/python3 with aiohttp (apt-get install python3-aiohttp)")
				}
				out, err := exec.Command(python, "testdata/aiohttp_client.py", url+"/v1/completions", strconv.Itoa(b.N), strconv.Itoa(c), mode).Output()
				if err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				var done int
				var secs, cpu float64
				var progress string
				if _, err := fmt.Sscan(string(out), &done, &secs, &cpu, &progress); err != nil || done != b.N || secs <= 0 {
					b.Fatalf("python said %q", out)
				}
				if progress != "tqdm" {
					b.Log("no tqdm progress bar (apt-get install python3-tqdm): the stand-in does a little less work than sglang")
				}
				b.ReportMetric(float64(done)/secs, "req/s")
				b.ReportMetric(cpu*1e6/float64(done), "cpu-µs/req")
			})
		}
	}
}

// BenchmarkITLError: how far the client's inter-token gaps are from the
// server's own: the server writes a chunk every 2 ms (at absolute
// instants) and records when each write was flushed; the client's gaps
// are compared with the server's, gap by gap. Reports the mean and p99
// absolute error and the mean signed error, µs.
func BenchmarkITLError(b *testing.B) {
	const chunks, every = 50, 2 * time.Millisecond
	var mu sync.Mutex
	var sent [][]time.Time
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		times := make([]time.Time, 0, chunks)
		start := time.Now()
		for i := range chunks {
			time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
			fmt.Fprintf(w, `data: {"choices":[{"index":0,"text":" t%d","finish_reason":null}],"usage":null}`+"\n\n", i)
			f.Flush()
			times = append(times, time.Now())
		}
		io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":50}}`+"\n\ndata: [DONE]\n\n")
		mu.Lock()
		sent = append(sent, times)
		mu.Unlock()
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tr := NewTransport(nil, 1)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	r := &runner{cfg: event.BenchConfig{Model: "m", InputLen: 4, OutputLen: chunks, Seed: 1}.Defaults(),
		client: client, url: srv.URL + "/v1/completions"}
	var errs []float64
	for i := 0; b.Loop(); i++ {
		body, prompt := r.body(i, false)
		q := r.do(context.Background(), body, prompt, nil)
		if q.Err != "" || len(q.itl) != chunks-1 {
			b.Fatalf("request: %q, %d gaps", q.Err, len(q.itl))
		}
		mu.Lock()
		times := sent[len(sent)-1]
		mu.Unlock()
		for k, gap := range q.itl {
			errs = append(errs, gap*1000-float64(times[k+1].Sub(times[k]).Microseconds()))
		}
	}
	abs := make([]float64, len(errs))
	sum, sumAbs := 0.0, 0.0
	for i, e := range errs {
		abs[i] = math.Abs(e)
		sum += e
		sumAbs += abs[i]
	}
	slices.Sort(abs)
	b.ReportMetric(sumAbs/float64(len(errs)), "µs-mean-abs-err")
	b.ReportMetric(Percentile(abs, 99), "µs-p99-abs-err")
	b.ReportMetric(sum/float64(len(errs)), "µs-mean-err")
}

// TestPythonStandInParses runs the aiohttp stand-in once when it can, so
// a broken script shows in tests rather than in a benchmark run.
func TestPythonStandInParses(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil || exec.Command("/usr/bin/python3", "-c", "import aiohttp").Run() != nil {
		t.Skip("no /usr/bin/python3 with aiohttp")
	}
	srv := instantServer(3)
	defer srv.Close()
	for _, mode := range []string{"per-request", "shared"} {
		cmd := exec.Command("/usr/bin/python3", "testdata/aiohttp_client.py", srv.URL+"/v1/completions", "3", "2", mode)
		var stderr strings.Builder
		cmd.Stderr = &stderr // the progress bar, and a failure's traceback
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), "3 ") {
			t.Fatalf("%s: %v: %s%s", mode, err, out, stderr.String())
		}
	}
}

// nagleListener turns TCP_NODELAY off on every connection it accepts, as
// a server that never sets it has (Go sets it by default): the kernel
// then holds a small write back while an earlier small one is not yet
// acknowledged, so when the client's ACKs go out decides the server's
// latency.
type nagleListener struct{ net.Listener }

func (l nagleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(false)
	}
	return c, err
}

// BenchmarkTTFTNagle: the client's TTFT and ITL against a server that
// writes the response headers on their own, as uvicorn does, then the
// first content chunk ttftPrefill later and seven more every ttftGap, with
// TCP_NODELAY (nodelay) and without it (nagle); concurrency 1 on a
// keep-alive connection, one b.N iteration a request. Reports the
// medians, ms; the server's own figures are ttftPrefill and ttftGap.
func BenchmarkTTFTNagle(b *testing.B) {
	const ttftPrefill, ttftGap = 2 * time.Millisecond, time.Millisecond
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"data":[{"id":"m"}]}`)
			return
		}
		f := w.(http.Flusher)
		sseHeader(w)
		f.Flush() // the headers alone
		time.Sleep(ttftPrefill)
		for i := range 8 {
			if i > 0 {
				time.Sleep(ttftGap)
			}
			fmt.Fprintf(w, `data: {"choices":[{"index":0,"text":" t%d","finish_reason":null}],"usage":null}`+"\n\n", i)
			f.Flush()
		}
		io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":8}}`+"\n\ndata: [DONE]\n\n")
	})
	for _, nagle := range []bool{false, true} {
		name := "nodelay"
		if nagle {
			name = "nagle"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewUnstartedServer(handler)
			if nagle {
				srv.Listener = nagleListener{srv.Listener}
			}
			srv.Start()
			defer srv.Close()
			res, err := Run(context.Background(), nil, srv.URL, event.BenchConfig{Model: "m", InputLen: 4, OutputLen: 8, Concurrency: 1, Requests: b.N}, nil)
			if err != nil {
				b.Fatal(err)
			}
			if res.Completed != b.N {
				b.Fatalf("%d of %d completed: %+v", res.Completed, b.N, res.Errors)
			}
			b.ReportMetric(res.TTFT.Median, "ttft-ms-median")
			b.ReportMetric(res.ITL.Median, "itl-ms-median")
			b.ReportMetric(res.TTFT.P90, "ttft-ms-p90")
		})
	}
}
