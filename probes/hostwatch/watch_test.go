package hostwatch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test run this binary as the host-side watcher
// (FLIGHTDECK_HOSTWATCH_CHILD=1, Options as JSON in the first argument),
// so that its processes can be counted from outside.
func TestMain(m *testing.M) {
	if os.Getenv("FLIGHTDECK_HOSTWATCH_SLEEP") == "1" { // a process with the command line a test wants
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if os.Getenv("FLIGHTDECK_HOSTWATCH_CHILD") == "1" {
		var o Options
		if err := json.Unmarshal([]byte(os.Args[len(os.Args)-1]), &o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := Run(context.Background(), os.Stdout, o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a real repository (a path with a space and a quote) with
// one commit, a subdirectory, and an ignored directory.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sg lang's repo")
	must(t, os.MkdirAll(filepath.Join(dir, "python", "sglang"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "build", "lib"), 0o755))
	git(t, dir, "init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(dir, "python", "sglang", "pynccl.py"), []byte("a\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("build/\n*.log\n"), 0o644))
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "Fix PCG MoE Error")
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// stream runs Run in this process and returns its lines.
func stream(t *testing.T, o Options) <-chan Line {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, pw, o); pw.Close() }()
	lines := make(chan Line, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			l, err := ParseLine(sc.Bytes())
			if err != nil {
				t.Errorf("%v", err)
				return
			}
			lines <- l
		}
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		pr.Close()
	})
	return lines
}

// expect waits for a line of type typ (skipping alive lines), failing on
// any other line or after d.
func expect(t *testing.T, lines <-chan Line, typ string, d time.Duration, what string) Line {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l := <-lines:
			if l.T == TypeAlive {
				continue
			}
			if l.T != typ {
				t.Fatalf("%s: got %+v, want a %s line", what, l, typ)
			}
			return l
		case <-deadline:
			t.Fatalf("%s: no %s line within %v", what, typ, d)
		}
	}
}

// quiet fails on any line but alive within d.
func quiet(t *testing.T, lines <-chan Line, d time.Duration, what string) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l := <-lines:
			if l.T != TypeAlive {
				t.Fatalf("%s: got %+v, want no change line", what, l)
			}
		case <-deadline:
			return
		}
	}
}

const tick = 50 * time.Millisecond

func TestRunGitChanges(t *testing.T) {
	dir := newRepo(t)
	lines := stream(t, Options{Repo: filepath.Join(dir, "python"), Interval: tick})
	if l := expect(t, lines, TypeWatch, time.Second, "start"); l.V != ProtocolVersion || l.Via != "agent" || l.IntervalMS != 50 {
		t.Fatalf("watch line %+v", l)
	}
	if l := expect(t, lines, TypeGit, time.Second, "start"); l.Why != "start" || l.Capped {
		t.Fatalf("start line %+v", l)
	}
	quiet(t, lines, 4*tick, "nothing changed")

	// Each change is seen within an interval or two (the index and the
	// tree may take two ticks between them: one line, or two).
	steps := []struct {
		what string
		do   func()
		why  string // must appear in one of the lines
	}{
		{"edit a tracked file", func() {
			must(t, os.WriteFile(filepath.Join(dir, "python", "sglang", "pynccl.py"), []byte("b\n"), 0o644))
		}, "tree"},
		{"add an untracked file", func() {
			must(t, os.WriteFile(filepath.Join(dir, "python", "new file.py"), []byte("x\n"), 0o644))
		}, "tree"},
		{"git stash -u", func() { git(t, dir, "stash", "-u", "-q") }, "index"},
		{"commit", func() {
			must(t, os.WriteFile(filepath.Join(dir, "README"), []byte("r\n"), 0o644))
			git(t, dir, "add", "README")
			git(t, dir, "commit", "-qm", "readme")
		}, "ref"},
		{"new branch", func() { git(t, dir, "checkout", "-q", "-b", "fix") }, "head"},
		{"switch back", func() { git(t, dir, "checkout", "-q", "main") }, "head"},
		{"detach", func() { git(t, dir, "checkout", "-q", "--detach", "HEAD~1") }, "head"},
		{"pack the refs", func() { git(t, dir, "checkout", "-q", "main"); git(t, dir, "pack-refs", "--all") }, "packed-refs"},
		{"a new directory and a file in it", func() {
			must(t, os.MkdirAll(filepath.Join(dir, "docs", "deep"), 0o755))
			time.Sleep(2 * tick) // the new directory is watched
			must(t, os.WriteFile(filepath.Join(dir, "docs", "deep", "x.md"), []byte("x\n"), 0o644))
		}, "tree"},
	}
	for _, s := range steps {
		s.do()
		seen := expect(t, lines, TypeGit, 2*time.Second, s.what).Why
		// Let the change settle: the lines that follow within a few ticks
		// belong to it.
		for settle := time.After(6 * tick); ; {
			select {
			case l := <-lines:
				if l.T == TypeGit {
					seen += "," + l.Why
				}
				continue
			case <-settle:
			}
			break
		}
		if !strings.Contains(","+seen+",", ","+s.why+",") {
			t.Errorf("%s: lines said %q, want %q among them", s.what, seen, s.why)
		}
	}

	// Ignored paths and reads are no change.
	must(t, os.WriteFile(filepath.Join(dir, "build", "lib", "x.so"), []byte("x"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "server.log"), []byte("log"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "python", "sglang", "server.log"), []byte("log"), 0o644))
	if _, err := os.ReadFile(filepath.Join(dir, "python", "sglang", "pynccl.py")); err != nil {
		t.Fatal(err)
	}
	quiet(t, lines, 6*tick, "ignored writes and a read")
}

