// Package event defines the envelope of flightdeck's single event stream.
//
// Live probes (GPU sampler, log follower, connection manager) and journal
// replay are both sources of events; the TUI and the recorder consume them.
// Payload types live next to the code that produces them (probes/gpu,
// probes/serverlog, remote, ...); this package only names the envelope so that
// producers do not import their consumers.
package event

import "time"

// Payload is one typed fact carried by the stream. Kind returns a short,
// stable, kebab-case name ("gpu-sample", "log-lines", ...) used by the journal
// as the record type; it never changes once released.
type Payload interface {
	Kind() string
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
