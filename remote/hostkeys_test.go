package remote

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

func genKey(t *testing.T, kind string) ssh.PublicKey {
	t.Helper()
	var s ssh.Signer
	var err error
	switch kind {
	case "ed25519":
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		s, err = ssh.NewSignerFromKey(priv)
	case "ecdsa":
		priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		s, err = ssh.NewSignerFromKey(priv)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s.PublicKey()
}

func TestHostKeyAlgorithmOrder(t *testing.T) {
	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	ed := genKey(t, "ed25519")
	ec := genKey(t, "ecdsa")
	writeFile(t, known, knownhosts.Line([]string{"[10.0.0.1]:2222"}, ec)+"\n"+knownhosts.Line([]string{"gpu"}, ed)+"\n")

	tests := []struct {
		hostPort string
		first    []string
	}{
		{"10.0.0.1:2222", []string{ssh.KeyAlgoECDSA256, ssh.KeyAlgoED25519}},
		{"gpu:22", []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256}},
		{"unknown:22", opensshHostKeyOrder},
	}
	for _, tt := range tests {
		host, port, _ := net.SplitHostPort(tt.hostPort)
		c := newHostKeyChecker(&hostConfig{hostName: host, port: mustAtoi(t, port), userKnownHosts: []string{known, filepath.Join(dir, "absent")}}, false)
		_, algos, err := c.prepare()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(algos[:len(tt.first)], ",") != strings.Join(tt.first, ",") {
			t.Errorf("%s: algorithms %v, want %v first", tt.hostPort, algos, tt.first)
		}
		if len(algos) != len(opensshHostKeyOrder) {
			t.Errorf("%s: %d algorithms %v, want every one of %v once", tt.hostPort, len(algos), algos, opensshHostKeyOrder)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestHostKeyCheck(t *testing.T) {
	dir := t.TempDir()
	known := filepath.Join(dir, "sub", "dir", "known_hosts")
	ed := genKey(t, "ed25519")
	h := &hostConfig{hostName: "10.0.0.1", port: 2222, userKnownHosts: []string{known}}
	remote := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 2222}

	// Unknown, not accepted: refused, nothing written.
	cb, _, err := newHostKeyChecker(h, false).prepare()
	if err != nil {
		t.Fatal(err)
	}
	err = cb("10.0.0.1:2222", remote, ed)
	var unknown *UnknownHostKeyError
	if !errors.As(err, &unknown) || unknown.Fingerprint != ssh.FingerprintSHA256(ed) || unknown.KeyType != "ssh-ed25519" ||
		unknown.Host != "[10.0.0.1]:2222" || !strings.Contains(err.Error(), "--accept-new-host-key") {
		t.Fatalf("unknown host: %v (%+v)", err, unknown)
	}
	if _, err := os.Stat(known); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("known_hosts written without acceptance: %v", err)
	}

	// Accepted: written with private permissions, then known.
	cb, _, _ = newHostKeyChecker(h, true).prepare()
	if err := cb("10.0.0.1:2222", remote, ed); err != nil {
		t.Fatal(err)
	}
	if err := cb("10.0.0.1:2222", remote, ed); err != nil { // a rekey sees the key again
		t.Fatal(err)
	}
	b, _ := os.ReadFile(known)
	if want := knownhosts.Line([]string{"10.0.0.1:2222"}, ed) + "\n"; string(b) != want {
		t.Errorf("known_hosts = %q, want %q", b, want)
	}
	for path, mode := range map[string]os.FileMode{known: 0o600, filepath.Dir(known): 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), mode)
		}
	}
	cb, _, _ = newHostKeyChecker(h, false).prepare()
	if err := cb("10.0.0.1:2222", remote, ed); err != nil {
		t.Fatalf("after accepting: %v", err)
	}

	// Changed: refused even with accept-new, naming file:line and both keys.
	other := genKey(t, "ed25519")
	cb, _, _ = newHostKeyChecker(h, true).prepare()
	err = cb("10.0.0.1:2222", remote, other)
	var changed *HostKeyChangedError
	if !errors.As(err, &changed) {
		t.Fatalf("changed key: %v", err)
	}
	if changed.Fingerprint != ssh.FingerprintSHA256(other) || len(changed.Known) != 1 ||
		changed.Known[0] != (KnownHostKey{File: known, Line: 1, KeyType: "ssh-ed25519", Fingerprint: ssh.FingerprintSHA256(ed)}) {
		t.Errorf("changed: %+v", changed)
	}
	for _, want := range []string{known + ":1", ssh.FingerprintSHA256(ed), ssh.FingerprintSHA256(other), "CHANGED"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if b2, _ := os.ReadFile(known); string(b2) != string(b) {
		t.Error("known_hosts modified for a changed key")
	}

	// Revoked: refused even with accept-new, with the key's fingerprint
	// and the line that revokes it.
	if err := os.WriteFile(known, []byte(string(b)+"@revoked * "+strings.TrimPrefix(knownhosts.Line([]string{"x"}, ed), "x ")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cb, _, _ = newHostKeyChecker(h, true).prepare()
	err = cb("10.0.0.1:2222", remote, ed)
	var revoked *HostKeyRevokedError
	var libRevoked *xknownhosts.RevokedError
	if !errors.As(err, &revoked) || !errors.As(err, &libRevoked) {
		t.Fatalf("revoked key: %v", err)
	}
	if revoked.Fingerprint != ssh.FingerprintSHA256(ed) || revoked.File != known || revoked.Line != 2 || revoked.Host != "[10.0.0.1]:2222" {
		t.Errorf("revoked: %+v", revoked)
	}
	for _, want := range []string{ssh.FingerprintSHA256(ed), known + ":2", "@revoked", "revoked"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestAppendKnownHostAddsNewline(t *testing.T) {
	known := filepath.Join(t.TempDir(), "known_hosts")
	writeFile(t, known, "# no trailing newline")
	ed := genKey(t, "ed25519")
	if err := appendKnownHost(known, "h:22", ed); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(known)
	if want := "# no trailing newline\n" + knownhosts.Line([]string{"h"}, ed) + "\n"; string(b) != want {
		t.Errorf("got %q", b)
	}
}
