package hostwatch

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// shellStream runs the shell watcher on the local host (bash -c, as over
// SSH) and returns its lines.
func shellStream(t *testing.T, o Options, wrap string) <-chan Line {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cmd, err := ShellCommand(o)
	must(t, err)
	if wrap != "" {
		q, err := remote.Quote(cmd)
		must(t, err)
		cmd = wrap + " sh -c " + q
	}
	// The watcher's stamp directory goes under the test's: Close kills
	// the watcher (SIGKILL) before its exit trap can remove it.
	tmp, err := remote.Quote(t.TempDir())
	must(t, err)
	cmd = "TMPDIR=" + tmp + " " + cmd
	h := remote.NewLocal()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := h.Start(ctx, cmd)
	must(t, err)
	lines := make(chan Line, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(p.Stdout())
		for sc.Scan() {
			l, err := ParseLine(sc.Bytes())
			if err != nil {
				t.Errorf("%v", err)
				return
			}
			lines <- l
		}
	}()
	var stderr strings.Builder
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		sc := bufio.NewScanner(p.Stderr())
		for sc.Scan() {
			fmt.Fprintln(&stderr, sc.Text())
		}
	}()
	t.Cleanup(func() {
		cancel()
		p.Close()
		p.Wait()
		h.Close()
		<-errDone
		if s := stderr.String(); s != "" {
			t.Errorf("the shell watcher wrote on stderr:\n%s", s)
		}
	})
	return lines
}

func TestShellGitChanges(t *testing.T) {
	dir := newRepo(t)
	lines := shellStream(t, Options{Repo: filepath.Join(dir, "python"), Interval: 100 * time.Millisecond}, "")
	if l := expect(t, lines, TypeWatch, 5*time.Second, "start"); l.Via != "shell" || l.IntervalMS != 100 || l.V != ProtocolVersion {
		t.Fatalf("watch line %+v", l)
	}
	expect(t, lines, TypeGit, 5*time.Second, "start")
	quiet(t, lines, 500*time.Millisecond, "nothing changed")
	for _, s := range []struct {
		what string
		do   func()
	}{
		{"edit a tracked file", func() {
			must(t, os.WriteFile(filepath.Join(dir, "python", "sglang", "pynccl.py"), []byte("b\n"), 0o644))
		}},
		{"add an untracked file", func() {
			must(t, os.WriteFile(filepath.Join(dir, "python", "new file.py"), []byte("x\n"), 0o644))
		}},
		{"git stash -u", func() { git(t, dir, "stash", "-u", "-q") }},
		{"commit", func() {
			must(t, os.WriteFile(filepath.Join(dir, "README"), []byte("r\n"), 0o644))
			git(t, dir, "add", "README")
			git(t, dir, "commit", "-qm", "readme")
		}},
		{"new branch", func() { git(t, dir, "checkout", "-q", "-b", "fix") }},
		{"detach", func() { git(t, dir, "checkout", "-q", "--detach", "HEAD~1") }},
	} {
		s.do()
		expect(t, lines, TypeGit, 3*time.Second, s.what)
		// The lines that follow within a round belong to the same change.
		time.Sleep(400 * time.Millisecond)
		for len(lines) > 0 {
			<-lines
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "build", "lib", "x.so"), []byte("x"), 0o644))
	quiet(t, lines, 600*time.Millisecond, "a write in an ignored directory")
}

