// Package sshdtest starts a real OpenSSH sshd on 127.0.0.1 for tests: its
// own temporary directory, configuration, host keys (ed25519, ECDSA and RSA,
// so host-key algorithm negotiation is exercised as with a stock server)
// and a client key in authorized_keys. It logs in as the user running the
// test (root in CI).
//
// A test that serves fake binaries (a fake nvidia-smi, a fake inference
// server: executable files with a #! line) puts their directory first on
// the sessions' PATH, and connects with options that never read the real
// ~/.ssh:
//
//	srv := sshdtest.Start(t, sshdtest.Options{PathDirs: []string{fakebin}})
//	known := filepath.Join(t.TempDir(), "known_hosts")
//	srv.WriteKnownHosts(known)
//	h, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
//		ConfigFile:      os.DevNull,
//		IdentityFiles:   []string{srv.ClientKeyPath()},
//		KnownHostsFiles: []string{known},
//		NoAgent:         true,
//		ReconnectMin:    20 * time.Millisecond,
//		ReconnectMax:    200 * time.Millisecond,
//	})
//
// srv.Stop() then srv.Restart() drops every connection (and kills the
// commands sshd ran) and brings the same host back on the same port;
// srv.Freeze() stops the sshd processes serving the open connections, as a
// hung host, until the thaw it returns.
// Commands run in the user's login shell, in the user's home directory.
//
// When sshd is not installed the test is skipped, unless the environment
// variable CI is set: then it fails, so CI never skips silently.
package sshdtest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// KeyTypes are the host key types a Server has, by their short names.
var KeyTypes = []string{"ed25519", "ecdsa", "rsa"}

// EncryptedKeyPassphrase is the passphrase of EncryptedClientKeyPath.
const EncryptedKeyPassphrase = "flightdeck-test-passphrase"

// defaultPath is the sessions' PATH after Options.PathDirs.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Options configure a Server.
type Options struct {
	// PathDirs are absolute directories put first on PATH in every session
	// (sshd_config SetEnv), e.g. a directory of fake binaries.
	PathDirs []string
	// Env are more variables set in every session (SetEnv). Values must not
	// contain a double quote, backslash or control character.
	Env map[string]string
	// Config are extra sshd_config lines, appended last.
	Config []string
	// HostKeyTypes limits the host keys to these of KeyTypes; default all.
	HostKeyTypes []string
	// Trace runs sshd under strace -f, so that every process it starts
	// (connection handlers, login shells and their commands) is recorded:
	// Server.StartedSince counts them (trace.go). Without strace installed
	// the test is skipped, or fails when $CI is set.
	Trace bool
}

// Server is a running sshd. Its methods call t.Fatal on failure.
type Server struct {
	t    testing.TB
	sshd string
	dir  string
	port int
	opts Options

	clientKey    string // path of the unencrypted client key
	encClientKey string // path of the encrypted client key

	strace string   // strace's path, with Options.Trace
	traces []string // trace files, one per start (guarded by mu)

	mu       sync.Mutex
	hostKeys map[string]ssh.PublicKey // by short type name
	cmd      *exec.Cmd
	exited   chan struct{}
	log      strings.Builder
}

// Start starts sshd and stops it when the test ends. It skips the test when
// sshd is missing (fails when $CI is set).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		p, lerr := exec.LookPath("sshd")
		if lerr != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("sshdtest: OpenSSH sshd not installed (CI is set, so this is a failure): %v", lerr)
			}
			t.Skipf("sshdtest: OpenSSH sshd not installed: %v", lerr)
		}
		sshd = p
	}
	if len(opts.HostKeyTypes) == 0 {
		opts.HostKeyTypes = KeyTypes
	}
	s := &Server{t: t, sshd: sshd, dir: t.TempDir(), opts: opts}
	if opts.Trace {
		s.strace = needStrace(t)
	}
	if os.Geteuid() == 0 {
		// sshd's privilege separation directory; packages create it only
		// when the service starts.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("sshdtest: %v", err)
		}
	}
	s.writeHostKeys(false)
	s.writeClientKeys()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("sshdtest: sshd log:\n%s", s.Log())
		}
	})
	var err error
	for range 5 {
		s.port = freePort(t)
		s.writeConfig()
		if err = s.start(); err == nil {
			return s
		}
		if !strings.Contains(strings.ToLower(err.Error()), "bind") { // "Bind to port N ... failed", "Cannot bind any address"
			break
		}
	}
	t.Fatalf("sshdtest: %v", err)
	return nil
}

// Addr is "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port is the port sshd listens on (the same after Restart).
func (s *Server) Port() int { return s.port }

// User is the login user: the one running the test.
func (s *Server) User() string {
	u, err := user.Current()
	if err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
	return u.Username
}

