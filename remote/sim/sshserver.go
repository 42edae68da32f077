package sim

import (
	"bytes"
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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"golang.org/x/sys/unix"
)

// MaxSessionsPerConn is OpenSSH's default MaxSessions, which the in-process
// server enforces too.
const MaxSessionsPerConn = 10

// SSHServer is an in-process SSH server on 127.0.0.1 that behaves like
// OpenSSH where flightdeck relies on it: public-key auth with one key, "exec"
// runs `sh -c COMMAND` (as the current user, in the sim dir, with the sim's
// bin directory first on PATH, EnvNVML set to the sim dir and
// XDG_CACHE_HOME to its cache/ subdirectory), exit-status/exit-signal, no
// shell or pty, env requests refused (no AcceptEnv), keepalive@openssh.com answered with
// failure, direct-tcpip to loopback only, at most 10 sessions per
// connection. Closing a session channel (or the connection) kills the
// command's process group.
type SSHServer struct {
	cfg    *ssh.ServerConfig
	dir    string // working directory of commands
	binDir string // prepended to PATH

	mu       sync.Mutex
	addr     string // fixed after the first Start, so Restart keeps the port
	ln       net.Listener
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
	hostKey  ssh.PublicKey
	stopping bool
	execs    execLog // the commands started (Host.ExecsSince)
}

// sshKeys are the throwaway keys of a sim host.
type sshKeys struct {
	hostSigner ssh.Signer
	hostPriv   ed25519.PrivateKey
	extraHost  []ssh.Signer // ecdsa/rsa host keys offered besides ed25519 (not in known_hosts)
	clientPub  ssh.PublicKey
	clientPriv ed25519.PrivateKey
}

func newSSHKeys(allTypes bool) (*sshKeys, error) {
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		return nil, err
	}
	cpub, cpriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, err := ssh.NewPublicKey(cpub)
	if err != nil {
		return nil, err
	}
	k := &sshKeys{hostSigner: signer, hostPriv: hostPriv, clientPub: pub, clientPriv: cpriv}
	if allTypes {
		ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		rk, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, err
		}
		for _, key := range []any{ec, rk} {
			sg, err := ssh.NewSignerFromKey(key)
			if err != nil {
				return nil, err
			}
			k.extraHost = append(k.extraHost, sg)
		}
	}
	return k, nil
}

func newSSHServer(k *sshKeys, dir, binDir string) *SSHServer {
	want := k.clientPub.Marshal()
	cfg := &ssh.ServerConfig{
		ServerVersion: "SSH-2.0-flightdeck-sim",
		MaxAuthTries:  6,
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), want) {
				return &ssh.Permissions{}, nil
			}
			return nil, errors.New("unknown public key")
		},
	}
	cfg.AddHostKey(k.hostSigner)
	for _, sg := range k.extraHost {
		cfg.AddHostKey(sg)
	}
	return &SSHServer{cfg: cfg, dir: dir, binDir: binDir, conns: map[net.Conn]struct{}{}, hostKey: k.hostSigner.PublicKey()}
}

// Addr is "127.0.0.1:PORT" ("" before the first Start).
func (s *SSHServer) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start listens (on a random loopback port the first time, on the same
// port after a Stop) and serves until Stop.
func (s *SSHServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return nil
	}
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ssh listen %s: %w", addr, err)
	}
	s.ln, s.addr, s.stopping = ln, ln.Addr().String(), false
	s.wg.Add(1)
	go s.accept(ln)
	return nil
}

// Stop closes the listener and every connection, kills the commands they
// were running, and waits for all of it to finish. Start serves again on
// the same port with the same host key (a restarted sshd).
func (s *SSHServer) Stop() error {
	s.mu.Lock()
	ln := s.ln
	s.ln, s.stopping = nil, true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	s.wg.Wait()
	return err
}

func (s *SSHServer) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

