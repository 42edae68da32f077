package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
)

// connectArgs points connect at the test sshd without reading ~/.ssh.
func connectArgs(srv *sshdtest.Server, known string, extra ...string) []string {
	return append([]string{"connect", srv.Target(), "-F", os.DevNull, "-i", srv.ClientKeyPath(),
		"--known-hosts", known, "--log", "/nonexistent.log"}, extra...)
}

func TestConnectRefusesUnknownHostKey(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts") // does not exist: every host is unknown

	_, _, err := runCLI(t, nil, connectArgs(srv, known)...)
	var unknown *remote.UnknownHostKeyError
	if !errors.As(err, &unknown) {
		t.Fatalf("err = %v, want an unknown-host-key error", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, srv.Fingerprint("ed25519")) || !strings.Contains(msg, "--accept-new-host-key") {
		t.Fatalf("message lacks the SHA256 fingerprint or the way out:\n%s", msg)
	}
	if _, err := os.Stat(known); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("known_hosts written without --accept-new-host-key (stat err %v)", err)
	}
}

func TestConnectRefusesChangedHostKeyEvenWithAcceptNew(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	srv.ReplaceHostKeys() // the host now presents keys that differ from known_hosts

	for _, extra := range [][]string{nil, {"--accept-new-host-key"}} {
		_, _, err := runCLI(t, nil, connectArgs(srv, known, extra...)...)
		var changed *remote.HostKeyChangedError
		if !errors.As(err, &changed) {
			t.Fatalf("%v: err = %v, want a changed-host-key error", extra, err)
		}
		if !strings.Contains(err.Error(), known) {
			t.Errorf("%v: message does not name the known_hosts file:\n%v", extra, err)
		}
	}
}
