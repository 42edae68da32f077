// Package server controls an inference server (SGLang, vLLM, the simulated
// one) on a GPU host reached through a remote.Host: launch it detached so it
// survives the SSH connection, find it again (adopt), kill its whole process
// tree, wait until its GPU memory is free, and check its HTTP health through
// the host's port forward.
//
// Every shell script here is fixed text sent on stdin ("sh -s -- ARGS");
// all variable data travels as positional arguments quoted with
// remote.Command, so no user text is ever interpreted by a shell.
package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// PidfileName is the file in the log directory that names the server the
// cockpit launched last: one JSON object (event.LaunchRecord). It is replaced
// atomically at each launch.
const PidfileName = "flightdeck-server.json"

// CommandLine is l's argv as one POSIX shell line, for display.
func CommandLine(l event.LaunchInfo) string { return displayLine(l.Argv) }

// parseRecord reads a pidfile, its launch redacted (RedactLaunch).
func parseRecord(b []byte) (event.LaunchRecord, error) {
	var r event.LaunchRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("pidfile: %w", err)
	}
	if r.PID <= 1 {
		return r, fmt.Errorf("pidfile: pid %d is not a server", r.PID)
	}
	if !validMark(r.Mark) {
		return r, fmt.Errorf("pidfile: mark %q is not %d hex digits", r.Mark, markLen)
	}
	// One written by an older flightdeck (or by hand) may hold secrets.
	r.Launch = RedactLaunch(r.Launch)
	return r, nil
}

// markLen is the length of a launch mark in hex digits (128 random bits).
const markLen = 32

// newMark returns a fresh launch mark: markLen random hex digits.
func newMark() string {
	b := make([]byte, markLen/2)
	rand.Read(b) // never fails (crypto/rand, Go ≥ 1.24)
	return hex.EncodeToString(b)
}

// validMark reports whether m is "" (an older pidfile) or a launch mark.
func validMark(m string) bool {
	if m == "" {
		return true
	}
	if len(m) != markLen {
		return false
	}
	_, err := hex.DecodeString(m)
	return err == nil && strings.ToLower(m) == m
}

// ErrNoServer is returned by Find and Kill when no server is running.
var ErrNoServer = errors.New("no server running")

// displayLine joins words for display, quoting those that need it the way
// a shell user would type them; words that cannot be quoted (control
// characters) are shown Go-quoted.
func displayLine(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(displayWord(w))
	}
	return b.String()
}

// EnvLine renders env as sorted NAME=value words, each value quoted for a
// shell where it needs it (NCCL_PROTO=LL, HF_HOME='/data/hf cache').
func EnvLine(env map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(env)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + displayWord(env[k]))
	}
	return b.String()
}
