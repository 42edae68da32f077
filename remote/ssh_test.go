package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// testOptions are options that never read the real ~/.ssh: no config, no
// agent, the server's client key, a known_hosts file of the test's own, and
// short timers so reconnect tests stay fast.
func testOptions(t *testing.T, srv *sshdtest.Server, known string) SSHOptions {
	return SSHOptions{
		ConfigFile:      os.DevNull,
		HomeDir:         t.TempDir(),
		IdentityFiles:   []string{srv.ClientKeyPath()},
		KnownHostsFiles: []string{known},
		NoAgent:         true,
		DialTimeout:     5 * time.Second,
		// Long enough that a CPU-starved CI machine does not miss three in a
		// row; the keepalive test sets its own short interval.
		KeepaliveInterval: 2 * time.Second,
		KeepaliveCountMax: 3,
		ReconnectMin:      20 * time.Millisecond,
		ReconnectMax:      200 * time.Millisecond,
	}
}

// knownServer starts sshd and a known_hosts file holding all its keys.
func knownServer(t *testing.T, o sshdtest.Options) (*sshdtest.Server, string) {
	srv := sshdtest.Start(t, o)
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	return srv, known
}

func dialTest(t *testing.T, target string, opts SSHOptions) *SSH {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := DialSSH(ctx, target, opts)
	if err != nil {
		t.Fatalf("DialSSH(%s): %v", target, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// waitState reads ch until a state satisfies ok, or fails after 10 s.
func waitState(t *testing.T, ch <-chan event.ConnState, what string, ok func(event.ConnState) bool) event.ConnState {
	t.Helper()
	return nextState(t, ch, 10*time.Second, what, ok)
}

// waitErr waits for p.Wait, failing after 10 s.
func waitErr(t *testing.T, p Process) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return within 10s")
		return nil
	}
}

func TestSSHRunAndStart(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	h := dialTest(t, srv.Target(), testOptions(t, srv, known))
	ctx := context.Background()
	if want := srv.User() + "@" + srv.Addr(); h.Name() != want {
		t.Errorf("Name = %q, want %q", h.Name(), want)
	}

	t.Run("exit codes and stderr", func(t *testing.T) {
		res, err := h.Run(ctx, "echo out; echo oops >&2; exit 3", nil)
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 3 || string(ee.Stderr) != "oops\n" {
			t.Fatalf("err = %v (%+v), want exit 3 with stderr", err, ee)
		}
		if string(res.Stdout) != "out\n" || string(res.Stderr) != "oops\n" || res.ExitCode != 3 {
			t.Errorf("res = %+v", res)
		}
		res, err = h.Run(ctx, "tr a-z A-Z", strings.NewReader("abc"))
		if err != nil || string(res.Stdout) != "ABC" || res.ExitCode != 0 {
			t.Errorf("stdin: %q %v", res.Stdout, err)
		}
		// A command that exits without reading its stdin still succeeds.
		if _, err := h.Run(ctx, "true", strings.NewReader(strings.Repeat("x", 4<<20))); err != nil {
			t.Errorf("unread stdin: %v", err)
		}
		_, err = h.Run(ctx, "kill -KILL $$", nil)
		if !errors.As(err, &ee) || ee.Signal != "KILL" || ee.Code != -1 {
			t.Errorf("signal: err = %v (%+v)", err, ee)
		}
	})

	t.Run("env words", func(t *testing.T) {
		w, err := EnvAssignment("FD_VALUE", `it's $(id); "x"`)
		if err != nil {
			t.Fatal(err)
		}
		cmd, err := Command("env", w, "sh", "-c", `printf %s "$FD_VALUE"`)
		if err != nil {
			t.Fatal(err)
		}
		res, err := h.Run(ctx, cmd, nil)
		if err != nil || string(res.Stdout) != `it's $(id); "x"` {
			t.Errorf("got %q, %v", res.Stdout, err)
		}
	})

	t.Run("start streams", func(t *testing.T) {
		p, err := h.Start(ctx, "for i in 1 2 3; do echo line$i; sleep 0.02; done; echo bye >&2; exit 4")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		errc := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(p.Stderr()); errc <- b }()
		out, _ := io.ReadAll(p.Stdout())
		if string(out) != "line1\nline2\nline3\n" {
			t.Errorf("stdout %q", out)
		}
		if b := <-errc; string(b) != "bye\n" {
			t.Errorf("stderr %q", b)
		}
		var ee *ExitError
		if err := waitErr(t, p); !errors.As(err, &ee) || ee.Code != 4 || string(ee.Stderr) != "bye\n" {
			t.Errorf("Wait = %v (%+v)", err, ee)
		}
	})

	t.Run("start stopped by close and ctx", func(t *testing.T) {
		for _, how := range []string{"close", "ctx"} {
			pctx, cancel := context.WithCancel(ctx)
			p := startTicking(t, pctx, h, "0.05")
			want := ErrClosed
			if how == "close" {
				p.Close()
			} else {
				cancel()
				want = context.Canceled
			}
			if err := waitErr(t, p); !errors.Is(err, want) {
				t.Errorf("%s: Wait = %v, want %v", how, err, want)
			}
			cancel()
		}
	})

	t.Run("run bounded by ctx", func(t *testing.T) {
		rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := h.Run(rctx, "sleep 5", nil)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
			t.Errorf("err = %v after %v", err, time.Since(start))
		}
	})

	t.Run("more sessions than OpenSSH MaxSessions", func(t *testing.T) {
		// 12 > sshd's MaxSessions (10): without the semaphore some would be
		// refused with "administratively prohibited".
		var wg sync.WaitGroup
		errs := make(chan error, 12)
		for i := range 12 {
			wg.Go(func() {
				res, err := h.Run(ctx, fmt.Sprintf("sleep 0.2; echo %d", i), nil)
				if err == nil && string(res.Stdout) != fmt.Sprintf("%d\n", i) {
					err = fmt.Errorf("run %d printed %q", i, res.Stdout)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("dial through the connection", func(t *testing.T) {
		web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "healthy") }))
		defer web.Close()
		client := &http.Client{Transport: &http.Transport{DialContext: h.DialContext}}
		resp, err := client.Get(web.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "healthy" {
			t.Errorf("got %q", b)
		}
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		if _, err := h.DialContext(ctx, "tcp", addr); err == nil || errors.Is(err, ErrDisconnected) {
			t.Errorf("dial to a closed port: err = %v", err)
		}
	})
}

func TestSSHSessionSlotsWaitWithinContext(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	opts := testOptions(t, srv, known)
	opts.MaxSessions = 2
	h := dialTest(t, srv.Target(), opts)
	ctx := context.Background()
	// Each loop dies of SIGPIPE once its session is closed; a command that
	// never writes would hold its server-side session (and our slot) until
	// it exits, which is what sshd's MaxSessions counts too.
	const loop = "while :; do echo tick; sleep 0.05; done"
	var procs []Process
	for range 2 {
		p, err := h.Start(ctx, loop)
		if err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, p.Stdout())
		go io.Copy(io.Discard, p.Stderr())
		procs = append(procs, p)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := h.Start(short, "true"); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "free session") {
		t.Fatalf("third session: err = %v, want a wait for a free session", err)
	}
	procs[0].Close()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	res, err := h.Run(wctx, "echo third", nil)
	if err != nil || string(res.Stdout) != "third\n" {
		t.Fatalf("third session after a close: %q %v", res.Stdout, err)
	}
	procs[1].Close()
}

func TestSSHCloseEndsEverything(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	h := dialTest(t, srv.Target(), testOptions(t, srv, known))
	states := h.Watch(context.Background())
	p, err := h.Start(context.Background(), "sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if err := waitErr(t, p); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after host Close: %v", err)
	}
	waitState(t, states, "closed", func(s event.ConnState) bool { return s.Conn == event.ConnClosed })
	if _, ok := <-states; ok {
		t.Error("watch channel not closed after Closed")
	}
	if _, err := h.Run(context.Background(), "true", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	h.Close()
}

// TestSSHServerWithFewerSessionsThanOurCap: a server configured with
// MaxSessions 3, below our cap of 8: sessions it refuses as over its limit
// are retried until one of its sessions ends, so every command runs.
func TestSSHServerWithFewerSessionsThanOurCap(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{Config: []string{"MaxSessions 3"}})
	h := dialTest(t, srv.Target(), testOptions(t, srv, known))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			res, err := h.Run(ctx, fmt.Sprintf("sleep 0.3; echo %d", i), nil)
			if err == nil && string(res.Stdout) != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("run %d printed %q", i, res.Stdout)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
