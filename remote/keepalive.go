package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// errKeepaliveTimeout is the cause recorded when the peer stops answering.
var errKeepaliveTimeout = errors.New("no reply to keepalive requests")

// requester is the part of *ssh.Client that keepalive needs.
type requester interface {
	SendRequest(name string, wantReply bool, payload []byte) (bool, []byte, error)
}

var _ requester = (*ssh.Client)(nil)

// keepaliveWatch is what keepalive tells besides its end; every field may
// be nil.
type keepaliveWatch struct {
	// heard is when anything last arrived from the peer (heardConn): a
	// peer that sends data is alive even while a reply is slow to come.
	heard func() time.Time
	// quiet is called once a request has gone unanswered for an interval
	// with nothing heard meanwhile: with when the peer was last heard
	// from, and when it will be declared dead if it stays silent.
	quiet func(heard, dead time.Time)
	// answered is called when a quiet peer is heard from again.
	answered func()
}

// keepalive sends "keepalive@openssh.com" (want-reply) every interval until
// ctx ends. Any reply, success or failure, proves the peer alive, and so
// does any data it sent meanwhile (w.heard). Each request runs in its own
// goroutine, because SendRequest blocks for ever when the peer is frozen;
// such goroutines end when the client is closed. It returns nil when ctx
// ends, or an error once countMax requests in a row went unanswered for an
// interval each with nothing heard, or when a request fails (the
// connection is gone). The caller must then close the client. A peer that
// freezes is reported quiet within 2 intervals and declared dead within
// countMax+1.
func keepalive(ctx context.Context, c requester, interval time.Duration, countMax int, w keepaliveWatch) error {
	replies := make(chan error, 1)
	send := func() {
		go func() {
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			select {
			case replies <- err:
			case <-ctx.Done():
			}
		}()
	}
	heardSince := func(t time.Time) (time.Time, bool) {
		if w.heard == nil {
			return time.Time{}, false
		}
		h := w.heard()
		return h, h.After(t)
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	misses := 0
	var sent time.Time      // the latest request; zero while none is outstanding
	lastReply := time.Now() // the connection was just made
	alive := func() {
		if misses > 0 && w.answered != nil {
			w.answered()
		}
		misses = 0
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-replies:
			if err != nil {
				return fmt.Errorf("keepalive: %w", err)
			}
			lastReply = time.Now()
			alive()
			sent = time.Time{}
		case now := <-t.C:
			if !sent.IsZero() {
				if _, ok := heardSince(sent); ok {
					alive() // slow to answer, but sending
				} else {
					misses++
					if misses >= countMax {
						return fmt.Errorf("%w (%d in a row, %v apart)", errKeepaliveTimeout, misses, interval)
					}
					if misses == 1 && w.quiet != nil {
						last := lastReply
						if h, _ := heardSince(time.Time{}); h.After(last) {
							last = h
						}
						w.quiet(last, now.Add(time.Duration(countMax-1)*interval))
					}
				}
			}
			send()
			sent = time.Now()
			t.Reset(interval)
		}
	}
}

// monoEpoch anchors heardConn's clock: times it stores are durations since
// it, so they keep the monotonic clock.
var monoEpoch = time.Now()

// heardConn is a net.Conn that records when data last arrived on it.
type heardConn struct {
	net.Conn
	last *atomic.Int64 // since monoEpoch
}

func (c heardConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.last.Store(int64(time.Since(monoEpoch)))
	}
	return n, err
}

// heardAt turns a heardConn's record into a time.
func heardAt(last *atomic.Int64) time.Time {
	return monoEpoch.Add(time.Duration(last.Load()))
}
