package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
)

func TestBrief(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("remote: 127.0.0.1:22: ssh: handshake failed: %w", err) }
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{wrap(&HostKeyChangedError{Host: "[127.0.0.1]:22"}), "host key changed"},
		{wrap(&UnknownHostKeyError{Host: "gpu-box"}), "unknown host key"},
		{wrap(&AuthError{User: "root", Host: "gpu-box:22", Err: errors.New("unable to authenticate")}), "authentication failed"},
		{wrap(&PassphraseRequiredError{File: "/root/.ssh/id_ed25519"}), "passphrase required"},
		{fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), "connection refused"},
		{fmt.Errorf("x: %w: %w", ErrDisconnected, errKeepaliveTimeout), "timed out"},
		{fmt.Errorf("handshake: %w", context.DeadlineExceeded), "timed out"},
		{fmt.Errorf("remote: h: %w: %w", ErrDisconnected, fmt.Errorf("connection closed: %w", io.EOF)), "EOF"},
	} {
		if got := Brief(c.err); got != c.want {
			t.Errorf("Brief(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
