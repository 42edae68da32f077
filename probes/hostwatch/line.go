// Package hostwatch tells the cockpit when the server's git checkout or the
// inference server may have changed on a GPU host, so that it runs its
// reads (probes/repo.Read, remote/server.Find) only then, instead of
// spawning them on a timer (issue 20).
//
// Two sides share one line protocol (docs/agent-protocol.md, "agent
// watch"):
//
//   - the host side, Run, is `flightdeck agent watch`: in the agent's own
//     process it computes a fingerprint of the checkout (GitPrint) and of
//     what Find depends on (ServerPrint) every interval, from stats and
//     small reads only, and writes a change line when one differs. It
//     starts no process. Without the agent, ShellScript is the same
//     watcher as a bash script whose steady state uses only builtins;
//   - the cockpit side, Trigger, keeps one such stream open over a
//     long-lived session (the agent's, else the shell's, else a timed
//     poll) and signals its consumer on each change line.
//
// The watcher reports that something changed, not what: the cockpit's own
// parsers (repo.Read, server.Find) stay the one source of what a checkout or
// a server is, and a fingerprint that changes for nothing costs one read,
// never a wrong state.
package hostwatch

import (
	"encoding/json"
	"fmt"
)

// ProtocolVersion is the version of the watch stream's lines (the "v" of
// the watch line). A reader refuses a newer one.
const ProtocolVersion = 1

// Line types ("t").
const (
	TypeWatch  = "watch"  // the first line: the watcher runs (V, Via, IntervalMS)
	TypeGit    = "git"    // the checkout's fingerprint changed (and once at start)
	TypeServer = "server" // the server's fingerprint changed (and once at start)
	TypeAlive  = "alive"  // nothing changed for a keepalive period
	TypeError  = "error"  // the watcher cannot go on (Err); it exits after it
	TypeLaunch = "launch" // written by the agent's launcher before the exec (PID)
)

// Line is one line of the watch stream: a JSON object with its type in
// "t" and the other keys only where that type has them.
type Line struct {
	T string `json:"t"`
	// V is the protocol version (watch line).
	V int `json:"v,omitempty"`
	// Via says what watches on the host: "agent" or "shell" (watch line).
	Via string `json:"via,omitempty"`
	// IntervalMS is the time between fingerprints, ms (watch line).
	IntervalMS int64 `json:"interval_ms,omitempty"`
	// Why names what changed (git and server lines): "start", "head",
	// "ref", "packed-refs", "index", "tree", "gitdir" for the checkout;
	// "start", "pidfile", "exit", "root", "children", "listen", "match"
	// for the server. Several are joined with ",".
	Why string `json:"why,omitempty"`
	// Capped says the working tree has more directories than the watcher
	// follows (git lines): changes in the others show through the index
	// only (see GitPrint).
	Capped bool `json:"capped,omitempty"`
	// Err says why the watcher stops (error line).
	Err string `json:"err,omitempty"`
	// PID is the agent's process id (launch line).
	PID int `json:"pid,omitempty"`
}

// AppendLine appends l as one JSON line (with its "\n") to b.
func AppendLine(b []byte, l Line) []byte {
	js, err := json.Marshal(l)
	if err != nil { // a struct of strings and numbers: cannot fail
		panic(err)
	}
	return append(append(b, js...), '\n')
}

// ParseLine decodes one line of the stream (without its "\n"). Errors: not
// a JSON object, no "t", or a watch line of a newer protocol version.
func ParseLine(b []byte) (Line, error) {
	var l Line
	if err := json.Unmarshal(b, &l); err != nil {
		return Line{}, fmt.Errorf("watch stream: bad line %q: %w", clip(b), err)
	}
	if l.T == "" {
		return Line{}, fmt.Errorf("watch stream: line %q has no \"t\"", clip(b))
	}
	if l.T == TypeWatch && l.V > ProtocolVersion {
		return Line{}, fmt.Errorf("watch stream: protocol version %d, this cockpit reads up to %d", l.V, ProtocolVersion)
	}
	return l, nil
}

func clip(b []byte) []byte {
	if len(b) > 120 {
		return b[:120]
	}
	return b
}
