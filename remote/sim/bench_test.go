package sim

import (
	"context"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/bench"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// waitReady waits for the in-process server's /health to answer 200.
func waitReady(t *testing.T, s *inProcServer) {
	t.Helper()
	waitFor(t, 30*time.Second, "the server to be ready", func() bool {
		resp, err := http.Get(s.url("/health"))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// TestBenchMeasuresModelledRate: flightdeck's benchmark client against the
// fake server measures the modelled batch rate (batchRate of the
// single-request rate at the benchmark's concurrency) within 5 %. The
// time scale is divided out.
//
// With the demo's synthetic load on, the benchmark still measures only
// its own batch: the engine parks the synthetic requests while HTTP ones
// run (engine.yieldToRequests), so this is not a measurement under load;
// the case checks that a benchmark taken in `flightdeck demo` reads the
// modelled rate however busy the demo's log looks.
func TestBenchMeasuresModelledRate(t *testing.T) {
	const scale = 4.0
	for _, tc := range []struct {
		name        string
		autoLoad    bool
		concurrency int
		profile     bool
	}{
		{"one request at a time, untuned", false, 1, false},
		{"four at a time, tuned, the demo's load parked meanwhile", true, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--port", "0", "--time-scale", "4", "--startup-delay", "0.2", "--seed", "9", "--tp-size", "8"}
			if !tc.autoLoad {
				args = append(args, "--no-auto-load")
			}
			var env []string
			if tc.profile {
				env = profileEnv()
			}
			s := runInProc(t, "", env, args...)
			waitReady(t, s)
			if tc.autoLoad { // let the synthetic workload start decoding, so that it has to yield
				waitFor(t, 30*time.Second, "the synthetic load", func() bool { return strings.Contains(s.out.String(), "Decode batch") })
			}
			res, err := bench.Run(context.Background(), nil, "http://"+s.addr, event.BenchConfig{
				InputLen: 64, OutputLen: 200, Concurrency: tc.concurrency, Requests: 2 * tc.concurrency}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed != 0 || res.Completed != 2*tc.concurrency {
				t.Fatalf("completed %d failed %d: %+v", res.Completed, res.Failed, res.Errors)
			}
			for _, q := range res.Requests {
				if !q.Usage || q.PromptTokens != 64 || q.OutputTokens != 200 {
					t.Errorf("request %+v: want usage with the 64 prompt ids counted and 200 tokens", q)
				}
			}
			model := batchRate(ModelTokPerSec(tc.profile, false, false), tc.concurrency)
			got := res.OutputTokPerSec / scale
			if math.Abs(got-model)/model > 0.05 {
				t.Errorf("measured %.2f tok/s (model time), modelled %.2f: off by %.1f %%", got, model, 100*(got-model)/model)
			}
			t.Logf("measured %.2f tok/s, modelled %.2f (%+.2f %%); TTFT median %.1f ms, ITL median %.2f ms (wall, ×%g)",
				got, model, 100*(got-model)/model, res.TTFT.Median, res.ITL.Median, scale)
		})
	}
}

// TestStoppedServerCutsItsStreams: a server stopped in the middle of a
// generation drops the connection, with no finish chunk, usage or [DONE]
// (it once ended the stream normally, and the cut-short request read as a
// successful short one); the benchmark client counts it failed. Streaming
// and not, completions and chat.
func TestStoppedServerCutsItsStreams(t *testing.T) {
	for _, ep := range []event.BenchEndpoint{event.BenchCompletions, event.BenchChat} {
		t.Run(string(ep), func(t *testing.T) {
			t.Parallel()
			s := runInProc(t, "", nil, "--port", "0", "--time-scale", "4", "--startup-delay", "0.2", "--seed", "9", "--tp-size", "8", "--no-auto-load")
			waitReady(t, s)
			var once sync.Once
			// 100 000 tokens at 250 tok/s: it is mid-stream when stopped.
			res, err := bench.Run(context.Background(), nil, "http://"+s.addr, event.BenchConfig{Endpoint: ep,
				InputLen: 8, OutputLen: 100000, Requests: 1, Warmup: -1}, func(p event.BenchProgress) {
				if p.OutTokens > 0 {
					once.Do(func() { go s.stop() })
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Completed != 0 || res.Failed != 1 || res.Errors[0].Err != "stream broken: unexpected EOF" {
				t.Fatalf("completed %d failed %d %+v: want the cut stream failed", res.Completed, res.Failed, res.Errors)
			}
		})
	}
}
