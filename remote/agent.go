package remote

import (
	"context"
	"errors"
)

// Agent starts subcommands of the flightdeck agent installed on a host
// (`flightdeck agent …`, see docs/agent-protocol.md): the long-lived,
// in-process watchers that let the cockpit observe the host without
// spawning a process there at steady state (issue 20). It is implemented
// by the GPU agent's Runner (probes/gpu/agent), which installs the agent.
type Agent interface {
	// AgentCommand waits until the host's agent install is settled and
	// returns the POSIX shell command line that checks the installed
	// agent and execs it with args (the agent binary's own argv after its
	// name, e.g. "agent", "follow", …). Its stdout begins with one line,
	// {"t":"launch","pid":N}, written by the launcher before the exec (N is
	// the process id the agent keeps), then what the subcommand writes.
	// The error wraps ErrNoAgent when the host has no usable agent (the
	// message says why: another architecture, a refused cache, …), or is
	// ctx's error. Callers fall back to their shell commands on ErrNoAgent
	// and ask again later: an agent retried in the background may come.
	AgentCommand(ctx context.Context, args ...string) (string, error)
}

// ErrNoAgent is wrapped by Agent.AgentCommand's error when the host has no
// usable flightdeck agent.
var ErrNoAgent = errors.New("no flightdeck agent on the host")
