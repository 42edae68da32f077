package remote

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// manage watches the live connection c and redials when it drops, until
// Close or a permanent failure.
func (s *SSH) manage(c *sshConn) {
	defer s.wg.Done()
	for c != nil {
		kctx, kcancel := context.WithCancel(s.life)
		go func() {
			err := c.client.Wait()
			s.drop(c, fmt.Errorf("connection closed: %w", err))
		}()
		go func() {
			if err := keepalive(kctx, c.client, s.opts.KeepaliveInterval, s.opts.KeepaliveCountMax); err != nil {
				s.drop(c, err)
			}
		}()
		select {
		case <-c.dead:
		case <-s.life.Done():
		}
		kcancel()
		if s.life.Err() != nil {
			c.kill(ErrClosed)
			return
		}
		c = s.redial(c.cause)
	}
}

// drop marks c dead (if it is still current) and closes it.
func (s *SSH) drop(c *sshConn, cause error) {
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
		s.ready = make(chan struct{})
	}
	s.mu.Unlock()
	c.kill(cause)
}

// redial dials with backoff until it succeeds (returning the new
// connection), fails permanently, or Close is called (both return nil).
func (s *SSH) redial(cause error) *sshConn {
	for attempt := 1; ; attempt++ {
		delay := backoff(attempt, s.opts.ReconnectMin, s.opts.ReconnectMax)
		s.hub.set(event.ConnState{Host: s.name, Conn: event.Reconnecting, Attempt: attempt, Err: cause, NextTry: time.Now().Add(delay)}, false)
		t := time.NewTimer(delay)
		select {
		case <-s.life.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		c, err := s.dial(s.life)
		if err == nil {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				c.kill(ErrClosed)
				return nil
			}
			s.conn = c
			close(s.ready)
			s.mu.Unlock()
			s.hub.set(event.ConnState{Host: s.name, Conn: event.Connected}, false)
			return c
		}
		if s.life.Err() != nil {
			return nil
		}
		if permanent(err) {
			s.mu.Lock()
			s.failed = err
			close(s.ready)
			s.mu.Unlock()
			s.hub.set(event.ConnState{Host: s.name, Conn: event.ConnFailed, Attempt: attempt, Err: err}, false)
			return nil
		}
		cause = err
	}
}

// backoff is the delay before redial attempt n (1-based): min·2^(n-1)
// capped at max, with jitter taking it down by up to half.
func backoff(n int, min, max time.Duration) time.Duration {
	d := max
	if n-1 < 32 {
		if v := min << (n - 1); v > 0 && v < max {
			d = v
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
