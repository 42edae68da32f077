package agent

import (
	"fmt"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// ProtocolVersion is the version of the JSON Lines protocol this build
// writes and the newest it reads.
const ProtocolVersion = 1

// ExitUnavailable is the agent's exit status after it wrote an unavailable
// line: NVML cannot be used on this host.
const ExitUnavailable = 3

// Hello is the agent's first line when NVML opened.
type Hello struct {
	V        int           // protocol version, 1 ≤ V ≤ ProtocolVersion when read
	Version  string        // the agent's flightdeck version, "0.8.0"
	Driver   string        // NVIDIA driver version, "550.54.15"
	NVML     string        // NVML library version, "12.550.54.15"
	CUDA     int           // CUDA driver version, 12040 for 12.4; 0 when unknown
	GPUs     int           // devices NVML counts
	Interval time.Duration // time between samples, whole milliseconds on the wire
	// Simulated is set when the agent samples the simulated host's fake
	// NVML (sim.EnvNVML was set where it runs), never real GPUs: the
	// cockpit says so in its header. "simulated":true on the wire, left
	// out when false.
	Simulated bool
}

// Launch is the line the cockpit's launcher script writes on the agent's
// stdout just before it execs the agent (so before the hello): the
// process id the agent will have on the host. The cockpit kills that
// process (`kill -KILL PID` in a new session) when it gives up on a
// silent agent, because OpenSSH does not kill a command when its session
// is closed, and refuses a "signal" request for root.
type Launch struct {
	PID int // > 1 when read
}

// Unavailable is the agent's first and only line when NVML cannot be used;
// the agent then exits with ExitUnavailable.
type Unavailable struct {
	V      int    // protocol version
	Reason string // nvml.UnavailableError.Reason: "NVML init failed: ERROR_LIBRARY_NOT_FOUND …"
	Code   int    // the failed call's nvmlReturn_t (12 LIBRARY_NOT_FOUND, …); 0 when none failed
}

// Kind is the type of a decoded line, from its "t".
type Kind uint8

const (
	KindUnknown     Kind = iota // a "t" this reader does not know: skip the line
	KindHello                   // "hello": Message.Hello
	KindUnavailable             // "unavailable": Message.Unavailable
	KindSample                  // "sample": Message.Payload is a event.GPUSample
	KindXid                     // "xid": Message.Payload is a event.Xid
	KindFailure                 // "failure": Message.Payload is a event.GPUFailure
	KindStale                   // "stale": Message.Payload is a event.GPUStale
	// KindAlive: "alive", the agent's heartbeat: it writes one when it
	// wrote no other line for an interval and a half (a read is blocked in
	// NVML), so that the cockpit can tell a live agent from a dead
	// session, and so that the agent's next write after the session closed
	// fails and ends it. Message.At is when it was written.
	KindAlive
	KindLaunch // "launch": Message.Launch, written by the launcher before the hello
)

var kindNames = [...]string{"unknown", "hello", "unavailable", "sample", "xid", "failure", "stale", "alive", "launch"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Message is one decoded line.
type Message struct {
	Kind Kind
	// Type is the line's "t" as sent (a known one, or the unknown one of a
	// KindUnknown line; not sanitised).
	Type string
	// At is the event's time on the agent's clock ("at"; for a sample,
	// Sample.At); zero for hello and unavailable lines, and when left out.
	At          time.Time
	Hello       Hello         // KindHello
	Unavailable Unavailable   // KindUnavailable
	Launch      Launch        // KindLaunch
	Payload     event.Payload // KindSample, KindXid, KindFailure, KindStale
}

// VersionError is returned for a hello or unavailable line whose protocol
// version is newer than this build reads.
type VersionError struct {
	Got int // the line's "v"
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("agent speaks protocol v%d, this flightdeck reads up to v%d: use the same flightdeck version on both ends", e.Got, ProtocolVersion)
}

// LineError is a line the Reader could not decode; the Reader goes on with
// the next line.
type LineError struct {
	Line    int    // 1-based line number in the stream
	Excerpt string // the line's first bytes, sanitised for the terminal
	Err     error  // what was wrong: a *SyntaxError, a *VersionError, …
}

func (e *LineError) Error() string {
	return fmt.Sprintf("agent stream line %d: %v: %s", e.Line, e.Err, e.Excerpt)
}

func (e *LineError) Unwrap() error { return e.Err }

// SyntaxError is a line that is not a valid protocol object: Offset is the
// byte of the line where encoding/json stopped reading it, when it says
// (0 for an error inside a value, such as a sample beyond MaxGPUs); Msg
// says what was wrong.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg) }
