package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

// SSHOptions tune how DialSSH resolves, authenticates and keeps a
// connection. The zero value follows ~/.ssh/config with OpenSSH's defaults.
type SSHOptions struct {
	// ConfigFile is read instead of ~/.ssh/config and /etc/ssh/ssh_config
	// (like ssh -F).
	ConfigFile string
	// DisableSSHG makes resolution parse the config with
	// github.com/kevinburke/ssh_config instead of running `ssh -G`; it is
	// also the fallback when no ssh client is installed.
	DisableSSHG bool
	// SSHCommand is the ssh client run as `ssh -G`; "" looks up "ssh" on PATH.
	SSHCommand string
	// User and Port override the config, but not a user or port written in
	// the target itself. 0 and "" mean unset. They do not apply to ProxyJump
	// hops.
	User string
	Port int
	// IdentityFiles replace the configured IdentityFile list (all hops).
	// Each must exist. A relative path is the working directory's (as
	// with ssh -i); "~/" is the home directory.
	IdentityFiles []string
	// KnownHostsFiles replace UserKnownHostsFile and GlobalKnownHostsFile
	// (all hops); an accepted new key is appended to the first. Relative
	// paths as for IdentityFiles.
	KnownHostsFiles []string
	// AcceptNewHostKey records the key of a host that has none in
	// known_hosts and connects (StrictHostKeyChecking=accept-new). A
	// changed key is refused regardless.
	AcceptNewHostKey bool
	// Passphrase is asked for the passphrase of an encrypted identity file
	// that ssh-agent does not hold. nil: such a file is skipped and named in
	// the error if authentication fails (*PassphraseRequiredError).
	Passphrase func(file string) ([]byte, error)
	// NoAgent ignores ssh-agent (SSH_AUTH_SOCK, IdentityAgent).
	NoAgent bool
	// HomeDir replaces the user's home directory for ~ and %d in the paths
	// flightdeck expands: IdentityFile, IdentityAgent, the options' paths,
	// and every path when the config is parsed without ssh -G (which
	// expands UserKnownHostsFile itself, with the account's home).
	HomeDir string
	// DialTimeout bounds one whole dial: TCP connect, every ProxyJump hop
	// and the SSH handshake. Default: ConnectTimeout from the config, else
	// 15 s.
	DialTimeout time.Duration
	// KeepaliveInterval and KeepaliveCountMax: a keepalive request is sent
	// every interval; one unanswered for an interval, with nothing else
	// heard from the host meanwhile, makes the state event.NotAnswering,
	// and CountMax in a row declare the connection dead (it is redialed).
	// A frozen host is thus shown within 2 intervals and given up within
	// CountMax+1: 4 s and 8 s by default. Default: ServerAliveInterval /
	// ServerAliveCountMax from the config, else 2 s and 3.
	KeepaliveInterval time.Duration
	KeepaliveCountMax int
	// ReconnectMin and ReconnectMax bound the exponential backoff (with
	// jitter) between redials. Default 250 ms and 30 s.
	ReconnectMin, ReconnectMax time.Duration
	// ReconnectRefusedMax caps that backoff while the host refuses
	// quickly: the last dial failed within a second (connection refused
	// or reset, no route, a jump host that could not connect), or with
	// connection refused. A restarted sshd is then reached within this
	// delay of listening again, where the full backoff would wait up to
	// ReconnectMax. Default 2 s; at most ReconnectMax.
	ReconnectRefusedMax time.Duration
	// MaxSessions caps concurrent sessions (Run and Start) on the one
	// connection; further calls wait for a slot within their context.
	// Default 8, below OpenSSH's MaxSessions of 10.
	MaxSessions int
}

const (
	defaultDialTimeout       = 15 * time.Second
	defaultKeepaliveInterval = 2 * time.Second
	defaultKeepaliveCountMax = 3
	defaultReconnectMin      = 250 * time.Millisecond
	defaultReconnectMax      = 30 * time.Second
	defaultReconnectRefused  = 2 * time.Second
	defaultMaxSessions       = 8
)

// SSH is a Host reached over one SSH connection (golang.org/x/crypto/ssh)
// that multiplexes every command and forwarded connection. It checks the
// connection with keepalives and redials with backoff when it drops; see
// Host for how calls behave meanwhile. Commands run in the user's login
// shell without a PTY; environment variables are passed as `env NAME=VALUE`
// words (see Command), never with the SSH env request.
type SSH struct {
	name     string
	target   *hostConfig
	hops     []*hostConfig
	checkers []*hostKeyChecker // one per hop, then the target
	auth     *authSource
	opts     SSHOptions // with defaults filled in
	sem      chan struct{}
	hub      *stateHub
	retry    chan struct{} // RetryNow's wake-up for the redial loop; one slot

	life   context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the connection manager

	mu     sync.Mutex
	conn   *sshConn      // nil while down
	ready  chan struct{} // closed while conn is set, or once failed or closed
	failed error         // permanent failure; no more redials
	closed bool
	quiet  bool // conn is not answering (event.NotAnswering)
}

