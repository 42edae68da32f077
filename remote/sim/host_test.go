package sim

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func startHost(t *testing.T, opt Options) *Host {
	t.Helper()
	h, err := Start(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := os.Stat(h.Dir); opt.Dir == "" && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temp sim dir %s left behind", h.Dir)
		}
	})
	return h
}

// dial connects the way flightdeck does: identity file, strict known_hosts.
func dial(t *testing.T, h *Host) *ssh.Client {
	t.Helper()
	key, err := os.ReadFile(h.IdentityPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(h.IdentityPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("identity mode %v, want 0600", fi.Mode().Perm())
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := knownhosts.New(h.KnownHostsPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", h.SSHAddr, &ssh.ClientConfig{User: h.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hk, HostKeyAlgorithms: []string{ssh.KeyAlgoED25519}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func run(t *testing.T, c *ssh.Client, cmd string) (string, error) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	return string(out), err
}

func TestSSHExec(t *testing.T) {
	h := startHost(t, Options{})
	if !strings.HasPrefix(h.Target(), h.User+"@127.0.0.1:") {
		t.Errorf("Target %q", h.Target())
	}
	kh, _ := os.ReadFile(h.KnownHostsPath)
	if !strings.HasPrefix(string(kh), "[127.0.0.1]:"+strings.TrimPrefix(h.SSHAddr, "127.0.0.1:")+" ssh-ed25519 ") {
		t.Errorf("known_hosts %q", kh)
	}
	c := dial(t, h)

	out, err := run(t, c, "nvidia-smi -L | wc -l; pwd; command -v nvidia-smi")
	want := fmt.Sprintf("8\n%s\n%s\n", h.Dir, filepath.Join(h.BinDir, "nvidia-smi"))
	if err != nil || out != want {
		t.Errorf("nvidia-smi on PATH: %q, %v; want %q", out, err, want)
	}
	_, err = run(t, c, "echo bye >&2; exit 3")
	var ee *ssh.ExitError
	if !errors.As(err, &ee) || ee.ExitStatus() != 3 {
		t.Errorf("exit 3 gave %v", err)
	}
	_, err = run(t, c, "kill -TERM $$")
	if !errors.As(err, &ee) || ee.Signal() != "TERM" {
		t.Errorf("killed by TERM gave %v", err)
	}

	s, _ := c.NewSession()
	s.Stdin = strings.NewReader("line one\nline two\n")
	got, err := s.Output("cat; echo done")
	if err != nil || string(got) != "line one\nline two\ndone\n" {
		t.Errorf("stdin: %q, %v", got, err)
	}

	s, _ = c.NewSession()
	defer s.Close()
	if err := s.Setenv("NCCL_PROTO", "LL"); err == nil {
		t.Error("Setenv accepted (OpenSSH without AcceptEnv refuses it)")
	}
	if err := s.RequestPty("xterm", 24, 80, ssh.TerminalModes{}); err == nil {
		t.Error("pty request accepted")
	}
	if err := s.Shell(); err == nil {
		t.Error("shell request accepted")
	}
	ok, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
	if err != nil || ok {
		t.Errorf("keepalive: ok=%v err=%v; want a refusal like OpenSSH", ok, err)
	}
}

func TestSSHRejectsOtherKeys(t *testing.T) {
	h := startHost(t, Options{})
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	hk, _ := knownhosts.New(h.KnownHostsPath)
	_, err := ssh.Dial("tcp", h.SSHAddr, &ssh.ClientConfig{User: h.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hk, Timeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Errorf("foreign key: %v", err)
	}
}

func TestSSHKillsOnClose(t *testing.T) {
	h := startHost(t, Options{})
	c := dial(t, h)
	start := func(c *ssh.Client) (*ssh.Session, int) {
		s, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		var mu sync.Mutex
		s.Stdout = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
		if err := s.Start("sleep 300 & echo $!; wait"); err != nil {
			t.Fatal(err)
		}
		var pid int
		waitFor(t, 10*time.Second, "the child's pid", func() bool {
			mu.Lock()
			defer mu.Unlock()
			pid, _ = strconv.Atoi(strings.TrimSpace(out.String()))
			return pid > 0
		})
		return s, pid
	}
	s, pid := start(c)
	s.Close()
	waitFor(t, 10*time.Second, "sleep killed after the session closed", func() bool { return !pidAlive(pid) })

	c2 := dial(t, h)
	_, pid = start(c2)
	c2.Close()
	waitFor(t, 10*time.Second, "sleep killed after the client disconnected", func() bool { return !pidAlive(pid) })
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestSSHSessionLimit(t *testing.T) {
	h := startHost(t, Options{})
	c := dial(t, h)
	var open []*ssh.Session
	for i := 0; i < MaxSessionsPerConn; i++ {
		s, err := c.NewSession()
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
		open = append(open, s)
	}
	// Refused as OpenSSH refuses it at MaxSessions: "open failed" with
	// SSH2_OPEN_CONNECT_FAILED, which the client waits out and retries.
	var oce *ssh.OpenChannelError
	if _, err := c.NewSession(); !errors.As(err, &oce) || oce.Reason != ssh.ConnectionFailed {
		t.Fatalf("11th session: %v, want an open failure with reason ConnectionFailed", err)
	}
	open[0].Close()
	waitFor(t, 10*time.Second, "a free session slot", func() bool {
		s, err := c.NewSession()
		if err == nil {
			s.Close()
		}
		return err == nil
	})
}

func TestSSHForwardAndRestart(t *testing.T) {
	h := startHost(t, Options{NCCLProfile: true, StartupDelay: 300 * time.Millisecond, TimeScale: 5})
	if err := h.StartServer(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	c := dial(t, h)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return c.Dial("tcp", addr)
	}}}
	waitFor(t, 30*time.Second, "/health 200 through the tunnel", func() bool {
		resp, err := hc.Get(h.ServerURL() + "/health")
		if err != nil {
			return false // port not bound yet: the forward is refused
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	if _, err := c.Dial("tcp", "192.0.2.1:80"); err == nil {
		t.Error("direct-tcpip to a non-loopback address was allowed")
	}

	// An sshd restart: the connection drops, the port and key stay.
	if err := h.StopSSH(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("client not disconnected by StopSSH")
	}
	if err := h.RestartSSH(); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, dial(t, h), "echo again")
	if err != nil || out != "again\n" {
		t.Errorf("after restart: %q %v", out, err)
	}
	if h.ServerPID() == 0 {
		t.Error("the server died with the SSH server; it runs detached")
	}
}

// TestHostStory walks the seeds' story end to end through SSH: the server
// at the checkout's HEAD (the baseline) with the NCCL profile runs ~89
// tok/s and fills the GPUs; stopping it frees the memory; a `git pull`
// fast-forwards onto the regression, and the relaunch runs ~82.
func TestHostStory(t *testing.T) {
	h := startHost(t, Options{NCCLProfile: true, StartupDelay: 500 * time.Millisecond, TimeScale: 20, Seed: 11})
	c := dial(t, h)
	smi := func() int {
		out, err := run(t, c, "nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0")
		if err != nil {
			t.Fatalf("nvidia-smi: %v %s", err, out)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n
	}
	if m := smi(); m != 0 {
		t.Errorf("memory before launch %d MiB", m)
	}
	measure := func(after int) float64 {
		t.Helper()
		var lines []decodeLine
		waitFor(t, 60*time.Second, "25 decode lines", func() bool {
			b, _ := os.ReadFile(h.LogPath)
			parts := strings.Split(string(b), "server_args=")
			if len(parts) < after+2 {
				return false
			}
			lines = decodeLines(t, parts[after+1])
			return len(lines) >= 26
		})
		sum := 0.0
		for _, d := range lines[1:26] { // the first covers start-up
			sum += d.tokS
		}
		return sum / 25
	}
	if err := h.StartServer(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := h.StartServer(context.Background(), nil); err == nil {
		t.Error("second StartServer while running succeeded")
	}
	if got := measure(0); math.Abs(got-89)/89 > 0.05 {
		t.Errorf("HEAD (baseline) with profile: %.2f tok/s, want ~89", got)
	}
	if m := smi(); m < 125000 {
		t.Errorf("memory while serving %d MiB, want ~88%% of 143771", m)
	}
	pidf, _ := os.ReadFile(filepath.Join(h.Dir, pidFile))
	if f := strings.Fields(string(pidf)); len(f) != 2 || f[0] != strconv.Itoa(h.ServerPID()) {
		t.Errorf("pidfile %q, server pid %d", pidf, h.ServerPID())
	}

	if out, err := run(t, c, "git -C repo pull -q --ff-only && git -C repo rev-parse HEAD"); err != nil || strings.TrimSpace(out) != h.Commits.Latest {
		t.Fatalf("git pull: %q %v", out, err)
	}
	if err := h.StopServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "memory freed", func() bool { return smi() == 0 })
	if err := h.StartServer(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := measure(1); math.Abs(got-81.88)/81.88 > 0.05 {
		t.Errorf("pulled (regressed) with profile: %.2f tok/s, want ~81.9", got)
	}
	b, _ := os.ReadFile(h.LogPath)
	if strings.Count(string(b), "The server is fired up and ready to roll!") != 2 || !strings.Contains(string(b), "INFO:     Finished server process") {
		t.Error("log was not appended across launches")
	}
}

func TestStartOptions(t *testing.T) {
	for _, opt := range []Options{{GPUs: MaxGPUs + 1}, {GPUCapture: "testdata/nonexistent.txt"}, {ReplayLog: "testdata/nonexistent.log"}, {LogPrefix: "xx"}, {TimeScale: -1}} {
		if h, err := Start(context.Background(), opt); err == nil {
			h.Close()
			t.Errorf("Start(%+v) succeeded", opt)
		}
	}
	// Quoting: the wrapper must survive a directory name full of shell syntax.
	dir := filepath.Join(t.TempDir(), "sim dir's $HOME `x`")
	h := startHost(t, Options{Dir: dir, NoSSH: true, GPUs: 2})
	wrapper, _ := os.ReadFile(filepath.Join(h.BinDir, "nvidia-smi"))
	if !strings.HasPrefix(string(wrapper), "#!/bin/sh\n") || !strings.Contains(string(wrapper), "\nexec ") {
		t.Errorf("wrapper:\n%s", wrapper)
	}
	out, err := exec.Command(filepath.Join(h.BinDir, "nvidia-smi"), "-L").CombinedOutput()
	if err != nil || strings.Count(string(out), "NVIDIA H200") != 2 {
		t.Errorf("wrapper in a quoted dir: %q %v", out, err)
	}
	if h.SSHAddr != "" || h.IdentityPath != "" {
		t.Error("NoSSH host has SSH details")
	}
	// A second Start on the same directory reuses its repository.
	h2 := startHost(t, Options{Dir: dir, NoSSH: true})
	if h2.Commits.Regressing != h.Commits.Regressing || h2.Commits.Baseline == "" {
		t.Errorf("reopened commits %+v vs %+v", h2.Commits, h.Commits)
	}
}

// TestSMILoopWrapper runs the fake through its wrapper script as a separate
// process, the way a host sees it: one header, then 8 rows per tick, a
// tick every -lms interval, each tick flushed as it happens.
func TestSMILoopWrapper(t *testing.T) {
	h := startHost(t, Options{NoSSH: true})
	cmd := exec.Command(filepath.Join(h.BinDir, "nvidia-smi"), "--query-gpu=timestamp,index,memory.used", "--format=csv,nounits", "-lms", "100")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	var lines []string
	var firstTick, lastTick time.Time
	for len(lines) < 1+8*5 && sc.Scan() {
		lines = append(lines, sc.Text())
		if n := len(lines) - 1; n > 0 && n%8 == 1 {
			if firstTick.IsZero() {
				firstTick = time.Now()
			}
			lastTick = time.Now()
		}
	}
	if len(lines) != 41 {
		t.Fatalf("got %d lines: %v", len(lines), sc.Err())
	}
	if lines[0] != "timestamp, index, memory.used [MiB]" || strings.Count(strings.Join(lines, "\n"), "timestamp") != 1 {
		t.Errorf("want one header line, got first line %q", lines[0])
	}
	stamps := map[string]bool{}
	for i, l := range lines[1:] {
		f := strings.Split(l, ", ")
		if len(f) != 3 || f[1] != strconv.Itoa(i%8) {
			t.Fatalf("row %d = %q", i, l)
		}
		if _, err := time.Parse("2006/01/02 15:04:05.000", f[0]); err != nil {
			t.Errorf("timestamp %q: %v", f[0], err)
		}
		stamps[f[0]] = true
	}
	if len(stamps) != 5 {
		t.Errorf("%d distinct tick timestamps, want 5", len(stamps))
	}
	// Four intervals of 100 ms; generous bounds, the machine may be busy.
	if d := lastTick.Sub(firstTick); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("5 ticks of -lms 100 took %v", d)
	}
}

// TestCloseStopsDetachedServer launches the server the way a launcher does
// over SSH (setsid, stdio redirected), checks it outlives the session, and
// that Close still stops it.
func TestCloseStopsDetachedServer(t *testing.T) {
	h, err := Start(context.Background(), Options{StartupDelay: 200 * time.Millisecond, TimeScale: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var words []string
	for _, a := range h.ServerArgv() {
		q, err := quote(a)
		if err != nil {
			t.Fatal(err)
		}
		words = append(words, q)
	}
	logq, _ := quote(h.LogPath)
	cmd := "setsid -f " + strings.Join(words, " ") + " >>" + logq + " 2>&1 </dev/null"
	c := dial(t, h)
	if out, err := run(t, c, cmd); err != nil {
		t.Fatalf("launch: %v %s", err, out)
	}
	c.Close()
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for {
		sv := readServerView(h.Dir, time.Now())
		if pid = sv.PID; sv.Alive {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(h.LogPath)
			t.Fatalf("no heartbeat from the detached server; log:\n%s", log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h.ServerPID() != 0 {
		t.Error("ServerPID reports a server StartServer did not launch")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if pidAlive(pid) {
		t.Errorf("detached server %d still running after Close", pid)
	}
}

// TestSSHAllHostKeyTypes reproduces the known trap: with ecdsa and rsa host
// keys on offer and only ed25519 in known_hosts, x/crypto's default
// algorithm order fails; asking for ed25519 works.
func TestSSHAllHostKeyTypes(t *testing.T) {
	h := startHost(t, Options{AllHostKeyTypes: true, NoAutoLoad: true})
	key, _ := os.ReadFile(h.IdentityPath)
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	hk, _ := knownhosts.New(h.KnownHostsPath)
	cfg := &ssh.ClientConfig{User: h.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hk, Timeout: 10 * time.Second}
	if c, err := ssh.Dial("tcp", h.SSHAddr, cfg); err == nil {
		c.Close()
		t.Error("default host-key algorithms succeeded; want the ecdsa key to be rejected by known_hosts")
	}
	cfg.HostKeyAlgorithms = []string{ssh.KeyAlgoED25519}
	c, err := ssh.Dial("tcp", h.SSHAddr, cfg)
	if err != nil {
		t.Fatalf("ed25519 only: %v", err)
	}
	c.Close()
}

// TestServerExitsWhenItsOwnerDies: a demo killed with SIGKILL (or a test
// binary that dies) must not leave its simulated server running.
func TestServerExitsWhenItsOwnerDies(t *testing.T) {
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer owner.Process.Kill()
	h, err := Start(context.Background(), Options{NoSSH: true, StartupDelay: 100 * time.Millisecond, TimeScale: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Hand the sim to the sleep process, as if it had built it.
	cfgPath := filepath.Join(h.Dir, configFile)
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg simConfig
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.OwnerPID != os.Getpid() {
		t.Fatalf("sim.json owner %d (err %v), want this process %d", cfg.OwnerPID, err, os.Getpid())
	}
	cfg.OwnerPID = owner.Process.Pid
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.StartServer(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	pid := h.ServerPID()
	if !pidAlive(pid) {
		t.Fatal("server not running")
	}
	owner.Process.Kill()
	owner.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for pidAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("server %d still running 15 s after its owner died", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSSHExecReplyBeforeClose: the exec request is answered before the
// channel closes, however fast the command exits. A close first makes the
// client's exec fail with EOF, which flightdeck reads as a lost connection
// (a CI failure: "reading the home directory: connection to host lost: EOF").
func TestSSHExecReplyBeforeClose(t *testing.T) {
	h := startHost(t, Options{})
	c := dial(t, h)
	// The command has exited and its output is drained by the time the
	// exec is answered.
	wait := func() { time.Sleep(300 * time.Millisecond) }
	testHookStarted.Store(&wait)
	t.Cleanup(func() { testHookStarted.Store(nil) })
	for i := range 3 {
		out, err := run(t, c, `printf '%s\n' "$HOME"`)
		if err != nil || !strings.HasPrefix(out, "/") {
			t.Fatalf("run %d: %q, %v", i, out, err)
		}
	}
}
