// Package event is flightdeck's event vocabulary: the envelope of its one
// event stream (Event, Sink), every payload type, and the kind table that
// says, per kind, how the journal stores it and how a replay's seek
// rebuilds it (kinds.go), with the screen's buffer sizes that seek covers
// (screen.go).
//
// Live producers (the GPU samplers, the log follower, the server and git
// controls, the connection, the driver lock) and journal replay are
// sources of the same events; the cockpit's screen and the journal's
// recorder consume them. Producers in every room import this package, and
// it imports only the standard library.
//
// Payload types by subject: gpu.go (samples, failures, Xids, the sampling
// path), log.go (log lines and what the parsers find in them), server.go
// (the server's launches, status and kills), git.go (the checkout), conn.go
// (the connection to the host), driver.go (the driver lock), bench.go (the
// benchmark), experiment.go (experiments, notes and the journal's own
// records). Text fields hold remote text as read: sanitise before display.
package event

import "time"

// Payload is one typed fact carried by the stream. The interface is
// sealed: its types are those of this package, and every type switch over
// it lists them all (go-check-sumtype, run by make test).
//
//sumtype:decl
type Payload interface {
	// Kind is the payload's row of the kind table.
	Kind() Kind
	sealed()
}

// Event is one timestamped payload. At is the wall-clock time at which the
// producer observed the fact (not the time it was delivered).
type Event struct {
	At   time.Time
	Data Payload
}

// Sink receives events. A Sink must not block for long: producers call it
// from their read loops. Implementations that feed a UI batch and coalesce.
type Sink func(Event)