func TestRunLinkedWorktree(t *testing.T) {
	dir := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, dir, "worktree", "add", "-q", "-b", "wt", wt)
	lines := stream(t, Options{Repo: wt, Interval: tick})
	expect(t, lines, TypeWatch, time.Second, "start")
	expect(t, lines, TypeGit, time.Second, "start")
	quiet(t, lines, 3*tick, "nothing changed")
	// A commit in the worktree moves its branch (a loose ref in the
	// common directory) and its own index.
	must(t, os.WriteFile(filepath.Join(wt, "w.txt"), []byte("w\n"), 0o644))
	git(t, wt, "add", "w.txt")
	git(t, wt, "commit", "-qm", "in the worktree")
	expect(t, lines, TypeGit, 2*time.Second, "commit in the worktree")
	// The main checkout's HEAD moving is not this worktree's change.
	time.Sleep(6 * tick)
	for len(lines) > 0 {
		<-lines
	}
	git(t, dir, "checkout", "-q", "-b", "other")
	quiet(t, lines, 6*tick, "a branch switch in the main checkout")
}

func TestRunNotARepositoryYet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	lines := stream(t, Options{Repo: dir, Interval: tick})
	expect(t, lines, TypeWatch, time.Second, "start")
	expect(t, lines, TypeGit, time.Second, "start")
	must(t, os.MkdirAll(dir, 0o755))
	git(t, dir, "init", "-q")
	if l := expect(t, lines, TypeGit, 2*time.Second, "git init"); !strings.Contains(l.Why, "gitdir") {
		t.Errorf("after git init: %+v, want gitdir among why", l)
	}
}

func TestRunOptionsErrors(t *testing.T) {
	for _, o := range []Options{{}, {Repo: "x", Interval: time.Millisecond}, {Server: &ServerSpec{Match: "a("}}} {
		if err := Run(context.Background(), io.Discard, o); err == nil {
			t.Errorf("Run(%+v): no error", o)
		}
	}
}

// TestRunStartsNoProcess runs the watcher as its own process under strace
// while the checkout and the server change, and counts the programs it
// executes after its own start: none.
func TestRunStartsNoProcess(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace")
	}
	dir := newRepo(t)
	logDir := t.TempDir()
	o := Options{Repo: dir, Interval: 20 * time.Millisecond, Keepalive: 100 * time.Millisecond,
		Server: &ServerSpec{Pidfile: filepath.Join(logDir, "flightdeck-server.json"), ExitFile: filepath.Join(logDir, "x.exit"),
			Port: 30000, Match: `flightdeck-fake-server`}}
	js, _ := json.Marshal(o)
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-e", "trace=execve,execveat", "-o", trace, os.Args[0], string(js))
	cmd.Env = append(os.Environ(), "FLIGHTDECK_HOSTWATCH_CHILD=1")
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	n := 0
	for sc.Scan() && n < 3 { // watch, git, server
		n++
	}
	// Changes of every kind while it runs.
	must(t, os.WriteFile(filepath.Join(dir, "python", "sglang", "pynccl.py"), []byte("z\n"), 0o644))
	git(t, dir, "checkout", "-q", "-b", "x")
	sleep := sleeper("flightdeck-fake-server")
	_ = sleep.Start()
	must(t, os.WriteFile(o.Server.Pidfile, []byte(`{"pid":1,"pgid":1,"sid":1,"start_time":1,"mark":"","launch":{}}`), 0o600))
	// Changes made within one interval come as one line: wait for a git
	// line and a server line (under load the edit and the checkout, or the
	// server and its pidfile, often share one).
	seen := map[string]int{}
	timeout := time.After(5 * time.Second)
	for seen[TypeGit] == 0 || seen[TypeServer] == 0 {
		lc := make(chan bool, 1)
		go func() { lc <- sc.Scan() }()
		select {
		case ok := <-lc:
			if !ok {
				t.Fatal("the watcher ended")
			}
			if l, err := ParseLine(sc.Bytes()); err == nil {
				seen[l.T]++
			}
		case <-timeout:
			t.Fatalf("change lines by type %v, want git and server", seen)
		}
	}
	if sleep.Process != nil {
		sleep.Process.Kill()
		sleep.Wait()
	}
	// End the watcher (strace's child); strace then exits.
	ch, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	for _, f := range strings.Fields(string(ch)) {
		if pid, err := strconv.Atoi(f); err == nil {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	cmd.Wait()
	b, err := os.ReadFile(trace)
	must(t, err)
	var execs []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, "execve") && !strings.Contains(l, "resumed") {
			execs = append(execs, l)
		}
	}
	if len(execs) != 1 {
		t.Fatalf("the watcher executed %d programs, want only its own start:\n%s", len(execs)-1, strings.Join(execs, "\n"))
	}
}

