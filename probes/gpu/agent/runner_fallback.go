package agent

// The Runner's publishing and its nvidia-smi fallback: the sink called one
// event at a time, a retried agent's events held until its first sample,
// and the fallback sampler run for good or beside the agent's retries.

import (
	"context"
	"fmt"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// maxHeld bounds the events a retried agent may send before its first
// sample (its hello, Xids, failures).
const maxHeld = 64

// background is a fallback sampler running in its own goroutine.
type background struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned; err is then set
	err    error
}

// publish calls the sink, one event at a time.
func (s *runState) publish(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out(e)
}

// emit publishes an event of the agent (held while it is on trial).
func (s *runState) emit(at time.Time, p event.Payload) {
	if s.trial {
		switch p.(type) {
		case event.GPUSample:
			s.promote()
		case event.GPUStale:
			return // the fallback is sampling: not stale
		case nil,
			event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
			event.ConnState, event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint,
			event.ExperimentStart, event.ExperimentUpdate, event.GPUFailure, event.GPUSource,
			event.GitAction, event.GitMoved, event.GitStatus, event.JournalStatus, event.Key,
			event.KillStep, event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice,
			event.LogReset, event.Note, event.Prefill, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress,
			event.RepoHead, event.RepoUnreadable, event.ServerFailure, event.ServerHealthy,
			event.ServerLaunched, event.ServerObserved, event.ServerReady, event.ServerStatus,
			event.Session, event.SpecDecode, event.Throughput, event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
			if len(s.held) < maxHeld {
				s.held = append(s.held, event.Event{At: at, Data: p})
			}
			return
		}
	}
	s.publish(event.Event{At: at, Data: p})
}

// promote ends a retried agent's trial at its first sample: the fallback
// is stopped (its last sample published) before the agent's held events
// and samples are, so the two never publish samples at once.
func (s *runState) promote() {
	_ = s.stopFallback()
	s.trial = false
	held := s.held
	s.held = nil
	for _, e := range held {
		s.publish(e)
	}
}

// publishSource says that nvidia-smi samples and why; retry adds that the
// agent is tried again.
func (s *runState) publishSource(reason string, retry bool) {
	reason = sanitize.String(reason)
	if retry {
		const note = "; retrying the agent in the background"
		reason = cut(reason, 300-len(note)) + note
	}
	s.publish(event.Event{At: s.c.now(), Data: event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: cut(reason, 300)}})
}

// fallback publishes why the agent is not used and runs the nvidia-smi
// sampler until ctx ends.
func (s *runState) fallback(ctx context.Context, reason string) error {
	s.publishSource(reason, false)
	if err := s.fb.Run(ctx, s.publish); err != nil {
		return fmt.Errorf("agent: fallback sampler: %w", err)
	}
	return nil
}

// startFallback runs the nvidia-smi sampler in the background.
func (s *runState) startFallback(ctx context.Context) {
	fctx, cancel := context.WithCancel(ctx)
	b := &background{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.err = s.fb.Run(fctx, s.publish)
	}()
	s.bg = b
}

// stopFallback stops the background fallback, if one runs, and waits for
// it; it returns the sampler's error (nil when it ran until stopped).
func (s *runState) stopFallback() error {
	b := s.bg
	if b == nil {
		return nil
	}
	s.bg = nil
	b.cancel()
	<-b.done
	if b.err != nil {
		return fmt.Errorf("agent: fallback sampler: %w", b.err)
	}
	return nil
}

// waitFallback lets the background fallback run until ctx ends.
func (s *runState) waitFallback(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-s.bg.done:
	}
	return s.stopFallback()
}

// stale reports that samples stopped because the connection dropped.
func (s *runState) stale(reason string) {
	now := s.c.now()
	missed := 0
	if !s.lastSample.IsZero() {
		missed = max(0, int(now.Sub(s.lastSample)/s.c.interval))
	}
	s.emit(now, event.GPUStale{LastSample: s.lastSample, Missed: missed, Reason: reason})
}
