package bench

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of Config's zero fields.
const (
	DefaultInputLen  = 128
	DefaultOutputLen = 128
	DefaultRequests  = 32
	DefaultWarmup    = 1
	DefaultSeed      = 1
	DefaultTimeout   = 10 * time.Minute
)

// Limits a Config must stay within (Validate).
const (
	MaxLen         = 1 << 20 // tokens of input or output
	MaxConcurrency = 100000
	MaxRequests    = 10000000
	MaxWarmup      = 10000
)

// Defaults returns c with each zero field set to its default: endpoint
// completions, 128 input and 128 output tokens, concurrency 1, 32
// requests (when Duration is 0 too), 1 warm-up request, seed 1, a 10 min
// timeout per request. A negative Warmup (none) is kept, so that Defaults
// is idempotent: WarmupRequests gives the count.
func (c Config) Defaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = Completions
	}
	if c.InputLen == 0 {
		c.InputLen = DefaultInputLen
	}
	if c.OutputLen == 0 {
		c.OutputLen = DefaultOutputLen
	}
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.Requests == 0 && c.Duration == 0 {
		c.Requests = DefaultRequests
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	} else if c.Warmup < 0 {
		c.Warmup = -1
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Validate reports the first field of c (after Defaults) that is out of
// range, naming it as the CLI flag does; nil when c can run.
func (c Config) Validate() error {
	switch {
	case c.Endpoint != Completions && c.Endpoint != Chat:
		return fmt.Errorf("endpoint %q: want %q or %q", c.Endpoint, Completions, Chat)
	case c.InputLen < 1 || c.InputLen > MaxLen:
		return fmt.Errorf("input length %d tokens: want 1..%d", c.InputLen, MaxLen)
	case c.OutputLen < 1 || c.OutputLen > MaxLen:
		return fmt.Errorf("output length %d tokens: want 1..%d", c.OutputLen, MaxLen)
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return fmt.Errorf("concurrency %d: want 1..%d", c.Concurrency, MaxConcurrency)
	case c.Requests < 0 || c.Requests > MaxRequests:
		return fmt.Errorf("requests %d: want 1..%d", c.Requests, MaxRequests)
	case c.Duration < 0:
		return fmt.Errorf("duration %v: must not be negative", c.Duration)
	case c.Requests > 0 && c.Duration > 0:
		return errors.New("requests or duration, not both")
	case c.Requests == 0 && c.Duration == 0:
		return errors.New("set requests or a duration")
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0:
		return fmt.Errorf("rate %v req/s: want a finite rate ≥ 0 (0: as fast as concurrency allows)", c.Rate)
	case c.Poisson && c.Rate == 0:
		return errors.New("poisson arrivals need a rate")
	case c.Warmup > MaxWarmup:
		return fmt.Errorf("warm-up %d requests: want 0..%d", c.Warmup, MaxWarmup)
	case c.Timeout < 0:
		return fmt.Errorf("timeout %v: must not be negative", c.Timeout)
	}
	return nil
}

// WarmupRequests is how many warm-up requests c runs: Warmup, 0 when it is
// negative (none), DefaultWarmup when it is 0.
func (c Config) WarmupRequests() int {
	switch {
	case c.Warmup < 0:
		return 0
	case c.Warmup == 0:
		return DefaultWarmup
	}
	return c.Warmup
}