func TestShellServerChanges(t *testing.T) {
	logDir := t.TempDir()
	spec := &ServerSpec{Pidfile: filepath.Join(logDir, "flightdeck-server.json"), ExitFile: filepath.Join(logDir, "flightdeck-server.exit"),
		Port: 1, Match: `flightdeck-fake-server[^[:print:]]--port`}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	lport := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	lspec := *spec
	lspec.Port, lspec.Match = lport, ""
	llines := shellStream(t, Options{Server: &lspec, Interval: 100 * time.Millisecond}, "")
	expect(t, llines, TypeWatch, 5*time.Second, "start")
	expect(t, llines, TypeServer, 5*time.Second, "start")
	ln, err = net.Listen("tcp6", fmt.Sprintf("[::1]:%d", lport))
	if err != nil {
		ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lport))
	}
	must(t, err)
	expectWhy(t, llines, "a listener on the port", "listen")
	ln.Close()
	expectWhy(t, llines, "the listener closed", "listen")

	lines := shellStream(t, Options{Server: spec, Interval: 100 * time.Millisecond}, "")
	expect(t, lines, TypeWatch, 5*time.Second, "start")
	expect(t, lines, TypeServer, 5*time.Second, "start")
	quiet(t, lines, 500*time.Millisecond, "nothing changed")
	p := sleeper("flightdeck-fake-server", "--port", "1")
	must(t, p.Start())
	expectWhy(t, lines, "a matching process starts", "match")
	quiet(t, lines, 500*time.Millisecond, "settled")
	sh := exec.Command("sh", "-c", "sleep 60; :", "flightdeck-fake-server", "--port")
	must(t, sh.Start())
	quiet(t, lines, 600*time.Millisecond, "a shell that carries the pattern")
	sh.Process.Kill()
	sh.Wait()
	p.Process.Kill()
	p.Wait()
	expectWhy(t, lines, "the matching process is killed", "match")
	quiet(t, lines, 500*time.Millisecond, "settled")

	root := sleeper()
	must(t, root.Start())
	_, start, _ := procStat(root.Process.Pid)
	rec := fmt.Sprintf(`{"pid":%d,"pgid":%d,"sid":1,"start_time":%s,"mark":"ab","launch":{}}`+"\n", root.Process.Pid, root.Process.Pid, start)
	must(t, os.WriteFile(spec.Pidfile, []byte(rec), 0o600))
	expectWhy(t, lines, "the pidfile is written", "pidfile,root")
	quiet(t, lines, 500*time.Millisecond, "settled")
	root.Process.Kill()
	root.Wait()
	expectWhy(t, lines, "the pidfile's process is killed", "root")
	quiet(t, lines, 500*time.Millisecond, "settled")
	must(t, os.Remove(spec.Pidfile))
	expectWhy(t, lines, "the pidfile is removed", "pidfile,root") // root: gone, then none named
}

// expectWhy waits for the server line of what and checks it names the
// parts that changed (as the agent's serverState.diff names them), so a
// cockpit's log says why it looked again.
func expectWhy(t *testing.T, lines <-chan Line, what, why string) {
	t.Helper()
	if l := expect(t, lines, TypeServer, 3*time.Second, what); l.Why != why {
		t.Fatalf("%s: why %q, want %q", what, l.Why, why)
	}
}

// TestShellSpawnsNothingAtSteadyState runs the shell watcher under strace
// with a checkout and a server to watch, lets it start, then counts the
// processes it creates (fork, clone, exec) over 3 s with 100 ms ticks
// (30 ticks, a full command-line round among them): none.
func TestShellSpawnsNothingAtSteadyState(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace")
	}
	dir := newRepo(t)
	logDir := t.TempDir()
	trace := filepath.Join(t.TempDir(), "trace")
	spec := &ServerSpec{Pidfile: filepath.Join(logDir, "flightdeck-server.json"), ExitFile: filepath.Join(logDir, "flightdeck-server.exit"),
		Port: 30000, Match: `flightdeck-fake-server`}
	wrap, err := remote.Command(strace, "-f", "-qq", "-ttt", "-e", "trace=execve,fork,vfork,clone,clone3", "-o", trace)
	must(t, err)
	lines := shellStream(t, Options{Repo: dir, Server: spec, Interval: 100 * time.Millisecond}, wrap)
	expect(t, lines, TypeWatch, 5*time.Second, "start")
	expect(t, lines, TypeGit, 5*time.Second, "start")
	expect(t, lines, TypeServer, 5*time.Second, "start")
	time.Sleep(time.Second)
	from := float64(time.Now().UnixMicro()) / 1e6
	quiet(t, lines, 3*time.Second, "steady state")
	to := float64(time.Now().UnixMicro()) / 1e6
	// A HEAD move is seen without a process too.
	git(t, dir, "symbolic-ref", "HEAD", "refs/heads/other")
	expect(t, lines, TypeGit, 2*time.Second, "HEAD moved")
	b, err := os.ReadFile(trace)
	must(t, err)
	var start, steady []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || strings.Contains(l, "resumed>") || strings.Contains(l, "CLONE_THREAD") {
			continue
		}
		at, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch {
		case at < from:
			start = append(start, l)
		case at <= to:
			steady = append(steady, l)
		}
	}
	if len(start) == 0 {
		t.Fatalf("no process creation traced at start: the trace is not being read\n%s", b)
	}
	if len(steady) != 0 {
		t.Fatalf("%d process creations at steady state, want 0:\n%s", len(steady), strings.Join(steady, "\n"))
	}
	t.Logf("%d process creations at start (%s), 0 in 3 s of steady state", len(start), "mktemp, git ls-files, a subshell for read -t's pipe, …")
}
