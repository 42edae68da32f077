package sim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

const (
	decodeLogInterval = 40   // SGLang's default: one decode line per 40 forward steps
	numDraftTokens    = 4    // EAGLE-3 draft tokens per verify step (accept rate denominator)
	idleGapChance     = 0.12 // after the synthetic workload drains, chance of an idle pause
	prefillTokPerSec  = 20000
	prefillFixed      = 15 * time.Millisecond
)

// request is one generation the engine decodes: an HTTP request, the
// warm-up request, or a synthetic one that keeps the demo busy.
type request struct {
	synthetic              bool // the demo's own load: yields to HTTP requests
	prompt, max, generated int
	tokens                 chan int      // tokens produced per forward step; closed when finished
	done                   chan struct{} // closed when finished or dropped
	cancelled              atomic.Bool
}

// engine is a continuous-batching decode loop on a virtual (model) clock:
// every forward step advances the clock by exactly tokens / rate, and the
// loop sleeps until the matching wall time (clock / time scale), so the
// throughput it logs is the modelled one however coarse the timers are.
type engine struct {
	s *server

	mu      sync.Mutex
	pending []*request
	auto    bool
	wake    chan struct{}

	// owned by run's goroutine
	running     []*request
	parked      []*request // synthetic requests set aside while HTTP ones run
	wallStart   time.Time
	clock       time.Duration // model time since wallStart
	forwardCt   int
	lastLog     time.Duration
	tokSinceLog int
	batchSteps  int // Σ batch size over the window's steps (for accept len)
	noise       float64
}

// modelStartup is how long the start-up the sim compresses into a few
// seconds takes on a real 8-GPU box (weights, KV cache, CUDA graphs).
// SGLang measures its first decode line from scheduler init, so that line
// reads near zero (0.39 tok/s in sglang#11948); starting the engine's
// "previous decode line" this far back reproduces it.
const modelStartup = 4 * time.Minute

func newEngine(s *server) *engine {
	return &engine{s: s, wake: make(chan struct{}, 1), lastLog: -modelStartup}
}

// submit queues a request of prompt tokens that generates max tokens.
func (e *engine) submit(prompt, max int) *request {
	if max < 1 {
		max = 1
	}
	r := &request{prompt: prompt, max: max, tokens: make(chan int, max+1), done: make(chan struct{})}
	e.mu.Lock()
	e.pending = append(e.pending, r)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return r
}

// setAuto turns the synthetic workload on or off.
func (e *engine) setAuto(on bool) {
	e.mu.Lock()
	e.auto = on
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *engine) run(ctx context.Context) {
	e.wallStart = time.Now()
	e.noise = e.sampleNoise()
	for ctx.Err() == nil {
		e.mu.Lock()
		fresh, auto := e.pending, e.auto
		e.pending = nil
		e.mu.Unlock()
		e.yieldToRequests(fresh, auto)
		if len(e.running) == 0 && len(fresh) == 0 {
			e.s.set(-1, 0)
			if !auto {
				e.idle(ctx, -1)
				continue
			}
			if e.s.randFloat() < idleGapChance && e.forwardCt > 0 {
				gap := time.Duration((6 + 9*e.s.randFloat()) * float64(time.Second))
				if !e.idle(ctx, gap) {
					continue // woken early (an HTTP request) or stopping
				}
			}
			prompt := 300 + int(900*e.s.randFloat())
			max := 1500 + int(2500*e.s.randFloat())
			fresh = append(fresh, &request{synthetic: true, prompt: prompt, max: max, tokens: make(chan int, max+1), done: make(chan struct{})})
		}
		if len(fresh) > 0 {
			e.prefill(ctx, fresh)
		}
		if len(e.running) > 0 {
			e.step(ctx)
		}
	}
	for _, r := range e.running {
		e.finish(r)
	}
	for _, r := range e.parked {
		e.finish(r)
	}
	e.mu.Lock()
	for _, r := range e.pending {
		e.finish(r)
	}
	e.pending = nil
	e.mu.Unlock()
}

// yieldToRequests sets the synthetic workload aside while HTTP requests
// (fresh or running) are being served, so a benchmark measures the batch
// of its own requests at the modelled rate, and brings it back when they
// are done (dropping it when the workload was turned off meanwhile).
func (e *engine) yieldToRequests(fresh []*request, auto bool) {
	served := false
	for _, r := range fresh {
		served = served || !r.synthetic
	}
	for _, r := range e.running {
		served = served || !r.synthetic
	}
	if served {
		live := e.running[:0]
		for _, r := range e.running {
			if r.synthetic {
				e.parked = append(e.parked, r)
			} else {
				live = append(live, r)
			}
		}
		clear(e.running[len(live):])
		e.running = live
		return
	}
	if len(e.parked) == 0 {
		return
	}
	if !auto {
		for _, r := range e.parked {
			e.finish(r)
		}
	} else {
		e.running = append(e.running, e.parked...)
	}
	e.parked = nil
}

