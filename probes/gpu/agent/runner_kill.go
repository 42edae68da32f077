package agent

// Killing an agent that fell silent or that a lost connection left
// behind, and asking whether the host still answers.

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Deadlines of the commands about a silent or lost agent.
const (
	// killTimeout bounds the command that kills an agent.
	killTimeout = 10 * time.Second
	// answerTimeout bounds the command (":") that tells a silent agent
	// from a stalled connection.
	answerTimeout = 3 * time.Second
	// closeWait bounds the wait for a killed agent's session to end.
	closeWait = 5 * time.Second
)

// killOrphanScript kills process $1 with SIGKILL when it is an agent the
// Runner started (its command line, read from /proc/$1/cmdline where
// there is one, holds " agent --interval ": runScript's, then the
// agent's): a pid kept across a lost connection may have been reused
// since.
const killOrphanScript = `if [ -r "/proc/$1/cmdline" ]; then case $(tr '\000' ' ' < "/proc/$1/cmdline") in ` +
	`*" agent --interval "*) ;; *) exit 0;; esac; fi; kill -s KILL "$1"`

// kill kills the agent process pid on the host (from its launch line; 0
// when none came), in a new session: closing the agent's session does
// not end a command that does not write, and OpenSSH refuses the
// session's "signal" request for root. A silent agent was alive a moment
// ago, so its pid is not reused; an orphan's is checked first
// (killOrphanScript). It reports whether the host answered (the process
// is gone, or was not the agent); errors are otherwise ignored: the
// fallback goes on either way.
func (s *runState) kill(ctx context.Context, pid int, orphan bool) bool {
	if pid <= 1 {
		return true
	}
	cmd, err := remote.Command("kill", "-s", "KILL", strconv.Itoa(pid))
	if orphan {
		cmd, err = remote.Command("sh", "-c", killOrphanScript, "kill", strconv.Itoa(pid))
	}
	if err != nil {
		return true
	}
	kctx, cancel := context.WithTimeout(ctx, killTimeout)
	defer cancel()
	_, err = s.r.Host.Run(kctx, cmd, nil)
	_, exited := errors.AsType[*remote.ExitError](err)
	return err == nil || exited
}

// killOrphan kills the agent a lost connection left behind, if any; it is
// tried again before the next agent starts when the host did not answer.
func (s *runState) killOrphan(ctx context.Context) {
	if s.orphan != 0 && s.kill(ctx, s.orphan, true) {
		s.orphan = 0
	}
}

// hostAnswers reports whether the host runs a command (":") within
// answerTimeout, when the connection is not known to be lost already.
func (s *runState) hostAnswers(ctx context.Context, conn *atomic.Value) bool {
	if st, _ := conn.Load().(event.ConnPhase); st != event.Connected {
		return false
	}
	actx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	_, err := s.r.Host.Run(actx, ":", nil)
	_, exited := errors.AsType[*remote.ExitError](err)
	return err == nil || exited
}

// waitFor waits up to d for ch; it reports whether ch delivered.
func waitFor(ch <-chan error, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
