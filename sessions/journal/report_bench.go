package journal

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// BenchRunText describes one benchmark run in a line: "b2 output 62.4
// tok/s, TTFT 40.1 ms, ITL 16.0 ms, TPOT 16.1 ms, E2E 2001.5 ms (medians),
// 32 ok, 0 failed, concurrency 1, 128 in / 128 out" — or "b1 failed:
// connect: connection refused". Sanitised.
func BenchRunText(d event.BenchDone) string {
	id := sanitize.OneLine(d.ID)
	r := d.Result
	if r == nil {
		why := d.Err
		if why == "" {
			why = "no result recorded"
		}
		return id + " failed: " + sanitize.OneLine(why)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s output %s tok/s", id, FormatNum(r.OutputTokPerSec))
	if r.Completed > 0 {
		fmt.Fprintf(&b, ", TTFT %s ms, ITL %s ms, TPOT %s ms, E2E %s ms (medians)",
			FormatNum(r.TTFT.Median), FormatNum(r.ITL.Median), FormatNum(r.TPOT.Median), FormatNum(r.E2E.Median))
	}
	fmt.Fprintf(&b, ", %d ok, %d failed", r.Completed, r.Failed)
	c := r.Config
	fmt.Fprintf(&b, ", concurrency %d, %d in / %d out", c.Concurrency, c.InputLen, c.OutputLen)
	if r.Duration > 0 {
		fmt.Fprintf(&b, ", %s", r.Duration.Round(100*time.Millisecond))
	}
	if r.Cancelled {
		b.WriteString(", cancelled")
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "; errors: %s x%d", sanitize.OneLine(r.Errors[0].Err), r.Errors[0].Count)
		if len(r.Errors) > 1 {
			fmt.Fprintf(&b, " and %d more kinds", len(r.Errors)-1)
		}
	}
	return sanitize.OneLine(b.String())
}

// FormatNum is a tok/s or ms value as the journal's reports, journal diff
// and the cockpit write it: one decimal ("88.4"), none from 1000 ("1446"),
// three below 1 ("0.412"), "-" when not finite.
func FormatNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmtNum(v)
}

// RepeatText says which launch of a repeat x is: "launch 2 of 5 of the
// repeat of e1"; "" when x is not part of one.
func RepeatText(x *ledger.Experiment) string {
	if x.Repeat == nil {
		return ""
	}
	return fmt.Sprintf("launch %d of %d of the repeat of %s", x.Repeat.I, x.Repeat.N, sanitize.OneLine(x.Repeat.Series))
}

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
