package agent

// The Runner as a remote.Agent: the install it settled runs the host-side
// watchers too (`flightdeck agent follow`, …), each on a session of its
// own, through the same checked launcher as the sampler (runScript).

import (
	"context"
	"fmt"
	"sync"

	"github.com/flightdeck-dev/flightdeck/remote"
)

var _ remote.Agent = (*Runner)(nil)

// toolState is the install outcome AgentCommand hands out.
type toolState struct {
	mu    sync.Mutex
	ready chan struct{} // closed at the first outcome
	set   bool
	inst  installed
	c     settings
	err   error // why there is no agent; nil once one is installed
}

// readyCh returns the channel closed at the first install outcome.
func (t *toolState) readyCh() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ready == nil {
		t.ready = make(chan struct{})
	}
	return t.ready
}

// settle records an install outcome. An installed agent stays in use
// through later transient failures (a retry that timed out); a reason
// that will not pass replaces it.
func (t *toolState) settle(inst installed, c settings, err error, forGood bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ready == nil {
		t.ready = make(chan struct{})
	}
	switch {
	case err == nil:
		t.inst, t.c, t.err = inst, c, nil
	case !t.set || t.err != nil || forGood:
		t.inst, t.err = installed{}, err
	}
	if !t.set {
		t.set = true
		close(t.ready)
	}
}

// AgentCommand implements remote.Agent: it waits for Run's first install
// outcome (or ctx), then returns runScript's command line with args, or
// an error wrapping remote.ErrNoAgent that says why there is no agent.
func (r *Runner) AgentCommand(ctx context.Context, args ...string) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-r.tool.readyCh():
	}
	r.tool.mu.Lock()
	inst, c, err := r.tool.inst, r.tool.c, r.tool.err
	r.tool.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("%w: %v", remote.ErrNoAgent, err)
	}
	full := append([]string{"-c", runScript, "flightdeck-agent", c.cacheDir, inst.key, inst.sum}, args...)
	return remote.Command("sh", full...)
}
