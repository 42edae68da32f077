package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// TestNoGPULiveHasNoAgent: a Live that samples no GPUs (server logs,
// server launch) runs no agent.Runner, so its remote.Agent must say so at
// once: the log Follower would otherwise wait for an install that never
// settles before it starts tail.
func TestNoGPULiveHasNoAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, cfg := range []LiveConfig{
		{Host: &sshLikeHost{}, NoGPU: true},
		{Host: &sshLikeHost{}, GPU: GPUNvidiaSMI},
	} {
		l := &Live{cfg: cfg}
		if _, err := l.newAgent().AgentCommand(ctx, "agent", "follow"); !errors.Is(err, remote.ErrNoAgent) {
			t.Errorf("%+v: AgentCommand = %v, want ErrNoAgent at once", cfg, err)
		}
	}
}

// sshLikeHost is a remote.Host that is not the local one (the agent's
// case); it runs nothing.
type sshLikeHost struct{ remote.Host }
