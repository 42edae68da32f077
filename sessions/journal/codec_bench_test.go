package journal

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// bigRun is a run of n requests with realistic, unrounded latencies.
func bigRun(n int) event.BenchDone {
	rng := rand.New(rand.NewPCG(5, 6))
	r := &event.BenchResult{Config: event.BenchConfig{Endpoint: event.BenchCompletions, InputLen: 128, OutputLen: 128, Concurrency: 64, Requests: n, Warmup: 1, Seed: 1},
		Target: "http://127.0.0.1:30000 via gpu-box", Started: t0, Duration: 90 * time.Second, Completed: n}
	for i := range n {
		ttft := 30 + rng.Float64()*20
		tpot := 11 + rng.Float64()
		r.Requests = append(r.Requests, event.BenchRequest{Start: time.Duration(i) * 1403 * time.Microsecond, TTFT: ttft, E2E: ttft + 127*tpot,
			TPOT: tpot, ITLMedian: tpot - 0.1, PromptTokens: 128, OutputTokens: 128, Usage: true})
	}
	return event.BenchDone{ID: "b1", Exp: "e1", Result: r}
}

// TestBenchDoneSize: a 10,000-request run with unrounded latencies costs
// about 100 bytes a request in the journal (four floats in shortest
// round-trip form are most of it; the struct's JSON would be about 240),
// and comes back exactly.
func TestBenchDoneSize(t *testing.T) {
	d := bigRun(10000)
	b, err := encBenchDone(nil, nil, t0, d)
	if err != nil {
		t.Fatal(err)
	}
	if per := len(b) / 10000; per > 110 {
		t.Errorf("%d bytes a request", per)
	}
	back, err := decBenchDone(nil, t0, b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffPayload(d, back); diff != "" {
		t.Error(diff)
	}
}

func BenchmarkBenchDoneCodec(b *testing.B) {
	d := bigRun(10000)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		buf, err = encBenchDone(nil, buf[:0], t0, d)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := decBenchDone(nil, t0, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// FuzzBenchRequest: any data element either fails to decode or decodes to
// a request that encodes and decodes to itself.
func FuzzBenchRequest(f *testing.F) {
	for _, s := range []string{`[0,40.1,4111.5,15.9,15.9,128,256,1]`, `[9007199254740993,1e-09,4200,-0,1e+300,128,256,0]`,
		`[3,0,2.5,0,0,0,0,0,"HTTP 503: \"x\"\n"]`, `["nan","inf","-inf",0,0,0,0,0]`, `[1,2,3,4,5,6,7,2]`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var q benchReqJSON
		if q.UnmarshalJSON(data) != nil {
			return
		}
		enc, err := q.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back benchReqJSON
		if err := back.UnmarshalJSON(enc); err != nil {
			t.Fatalf("%s -> %s: %v", data, enc, err)
		}
		if d := diffPayload(event.BenchRequest(q), event.BenchRequest(back)); d != "" && q.Err == string([]rune(q.Err)) {
			t.Fatalf("%s -> %s: %s", data, enc, d)
		}
	})
}
