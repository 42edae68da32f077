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
	NextTry time.Time // when the next dial happens (Reconnecting only)
}
