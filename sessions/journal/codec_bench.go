package journal

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/jsonappend"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The benchmark kinds are the payloads' JSON with every float that may not
// be finite (a rate over a zero duration, a cancelled run's empty
// distribution) kept as jsonappend.Float writes it, and bench-done's
// per-request list as arrays (a run of thousands of requests is its bulk):
//
//	[start ns, TTFT ms, E2E ms, TPOT ms, ITL median ms, prompt tokens,
//	 output tokens, usage 0/1] and, for a failed request, its error text.

// benchConfigJSON is event.BenchConfig with its rate kept when not finite.
type benchConfigJSON struct {
	event.BenchConfig
	Rate float `json:"rate,omitempty"`
}

func configJSON(c event.BenchConfig) benchConfigJSON {
	return benchConfigJSON{BenchConfig: c, Rate: float(c.Rate)}
}

func (c benchConfigJSON) config() event.BenchConfig {
	v := c.BenchConfig
	v.Rate = float64(c.Rate)
	return v
}

// benchDistJSON is event.Dist with floats that may not be finite.
type benchDistJSON struct {
	N      int   `json:"n"`
	Mean   float `json:"mean_ms"`
	Median float `json:"median_ms"`
	P90    float `json:"p90_ms"`
	P99    float `json:"p99_ms"`
	Std    float `json:"std_ms"`
	Max    float `json:"max_ms"`
}

func distJSON(d event.Dist) benchDistJSON {
	return benchDistJSON{N: d.N, Mean: float(d.Mean), Median: float(d.Median), P90: float(d.P90), P99: float(d.P99), Std: float(d.Std), Max: float(d.Max)}
}

func (d benchDistJSON) dist() event.Dist {
	return event.Dist{N: d.N, Mean: float64(d.Mean), Median: float64(d.Median), P90: float64(d.P90), P99: float64(d.P99), Std: float64(d.Std), Max: float64(d.Max)}
}

// benchResultJSON is event.BenchResult with its floats kept when not finite and
// its requests as arrays.
type benchResultJSON struct {
	event.BenchResult
	Config          benchConfigJSON `json:"config"`
	ReqPerSec       float           `json:"req_per_s"`
	OutputTokPerSec float           `json:"output_tok_s"`
	TotalTokPerSec  float           `json:"total_tok_s"`
	Concurrency     float           `json:"concurrency"`
	TTFT            benchDistJSON   `json:"ttft"`
	ITL             benchDistJSON   `json:"itl"`
	TPOT            benchDistJSON   `json:"tpot"`
	E2E             benchDistJSON   `json:"e2e"`
	Requests        []benchReqJSON  `json:"requests,omitempty"`
}

func resultJSON(r *event.BenchResult) *benchResultJSON {
	if r == nil {
		return nil
	}
	j := &benchResultJSON{BenchResult: *r, Config: configJSON(r.Config),
		ReqPerSec: float(r.ReqPerSec), OutputTokPerSec: float(r.OutputTokPerSec), TotalTokPerSec: float(r.TotalTokPerSec),
		Concurrency: float(r.Concurrency), TTFT: distJSON(r.TTFT), ITL: distJSON(r.ITL), TPOT: distJSON(r.TPOT), E2E: distJSON(r.E2E)}
	j.BenchResult.Requests = nil
	if len(r.Requests) > 0 {
		j.Requests = make([]benchReqJSON, len(r.Requests))
		for i, q := range r.Requests {
			j.Requests[i] = benchReqJSON(q)
		}
	}
	return j
}

func (j *benchResultJSON) result() *event.BenchResult {
	if j == nil {
		return nil
	}
	r := j.BenchResult
	r.Config = j.Config.config()
	r.ReqPerSec, r.OutputTokPerSec = float64(j.ReqPerSec), float64(j.OutputTokPerSec)
	r.TotalTokPerSec, r.Concurrency = float64(j.TotalTokPerSec), float64(j.Concurrency)
	r.TTFT, r.ITL, r.TPOT, r.E2E = j.TTFT.dist(), j.ITL.dist(), j.TPOT.dist(), j.E2E.dist()
	r.Requests = nil
	if len(j.Requests) > 0 {
		r.Requests = make([]event.BenchRequest, len(j.Requests))
		for i, q := range j.Requests {
			r.Requests[i] = event.BenchRequest(q)
		}
	}
	return &r
}

// benchReqJSON is one event.BenchRequest as an array.
type benchReqJSON event.BenchRequest

func (q benchReqJSON) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 96)
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(q.Start), 10)
	for _, v := range [...]float64{q.TTFT, q.E2E, q.TPOT, q.ITLMedian, float64(q.PromptTokens), float64(q.OutputTokens)} {
		b = append(b, ',')
		b = jsonappend.Float(b, v)
	}
	if q.Usage {
		b = append(b, ",1"...)
	} else {
		b = append(b, ",0"...)
	}
	if q.Err != "" {
		b = append(b, ',')
		b = jsonappend.String(b, q.Err)
	}
	return append(b, ']'), nil
}

func (q *benchReqJSON) UnmarshalJSON(data []byte) error {
	var arr [9][]byte
	el, err := splitArray(data, arr[:0])
	if err != nil || len(el) < 8 || len(el) > 9 {
		return fmt.Errorf("bench request: %w", errSyntax)
	}
	var r event.BenchRequest
	start, ok := parseInt(el[0])
	if !ok {
		return fmt.Errorf("bench request start: %w", errSyntax)
	}
	r.Start = time.Duration(start)
	for i, p := range []*float64{&r.TTFT, &r.E2E, &r.TPOT, &r.ITLMedian} {
		if *p, ok = parseNum(el[1+i]); !ok {
			return fmt.Errorf("bench request field %d: %w", 2+i, errSyntax)
		}
	}
	for i, p := range []*int{&r.PromptTokens, &r.OutputTokens} {
		n, ok := parseInt(el[5+i])
		if !ok || int64(int(n)) != n {
			return fmt.Errorf("bench request tokens: %w", errSyntax)
		}
		*p = int(n)
	}
	switch string(el[7]) {
	case "0":
	case "1":
		r.Usage = true
	default:
		return fmt.Errorf("bench request usage: %w", errSyntax)
	}
	if len(el) == 9 {
		if r.Err, ok = parseString(el[8]); !ok || r.Err == "" {
			return fmt.Errorf("bench request error: %w", errSyntax) // the encoder writes no empty error
		}
	}
	*q = benchReqJSON(r)
	return nil
}

type benchStartedJSON struct {
	event.BenchStarted
	Config benchConfigJSON `json:"config"`
}

func encBenchStarted(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	v, err := payloadAs[event.BenchStarted](p)
	if err != nil {
		return b, err
	}
	return appendMarshal(b, benchStartedJSON{BenchStarted: v, Config: configJSON(v.Config)})
}

func decBenchStarted(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
	var s benchStartedJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	v := s.BenchStarted
	v.Config = s.Config.config()
	return v, nil
}

type benchDoneJSON struct {
	event.BenchDone
	Result *benchResultJSON `json:"result,omitempty"`
}

func encBenchDone(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	v, err := payloadAs[event.BenchDone](p)
	if err != nil {
		return b, err
	}
	return appendMarshal(b, benchDoneJSON{BenchDone: v, Result: resultJSON(v.Result)})
}

func decBenchDone(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
	var s benchDoneJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	v := s.BenchDone
	v.Result = s.Result.result()
	return v, nil
}
