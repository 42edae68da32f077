package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

func TestAgentCommandWaitsForTheInstall(t *testing.T) {
	r := &Runner{}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.AgentCommand(ctx, "agent", "follow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("before any install outcome: got %v, want the context's end", err)
	}

	c := settings{cacheDir: "/home/u/.cache/flightdeck"}
	r.tool.settle(installed{}, c, transientReason("agent install check failed: timeout"), false)
	_, err := r.AgentCommand(context.Background(), "agent")
	if !errors.Is(err, remote.ErrNoAgent) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("after a transient failure: got %v, want ErrNoAgent saying why", err)
	}

	r.tool.settle(installed{path: "/x/flightdeck", key: "0.8.0-abc", sum: "abc123"}, c, nil, false)
	cmd, err := r.AgentCommand(context.Background(), "agent", "follow", "--", "/var/log/it's.log")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0.8.0-abc", "abc123", "follow", `"/var/log/it's.log"`, "launch", "exec /proc/self/fd/3"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command %q lacks %q", cmd, want)
		}
	}

	// A later transient failure keeps the installed agent; a reason for good does not.
	r.tool.settle(installed{}, c, transientReason("upload failed"), false)
	if _, err := r.AgentCommand(context.Background(), "agent"); err != nil {
		t.Errorf("a transient failure after an install: %v, want the installed agent", err)
	}
	r.tool.settle(installed{}, c, fallbackReason("agent cache is writable by others"), true)
	if _, err := r.AgentCommand(context.Background(), "agent"); !errors.Is(err, remote.ErrNoAgent) {
		t.Errorf("a refused cache: %v, want ErrNoAgent", err)
	}
}
