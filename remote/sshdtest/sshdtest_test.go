package sshdtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func dial(t *testing.T, s *Server, known string) (*ssh.Client, error) {
	t.Helper()
	b, err := os.ReadFile(s.ClientKeyPath())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := knownhosts.New(known)
	if err != nil {
		t.Fatal(err)
	}
	return ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{
		User:              s.User(),
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback:   cb,
		HostKeyAlgorithms: []string{ssh.KeyAlgoED25519},
		Timeout:           5 * time.Second,
	})
}

func run(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, err := sess.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("%s: %v: %s", cmd, err, out)
	}
	return string(out)
}

func TestServerPathEnvRestartStop(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte("#!/bin/sh\necho fake-smi \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Start(t, Options{PathDirs: []string{bin}, Env: map[string]string{"FLIGHTDECK_TEST": "a b"}})
	known := filepath.Join(t.TempDir(), "known_hosts")
	s.WriteKnownHosts(known, "ed25519")

	c, err := dial(t, s, known)
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, c, "nvidia-smi -L"); got != "fake-smi -L\n" {
		t.Errorf("fake binary: got %q", got)
	}
	if got := run(t, c, `printf %s "$FLIGHTDECK_TEST"`); got != "a b" {
		t.Errorf("SetEnv: got %q", got)
	}

	// Stop must end the open connection, not only the listener.
	s.Stop()
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("connection survived Stop")
	}
	if _, err := dial(t, s, known); err == nil {
		t.Fatal("dial succeeded while stopped")
	}

	// Restart keeps port and host keys: known_hosts still matches.
	s.Restart()
	c, err = dial(t, s, known)
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	c.Close()

	old := s.Fingerprint("ed25519")
	s.ReplaceHostKeys()
	if s.Fingerprint("ed25519") == old {
		t.Fatal("ReplaceHostKeys kept the key")
	}
	if _, err := dial(t, s, known); err == nil || !strings.Contains(err.Error(), "key mismatch") {
		t.Fatalf("dial after key replacement: got %v, want a key mismatch", err)
	}
}
