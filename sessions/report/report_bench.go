package report

import (
	"math"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// JSONBenchRun is one benchmark run in the JSON report: its summary
// metrics (the per-request list is left out; the journal keeps it).
// Numbers that are not finite are null.
type JSONBenchRun struct {
	ID              string                  `json:"id"`
	Err             string                  `json:"err,omitempty"` // why it could not run
	Target          string                  `json:"target,omitempty"`
	Config          *event.BenchConfig      `json:"config,omitempty"`
	Started         *time.Time              `json:"started,omitempty"`
	DurationS       float64                 `json:"duration_s,omitempty"`
	Cancelled       bool                    `json:"cancelled,omitempty"`
	Completed       int                     `json:"completed"`
	Failed          int                     `json:"failed"`
	OutputTokPerSec *float64                `json:"output_tok_s"`
	TotalTokPerSec  *float64                `json:"total_tok_s"`
	ReqPerSec       *float64                `json:"req_per_s"`
	TTFTMedianMs    *float64                `json:"ttft_median_ms"`
	ITLMedianMs     *float64                `json:"itl_median_ms"`
	TPOTMedianMs    *float64                `json:"tpot_median_ms"`
	E2EMedianMs     *float64                `json:"e2e_median_ms"`
	TTFTP99Ms       *float64                `json:"ttft_p99_ms"`
	ITLP99Ms        *float64                `json:"itl_p99_ms"`
	Errors          []event.BenchErrorCount `json:"errors,omitempty"`
}

func finitePtr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// benchRunJSON is d's JSONBenchRun, text sanitised.
func benchRunJSON(d event.BenchDone) JSONBenchRun {
	j := JSONBenchRun{ID: sanitize.OneLine(d.ID), Err: sanitize.OneLine(d.Err)}
	r := d.Result
	if r == nil {
		if j.Err == "" {
			j.Err = "no result recorded"
		}
		return j
	}
	c := r.Config
	if math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		c.Rate = 0 // as fast as possible
	}
	c.Model, c.PromptFile = sanitize.OneLine(c.Model), sanitize.OneLine(c.PromptFile)
	started := r.Started
	j.Target, j.Config, j.Started = sanitize.OneLine(r.Target), &c, &started
	j.DurationS, j.Cancelled, j.Completed, j.Failed = r.Duration.Seconds(), r.Cancelled, r.Completed, r.Failed
	j.OutputTokPerSec, j.TotalTokPerSec, j.ReqPerSec = finitePtr(r.OutputTokPerSec), finitePtr(r.TotalTokPerSec), finitePtr(r.ReqPerSec)
	if r.Completed > 0 {
		j.TTFTMedianMs, j.ITLMedianMs, j.TPOTMedianMs, j.E2EMedianMs = finitePtr(r.TTFT.Median), finitePtr(r.ITL.Median), finitePtr(r.TPOT.Median), finitePtr(r.E2E.Median)
		j.TTFTP99Ms, j.ITLP99Ms = finitePtr(r.TTFT.P99), finitePtr(r.ITL.P99)
	}
	for _, e := range r.Errors {
		j.Errors = append(j.Errors, event.BenchErrorCount{Err: sanitize.OneLine(e.Err), Count: e.Count})
	}
	return j
}
