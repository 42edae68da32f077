package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

func TestSSHHostKeys(t *testing.T) {
	t.Parallel()
	srv := sshdtest.Start(t, sshdtest.Options{})
	dir := t.TempDir()

	t.Run("unknown host refused", func(t *testing.T) {
		known := filepath.Join(dir, "unknown", "known_hosts")
		_, err := DialSSH(context.Background(), srv.Target(), testOptions(t, srv, known))
		var ue *UnknownHostKeyError
		if !errors.As(err, &ue) {
			t.Fatalf("err = %v, want *UnknownHostKeyError", err)
		}
		// ed25519 is offered first for an unknown host, like OpenSSH.
		if ue.KeyType != "ssh-ed25519" || ue.Fingerprint != srv.Fingerprint("ed25519") {
			t.Errorf("got %+v, want the ed25519 key %s", ue, srv.Fingerprint("ed25519"))
		}
		for _, want := range []string{srv.Fingerprint("ed25519"), "--accept-new-host-key"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
		}
		if _, err := os.Stat(known); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("known_hosts created: %v", err)
		}
	})

	t.Run("accept new, then known", func(t *testing.T) {
		known := filepath.Join(dir, "accept", "new", "known_hosts")
		opts := testOptions(t, srv, known)
		opts.AcceptNewHostKey = true
		h := dialTest(t, srv.Target(), opts)
		h.Close()
		b, err := os.ReadFile(known)
		if err != nil || string(b) != srv.KnownHostsLines("ed25519") {
			t.Fatalf("known_hosts = %q, %v; want %q", b, err, srv.KnownHostsLines("ed25519"))
		}
		if fi, _ := os.Stat(known); fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", fi.Mode().Perm())
		}
		dialTest(t, srv.Target(), testOptions(t, srv, known)).Close()
	})

	t.Run("only one known key type of three", func(t *testing.T) {
		// The server offers ed25519, ECDSA and RSA; known_hosts holds one.
		// x/crypto's default order would negotiate ECDSA and report a
		// mismatch for the ed25519-only file.
		for _, kt := range sshdtest.KeyTypes {
			known := filepath.Join(dir, "only-"+kt)
			srv.WriteKnownHosts(known, kt)
			dialTest(t, srv.Target(), testOptions(t, srv, known)).Close()
		}
	})
}

