package event

import (
	"fmt"
	"time"
)

// ConnPhase is the state of the connection to a host.
type ConnPhase uint8

const (
	Connecting   ConnPhase = iota // first dial in progress
	Connected                     // ready for commands
	Reconnecting                  // connection lost; redialing with backoff
	ConnClosed                    // Close was called
	ConnFailed                    // gave up: an error that retrying cannot fix (host key, auth)
	// NotAnswering: connected, but a keepalive has gone unanswered for a
	// whole interval with nothing else heard from the host (a frozen
	// sshd or host, a stalled link). Commands wait; the connection is
	// given up and redialed at NextTry unless the host answers first
	// (then Connected again, on the same connection).
	NotAnswering
)

func (s ConnPhase) String() string {
	switch s {
	case Connecting:
		return "connecting"
	case Connected:
		return "connected"
	case Reconnecting:
		return "reconnecting"
	case ConnClosed:
		return "closed"
	case ConnFailed:
		return "failed"
	case NotAnswering:
		return "not answering"
	}
	return fmt.Sprintf("ConnState(%d)", uint8(s))
}

// ConnState is one observation of a host's connection. It is an event payload.
type ConnState struct {
	Host    string    // Host.Name()
	Conn    ConnPhase // current state
	Attempt int       // reconnect attempt number, 0 when connected
	Err     error     // why the last connection ended or the last dial failed; nil when healthy
	Since   time.Time // when Conn last changed
	// NextTry is when the next dial happens (Reconnecting), or when the
	// connection is given up if the host stays silent (NotAnswering).
	NextTry time.Time
	// Heard is when anything last came from the host: a keepalive reply
	// or data (NotAnswering only).
	Heard time.Time `json:",omitzero"`
}
