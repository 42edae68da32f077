package remote

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"golang.org/x/crypto/ssh"
)

func TestSSHReconnect(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	h := dialTest(t, srv.Target(), testOptions(t, srv, known))
	ctx := context.Background()
	states := h.Watch(t.Context())
	if s := <-states; s.Conn != event.Connected || s.Host != h.Name() {
		t.Fatalf("first state %+v", s)
	}

	p := startTicking(t, ctx, h, "0.1")

	srv.Stop()
	if err := waitErr(t, p); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("Wait = %v, want ErrDisconnected", err)
	}
	s := waitState(t, states, "reconnecting", func(s event.ConnState) bool { return s.Conn == event.Reconnecting })
	if s.Attempt < 1 || s.Err == nil || s.NextTry.IsZero() {
		t.Errorf("reconnecting state %+v", s)
	}

	// While down, calls wait within their context.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := h.Run(short, "true", nil); !errors.Is(err, ErrDisconnected) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run while down: %v", err)
	}
	// A call with a longer context rides over the restart.
	pending := make(chan error, 1)
	go func() {
		res, err := h.Run(ctx, "echo again", nil)
		if err == nil && string(res.Stdout) != "again\n" {
			err = fmt.Errorf("printed %q", res.Stdout)
		}
		pending <- err
	}()

	srv.Restart()
	waitState(t, states, "connected", func(s event.ConnState) bool { return s.Conn == event.Connected })
	select {
	case err := <-pending:
		if err != nil {
			t.Errorf("Run issued while down: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run issued while down never finished")
	}
	if res, err := h.Run(ctx, "echo back", nil); err != nil || string(res.Stdout) != "back\n" {
		t.Errorf("Run after reconnect: %q %v", res.Stdout, err)
	}
}

func TestSSHDialFrozenPeer(t *testing.T) {
	t.Parallel()
	// A peer that accepts TCP and never speaks SSH: only the context
	// deadline (not ClientConfig.Timeout) ends the handshake.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	start := time.Now()
	_, err = DialSSH(context.Background(), "root@"+ln.Addr().String(), SSHOptions{
		ConfigFile: os.DevNull, HomeDir: t.TempDir(), NoAgent: true, DialTimeout: 300 * time.Millisecond,
		IdentityFiles: []string{writeClientKey(t)}, KnownHostsFiles: []string{filepath.Join(t.TempDir(), "kh")},
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("dial took %v with a 300ms timeout", d)
	}
}

// writeClientKey writes a fresh unencrypted ed25519 key and returns its path.
func writeClientKey(t *testing.T) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "id_ed25519")
	writeFile(t, path, string(pem.EncodeToMemory(block)))
	return path
}

// freezeProxy forwards TCP to target; freeze stops forwarding on every
// existing connection (bytes read are never delivered), as a peer that
// hangs without closing. New connections pass normally.
type freezeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	pairs  []*proxyPair
}

type proxyPair struct {
	a, b   net.Conn
	frozen chan struct{}
	once   sync.Once
}

func newFreezeProxy(t *testing.T, target string) *freezeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, target: target}
	t.Cleanup(p.close)
	go func() {
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", target)
			if err != nil {
				a.Close()
				continue
			}
			pair := &proxyPair{a: a, b: b, frozen: make(chan struct{})}
			p.mu.Lock()
			p.pairs = append(p.pairs, pair)
			p.mu.Unlock()
			go pair.pipe(a, b)
			go pair.pipe(b, a)
		}
	}()
	return p
}

func (pp *proxyPair) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-pp.frozen:
			return // drop it; dst stays open and silent
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (p *freezeProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pair := range p.pairs {
		pair.once.Do(func() { close(pair.frozen) })
	}
}

func (p *freezeProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pair := range p.pairs {
		pair.a.Close()
		pair.b.Close()
	}
}

func TestSSHKeepaliveDetectsFrozenPeer(t *testing.T) {
	t.Parallel()
	srv := sshdtest.Start(t, sshdtest.Options{})
	proxy := newFreezeProxy(t, srv.Addr())
	known := filepath.Join(t.TempDir(), "known_hosts")
	proxyAddr := proxy.ln.Addr().String()
	line := strings.Replace(srv.KnownHostsLines("ed25519"), "[127.0.0.1]:"+fmt.Sprint(srv.Port()), "["+strings.Replace(proxyAddr, ":", "]:", 1), 1)
	writeFile(t, known, line)
	opts := testOptions(t, srv, known)
	opts.KeepaliveInterval = 100 * time.Millisecond
	opts.KeepaliveCountMax = 3
	h := dialTest(t, srv.User()+"@"+proxyAddr, opts)
	states := h.Watch(t.Context())

	p := startTicking(t, context.Background(), h, "0.05")

	start := time.Now()
	proxy.freeze()
	err := waitErr(t, p)
	if !errors.Is(err, ErrDisconnected) || !errors.Is(err, errKeepaliveTimeout) {
		t.Fatalf("Wait = %v, want ErrDisconnected from a keepalive timeout", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
		t.Errorf("detected after %v, want about 3 × 100ms", d)
	}
	waitState(t, states, "connected again", func(s event.ConnState) bool { return s.Conn == event.Connected })
	if res, err := h.Run(context.Background(), "echo alive", nil); err != nil || string(res.Stdout) != "alive\n" {
		t.Errorf("Run after reconnect: %q %v", res.Stdout, err)
	}
}
