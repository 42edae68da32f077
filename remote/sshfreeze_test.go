package remote

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func isNotAnswering(s event.ConnState) bool { return s.Conn == event.NotAnswering }

// TestSSHFrozenSSHDShownAndRedialed: the sshd processes serving the
// connection are stopped (SIGSTOP), the listener still serves. With the
// default keepalive the state says not answering within 10 s of the
// freeze, and the connection is given up within 10 s and redialed; after
// SIGCONT commands work. Issue 19: 17 s to detect, the header saying
// connected meanwhile.
func TestSSHFrozenSSHDShownAndRedialed(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	opts := testOptions(t, srv, known)
	opts.KeepaliveInterval, opts.KeepaliveCountMax = 0, 0 // the defaults, as a user has them
	opts.ReconnectMin, opts.ReconnectMax = 0, 0
	h := dialTest(t, srv.Target(), opts)
	states := h.Watch(t.Context())
	<-states

	p := startTicking(t, context.Background(), h, "0.1")

	frozen := time.Now()
	thaw := srv.Freeze()
	s := nextState(t, states, 15*time.Second, "not answering", isNotAnswering)
	shown := time.Since(frozen)
	if d := shown; d > 10*time.Second {
		t.Errorf("not answering shown %v after the freeze, want at most 10s", d)
	}
	if now := time.Now(); s.Heard.IsZero() || s.Heard.After(now) || now.Sub(s.Heard) > 10*time.Second || !s.NextTry.After(s.Heard) {
		t.Errorf("not answering state %+v", s)
	}
	if err := waitErr(t, p); !errors.Is(err, ErrDisconnected) || !errors.Is(err, errKeepaliveTimeout) {
		t.Fatalf("Wait = %v, want ErrDisconnected from a keepalive timeout", err)
	}
	gone := time.Since(frozen)
	if d := gone; d > 10*time.Second {
		t.Errorf("given up %v after the freeze, want at most 10s", d)
	}
	t.Logf("not answering after %v, given up after %v", shown.Round(time.Millisecond), gone.Round(time.Millisecond))
	nextState(t, states, 10*time.Second, "connected again (a new connection)", isConnected)
	thaw()
	if res, err := h.Run(context.Background(), "echo alive", nil); err != nil || string(res.Stdout) != "alive\n" {
		t.Errorf("Run after the thaw: %q %v", res.Stdout, err)
	}
}

// TestSSHShortFreezeLosesNothing: a freeze shorter than the keepalive's
// dead declaration shows not answering, then connected again on the same
// connection, never reconnecting: the command's output goes on where it
// stopped, no line lost or repeated.
func TestSSHShortFreezeLosesNothing(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	opts := testOptions(t, srv, known)
	opts.KeepaliveInterval, opts.KeepaliveCountMax = 200*time.Millisecond, 25 // dead after 5 s
	h := dialTest(t, srv.Target(), opts)
	states := h.Watch(t.Context())
	<-states

	p, err := h.Start(context.Background(), "i=0; while :; do i=$((i+1)); echo $i; sleep 0.02; done")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go io.Copy(io.Discard, p.Stderr())
	lines := make(chan string, 1<<12)
	go func() {
		sc := bufio.NewScanner(p.Stdout())
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := 1
	read := func(n int) {
		t.Helper()
		for range n {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("output ended after %d lines", next-1)
				}
				if l != strconv.Itoa(next) {
					t.Fatalf("line %q, want %d: lost or repeated", l, next)
				}
				next++
			case <-time.After(10 * time.Second):
				t.Fatalf("no line %d within 10s", next)
			}
		}
	}
	read(5)

	select {
	case <-states:
	default:
	}
	thaw := srv.Freeze()
	nextState(t, states, 5*time.Second, "not answering", isNotAnswering)
	thaw()
	s := nextState(t, states, 5*time.Second, "answering again", func(s event.ConnState) bool {
		if s.Conn == event.Reconnecting {
			t.Fatalf("reconnecting after a short freeze: %+v", s)
		}
		return s.Conn == event.Connected
	})
	if s.Attempt != 0 {
		t.Errorf("answering again: %+v", s)
	}
	read(len(lines) + 20) // what was held during the freeze, and more
	if res, err := h.Run(context.Background(), "echo alive", nil); err != nil || string(res.Stdout) != "alive\n" {
		t.Errorf("Run after the thaw: %q %v", res.Stdout, err)
	}
}

// TestSSHRetryNowWhileNotAnswering: RetryNow gives up a connection that is
// not answering and redials at once, long before the keepalive would.
func TestSSHRetryNowWhileNotAnswering(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	opts := testOptions(t, srv, known)
	opts.KeepaliveInterval, opts.KeepaliveCountMax = 200*time.Millisecond, 100 // dead after 20 s
	opts.ReconnectMin, opts.ReconnectMax, opts.ReconnectRefusedMax = time.Minute, time.Minute, time.Minute
	h := dialTest(t, srv.Target(), opts)
	states := h.Watch(t.Context())
	<-states

	thaw := srv.Freeze()
	defer thaw()
	nextState(t, states, 5*time.Second, "not answering", isNotAnswering)
	start := time.Now()
	if !h.RetryNow() {
		t.Fatal("RetryNow while not answering = false")
	}
	s := nextState(t, states, 10*time.Second, "reconnecting", isReconnecting)
	if !errors.Is(s.Err, errGivenUp) {
		t.Errorf("reconnecting because of %v, want errGivenUp", s.Err)
	}
	nextState(t, states, 10*time.Second, "connected", isConnected)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("connected %v after RetryNow", d)
	}
	if res, err := h.Run(context.Background(), "echo alive", nil); err != nil || string(res.Stdout) != "alive\n" {
		t.Errorf("Run after RetryNow: %q %v", res.Stdout, err)
	}
}

// startTicking starts a loop that prints "tick" every period seconds on
// h, waits for the first tick and drains the rest.
func startTicking(t *testing.T, ctx context.Context, h Host, period string) Process {
	t.Helper()
	p, err := h.Start(ctx, "while :; do echo tick; sleep "+period+"; done")
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, p.Stderr())
	r := bufio.NewReader(p.Stdout())
	if line, err := r.ReadString('\n'); line != "tick\n" {
		t.Fatalf("read %q %v", line, err)
	}
	go io.Copy(io.Discard, r)
	return p
}