func (s *SSHServer) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	c.SetDeadline(time.Now().Add(10 * time.Second)) // handshake only
	sc, chans, reqs, err := ssh.NewServerConn(c, s.cfg)
	if err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	defer sc.Close()
	go func() {
		// keepalive@openssh.com and every other global request: refused,
		// which is how OpenSSH answers keepalives.
		for r := range reqs {
			if r.WantReply {
				r.Reply(false, nil)
			}
		}
	}()
	var sessMu sync.Mutex
	sessions := 0
	var connWG sync.WaitGroup
	defer connWG.Wait()
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			sessMu.Lock()
			if sessions >= MaxSessionsPerConn {
				sessMu.Unlock()
				nc.Reject(ssh.ConnectionFailed, "open failed") // what OpenSSH answers at MaxSessions (SSH2_OPEN_CONNECT_FAILED): the client waits and retries
				continue
			}
			sessions++
			sessMu.Unlock()
			connWG.Add(1)
			go func() {
				defer connWG.Done()
				s.session(nc, sc)
				sessMu.Lock()
				sessions--
				sessMu.Unlock()
			}()
		case "direct-tcpip":
			connWG.Add(1)
			go func() { defer connWG.Done(); directTCPIP(nc) }()
		default:
			nc.Reject(ssh.UnknownChannelType, "unknown channel type")
		}
	}
}

// testHookStarted, when set by a test, runs between the start of an exec'd
// command and the reply to the exec request.
var testHookStarted atomic.Pointer[func()]

// session serves one session channel: a single "exec".
func (s *SSHServer) session(nc ssh.NewChannel, sc *ssh.ServerConn) {
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	var p *sessionProc
	for r := range reqs {
		ok := false
		if r.Type == "exec" && p == nil {
			var payload struct{ Command string }
			if ssh.Unmarshal(r.Payload, &payload) == nil {
				p, err = s.startProc(payload.Command, sc)
				ok = err == nil
				if hook := testHookStarted.Load(); ok && hook != nil {
					(*hook)()
				}
				if err != nil {
					fmt.Fprintf(ch.Stderr(), "flightdeck sim sshd: %v\n", err)
				}
			}
		}
		// "env" (no AcceptEnv), "shell", "pty-req", "subsystem", "signal" …: refused.
		if r.WantReply {
			r.Reply(ok, nil)
		}
		if r.Type == "exec" && ok {
			// Only after the reply, as sshd does: a command that exits at
			// once would otherwise close the channel before the client
			// knows that its exec was accepted, and the client reads that
			// as a lost connection.
			p.serve(ch)
		}
		if r.Type == "exec" && !ok {
			if p != nil {
				// A second exec on one channel: sshd refuses it too; the
				// first command ends with the channel.
				p.kill()
				<-p.done
			}
			ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{127}))
			return
		}
	}
	// The client closed the channel or the connection dropped.
	if p != nil {
		p.kill()
		<-p.done
	}
}

// sessionProc is a running exec command.
type sessionProc struct {
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	rOut, rErr *os.File
	finished   atomic.Bool   // exited and its output drained: nothing left to kill
	done       chan struct{} // closed after the exit status went out
	once       sync.Once
}

// startProc starts command; serve connects it to its channel.
func (s *SSHServer) startProc(command string, sc *ssh.ServerConn) (*sessionProc, error) {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var env []string
	path := s.binDir
	for _, e := range os.Environ() {
		k, v, _ := strings.Cut(e, "=")
		switch k {
		case EnvRole, "SSH_CONNECTION", "SSH_CLIENT", EnvNVML, "XDG_CACHE_HOME":
			continue
		case "PATH":
			path = s.binDir + ":" + v
			continue
		}
		env = append(env, e)
	}
	rh, rp, _ := net.SplitHostPort(sc.RemoteAddr().String())
	lh, lp, _ := net.SplitHostPort(sc.LocalAddr().String())
	cmd.Env = append(env, "PATH="+path, "SSH_CONNECTION="+rh+" "+rp+" "+lh+" "+lp, "SSH_CLIENT="+rh+" "+rp+" "+lp,
		// A `flightdeck agent` run here samples the sim's fake NVML, and
		// one uploaded lands in the sim directory, not the user's ~/.cache.
		EnvNVML+"="+s.dir, "XDG_CACHE_HOME="+filepath.Join(s.dir, "cache"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	rOut, wOut, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	rErr, wErr, err := os.Pipe()
	if err != nil {
		rOut.Close()
		wOut.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = wOut, wErr
	err = cmd.Start()
	wOut.Close()
	wErr.Close()
	if err != nil {
		rOut.Close()
		rErr.Close()
		return nil, err
	}
	s.execs.add(Exec{Time: time.Now(), Command: command, PID: cmd.Process.Pid})
	return &sessionProc{cmd: cmd, stdin: stdin, rOut: rOut, rErr: rErr, done: make(chan struct{})}, nil
}

// serve copies the channel to the command's stdin and its output to the
// channel, and sends its exit status and closes the channel once it has
// exited and its output is drained.
func (p *sessionProc) serve(ch ssh.Channel) {
	cmd, rOut, rErr := p.cmd, p.rOut, p.rErr
	go func() {
		io.Copy(p.stdin, ch)
		p.stdin.Close()
	}()
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(ch, rOut) }()
	go func() { defer copies.Done(); io.Copy(ch.Stderr(), rErr) }()
	go func() {
		defer close(p.done)
		werr := cmd.Wait()
		// Like sshd, wait for EOF on the output: a background child that
		// kept stdout open keeps the session open.
		copies.Wait()
		p.finished.Store(true)
		rOut.Close()
		rErr.Close()
		var ee *exec.ExitError
		switch {
		case werr == nil:
			ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
		case errors.As(werr, &ee):
			ws, _ := ee.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				name := unixSignalName(ws.Signal())
				ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
					Signal     string
					CoreDumped bool
					Msg, Lang  string
				}{name, ws.CoreDump(), "", ""}))
			} else {
				ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(ws.ExitStatus())}))
			}
		default:
			ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{255}))
		}
		ch.CloseWrite()
		ch.Close()
	}()
}

