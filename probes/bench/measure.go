package bench

import (
	"cmp"
	"context"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// measure runs the measured requests and fills res.
func (r *runner) measure(ctx context.Context, res *event.BenchResult) {
	cfg := r.cfg
	start := time.Now()
	res.Started = start
	// dctx ends the sending: the caller's ctx, or the run's duration.
	dctx, stopSending := ctx, context.CancelFunc(func() {})
	if cfg.Duration > 0 {
		r.notAfter = start.Add(cfg.Duration)
		dctx, stopSending = context.WithDeadline(ctx, r.notAfter)
	}
	defer stopSending()

	var (
		mu     sync.Mutex
		blocks [][]result // the finished requests, in blocks that never move
		wg     sync.WaitGroup
		sem    = make(chan struct{}, cfg.Concurrency)
	)
	snapshot := func() event.BenchProgress {
		el := time.Since(start)
		p := event.BenchProgress{Done: int(r.done.Load()), Failed: int(r.failed.Load()), Total: cfg.Requests, Elapsed: el,
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

	// finish records q, a measured request sent at q.sent.
	finish := func(q result) {
		if q.unsent {
			return // the duration ran out between its release and its sending
		}
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
		if n := len(blocks); n == 0 || len(blocks[n-1]) == cap(blocks[n-1]) {
			size := resultBlock
			if n == 0 && cfg.Requests > 0 {
				size = min(cfg.Requests, resultBlock) // a short run's one block
			}
			blocks = append(blocks, make([]result, 0, size))
		}
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], q)
		mu.Unlock()
	}

	if cfg.Rate == 0 {
		// As fast as possible: Concurrency workers, each sending the next
		// request as soon as its last one ended, with no hand-off to a
		// sending goroutine (and a goroutine's stack grown once, not per
		// request).
		var next atomic.Int64
		for range cfg.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for dctx.Err() == nil {
					i := int(next.Add(1) - 1)
					if cfg.Requests > 0 && i >= cfg.Requests {
						return
					}
					body, prompt := r.body(i, false)
					r.inFlight.Add(1)
					q := r.do(ctx, body, prompt, &r.outTokens)
					r.inFlight.Add(-1)
					finish(q)
				}
			}()
		}
	} else {
		r.schedule(dctx, start, &wg, sem, func(body []byte, prompt int) {
			q := r.do(ctx, body, prompt, &r.outTokens)
			<-sem
			r.inFlight.Add(-1)
			finish(q)
		})
	}
	wg.Wait()
	end := time.Now()
	close(stopProgress)
	<-progressDone
	res.Cancelled = ctx.Err() != nil
	res.Duration = end.Sub(start)
	summarise(res, slices.Concat(blocks...))
	r.report(event.BenchProgress{Done: res.Completed + res.Failed, Failed: res.Failed, Total: cfg.Requests, Elapsed: res.Duration,
		Limit: cfg.Duration, OutTokens: res.OutputTokens, TokPerSec: res.OutputTokPerSec})
}

// resultBlock is how many finished requests measure keeps in one block:
// appending to blocks copies no request already kept (a doubling slice
// of them costs a run of many short requests a few per cent of its CPU).
const resultBlock = 4096

// schedule sends the measured requests at cfg's Rate: each one, when it
// is due and one of sem's Concurrency slots is free, runs send in a
// goroutine of its own (which frees the slot), until the requests are all
// sent or dctx ends.
func (r *runner) schedule(dctx context.Context, start time.Time, wg *sync.WaitGroup, sem chan struct{}, send func(body []byte, prompt int)) {
	cfg := r.cfg
	sched := newArrivals(cfg)
	for i := 0; cfg.Requests == 0 || i < cfg.Requests; i++ {
		body, prompt := r.body(i, false)
		due := sched.next()
		if wait := time.Until(start.Add(due)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-dctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case <-dctx.Done():
			return
		case sem <- struct{}{}:
		}
		if dctx.Err() != nil {
			<-sem
			return
		}
		r.inFlight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(body, prompt)
		}()
	}
}

// arrivals is the measured requests' send schedule.
type arrivals struct {
	rate    float64 // requests/s; 0: none (every request is due at once)
	poisson bool
	rng     *rand.Rand
	due     time.Duration
}

// newArrivals is cfg's schedule: with a Rate, even gaps of 1/Rate s, or
// with Poisson exponential gaps of mean 1/Rate s drawn from a stream of
// Seed of its own (so the prompts do not change it); without, none.
func newArrivals(cfg event.BenchConfig) *arrivals {
	return &arrivals{rate: cfg.Rate, poisson: cfg.Poisson, rng: rand.New(rand.NewPCG(cfg.Seed, 1<<61))}
}

// next returns when the next request is due, as an offset from the start
// of the measured part: 0 for the first, then the sum of the gaps so far.
func (a *arrivals) next() time.Duration {
	d := a.due
	if a.rate > 0 {
		gap := 1 / a.rate
		if a.poisson {
			gap = a.rng.ExpFloat64() / a.rate
		}
		a.due += time.Duration(gap * float64(time.Second))
	}
	return d
}

// summarise computes res's counts, rates and distributions from the
// finished requests (res.Duration set), as sglang.bench_serving does: every
// metric over the successful requests only, TPOT over those with more
// than one output token, ITL over every gap of every request.
func summarise(res *event.BenchResult, results []result) {
	slices.SortFunc(results, func(a, b result) int { return cmp.Compare(a.Start, b.Start) })
	var ttft, tpot, e2e, itl []float64
	errs := map[string]int{}
	e2eSum := 0.0
	res.RequestsTotal = len(results)
	res.Requests = storedRequests(results, MaxStoredRequests)
	for _, q := range results {
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
		res.Errors = append(res.Errors, event.BenchErrorCount{Err: msg, Count: n})
	}
	slices.SortFunc(res.Errors, func(a, b event.BenchErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Err, b.Err))
	})
	if len(res.Errors) > maxErrors {
		res.Errors = res.Errors[:maxErrors]
	}
}

// storedRequests is what a BenchResult keeps of results (in sending order):
// all of them when there are at most max, else an even sample of max,
// request ⌊i·len/max⌋ for i in [0, max): deterministic, spread over the
// whole run.
func storedRequests(results []result, max int) []event.BenchRequest {
	n := len(results)
	if n <= max {
		out := make([]event.BenchRequest, n)
		for i := range results {
			out[i] = results[i].BenchRequest
		}
		return out
	}
	out := make([]event.BenchRequest, max)
	for i := range out {
		out[i] = results[i*n/max].BenchRequest
	}
	return out
}
