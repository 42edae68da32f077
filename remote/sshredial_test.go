package remote

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"golang.org/x/crypto/ssh"
)

// nextState waits up to d for the next state on ch that satisfies ok.
func nextState(t *testing.T, ch <-chan event.ConnState, d time.Duration, what string, ok func(event.ConnState) bool) event.ConnState {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case s, open := <-ch:
			if !open {
				t.Fatalf("watch closed while waiting for %s", what)
			}
			if ok(s) {
				return s
			}
		case <-deadline:
			t.Fatalf("no %s state within %v", what, d)
		}
	}
}

func isConnected(s event.ConnState) bool    { return s.Conn == event.Connected }
func isReconnecting(s event.ConnState) bool { return s.Conn == event.Reconnecting }

// TestSSHRedialsSoonAfterRefusals: with the default backoff, a host that
// refused connections for 8 s is reached within 5 s of listening again,
// even when it comes back right after a refused dial (the longest wait).
// Issue 19: 14 s, the backoff having grown to 8-16 s.
func TestSSHRedialsSoonAfterRefusals(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	opts := testOptions(t, srv, known)
	opts.ReconnectMin, opts.ReconnectMax = 0, 0 // the defaults, as a user has them
	h := dialTest(t, srv.Target(), opts)
	states := h.Watch(t.Context())
	<-states

	srv.Stop()
	stopped := time.Now()
	nextState(t, states, 10*time.Second, "reconnecting", isReconnecting)
	time.Sleep(time.Until(stopped.Add(8 * time.Second)))
	select {
	case <-states: // published before the 8 s were up
	default:
	}
	s := nextState(t, states, 40*time.Second, "a redial refused after 8 s", isReconnecting)
	wait := time.Until(s.NextTry)
	back := time.Now()
	srv.Restart()
	nextState(t, states, 40*time.Second, "connected", isConnected)
	if d := time.Since(back); d > 5*time.Second {
		t.Errorf("reconnected %v after sshd listened again (attempt %d waited %v), want at most 5s", d.Round(time.Millisecond), s.Attempt, wait.Round(time.Millisecond))
	}
	if res, err := h.Run(context.Background(), "echo back", nil); err != nil || string(res.Stdout) != "back\n" {
		t.Errorf("Run after reconnect: %q %v", res.Stdout, err)
	}
}

// TestSSHRetryNow: RetryNow redials at once, where the backoff would wait
// a minute; it says false while the connection is up.
func TestSSHRetryNow(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	opts := testOptions(t, srv, known)
	opts.ReconnectMin, opts.ReconnectMax, opts.ReconnectRefusedMax = time.Minute, time.Minute, time.Minute
	h := dialTest(t, srv.Target(), opts)
	if h.RetryNow() {
		t.Error("RetryNow while connected = true")
	}
	states := h.Watch(t.Context())
	<-states

	srv.Stop()
	s := nextState(t, states, 10*time.Second, "reconnecting", isReconnecting)
	if in := time.Until(s.NextTry); in < 20*time.Second {
		t.Fatalf("next dial in %v: the test wants a long wait", in)
	}
	srv.Restart()
	start := time.Now()
	if !h.RetryNow() {
		t.Fatal("RetryNow while reconnecting = false")
	}
	nextState(t, states, 10*time.Second, "connected", isConnected)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("connected %v after RetryNow", d)
	}
	if res, err := h.Run(context.Background(), "echo now", nil); err != nil || string(res.Stdout) != "now\n" {
		t.Errorf("Run after RetryNow: %q %v", res.Stdout, err)
	}
	if h.RetryNow() {
		t.Error("RetryNow after the reconnect = true")
	}
	h.Close()
	if h.RetryNow() {
		t.Error("RetryNow after Close = true")
	}
}

func TestRefusedQuickly(t *testing.T) {
	refused := fmt.Errorf("remote: dial 10.0.0.1:22: %w", syscall.ECONNREFUSED)
	timeout := fmt.Errorf("remote: dial 10.0.0.1:22: %w", context.DeadlineExceeded)
	hop := fmt.Errorf("remote: dial gpu:22: %w", &ssh.OpenChannelError{Reason: ssh.ConnectionFailed, Message: "Connection refused"})
	for _, c := range []struct {
		err  error
		took time.Duration
		want bool
	}{
		{refused, 10 * time.Millisecond, true},
		{refused, 3 * time.Second, true}, // a slow link, but the host answered
		{hop, 2 * time.Second, true},
		{errors.New("EOF"), 200 * time.Millisecond, true}, // reset during the handshake
		{timeout, 15 * time.Second, false},
		{errors.New("EOF"), 5 * time.Second, false},
	} {
		if got := refusedQuickly(c.err, c.took); got != c.want {
			t.Errorf("refusedQuickly(%v, %v) = %v, want %v", c.err, c.took, got, c.want)
		}
	}
}