func TestRunServerChanges(t *testing.T) {
	logDir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	spec := &ServerSpec{Pidfile: filepath.Join(logDir, "flightdeck-server.json"), ExitFile: filepath.Join(logDir, "flightdeck-server.exit"),
		Port: port, Match: `flightdeck-fake-server[^[:print:]]--port`}
	lines := stream(t, Options{Server: spec, Interval: tick})
	expect(t, lines, TypeWatch, time.Second, "start")
	expect(t, lines, TypeServer, time.Second, "start")
	quiet(t, lines, 4*tick, "nothing changed")
	want := func(what, why string) {
		t.Helper()
		if l := expect(t, lines, TypeServer, 2*time.Second, what); !strings.Contains(","+l.Why+",", ","+why+",") {
			t.Fatalf("%s: why %q, want %q", what, l.Why, why)
		}
		quiet(t, lines, 3*tick, what+", settled")
	}

	// A process whose command line matches, started and killed.
	p := sleeper("flightdeck-fake-server", "--port", strconv.Itoa(port))
	must(t, p.Start())
	want("a matching process starts", "match")
	// A shell whose arguments match is no server; nor is Find's own grep
	// (the pattern itself as an argument).
	sh := exec.Command("sh", "-c", "sleep 60; :", "flightdeck-fake-server", "--port")
	must(t, sh.Start())
	g := sleeper(spec.Match, "flightdeck-fake-server", "--port")
	must(t, g.Start())
	quiet(t, lines, 4*tick, "a shell and a grep that carry the pattern")
	for _, c := range []*exec.Cmd{sh, g} {
		c.Process.Kill()
		c.Wait()
	}
	p.Process.Kill()
	p.Wait()
	want("the matching process is killed", "match")

	// The pidfile written, naming a live process with its start time.
	root := exec.Command("sleep", "60")
	must(t, root.Start())
	_, start, ok := procStat(root.Process.Pid)
	if !ok {
		t.Fatal("no stat of the root")
	}
	rec := fmt.Sprintf(`{"pid":%d,"pgid":%d,"sid":1,"start_time":%s,"mark":"ab","launch":{}}`+"\n", root.Process.Pid, root.Process.Pid, start)
	must(t, os.WriteFile(spec.Pidfile, []byte(rec), 0o600))
	if l := expect(t, lines, TypeServer, 2*time.Second, "pidfile written"); l.Why != "pidfile,root" {
		t.Fatalf("pidfile written: why %q, want pidfile,root", l.Why)
	}
	quiet(t, lines, 3*tick, "settled")
	root.Process.Kill()
	root.Wait()
	want("the pidfile's process is killed", "root")
	must(t, os.WriteFile(spec.ExitFile, []byte(fmt.Sprintf("%d 137\n", root.Process.Pid)), 0o600))
	want("the exit file is written", "exit")
	must(t, os.Remove(spec.Pidfile))
	want("the pidfile is removed", "pidfile")

	// Something listens on the port, then stops.
	ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	must(t, err)
	want("a listener on the port", "listen")
	ln.Close()
	want("the listener closed", "listen")
}

// sleeper is this test binary sleeping a minute with args as its command
// line.
func sleeper(args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), "FLIGHTDECK_HOSTWATCH_SLEEP=1")
	return c
}

// TestListenDiagAgreesWithProc: sock_diag's listeners on a port are the
// ones /proc/net/tcp and tcp6 list, IPv4 and IPv6, and none once closed.
func TestListenDiagAgreesWithProc(t *testing.T) {
	l4, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	port := l4.Addr().(*net.TCPAddr).Port
	var l6 net.Listener
	if l6, err = net.Listen("tcp6", fmt.Sprintf("[::1]:%d", port)); err != nil {
		t.Logf("no IPv6 listener: %v", err)
	}
	// A connection to it is no listener.
	c, err := net.Dial("tcp4", l4.Addr().String())
	must(t, err)
	defer c.Close()
	got, err := listenDiag(port)
	if err != nil {
		t.Skipf("no sock_diag here: %v", err)
	}
	want := listenProc(port)
	n := 1
	if l6 != nil {
		n = 2
	}
	if got != want || len(strings.Fields(got)) != n {
		t.Fatalf("sock_diag %q, /proc %q, want the same %d inodes", got, want, n)
	}
	l4.Close()
	if l6 != nil {
		l6.Close()
	}
	if got, _ := listenDiag(port); got != "" {
		t.Errorf("after close: %q", got)
	}
}
