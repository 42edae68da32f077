// Package remote reaches a GPU host: over SSH (golang.org/x/crypto/ssh) or
// locally when flightdeck runs on the host itself. Every command line it runs
// is a POSIX shell command built with Command/Quote (mvdan.cc/sh/v3 quoting).
package remote

import (
	"context"
	"errors"
	"fmt"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"io"
)

// Host runs commands on one machine. Implementations are safe for
// concurrent use. An SSH Host multiplexes every call over one connection and
// reconnects by itself; calls made while it is reconnecting wait for the
// connection until their context ends.
type Host interface {
	// Name is what the header shows: "root@gpu-box:22" or "local".
	Name() string
	// Run runs cmd, a POSIX shell command line (build it with Command), feeds
	// it stdin (may be nil) and waits for it to exit or for ctx to end.
	// A non-zero exit returns the Result and an *ExitError. A lost connection
	// returns an error that wraps ErrDisconnected.
	Run(ctx context.Context, cmd string, stdin io.Reader) (Result, error)
	// Start starts cmd and returns at once with its output streams. The
	// process ends when it exits, when ctx ends, or when Close is called.
	Start(ctx context.Context, cmd string) (Process, error)
	// Watch returns a channel that receives the connection state now and at
	// every change until ctx ends (then it is closed). A slow reader sees the
	// latest state, not every intermediate one.
	Watch(ctx context.Context) <-chan event.ConnState
	// Close ends every command and the connection. Processes detached with
	// setsid (the inference server) keep running.
	Close() error
}

// Redialer is a Host whose connection can be redialed on request (SSH).
type Redialer interface {
	// RetryNow redials without waiting for the backoff or the keepalive:
	// at once while the connection is down, after giving it up while it
	// is not answering (event.NotAnswering). It reports whether it did
	// either, and does not wait for the dial.
	RetryNow() bool
}

var _ Redialer = (*SSH)(nil)

// Process is a command started by Host.Start.
type Process interface {
	// Stdout and Stderr are the command's output streams; read both, or the
	// command may block.
	Stdout() io.Reader
	Stderr() io.Reader
	// Wait waits for the command to end. It returns nil on exit 0, an
	// *ExitError on another exit status, and an error wrapping ErrDisconnected
	// when the connection dropped first.
	Wait() error
	// Close stops the command (closes the SSH session, or kills the local
	// process group) and releases its resources. It is safe to call twice.
	Close() error
}

// Result is what a finished command printed and its exit status.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// ExitError reports a command that exited with a non-zero status (or was
// killed by a signal, then Code is -1 and Signal names it).
type ExitError struct {
	Code   int
	Signal string
	Stderr []byte // at most the last 4 KiB
}

func (e *ExitError) Error() string {
	if e.Signal != "" {
		return fmt.Sprintf("killed by signal %s", e.Signal)
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// ErrDisconnected is wrapped by errors from calls that failed because the
// connection to the host dropped; retrying after reconnection is safe.
var ErrDisconnected = errors.New("connection to host lost")
