package sim

import (
	"sync"
	"time"
)

// Exec is one command the simulated host's SSH server started: an SSH
// session's "exec" request, which it runs as `/bin/sh -c COMMAND` (what
// sshd runs through the login shell). Every process a cockpit makes the
// host start is one of these or below one, so no Exec in a window means
// no process started in it; the processes below each are counted by
// tracing the host's process (remote/strace; docs/performance.md).
type Exec struct {
	Time    time.Time
	Command string // as the client sent it
	PID     int    // the /bin/sh running it
}

// maxExecLog is how many Execs a host keeps: about an hour of the
// busiest cockpit measured (145 sessions a minute, issue 20).
const maxExecLog = 10000

// execLog keeps the last maxExecLog commands an SSHServer started.
type execLog struct {
	mu    sync.Mutex
	execs []Exec
}

func (l *execLog) add(e Exec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.execs) >= maxExecLog {
		n := copy(l.execs, l.execs[len(l.execs)-maxExecLog/2:])
		l.execs = l.execs[:n]
	}
	l.execs = append(l.execs, e)
}

func (l *execLog) since(t time.Time) []Exec {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Exec
	for _, e := range l.execs {
		if !e.Time.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// ExecsSince returns the commands the host's SSH server started at or
// after since, oldest first (of the last maxExecLog); none with NoSSH
// (a real sshd serves the host: trace it, sshdtest.Options.Trace).
func (h *Host) ExecsSince(since time.Time) []Exec {
	if h.ssh == nil {
		return nil
	}
	return h.ssh.execs.since(since)
}