var (
	_ Host   = (*SSH)(nil)
	_ Dialer = (*SSH)(nil)
)

// sshConn is one live connection: the client, and what it depends on.
type sshConn struct {
	client  *ssh.Client
	closers []io.Closer // ProxyJump hop clients (inner first), ssh-agent conns
	dead    chan struct{}
	once    sync.Once
	cause   error         // why it ended; valid once dead is closed
	heard   *atomic.Int64 // when the target last sent anything (heardConn)
}

// kill closes the connection once, recording why. dead is closed before
// the client: closing the client wakes every session's Wait, which must
// then see the connection dead and report this cause (a keepalive timeout,
// say), not the bare "exited without exit status" the teardown produces.
func (c *sshConn) kill(cause error) {
	c.once.Do(func() {
		c.cause = cause
		close(c.dead)
		c.client.Close()
		for _, cl := range c.closers {
			cl.Close()
		}
	})
}

func (c *sshConn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// DialSSH resolves target (user@host[:port], host, a ~/.ssh/config alias, or
// ssh://user@host:port) and connects, bounded by ctx and the dial timeout.
// Errors: configuration and identity problems, *UnknownHostKeyError,
// *HostKeyChangedError, *AuthError, or a network error. Once connected the
// SSH host redials by itself until Close.
func DialSSH(ctx context.Context, target string, opts SSHOptions) (*SSH, error) {
	o := opts
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = defaultReconnectMin
	}
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = max(defaultReconnectMax, o.ReconnectMin)
	}
	if o.ReconnectRefusedMax <= 0 {
		o.ReconnectRefusedMax = defaultReconnectRefused
	}
	o.ReconnectRefusedMax = min(max(o.ReconnectRefusedMax, o.ReconnectMin), o.ReconnectMax)
	if o.MaxSessions <= 0 {
		o.MaxSessions = defaultMaxSessions
	}
	h, err := resolveHost(ctx, target, &o, false)
	if err != nil {
		return nil, err
	}
	s := &SSH{
		target: h,
		auth:   &authSource{noAgent: o.NoAgent, passphrase: o.Passphrase},
		sem:    make(chan struct{}, o.MaxSessions),
		retry:  make(chan struct{}, 1),
	}
	for _, hop := range h.proxyJump {
		hc, err := resolveHost(ctx, hop, &o, true)
		if err != nil {
			return nil, fmt.Errorf("remote: ProxyJump hop %q: %w", hop, err)
		}
		s.hops = append(s.hops, hc)
	}
	for _, hc := range append(s.hops, h) {
		s.checkers = append(s.checkers, newHostKeyChecker(hc, o.AcceptNewHostKey))
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = orDefault(h.connectTimeout, defaultDialTimeout)
	}
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = orDefault(h.aliveInterval, defaultKeepaliveInterval)
	}
	if o.KeepaliveCountMax <= 0 {
		o.KeepaliveCountMax = h.aliveCountMax
		if o.KeepaliveCountMax <= 0 {
			o.KeepaliveCountMax = defaultKeepaliveCountMax
		}
	}
	s.opts = o
	s.name = h.user + "@" + net.JoinHostPort(h.alias, strconv.Itoa(h.port))
	c, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	s.hub = newStateHub(event.ConnState{Host: s.name, Conn: event.Connected})
	s.life, s.cancel = context.WithCancel(context.Background())
	s.conn = c
	s.ready = make(chan struct{})
	close(s.ready)
	s.wg.Add(1)
	go s.manage(c)
	return s, nil
}

// orDefault returns v, or def when v is zero.
func orDefault(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

// Name returns "user@host:port" with the host as given (an alias stays an
// alias).
func (s *SSH) Name() string { return s.name }

// Watch reports the connection state; see Host.Watch. After Close the
// channel receives Closed and is closed.
func (s *SSH) Watch(ctx context.Context) <-chan event.ConnState { return s.hub.watch(ctx) }

// Close ends every session and the connection and stops redialing. Processes
// detached on the host (setsid) keep running. It is safe to call twice.
func (s *SSH) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	s.cancel()
	if c != nil {
		c.kill(ErrClosed)
	}
	s.wg.Wait()
	s.hub.set(event.ConnState{Host: s.name, Conn: event.ConnClosed}, true)
	return nil
}