// Target is "USER@127.0.0.1:PORT", for remote.DialSSH.
func (s *Server) Target() string { return s.User() + "@" + s.Addr() }

// Dir is the server's directory (config, keys, pid file, logs).
func (s *Server) Dir() string { return s.dir }

// ClientKeyPath is an unencrypted ed25519 private key that may log in.
func (s *Server) ClientKeyPath() string { return s.clientKey }

// EncryptedClientKeyPath is an ed25519 private key, encrypted with
// EncryptedKeyPassphrase, that may log in.
func (s *Server) EncryptedClientKeyPath() string { return s.encClientKey }

// HostKey returns the public host key of a type in KeyTypes.
func (s *Server) HostKey(keyType string) ssh.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.hostKeys[keyType]
	if !ok {
		s.t.Fatalf("sshdtest: no %q host key", keyType)
	}
	return k
}

// Fingerprint is the SHA256 fingerprint of a host key ("SHA256:...").
func (s *Server) Fingerprint(keyType string) string {
	return ssh.FingerprintSHA256(s.HostKey(keyType))
}

// KnownHostsLines returns known_hosts lines ("[127.0.0.1]:PORT type key\n")
// for the given host key types, default all.
func (s *Server) KnownHostsLines(keyTypes ...string) string {
	if len(keyTypes) == 0 {
		keyTypes = s.opts.HostKeyTypes
	}
	var b strings.Builder
	for _, kt := range keyTypes {
		b.WriteString(knownhosts.Line([]string{s.Addr()}, s.HostKey(kt)))
		b.WriteByte('\n')
	}
	return b.String()
}

// WriteKnownHosts writes (replaces) path with KnownHostsLines(keyTypes...).
func (s *Server) WriteKnownHosts(path string, keyTypes ...string) {
	if err := os.WriteFile(path, []byte(s.KnownHostsLines(keyTypes...)), 0o600); err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
}

// ReplaceHostKeys generates new host keys and restarts sshd with them, as
// when a host is reinstalled (or impersonated).
func (s *Server) ReplaceHostKeys() {
	s.t.Helper()
	s.Stop()
	s.writeHostKeys(true)
	if err := s.start(); err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
}

// Log returns what sshd wrote to stderr so far (LogLevel VERBOSE).
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Stop kills sshd and every process it started (connection handlers,
// login shells and their commands), as if the host went away: open
// connections see their TCP connection close. It is safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	killTree(cmd.Process.Pid)
	<-exited
}

// Restart stops sshd and starts it again on the same port with the same
// host keys.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
}

// start runs sshd and waits until it listens.
func (s *Server) start() error {
	argv := s.command(filepath.Join(s.dir, "sshd_config"))
	cmd := exec.Command(argv[0], argv[1:]...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting sshd: %w", err)
	}
	exited := make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if strings.Contains(line, "Server listening on") {
				once.Do(func() { close(ready) })
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(exited)
	}()
	select {
	case <-ready:
		s.mu.Lock()
		s.cmd, s.exited = cmd, exited
		s.mu.Unlock()
		return nil
	case <-exited:
		return fmt.Errorf("sshd exited before listening on port %d:\n%s", s.port, s.Log())
	case <-time.After(15 * time.Second):
		killTree(cmd.Process.Pid)
		<-exited
		return fmt.Errorf("sshd did not listen within 15s:\n%s", s.Log())
	}
}

func (s *Server) writeConfig() {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("Port %d", s.port)
	p("ListenAddress 127.0.0.1")
	for _, kt := range s.opts.HostKeyTypes {
		p("HostKey %s", filepath.Join(s.dir, "host_"+kt))
	}
	p("PidFile %s", filepath.Join(s.dir, "sshd.pid"))
	p("AuthorizedKeysFile %s", filepath.Join(s.dir, "authorized_keys"))
	p("PermitRootLogin prohibit-password")
	p("PasswordAuthentication no")
	p("KbdInteractiveAuthentication no")
	p("UsePAM no")
	p("StrictModes no")
	p("LogLevel VERBOSE")
	path := defaultPath
	if len(s.opts.PathDirs) > 0 {
		for _, d := range s.opts.PathDirs {
			if !filepath.IsAbs(d) {
				s.t.Fatalf("sshdtest: PathDirs entry %q is not absolute", d)
			}
		}
		path = strings.Join(s.opts.PathDirs, ":") + ":" + path
	}
	// Sessions get a HOME of their own: the login user's dotfiles (a
	// .bashrc running pyenv or conda init) stay out of the tests, and a
	// shell killed with sshd mid-login leaves no lock behind that would
	// stall every later login (pyenv rehash waits 60 s for its lock).
	home := filepath.Join(s.dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
	setenv := []string{quoteSetEnv(s.t, "PATH", path)}
	if _, ok := s.opts.Env["HOME"]; !ok {
		setenv = append(setenv, quoteSetEnv(s.t, "HOME", home))
	}
	for k, v := range s.opts.Env {
		setenv = append(setenv, quoteSetEnv(s.t, k, v))
	}
	p("SetEnv %s", strings.Join(setenv, " "))
	for _, l := range s.opts.Config {
		p("%s", l)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "sshd_config"), []byte(b.String()), 0o600); err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
}

