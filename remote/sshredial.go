package remote

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"golang.org/x/crypto/ssh"
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
// While the host refuses quickly the backoff is capped at
// ReconnectRefusedMax; RetryNow cuts a wait short.
func (s *SSH) redial(cause error) *sshConn {
	quick := true // the drop itself says nothing slow; the first waits are short anyway
	for attempt := 1; ; attempt++ {
		hi := s.opts.ReconnectMax
		if quick {
			hi = s.opts.ReconnectRefusedMax
		}
		delay := backoff(attempt, s.opts.ReconnectMin, hi)
		s.hub.set(event.ConnState{Host: s.name, Conn: event.Reconnecting, Attempt: attempt, Err: cause, NextTry: time.Now().Add(delay)}, false)
		t := time.NewTimer(delay)
		select {
		case <-s.life.Done():
			t.Stop()
			return nil
		case <-s.retry:
			t.Stop()
		case <-t.C:
		}
		start := time.Now()
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
			select {
			case <-s.retry: // asked for during the dial that just succeeded
			default:
			}
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
		quick = refusedQuickly(err, time.Since(start))
	}
}

// quickFailure is how soon a dial that fails counts as the host refusing:
// it answered (a reset, an ICMP error, a jump host's refusal) rather than
// kept the dial waiting.
const quickFailure = time.Second

// refusedQuickly reports whether a dial that failed with err after took
// was the host refusing, not a timeout: redialing soon then costs nothing
// and finds a restarted sshd at once.
func refusedQuickly(err error, took time.Duration) bool {
	var oce *ssh.OpenChannelError // a ProxyJump hop could not connect to the next host
	return took < quickFailure || errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &oce)
}

// RetryNow cuts the wait before the next redial short: while the
// connection is down, the next dial starts at once, or as soon as the dial
// under way fails. It reports whether the connection is being redialed
// (false while it is up, after Close or after a permanent failure). It
// does not block.
func (s *SSH) RetryNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock() // a successful redial drains the slot under it
	if s.conn != nil || s.closed || s.failed != nil {
		return false
	}
	select {
	case s.retry <- struct{}{}:
	default: // one is pending already
	}
	return true
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