// dial connects through every ProxyJump hop to the target.
func (s *SSH) dial(ctx context.Context) (*sshConn, error) {
	var closers []io.Closer
	fail := func(err error) (*sshConn, error) {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i].Close()
		}
		return nil, err
	}
	hosts := append(append([]*hostConfig(nil), s.hops...), s.target)
	// Keys first, outside the dial timeout: this may ask for a passphrase.
	var keys []*signerSet
	for _, h := range hosts {
		signers, err := s.auth.load(h)
		if err != nil {
			return fail(err)
		}
		if signers.agent != nil {
			closers = append(closers, signers.agent)
		}
		keys = append(keys, signers)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.DialTimeout)
	defer cancel()
	heard := new(atomic.Int64)
	var prev *ssh.Client
	for i, h := range hosts {
		signers := keys[i]
		cb, algos, err := s.checkers[i].prepare()
		if err != nil {
			return fail(err)
		}
		cfg := &ssh.ClientConfig{
			User:              h.user,
			Auth:              []ssh.AuthMethod{ssh.PublicKeysCallback(func() ([]ssh.Signer, error) { return signers.signers, nil })},
			HostKeyCallback:   cb,
			HostKeyAlgorithms: algos,
		}
		var conn net.Conn
		if prev == nil {
			var d net.Dialer
			conn, err = d.DialContext(ctx, "tcp", h.addr())
		} else {
			conn, err = prev.DialContext(ctx, "tcp", h.addr())
		}
		if err != nil {
			return fail(fmt.Errorf("remote: dial %s: %w", h.addr(), err))
		}
		if i == len(hosts)-1 {
			conn = heardConn{Conn: conn, last: heard}
		}
		// ClientConfig.Timeout does not bound the handshake, and deadlines do
		// not work on a conn that is a channel of a hop: close it at ctx end.
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		cc, chans, reqs, err := ssh.NewClientConn(conn, h.knownHostsKey(), cfg)
		if !stop() {
			if err == nil {
				cc.Close()
			}
			return fail(fmt.Errorf("remote: ssh handshake with %s: %w", h.addr(), context.Cause(ctx)))
		}
		if err != nil {
			conn.Close()
			if strings.Contains(err.Error(), "unable to authenticate") {
				err = &AuthError{User: h.user, Host: h.addr(), Tried: signers.tried, Err: err, Skipped: signers.skipped}
			}
			return fail(fmt.Errorf("remote: %s: %w", h.addr(), err))
		}
		client := ssh.NewClient(cc, chans, reqs)
		if i < len(hosts)-1 {
			closers = append(closers, client)
		}
		prev = client
	}
	// Close the target client first, then the hops inward-out, then the
	// agent connections.
	var ordered []io.Closer
	for i := len(closers) - 1; i >= 0; i-- {
		ordered = append(ordered, closers[i])
	}
	return &sshConn{client: prev, closers: ordered, dead: make(chan struct{}), heard: heard}, nil
}

// permanent reports errors that redialing cannot fix.
func permanent(err error) bool {
	var (
		unknown *UnknownHostKeyError
		changed *HostKeyChangedError
		auth    *AuthError
		pass    *PassphraseRequiredError
		fatal   *fatalIdentityError
		revoked *xknownhosts.RevokedError
	)
	return errors.As(err, &unknown) || errors.As(err, &changed) || errors.As(err, &auth) ||
		errors.As(err, &pass) || errors.As(err, &fatal) || errors.As(err, &revoked) ||
		strings.Contains(err.Error(), "no common algorithm")
}

// acquire returns the live connection, waiting within ctx while it is
// being redialed.
func (s *SSH) acquire(ctx context.Context) (*sshConn, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, fmt.Errorf("remote: %s: %w", s.name, ErrClosed)
		case s.failed != nil:
			err := s.failed
			s.mu.Unlock()
			return nil, fmt.Errorf("remote: %s: gave up reconnecting: %w", s.name, err)
		case s.conn != nil && !s.conn.isDead():
			c := s.conn
			s.mu.Unlock()
			return c, nil
		}
		ready := s.ready
		s.mu.Unlock()
		select {
		case <-ready:
		case <-s.life.Done():
		case <-ctx.Done():
			return nil, fmt.Errorf("remote: %s: %w: still reconnecting: %w", s.name, ErrDisconnected, ctx.Err())
		}
	}
}

// DialContext opens a TCP connection from the remote host to addr (a
// direct-tcpip channel: "127.0.0.1:8000" is the host's own loopback). It
// waits for a redial within ctx. Such channels do not count as sessions.
func (s *SSH) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	for {
		c, err := s.acquire(ctx)
		if err != nil {
			return nil, err
		}
		conn, err := c.client.DialContext(ctx, network, addr)
		var oce *ssh.OpenChannelError
		switch {
		case err == nil:
			return conn, nil
		case errors.As(err, &oce), ctx.Err() != nil:
			return nil, fmt.Errorf("remote: %s: dial %s: %w", s.name, addr, err)
		}
		// The transport is broken: drop it and wait for the redial.
		s.drop(c, fmt.Errorf("opening channel: %w", err))
	}
}
