package remote

import (
	"context"
	"errors"
	"fmt"
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

// keepalive sends "keepalive@openssh.com" (want-reply) every interval until
// ctx ends. Any reply, success or failure, proves the peer alive. Each
// request runs in its own goroutine, because SendRequest blocks for ever
// when the peer is frozen; such goroutines end when the client is closed.
// It returns nil when ctx ends, or an error once countMax requests in a row
// went unanswered for an interval each, or when a request fails (the
// connection is gone). The caller must then close the client.
func keepalive(ctx context.Context, c requester, interval time.Duration, countMax int) error {
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
	t := time.NewTimer(interval)
	defer t.Stop()
	misses := 0
	waiting := false // a request is outstanding
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-replies:
			if err != nil {
				return fmt.Errorf("keepalive: %w", err)
			}
			misses, waiting = 0, false
		case <-t.C:
			if waiting {
				misses++
				if misses >= countMax {
					return fmt.Errorf("%w (%d in a row, %v apart)", errKeepaliveTimeout, misses, interval)
				}
			}
			send()
			waiting = true
			t.Reset(interval)
		}
	}
}
