package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestBenchCLI: `flightdeck bench` against the simulated host, through its
// SSH server (the port found from the host's config) and at the URL.
func TestBenchCLI(t *testing.T) {
	h, _, ssh := simHostConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := h.StartServer(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.StopServer(context.Background()) })
	if err := h.WaitServerReady(ctx); err != nil {
		t.Fatal(err)
	}

	out, stderr, err := runCLI(t, nil, append([]string{"bench", "sim", "-n", "4", "-c", "2", "--input-len", "16", "--output-len", "24", "--format", "json"}, ssh...)...)
	wantExit(t, err, 0, "bench sim:\n"+stderr)
	var res event.BenchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--format json: %v\n%s", err, out)
	}
	want := "http://127.0.0.1:" + strconv.Itoa(h.ServerPort) + " via sim"
	if res.Completed != 4 || res.Failed != 0 || res.InputTokens != 64 || res.OutputTokens != 96 || res.Target != want ||
		res.Config.Concurrency != 2 || res.TTFT.N != 4 || res.OutputTokPerSec <= 0 || len(res.Requests) != 4 {
		t.Errorf("result %+v", res)
	}

	out, stderr, err = runCLI(t, nil, "bench", h.ServerURL(), "-n", "2", "--output-len", "8", "--input-len", "4", "--warmup", "0", "--endpoint", "chat")
	wantExit(t, err, 0, "bench URL:\n"+stderr)
	for _, line := range []string{
		"============ Serving Benchmark Result ============",
		"Backend:                                 flightdeck chat",
		"Target:                                  " + h.ServerURL(),
		"Traffic request rate:                    inf",
		"Successful requests:                     2",
		"Total generated tokens:                  16",
		"---------------Time to First Token----------------",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("table lacks %q:\n%s", line, out)
		}
	}
	if stderr != "" {
		t.Errorf("stderr (not a terminal: no progress) %q", stderr)
	}
}

func TestBenchCLIRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "accepts 1 arg"},
		{[]string{"bench", "http://127.0.0.1:1", "--format", "xml"}, `--format "xml"`},
		{[]string{"bench", "http://127.0.0.1:1", "--endpoint", "embed"}, `endpoint "embed"`},
		{[]string{"bench", "http://127.0.0.1:1", "-c", "-1"}, "--concurrency -1"},
		{[]string{"bench", "http://127.0.0.1:1", "-n", "5", "--duration", "1s"}, "requests or duration, not both"},
		{[]string{"bench", "http://127.0.0.1:1", "--poisson"}, "poisson arrivals need a rate"},
		{[]string{"bench", "http://127.0.0.1:1", "--rate", "-2"}, "rate -2"},
		{[]string{"bench", "http://127.0.0.1:1", "--port", "8000"}, "put the port in the URL"},
		{[]string{"bench", "http://127.0.0.1:1", "--bogus"}, "unknown flag"},
	} {
		_, stderr, err := runCLI(t, nil, tc.args...)
		var ec exitCode
		if !errors.As(err, &ec) || ec != exitRefused || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: err %v stderr %q; want exit 2 and %q", tc.args, err, stderr, tc.want)
		}
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, _, err := runCLI(t, nil, "bench", "http://"+addr)
	var ec exitCode
	if err == nil || errors.As(err, &ec) || !strings.Contains(err.Error(), "list models") {
		t.Errorf("server down: %v, want an error (exit 1) about listing models", err)
	}
}