// kill ends the command's process group: TERM, then KILL after a second.
// Detached children (setsid) are in another group and survive, as they do
// under sshd.
func (p *sessionProc) kill() {
	p.once.Do(func() {
		if p.finished.Load() {
			// The command completed (a `setsid -f` child may still be on its
			// way out of the group, and the pid may be reused): leave it.
			return
		}
		pgid := p.cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		go func() {
			select {
			case <-p.done:
			case <-time.After(time.Second):
				syscall.Kill(-pgid, syscall.SIGKILL)
			}
		}()
		// Unblock the output copies even if a detached child holds the pipes.
		time.AfterFunc(1500*time.Millisecond, func() { p.rOut.Close(); p.rErr.Close() })
	})
}

// unixSignalName is sig as SSH's exit-signal names it: "TERM", or its
// number when the kernel has no name for it.
func unixSignalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return strings.TrimPrefix(name, "SIG")
	}
	return strconv.Itoa(int(sig))
}

// directTCPIP forwards a channel to a loopback port (ssh -L); any other
// destination is refused.
func directTCPIP(nc ssh.NewChannel) {
	var d struct {
		Host     string
		Port     uint32
		OrigHost string
		OrigPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &d); err != nil {
		nc.Reject(ssh.ConnectionFailed, "bad direct-tcpip request")
		return
	}
	switch d.Host {
	case "127.0.0.1", "localhost", "::1":
	default:
		nc.Reject(ssh.Prohibited, "administratively prohibited: open failed")
		return
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(d.Host, strconv.Itoa(int(d.Port))), 5*time.Second)
	if err != nil {
		nc.Reject(ssh.ConnectionFailed, "connect failed: "+err.Error())
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		conn.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		io.Copy(conn, ch)
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	go func() {
		defer wg.Done()
		io.Copy(ch, conn)
		ch.CloseWrite()
	}()
	wg.Wait()
	ch.Close()
	conn.Close()
}

// writeSSHFiles writes the client identity (OpenSSH format, 0600), its .pub,
// an authorized_keys holding it, the host key pair, and known_hosts with the
// host key for addr ("[127.0.0.1]:PORT" form).
func writeSSHFiles(dir string, k *sshKeys, addr string) (identity, knownHostsPath string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	blk, err := ssh.MarshalPrivateKey(k.clientPriv, "flightdeck-sim client")
	if err != nil {
		return "", "", err
	}
	hblk, err := ssh.MarshalPrivateKey(k.hostPriv, "flightdeck-sim host")
	if err != nil {
		return "", "", err
	}
	identity = filepath.Join(dir, "id_ed25519")
	knownHostsPath = filepath.Join(dir, "known_hosts")
	files := []struct {
		name string
		data []byte
		perm os.FileMode
	}{
		{"id_ed25519", pem.EncodeToMemory(blk), 0o600},
		{"id_ed25519.pub", ssh.MarshalAuthorizedKey(k.clientPub), 0o644},
		{"authorized_keys", ssh.MarshalAuthorizedKey(k.clientPub), 0o600},
		{"ssh_host_ed25519_key", pem.EncodeToMemory(hblk), 0o600},
		{"ssh_host_ed25519_key.pub", ssh.MarshalAuthorizedKey(k.hostSigner.PublicKey()), 0o644},
		{"known_hosts", []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, k.hostSigner.PublicKey()) + "\n"), 0o600},
	}
	for _, f := range files {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, f.perm); err != nil {
			return "", "", err
		}
	}
	return identity, knownHostsPath, nil
}