// idle waits up to d of model time (forever when d < 0) for new work; it
// returns true when the full time passed.
func (e *engine) idle(ctx context.Context, d time.Duration) bool {
	var timeout <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(e.s.scaled(d))
		defer t.Stop()
		timeout = t.C
	}
	full := false
	select {
	case <-ctx.Done():
	case <-e.wake:
	case <-timeout:
		full = true
	}
	// Idle time counts on the model clock, so the first decode line after
	// a pause reads near zero, as SGLang's does.
	if now := time.Duration(float64(time.Since(e.wallStart)) * e.s.opt.timeScale); now > e.clock {
		e.clock = now
	}
	return full
}

// advance moves the model clock by d and sleeps until the matching wall time.
func (e *engine) advance(ctx context.Context, d time.Duration) {
	e.clock += d
	wait := time.Until(e.wallStart.Add(e.s.scaled(e.clock)))
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (e *engine) prefill(ctx context.Context, fresh []*request) {
	newTok := 0
	for _, r := range fresh {
		newTok += r.prompt
	}
	e.s.set(-1, 1)
	if e.s.opt.replayLog == "" {
		e.s.log.line(e.s.rankTag(0), fmt.Sprintf("Prefill batch. #new-seq: %d, #new-token: %d, #cached-token: 0, token usage: %.2f, #running-req: %d, #queue-req: 0, ",
			len(fresh), newTok, float64(e.kvTokens()+newTok)/float64(e.s.kvToks), len(e.running)))
	}
	e.advance(ctx, prefillFixed+time.Duration(float64(newTok)/prefillTokPerSec*float64(time.Second)))
	e.running = append(e.running, fresh...)
}

func (e *engine) kvTokens() int {
	n := 0
	for _, r := range e.running {
		n += r.prompt + r.generated
	}
	return n
}

// tokensPerStep is how many tokens one request gains in a forward step:
// 1 without speculation; with EAGLE-3 1, 2 or 3 (mean 2.3 accepted).
func (e *engine) tokensPerStep() int {
	if !e.s.opt.eagle {
		return 1
	}
	switch x := e.s.randFloat(); {
	case x < 0.2:
		return 1
	case x < 0.5:
		return 2
	default:
		return 3
	}
}

func (e *engine) step(ctx context.Context) {
	e.s.set(-1, 1)
	bs := len(e.running)
	gains := make([]int, bs)
	total := 0
	for i, r := range e.running {
		g := min(e.tokensPerStep(), r.max-r.generated)
		gains[i] = g
		total += g
	}
	rate := batchRate(e.s.rate, bs) * e.noise
	e.advance(ctx, time.Duration(float64(total)/rate*float64(time.Second)))
	live := e.running[:0]
	for i, r := range e.running {
		r.generated += gains[i]
		r.tokens <- gains[i] // buffered for every token: never blocks
		if r.generated >= r.max || r.cancelled.Load() {
			e.finish(r)
			continue
		}
		live = append(live, r)
	}
	e.tokSinceLog += total
	e.batchSteps += bs
	e.forwardCt++
	if e.forwardCt%decodeLogInterval == 0 {
		e.logDecode(bs)
	}
	clear(e.running[len(live):])
	e.running = live
}

func (e *engine) finish(r *request) {
	select {
	case <-r.done:
	default:
		close(r.tokens)
		close(r.done)
	}
}

// logDecode writes SGLang's decode line (late-2025 format: "Decode batch. "
// then key: value pairs, each followed by ", "). gen throughput is the
// tokens since the previous decode line over the model time since then.
func (e *engine) logDecode(bs int) {
	secs := (e.clock - e.lastLog).Seconds()
	thr := 0.0
	if secs > 0 {
		thr = float64(e.tokSinceLog) / secs
	}
	spec := ""
	if e.s.opt.eagle && e.batchSteps > 0 {
		acc := float64(e.tokSinceLog) / float64(e.batchSteps)
		spec = fmt.Sprintf("accept len: %.2f, accept rate: %.2f, ", acc, acc/numDraftTokens)
	}
	kv := e.kvTokens()
	if e.s.opt.replayLog == "" {
		ranks := 1
		if e.s.opt.logPrefix == "dp" {
			ranks = e.s.opt.dp // every DP rank logs its share; the shares sum to the total
		}
		for r := 0; r < ranks; r++ {
			e.s.log.line(e.s.rankTag(r), fmt.Sprintf("Decode batch. #running-req: %d, #token: %d, token usage: %.2f, %scuda graph: True, gen throughput (token/s): %.2f, #queue-req: 0, ",
				bs, kv, float64(kv)/float64(e.s.kvToks), spec, thr/float64(ranks)))
		}
	}
	e.lastLog = e.clock
	e.tokSinceLog, e.batchSteps = 0, 0
	e.noise = e.sampleNoise()
}

func (e *engine) sampleNoise() float64 {
	e.s.rngMu.Lock()
	defer e.s.rngMu.Unlock()
	return sampleNoise(e.s.rng)
}
