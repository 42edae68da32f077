package bench

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// measure runs the measured requests and fills res.
func (r *runner) measure(ctx context.Context, res *Result) {
	cfg := r.cfg
	start := time.Now()
	res.Started = start
	// dctx ends the sending: the caller's ctx, or the run's duration.
	dctx, stopSending := ctx, context.CancelFunc(func() {})
	if cfg.Duration > 0 {
		dctx, stopSending = context.WithDeadline(ctx, start.Add(cfg.Duration))
	}
	defer stopSending()

	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
		sem     = make(chan struct{}, cfg.Concurrency)
	)
	snapshot := func() Progress {
		el := time.Since(start)
		p := Progress{Done: int(r.done.Load()), Failed: int(r.failed.Load()), Total: cfg.Requests, Elapsed: el,
			Limit: cfg.Duration, InFlight: int(r.inFlight.Load()), OutTokens: int(r.outTokens.Load())}
		if s := el.Seconds(); s > 0 {
			p.TokPerSec = float64(p.OutTokens) / s
		}
		return p
	}
	stopProgress, progressDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressDone)
		t := time.NewTicker(ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				r.report(snapshot())
			}
		}
	}()

	arrivals := rand.New(rand.NewPCG(cfg.Seed, 1<<61))
	var due time.Duration // when the next request is due, from start
send:
	for i := 0; cfg.Requests == 0 || i < cfg.Requests; i++ {
		body, prompt := r.body(i, false)
		if wait := time.Until(start.Add(due)); cfg.Rate > 0 && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-dctx.Done():
				t.Stop()
				break send
			case <-t.C:
			}
		}
		select {
		case <-dctx.Done():
			break send
		case sem <- struct{}{}:
		}
		if dctx.Err() != nil {
			<-sem
			break
		}
		r.inFlight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := r.do(ctx, body, prompt, &r.outTokens)
			<-sem
			r.inFlight.Add(-1)
			if q.Err != "" && ctx.Err() != nil {
				r.outTokens.Add(-int64(q.chunks)) // abandoned: not counted
				return
			}
			if q.Err != "" {
				r.outTokens.Add(-int64(q.chunks))
				r.failed.Add(1)
			} else {
				r.outTokens.Add(int64(q.OutputTokens - q.chunks)) // usage's count replaces the chunks'
			}
			r.done.Add(1)
			q.Start = q.sent.Sub(start)
			mu.Lock()
			results = append(results, q)
			mu.Unlock()
		}()
		if cfg.Rate > 0 {
			gap := 1 / cfg.Rate
			if cfg.Poisson {
				gap = arrivals.ExpFloat64() / cfg.Rate
			}
			due += time.Duration(gap * float64(time.Second))
		}
	}
	wg.Wait()
	end := time.Now()
	close(stopProgress)
	<-progressDone
	res.Cancelled = ctx.Err() != nil
	res.Duration = end.Sub(start)
	summarise(res, results)
	r.report(Progress{Done: res.Completed + res.Failed, Failed: res.Failed, Total: cfg.Requests, Elapsed: res.Duration,
		Limit: cfg.Duration, OutTokens: res.OutputTokens, TokPerSec: res.OutputTokPerSec})
}

// summarise computes res's counts, rates and distributions from the
// finished requests (res.Duration set), as sglang.bench_serving does: every
// metric over the successful requests only, TPOT over those with more
// than one output token, ITL over every gap of every request.
func summarise(res *Result, results []result) {
	slices.SortFunc(results, func(a, b result) int { return cmp.Compare(a.Start, b.Start) })
	var ttft, tpot, e2e, itl []float64
	errs := map[string]int{}
	e2eSum := 0.0
	res.Requests = make([]Request, 0, len(results))
	for _, q := range results {
		res.Requests = append(res.Requests, q.Request)
		if q.Err != "" {
			res.Failed++
			errs[q.Err]++
			continue
		}
		res.Completed++
		res.InputTokens += q.PromptTokens
		res.OutputTokens += q.OutputTokens
		ttft = append(ttft, q.TTFT)
		e2e = append(e2e, q.E2E)
		e2eSum += q.E2E
		if q.OutputTokens > 1 {
			tpot = append(tpot, q.TPOT)
		}
		itl = append(itl, q.itl...)
	}
	if s := res.Duration.Seconds(); s > 0 {
		res.ReqPerSec = float64(res.Completed) / s
		res.OutputTokPerSec = float64(res.OutputTokens) / s
		res.TotalTokPerSec = float64(res.InputTokens+res.OutputTokens) / s
		res.Concurrency = e2eSum / 1000 / s
	}
	res.TTFT, res.ITL, res.TPOT, res.E2E = NewDist(ttft), NewDist(itl), NewDist(tpot), NewDist(e2e)
	res.Errors = nil
	for msg, n := range errs {
		res.Errors = append(res.Errors, ErrorCount{Err: msg, Count: n})
	}
	slices.SortFunc(res.Errors, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Err, b.Err))
	})
	if len(res.Errors) > maxErrors {
		res.Errors = res.Errors[:maxErrors]
	}
}