func TestBenchTable(t *testing.T) {
	res := &event.BenchResult{
		Config: event.BenchConfig{Endpoint: event.BenchCompletions, Model: "kimi\x1b[2J", Concurrency: 4, Rate: 8},
		Target: "http://127.0.0.1:30000 via gpu-box", Duration: 2500 * time.Millisecond, Cancelled: true,
		Completed: 10, Failed: 2, InputTokens: 1280, OutputTokens: 1280,
		ReqPerSec: 4, OutputTokPerSec: 512, TotalTokPerSec: 1024, Concurrency: 3.5,
		E2E:    event.Dist{N: 10, Mean: 800, Median: 790.5, P90: 900, P99: 950.25, Max: 960},
		TTFT:   event.Dist{N: 10, Mean: 20, Median: 19, P90: 30, P99: 40, Max: 41},
		TPOT:   event.Dist{N: 10, Mean: 6.2, Median: 6.1, P90: 7, P99: 8, Max: 9},
		ITL:    event.Dist{N: 10, Mean: 6.2, Median: 6, P90: 7.5, P99: 9.125, Max: 30},
		Errors: []event.BenchErrorCount{{Err: "HTTP 503: The server is not ready.", Count: 2}},
	}
	var b bytes.Buffer
	writeBenchTable(&b, res)
	want := `============ Serving Benchmark Result ============
Cancelled:                               yes (the requests that finished)
Backend:                                 flightdeck completions
Target:                                  http://127.0.0.1:30000 via gpu-box
Model:                                   kimi
Traffic request rate:                    8.00
Max request concurrency:                 4
Successful requests:                     10
Failed requests:                         2
Benchmark duration (s):                  2.50
Total input tokens:                      1280
Total generated tokens:                  1280
Request throughput (req/s):              4.00
Input token throughput (tok/s):          512.00
Output token throughput (tok/s):         512.00
Total token throughput (tok/s):          1024.00
Concurrency:                             3.50
----------------End-to-End Latency----------------
Mean E2E Latency (ms):                   800.00
Median E2E Latency (ms):                 790.50
P90 E2E Latency (ms):                    900.00
P99 E2E Latency (ms):                    950.25
---------------Time to First Token----------------
Mean TTFT (ms):                          20.00
Median TTFT (ms):                        19.00
P90 TTFT (ms):                           30.00
P99 TTFT (ms):                           40.00
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          6.20
Median TPOT (ms):                        6.10
P90 TPOT (ms):                           7.00
P99 TPOT (ms):                           8.00
---------------Inter-Token Latency----------------
Mean ITL (ms):                           6.20
Median ITL (ms):                         6.00
P90 ITL (ms):                            7.50
P99 ITL (ms):                            9.12
Max ITL (ms):                            30.00
==================================================
failed ×2: HTTP 503: The server is not ready.
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestBenchCLIWarmupCount: --warmup 0 sends no warm-up request (the config
// is defaulted twice on its way: once by the CLI, once by the run), the
// default sends one, and -n 0 without --duration is refused.
func TestBenchCLIWarmupCount(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Write([]byte(`{"data":[{"id":"m"}]}`))
			return
		}
		posts.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"+
			"data: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	for _, c := range []struct {
		args []string
		want int32
	}{
		{[]string{"--warmup", "0"}, 2},
		{nil, 3},
		{[]string{"--warmup", "2"}, 4},
	} {
		posts.Store(0)
		_, stderr, err := runCLI(t, nil, append([]string{"bench", srv.URL, "-n", "2", "--output-len", "2"}, c.args...)...)
		wantExit(t, err, 0, stderr)
		if got := posts.Load(); got != c.want {
			t.Errorf("%v: %d requests sent, want %d", c.args, got, c.want)
		}
	}
	_, _, err := runCLI(t, nil, "bench", srv.URL, "-n", "0")
	wantExit(t, err, 2, "-n 0")
	_, _, err = runCLI(t, nil, "bench", srv.URL, "--warmup", "-1")
	wantExit(t, err, 2, "--warmup -1")
}

// TestBenchCLITargetHints: HOST:PORT is an SSH target to bench, so an
// HTTP server's address fails to connect over SSH; the error then says
// how to write its URL. A host where no server is found is told about
// --port and --log-dir.
func TestBenchCLITargetHints(t *testing.T) {
	h, _, ssh := simHostConfig(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	addr := srv.Listener.Addr().String() // 127.0.0.1:PORT
	// A real key and known_hosts: the SSH handshake itself fails.
	_, _, err := runCLI(t, nil, "bench", addr, "-F", os.DevNull, "-i", h.IdentityPath, "--known-hosts", h.KnownHostsPath)
	if want := "for the HTTP server at " + addr + " write http://" + addr; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("bench %s: %v, want the hint %q", addr, err, want)
	}
	if got := httpHint("gpu-box"); got != "for an HTTP URL write http://HOST:PORT" {
		t.Errorf("hint for an alias: %q", got)
	}
	if got := httpHint("root@gpu-box:2222"); got != "for an HTTP URL write http://HOST:PORT" {
		t.Errorf("hint for user@host:port (SSH): %q", got)
	}

	// The simulated host with no server running.
	_, stderr, err := runCLI(t, nil, append([]string{"bench", "sim"}, ssh...)...)
	if err == nil || !strings.Contains(err.Error(), "no inference server found on sim") || !strings.Contains(err.Error(), "--port") || !strings.Contains(err.Error(), "--log-dir") {
		t.Errorf("no server: %v %s; want --port and --log-dir named", err, stderr)
	}
}

// TestBenchCLIEdges: a negative --duration names --duration; one-token
// outputs print n/a for TPOT and ITL, never 0.00 ms.
func TestBenchCLIEdges(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Write([]byte(`{"data":[{"id":"m"}]}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	_, stderr, err := runCLI(t, nil, "bench", srv.URL, "--duration", "-1s")
	wantExit(t, err, 2, "--duration -1s")
	if !strings.Contains(stderr, "--duration -1s: must be positive") {
		t.Errorf("--duration -1s: %s", stderr)
	}
	out, stderr, err := runCLI(t, nil, "bench", srv.URL, "-n", "2", "--output-len", "1")
	wantExit(t, err, 0, stderr)
	for _, want := range []string{"Median TPOT (ms):                        n/a", "Median ITL (ms):                         n/a"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}