// quoteSetEnv returns "NAME=VALUE" as one sshd_config argument.
func quoteSetEnv(t testing.TB, k, v string) string {
	if k == "" || strings.ContainsAny(k, "= \t\"\\") || strings.ContainsAny(v, "\"\\") ||
		strings.ContainsFunc(k+v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		t.Fatalf("sshdtest: cannot put %q=%q in SetEnv", k, v)
	}
	return `"` + k + "=" + v + `"`
}

// cachedHostKeys are generated once per test binary: RSA generation is slow.
var cachedHostKeys = sync.OnceValues(func() (map[string]any, error) { return generateKeys() })

func generateKeys() (map[string]any, error) {
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	rs, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return map[string]any{"ed25519": ed, "ecdsa": ec, "rsa": rs}, nil
}

// writeHostKeys writes the host keys; fresh ones when fresh is set.
func (s *Server) writeHostKeys(fresh bool) {
	keys, err := cachedHostKeys()
	if fresh {
		keys, err = generateKeys()
	}
	if err != nil {
		s.t.Fatalf("sshdtest: generating host keys: %v", err)
	}
	pubs := map[string]ssh.PublicKey{}
	for _, kt := range s.opts.HostKeyTypes {
		priv, ok := keys[kt]
		if !ok {
			s.t.Fatalf("sshdtest: unknown host key type %q (want one of %v)", kt, KeyTypes)
		}
		pubs[kt] = writePrivateKey(s.t, filepath.Join(s.dir, "host_"+kt), priv)
	}
	s.mu.Lock()
	s.hostKeys = pubs
	s.mu.Unlock()
}

// encryptedClientKey is generated once per test binary: the bcrypt KDF of
// an encrypted OpenSSH key costs about a second under the race detector.
var encryptedClientKey = sync.OnceValues(func() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	return priv, err
})

var encryptedClientPEM = sync.OnceValues(func() ([]byte, error) {
	priv, err := encryptedClientKey()
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "sshdtest", []byte(EncryptedKeyPassphrase))
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(block), nil
})

// writeClientKeys writes a fresh unencrypted client key and the encrypted
// one, and authorizes both.
func (s *Server) writeClientKeys() {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
	s.clientKey = filepath.Join(s.dir, "client_ed25519")
	pub := writePrivateKey(s.t, s.clientKey, priv)
	auth := ssh.MarshalAuthorizedKey(pub)

	encPriv, err := encryptedClientKey()
	if err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
	encPEM, err := encryptedClientPEM()
	if err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
	signer, err := ssh.NewSignerFromKey(encPriv)
	if err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
	s.encClientKey = filepath.Join(s.dir, "client_encrypted")
	if err := os.WriteFile(s.encClientKey, encPEM, 0o600); err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
	encPub := ssh.MarshalAuthorizedKey(signer.PublicKey())
	if err := os.WriteFile(s.encClientKey+".pub", encPub, 0o644); err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
	auth = append(auth, encPub...)
	if err := os.WriteFile(filepath.Join(s.dir, "authorized_keys"), auth, 0o600); err != nil {
		s.t.Fatalf("sshdtest: %v", err)
	}
}

// writePrivateKey writes priv in OpenSSH format (0600) and its .pub, and
// returns the public key.
func writePrivateKey(t testing.TB, path string, priv any) ssh.PublicKey {
	block, err := ssh.MarshalPrivateKey(priv, "sshdtest")
	if err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o644); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	return signer.PublicKey()
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// killTree SIGKILLs root and all its descendants. sshd's connection
// handlers call setsid, so a process-group kill would miss them: stop the
// whole tree first (stopped processes cannot fork), rescanning until no new
// process appears, then kill every one.
func killTree(root int) {
	stopped := map[int]bool{}
	for range 20 {
		added := false
		for _, pid := range append([]int{root}, descendants(root)...) {
			if !stopped[pid] {
				stopped[pid] = true
				added = true
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
		if !added {
			break
		}
	}
	for pid := range stopped {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// descendants lists the pids below root, from /proc (Linux).
func descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, err := parentPID(pid); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentPID reads field 4 of /proc/PID/stat (after the parenthesised
// command name, which may itself contain spaces and parentheses).
func parentPID(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("malformed stat")
	}
	return strconv.Atoi(f[1])
}
