package sshdtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/strace"
)

// needStrace returns strace's path, or skips the test (fails it when $CI
// is set) when strace is not installed.
func needStrace(t testing.TB) string {
	t.Helper()
	p, err := strace.Path()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("sshdtest: Options.Trace: %v (CI is set, so this is a failure)", err)
		}
		t.Skipf("sshdtest: Options.Trace: %v", err)
	}
	return p
}

// command is the argv that starts sshd with the configuration cfg: under
// strace (a new trace file for each start) with Options.Trace.
func (s *Server) command(cfg string) []string {
	sshd := []string{s.sshd, "-D", "-e", "-f", cfg}
	if s.strace == "" {
		return sshd
	}
	s.mu.Lock()
	out := filepath.Join(s.dir, fmt.Sprintf("sshd-%d.strace", len(s.traces)+1))
	s.traces = append(s.traces, out)
	s.mu.Unlock()
	return strace.Command(s.strace, out, sshd...)
}

// Mark is the time to count from (StartedSince): now.
func (s *Server) Mark() time.Time { return time.Now() }

// Started is what sshd's process tree started in a window (StartedSince).
type Started struct {
	// Processes are the processes started, in the order first seen:
	// sshd's own (a connection's handlers, a session's child) and
	// everything below them.
	Processes []*strace.Process
	parts     []startedPart
}

// startedPart is what one sshd start's trace holds: across Restart the
// pids of one trace are not another's.
type startedPart struct {
	trace *strace.Trace
	procs []*strace.Process
}

// Count is the number of processes started.
func (st Started) Count() int { return len(st.Processes) }

// String lists them grouped by program, every distinct command line with
// its count (strace.Summary), for a failure message.
func (st Started) String() string {
	var b strings.Builder
	n := 0
	for _, p := range st.parts {
		if len(p.procs) == 0 {
			continue
		}
		if n > 0 {
			b.WriteString("\nafter a restart of sshd:\n")
		}
		b.WriteString(strace.Summary(p.procs, p.trace))
		n++
	}
	if n == 0 {
		return strace.Summary(nil, nil)
	}
	return b.String()
}

// StartedSince returns the processes that sshd's tree started from mark
// until now (every start's, across Restart), read from strace's output:
// Options.Trace must be set (else the test fails). Since strace writes as
// the calls happen, a process started before the call is in it.
func (s *Server) StartedSince(mark time.Time) Started {
	s.t.Helper()
	s.mu.Lock()
	files := append([]string(nil), s.traces...)
	s.mu.Unlock()
	if s.strace == "" {
		s.t.Fatal("sshdtest: StartedSince needs Options.Trace")
	}
	var st Started
	now := time.Now()
	for _, f := range files {
		tr, err := strace.ParseFile(f)
		if err != nil {
			s.t.Fatalf("sshdtest: %v", err)
		}
		ps := tr.Started(mark, now)
		st.parts = append(st.parts, startedPart{tr, ps})
		st.Processes = append(st.Processes, ps...)
	}
	return st
}
