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
			w := keepaliveWatch{
				heard:    func() time.Time { return heardAt(c.heard) },
				quiet:    func(heard, dead time.Time) { s.setQuiet(c, true, heard, dead) },
				answered: func() { s.setQuiet(c, false, time.Time{}, time.Time{}) },
			}
			if err := keepalive(kctx, c.client, s.opts.KeepaliveInterval, s.opts.KeepaliveCountMax, w); err != nil {
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
		s.quiet = false
		s.ready = make(chan struct{})
	}
	s.mu.Unlock()
	c.kill(cause)
}

// setQuiet publishes that c, while it is the current connection, stopped
// answering (event.NotAnswering: last heard from at heard, given up at
// dead) or answers again (event.Connected). Under s.mu, so that it never
// follows the Reconnecting of c's drop.
func (s *SSH) setQuiet(c *sshConn, quiet bool, heard, dead time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != c || s.quiet == quiet {
		return
	}
	s.quiet = quiet
	st := event.ConnState{Host: s.name, Conn: event.Connected}
	if quiet {
		st = event.ConnState{Host: s.name, Conn: event.NotAnswering, Heard: heard, NextTry: dead}
	}
	s.hub.set(st, false)
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

// errGivenUp is the cause recorded when RetryNow gives up a connection
// that is not answering.
var errGivenUp = errors.New("not answering: given up to redial now")

// RetryNow redials without waiting: while the connection is down, the
// next dial starts at once (or as soon as the dial under way fails);
// while it is not answering (event.NotAnswering), it is given up and
// redialed at once, its commands failing with ErrDisconnected. It reports
// whether it did either: false while the connection is up and answering,
// after Close, or after a permanent failure. It does not wait for the
// dial.
func (s *SSH) RetryNow() bool {
	s.mu.Lock()
	c := s.conn
	if s.closed || s.failed != nil || c != nil && !s.quiet {
		s.mu.Unlock()
		return false
	}
	select {
	case s.retry <- struct{}{}: // a successful redial drains it under s.mu
	default: // one is pending already
	}
	s.mu.Unlock()
	if c != nil {
		s.drop(c, errGivenUp)
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
