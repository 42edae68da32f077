package remote

import (
	"bufio"
	"context"
	"errors"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLocalRun(t *testing.T) {
	l := NewLocal()
	defer l.Close()
	ctx := context.Background()
	tests := []struct {
		name       string
		cmd        string
		stdin      io.Reader
		wantOut    string
		wantErrOut string
		wantCode   int
		wantSignal string
	}{
		{name: "ok", cmd: "echo hello", wantOut: "hello\n"},
		{name: "exit code and stderr", cmd: "echo out; echo oops >&2; exit 3", wantOut: "out\n", wantErrOut: "oops\n", wantCode: 3},
		{name: "stdin", cmd: "tr a-z A-Z", stdin: strings.NewReader("abc"), wantOut: "ABC"},
		{name: "signal", cmd: "kill -TERM $$", wantCode: -1, wantSignal: "TERM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := l.Run(ctx, tt.cmd, tt.stdin)
			if string(res.Stdout) != tt.wantOut || string(res.Stderr) != tt.wantErrOut || res.ExitCode != tt.wantCode {
				t.Errorf("got stdout %q stderr %q code %d", res.Stdout, res.Stderr, res.ExitCode)
			}
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var ee *ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("err = %v, want *ExitError", err)
			}
			if ee.Code != tt.wantCode || ee.Signal != tt.wantSignal || string(ee.Stderr) != tt.wantErrOut {
				t.Errorf("ExitError = %+v", ee)
			}
		})
	}
}

func TestLocalRunStderrTailIsBounded(t *testing.T) {
	l := NewLocal()
	defer l.Close()
	_, err := l.Run(context.Background(), "head -c 10000 /dev/zero | tr '\\0' x >&2; echo END >&2; exit 1", nil)
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("err = %v", err)
	}
	if len(ee.Stderr) != stderrTailBytes || !strings.HasSuffix(string(ee.Stderr), "xEND\n") {
		t.Errorf("stderr tail: %d bytes ending %q", len(ee.Stderr), ee.Stderr[len(ee.Stderr)-8:])
	}
}

// waitGone polls until pid no longer exists (or is a zombie).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still alive", pid)
}

// readPID polls for a pid written to file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(file)
		if s := strings.TrimSpace(string(b)); s != "" && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

func TestLocalRunContextKillsProcessGroup(t *testing.T) {
	l := NewLocal()
	defer l.Close()
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	cmd, err := Command("sh", "-c", `sleep 30 & echo $! > "$0"; wait`, pidFile)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Run(ctx, cmd, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run returned after %v", d)
	}
	waitGone(t, readPID(t, pidFile))
}

func TestLocalStartStreams(t *testing.T) {
	l := NewLocal()
	defer l.Close()
	p, err := l.Start(context.Background(), "for i in 1 2 3; do echo line$i; done; echo bye >&2; exit 4")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errc := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(p.Stderr()); errc <- b }()
	out, err := io.ReadAll(p.Stdout())
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "line1\nline2\nline3\n" {
		t.Errorf("stdout %q", out)
	}
	if b := <-errc; string(b) != "bye\n" {
		t.Errorf("stderr %q", b)
	}
	var ee *ExitError
	if err := p.Wait(); !errors.As(err, &ee) || ee.Code != 4 || string(ee.Stderr) != "bye\n" {
		t.Fatalf("Wait = %v (%+v), want exit 4 with stderr", err, ee)
	}
}

func TestLocalStartStop(t *testing.T) {
	for _, how := range []string{"close", "ctx", "host-close"} {
		t.Run(how, func(t *testing.T) {
			l := NewLocal()
			defer l.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := l.Start(ctx, "while :; do echo tick; sleep 0.05; done")
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
			if err != nil || line != "tick\n" {
				t.Fatalf("read %q, %v", line, err)
			}
			want := ErrClosed
			switch how {
			case "close":
				p.Close()
			case "ctx":
				cancel()
				want = context.Canceled
			case "host-close":
				l.Close()
			}
			waited := make(chan error, 1)
			go func() { waited <- p.Wait() }()
			select {
			case err := <-waited:
				if !errors.Is(err, want) {
					t.Errorf("Wait = %v, want %v", err, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Wait did not return")
			}
			p.Close() // twice is fine
		})
	}
}

func TestLocalWatchAndClose(t *testing.T) {
	l := NewLocal()
	ch := l.Watch(context.Background())
	if s := <-ch; s.Conn != event.Connected || s.Host != "local" {
		t.Fatalf("first state %+v", s)
	}
	l.Close()
	if s := <-ch; s.Conn != event.ConnClosed {
		t.Fatalf("after Close: %+v", s)
	}
	if _, ok := <-ch; ok {
		t.Fatal("channel not closed after Closed")
	}
	if _, err := l.Run(context.Background(), "true", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
	if _, err := l.Start(context.Background(), "true"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

func TestLocalDialContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	var d Dialer = NewLocal()
	c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if b, _ := io.ReadAll(c); string(b) != "hi" {
		t.Fatalf("read %q", b)
	}
}
