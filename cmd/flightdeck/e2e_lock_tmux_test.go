package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// win is one more session on a tmuxSession's server: another cockpit in
// its own terminal.
type win struct {
	s    *tmuxSession
	name string
}

// open starts command in a new w×h session called name on s's server.
func (s *tmuxSession) open(name string, w, h int, command string) win {
	s.t.Helper()
	s.tmux("new-session", "-d", "-s", name, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h),
		command+`; echo "EXIT STATUS $?"; sleep 600`)
	return win{s: s, name: name}
}

func (w win) capture() string { return w.s.tmux("capture-pane", "-p", "-t", w.name+":0.0") }

func (w win) keys(k ...string) {
	w.s.tmux(append([]string{"send-keys", "-t", w.name + ":0.0"}, k...)...)
}

// wait polls w's screen until check passes, like waitScreen.
func (w win) wait(d time.Duration, check func(string) string) string {
	w.s.t.Helper()
	deadline := time.Now().Add(d)
	for {
		screen := w.capture()
		why := check(screen)
		if why == "" {
			return screen
		}
		if strings.Contains(screen, "EXIT STATUS") || time.Now().After(deadline) {
			w.s.t.Fatalf("%s: %s\n--- screen ---\n%s", w.name, why, screen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pid is the pid of the cockpit running in w (the child of the pane's
// shell).
func (w win) pid() int {
	w.s.t.Helper()
	shell := strings.TrimSpace(w.s.tmux("display-message", "-p", "-t", w.name+":0.0", "#{pane_pid}"))
	out, err := exec.Command("pgrep", "-P", shell, "flightdeck").Output()
	if err != nil {
		w.s.t.Fatalf("pgrep -P %s flightdeck: %v", shell, err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(out))[0])
	if err != nil {
		w.s.t.Fatal(err)
	}
	return pid
}

func lacks(unwanted string) func(string) string {
	return func(screen string) string {
		if strings.Contains(screen, unwanted) {
			return "screen still shows " + unwanted
		}
		return ""
	}
}

var simDirOnScreen = regexp.MustCompile(`(/\S*flightdeck-sim-[^/\s]+)/logs/`)

// TestDriverLockInTmux: two cockpits on one simulated host, each in its
// own terminal. The second starts read-only and says who drives; its keys
// that act answer with that and act not. A third takes over with
// --take-over: the first turns read-only and says who took over. When the
// driver stops (SIGSTOP: no heartbeat), a watcher takes its stale lock
// with a note; the stopped one, continued, finds itself read-only, and
// takes the lock back with T.
func TestDriverLockInTmux(t *testing.T) {
	bin := flightdeckBinary(t)
	// Short heartbeats so that staleness shows in seconds.
	beat := " --lock-heartbeat 1s --lock-stale 4s"
	a := startTmux(t, 200, 50, bin+" demo"+beat)
	first := win{s: a, name: "e2e"}
	screen := first.wait(30*time.Second, func(screen string) string {
		if !readyHeader.MatchString(screen) {
			return "server not ready"
		}
		if simDirOnScreen.FindStringSubmatch(screen) == nil {
			return "no sim directory in the log path"
		}
		return ""
	})
	dir := simDirOnScreen.FindStringSubmatch(screen)[1]

	second := a.open("second", 160, 40, bin+" demo --join --dir "+dir+beat)
	second.wait(20*time.Second, has("read-only: "))
	screen = second.wait(10*time.Second, has("; T takes over"))
	if !regexp.MustCompile(`read-only: \S+@\S+ pid \d+ drives \(since \d\d:\d\d:\d\d\)`).MatchString(screen) {
		t.Errorf("the watcher does not say who drives:\n%s", screen)
	}
	// Its keys that act answer and do nothing.
	for _, k := range []string{"K", "L", "p", "e", "b"} {
		second.keys(k)
		time.Sleep(300 * time.Millisecond)
		s := second.capture()
		last := strings.TrimRight(s, "\n")
		last = last[strings.LastIndexByte(last, '\n')+1:]
		if !strings.HasPrefix(last, "read-only: ") {
			t.Errorf("%s on the watcher: footer %q", k, last)
		}
		if strings.Contains(s, "Kill sglang") || strings.Contains(s, "launch form") || strings.Contains(s, "profile:") {
			t.Errorf("%s opened an action on the watcher:\n%s", k, s)
		}
	}
	if s := first.capture(); strings.Contains(s, "read-only") {
		t.Fatalf("the first cockpit turned read-only by itself:\n%s", s)
	}

	// A third takes over: it drives, the first watches and says who took over.
	third := a.open("third", 160, 40, bin+" demo --join --take-over --dir "+dir+beat)
	third.wait(20*time.Second, has("took over from "))
	screen = first.wait(10*time.Second, has("read-only: "))
	if !regexp.MustCompile(`\S+@\S+ \(pid \d+\) took over at \d\d:\d\d:\d\d`).MatchString(screen) {
		t.Errorf("the first cockpit does not say who took over:\n%s", screen)
	}
	first.keys("K")
	first.wait(5*time.Second, has("read-only: "))
	if strings.Contains(first.capture(), "Kill sglang") {
		t.Error("K asks to kill on the cockpit that lost the lock")
	}
	third.keys("K")
	third.wait(5*time.Second, has("Kill sglang pid"))
	third.keys("n") // no
	time.Sleep(300 * time.Millisecond)

	// The driver stops: its lock goes stale and a watcher takes it.
	pid := third.pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	var taker win
	for taker.s == nil {
		for _, w := range []win{first, second} {
			if strings.Contains(w.capture(), "took the stale lock of ") {
				taker = w
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no watcher took the stale lock\n--- first ---\n%s\n--- second ---\n%s", first.capture(), second.capture())
		}
		time.Sleep(250 * time.Millisecond)
	}
	taker.wait(5*time.Second, lacks("read-only: "))
	syscall.Kill(pid, syscall.SIGCONT)
	stopped = false
	// Continued, the third finds the lock taken and turns read-only.
	third.wait(15*time.Second, has("read-only: "))
	// T in the third takes it back, after asking.
	third.keys("T")
	third.wait(5*time.Second, has("Take over from "))
	third.keys("y")
	third.wait(10*time.Second, lacks("read-only: "))
	taker.wait(10*time.Second, has("read-only: "))
	if os.Getenv("FD_E2E_DEBUG") != "" {
		t.Logf("taker %s\n%s", taker.name, taker.capture())
	}
	for _, w := range []win{first, second, third} {
		w.keys("q")
	}
}