func TestSSHChangedHostKey(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	opts := testOptions(t, srv, known)
	opts.AcceptNewHostKey = true // must not matter
	h := dialTest(t, srv.Target(), opts)
	states := h.Watch(t.Context())
	oldFP := srv.Fingerprint("ed25519")
	before, err := os.ReadFile(known)
	if err != nil {
		t.Fatal(err)
	}

	// The live connection drops; the redial meets the new key and gives up.
	srv.ReplaceHostKeys()
	s := waitState(t, states, "failed", func(s event.ConnState) bool { return s.Conn == event.ConnFailed })
	var ce *HostKeyChangedError
	if !errors.As(s.Err, &ce) {
		t.Fatalf("failed with %v, want *HostKeyChangedError", s.Err)
	}
	if _, err := h.Run(context.Background(), "true", nil); !errors.As(err, &ce) {
		t.Errorf("Run after failure: %v", err)
	}

	_, err = DialSSH(context.Background(), srv.Target(), opts)
	if !errors.As(err, &ce) {
		t.Fatalf("fresh dial: err = %v, want *HostKeyChangedError", err)
	}
	if ce.KeyType != "ssh-ed25519" || ce.Fingerprint != srv.Fingerprint("ed25519") {
		t.Errorf("presented key: %+v", ce)
	}
	if len(ce.Known) == 0 || ce.Known[0].File != known || ce.Known[0].Line != 1 || ce.Known[0].Fingerprint != oldFP {
		t.Errorf("known entries: %+v", ce.Known)
	}
	for _, want := range []string{known + ":1", oldFP, srv.Fingerprint("ed25519")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if after, _ := os.ReadFile(known); string(after) != string(before) {
		t.Errorf("known_hosts changed:\n%s", after)
	}
}

func TestSSHIdentities(t *testing.T) {
	srv, known := knownServer(t, sshdtest.Options{})
	enc := srv.EncryptedClientKeyPath()

	t.Run("passphrase-protected key without agent", func(t *testing.T) {
		opts := testOptions(t, srv, known)
		opts.IdentityFiles = []string{enc}
		_, err := DialSSH(context.Background(), srv.Target(), opts)
		var pe *PassphraseRequiredError
		if !errors.As(err, &pe) || pe.File != enc {
			t.Fatalf("err = %v, want *PassphraseRequiredError for %s", err, enc)
		}
		if !strings.Contains(err.Error(), "ssh-add "+enc) {
			t.Errorf("message %q does not say how to add the key", err)
		}
	})

	t.Run("passphrase callback", func(t *testing.T) {
		opts := testOptions(t, srv, known)
		opts.IdentityFiles = []string{enc}
		var asked []string
		opts.Passphrase = func(file string) ([]byte, error) {
			asked = append(asked, file)
			return []byte(sshdtest.EncryptedKeyPassphrase), nil
		}
		dialTest(t, srv.Target(), opts).Close()
		if len(asked) != 1 || asked[0] != enc {
			t.Errorf("asked for %v", asked)
		}
	})

	t.Run("a mistyped passphrase is asked again, three times at most", func(t *testing.T) {
		opts := testOptions(t, srv, known)
		opts.IdentityFiles = []string{enc}
		answers := []string{"wrong", "also wrong", sshdtest.EncryptedKeyPassphrase}
		asked := 0
		opts.Passphrase = func(string) ([]byte, error) {
			asked++
			return []byte(answers[asked-1]), nil
		}
		dialTest(t, srv.Target(), opts).Close()
		if asked != 3 {
			t.Errorf("asked %d times, want 3", asked)
		}

		opts = testOptions(t, srv, known)
		opts.IdentityFiles = []string{enc}
		asked = 0
		opts.Passphrase = func(string) ([]byte, error) { asked++; return []byte("wrong"), nil }
		if _, err := DialSSH(context.Background(), srv.Target(), opts); err == nil || asked != 3 ||
			!strings.Contains(err.Error(), "decryption password incorrect") {
			t.Errorf("after 3 wrong passphrases: err %v, asked %d times", err, asked)
		}
	})

	t.Run("agent holds the encrypted key", func(t *testing.T) {
		b, err := os.ReadFile(enc)
		if err != nil {
			t.Fatal(err)
		}
		priv, err := ssh.ParseRawPrivateKeyWithPassphrase(b, []byte(sshdtest.EncryptedKeyPassphrase))
		if err != nil {
			t.Fatal(err)
		}
		keyring := agent.NewKeyring()
		if err := keyring.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(t.TempDir(), "agent.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { agent.ServeAgent(keyring, c); c.Close() }()
			}
		}()
		t.Setenv("SSH_AUTH_SOCK", sock)
		opts := testOptions(t, srv, known)
		opts.NoAgent = false
		opts.IdentityFiles = []string{enc}
		opts.Passphrase = func(string) ([]byte, error) {
			t.Error("asked for a passphrase although the agent holds the key")
			return nil, errors.New("no")
		}
		h := dialTest(t, srv.Target(), opts)
		if _, err := h.Run(context.Background(), "true", nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("missing explicit identity file", func(t *testing.T) {
		opts := testOptions(t, srv, known)
		missing := filepath.Join(t.TempDir(), "nope")
		opts.IdentityFiles = []string{missing, srv.ClientKeyPath()}
		if _, err := DialSSH(context.Background(), srv.Target(), opts); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("err = %v, want one naming %s", err, missing)
		}
	})

	t.Run("key not authorized", func(t *testing.T) {
		opts := testOptions(t, srv, known)
		other := sshdtest.Start(t, sshdtest.Options{}) // its client key is not in srv's authorized_keys
		opts.IdentityFiles = []string{other.ClientKeyPath()}
		_, err := DialSSH(context.Background(), srv.Target(), opts)
		var ae *AuthError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), other.ClientKeyPath()) {
			t.Errorf("err = %v, want *AuthError naming the key tried", err)
		}
	})
}

func TestSSHConfigAlias(t *testing.T) {
	t.Parallel()
	srv, known := knownServer(t, sshdtest.Options{})
	cfg := filepath.Join(t.TempDir(), "config")
	writeFile(t, cfg, fmt.Sprintf(`
Host gpu-test
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  UserKnownHostsFile %s

Host via-jump
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  UserKnownHostsFile %s
  ProxyJump gpu-test
`, srv.Port(), srv.User(), srv.ClientKeyPath(), known, srv.Port(), srv.User(), srv.ClientKeyPath(), known))
	for name, disable := range resolvers(t) {
		t.Run(name, func(t *testing.T) {
			opts := SSHOptions{ConfigFile: cfg, HomeDir: t.TempDir(), NoAgent: true, DisableSSHG: disable}
			h := dialTest(t, "gpu-test", opts)
			if want := fmt.Sprintf("%s@gpu-test:%d", srv.User(), srv.Port()); h.Name() != want {
				t.Errorf("Name = %q, want %q", h.Name(), want)
			}
			if res, err := h.Run(context.Background(), "echo ok", nil); err != nil || string(res.Stdout) != "ok\n" {
				t.Errorf("Run: %q %v", res.Stdout, err)
			}
			// ProxyJump through the same sshd: the target connection is a
			// direct-tcpip channel of the hop's connection.
			j := dialTest(t, "via-jump", opts)
			if len(j.hops) != 1 || j.hops[0].alias != "gpu-test" {
				t.Fatalf("hops = %+v", j.hops)
			}
			res, err := j.Run(context.Background(), "echo jumped", nil)
			if err != nil || string(res.Stdout) != "jumped\n" {
				t.Errorf("Run via jump: %q %v", res.Stdout, err)
			}
		})
	}
}
