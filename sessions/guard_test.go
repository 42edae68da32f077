package sessions

import (
	"context"
	"errors"
	"testing"
)

// TestGuardsRefuseBeforeTouchingTheHost: a launch, kill or git action
// queued while another cockpit took the host over is refused by the guard
// before any command runs (Host is nil here: touching it would panic).
func TestGuardsRefuseBeforeTouchingTheHost(t *testing.T) {
	errRO := errors.New("read-only: another cockpit drives")
	guard := func() error { return errRO }
	ctx := context.Background()
	c := &Control{Guard: guard}
	if _, err := c.Launch(ctx, Plan{}); !errors.Is(err, errRO) {
		t.Errorf("Launch: %v", err)
	}
	if err := c.Kill(ctx); !errors.Is(err, errRO) {
		t.Errorf("Kill: %v", err)
	}
	g := &Git{Guard: guard}
	if _, err := g.Checkout(ctx, "main"); !errors.Is(err, errRO) {
		t.Errorf("Checkout: %v", err)
	}
	if _, err := g.Stash(ctx, "x", false); !errors.Is(err, errRO) {
		t.Errorf("Stash: %v", err)
	}
}
