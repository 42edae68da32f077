package remote

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
)

// TestSSHCloseKillsAStalledCommand: Close (or the end of Start's context)
// sends the server a "signal" request for SIGKILL before closing the
// session, so a command of a session without a PTY that neither reads nor
// writes (a stalled agent) is not left running until its next write.
// OpenSSH honours the request for a user other than root and then kills
// the command's process group; for root it refuses ("session signalling
// requires privilege separation": sshd skips post-auth privilege
// separation for root), which its log shows. Its server-side session ends
// with the command, so a MaxSessions 1 server takes a new one.
func TestSSHCloseKillsAStalledCommand(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{Config: []string{"MaxSessions 1"}})
	opts := testOptions(t, srv, known)
	h := dialTest(t, srv.Target(), opts)
	pidFile := filepath.Join(t.TempDir(), "pid")
	root := os.Geteuid() == 0
	for i, stop := range []string{"Close", "ctx"} {
		t.Run(stop, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cmd, err := Command("sh", "-c", `echo $$ > "$1"; echo started; exec sleep 61`, "stall", pidFile)
			if err != nil {
				t.Fatal(err)
			}
			p, err := h.Start(ctx, cmd)
			if err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, p.Stderr())
			buf := make([]byte, len("started\n"))
			if _, err := io.ReadFull(p.Stdout(), buf); err != nil {
				t.Fatalf("reading the command's first line: %v", err)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if stop == "Close" {
				p.Close()
			} else {
				cancel()
			}
			if root {
				// The request arrived; sshd refuses it for root. Clean up
				// (Wait returns only once the command has ended).
				waitLog(t, srv, "session_signal_req", i+1)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if err := waitErr(t, p); err == nil {
				t.Error("Wait after the stop: nil error")
			} else if stop == "Close" && !errors.Is(err, ErrClosed) {
				t.Errorf("Wait after Close: %v, want ErrClosed", err)
			}
			waitKilled(t, pid)
			// The server-side session ended with its command: the only
			// session MaxSessions allows is free again.
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer rcancel()
			if res, err := h.Run(rctx, "echo next", nil); err != nil || string(res.Stdout) != "next\n" {
				t.Fatalf("next session: %q %v", res.Stdout, err)
			}
		})
	}
}

// waitLog polls sshd's log until it holds n lines containing what,
// failing after 20 s.
func waitLog(t *testing.T, srv *sshdtest.Server, what string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(srv.Log(), what) < n {
		if time.Now().After(deadline) {
			t.Fatalf("sshd log has no %q %d times:\n%s", what, n, srv.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitKilled polls until no process has pid (a zombie counts as gone),
// failing after a generous 20 s.
func waitKilled(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if !alive(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs 20 s after the stop", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) S …": the state follows the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
