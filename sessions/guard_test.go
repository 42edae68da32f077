package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestGuardsRefuseBeforeTouchingTheHost: a launch, kill or git action
// queued while another cockpit took the host over is refused by the guard
// before any command runs (Host is nil here: touching it would panic).
func TestGuardsRefuseBeforeTouchingTheHost(t *testing.T) {
	errRO := errors.New("read-only: another cockpit drives")
	guard := func(context.Context) error { return errRO }
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

// TestGuardConfirmsRightBeforeTheSignal: the guard is asked again after
// Find, right before the kill's signal goes out, so that a take-over
// landing between the key and the signal stops the kill (a fresh user
// killed the new driver's server 56 ms after it took over). The server
// keeps running.
func TestGuardConfirmsRightBeforeTheSignal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, host := simHost(t, ctx)
	errRO := errors.New("read-only: another cockpit drives this host now")
	var calls atomic.Int32
	refuseFrom := atomic.Int32{}
	refuseFrom.Store(1 << 30)
	ctl := &Control{Host: host, Config: config.Builtins(), Target: simTarget(h, "none"), NoProcessMatch: true,
		Grace: time.Second, GPUTimeout: 10 * time.Second,
		Guard: func(context.Context) error {
			if calls.Add(1) >= refuseFrom.Load() {
				return errRO
			}
			return nil
		}}
	plan, before := launchOnSim(t, ctx, ctl)
	if n := calls.Load(); n != 2 {
		t.Errorf("a launch with no server asked the guard %d times, want 2 (before Find, before the command)", n)
	}
	// The first question (the key) passes, the second (after Find, right
	// before the signal) is refused.
	calls.Store(0)
	refuseFrom.Store(2)
	var steps []event.KillStep
	ctl.Publish = func(e event.Event) {
		if k, ok := e.Data.(event.KillStep); ok {
			steps = append(steps, k)
		}
	}
	if err := ctl.Kill(ctx); !errors.Is(err, errRO) {
		t.Fatalf("Kill: %v, want the guard's refusal", err)
	}
	if len(steps) != 1 || steps[0].Step != "failed" || !errors.Is(steps[0].Err, errRO) {
		t.Errorf("kill steps published %+v, want one failed step with the refusal (the journal's record)", steps)
	}
	f, err := ctl.Find(ctx)
	if err != nil || !f.Running || f.ServerPID != before.ServerPID {
		t.Fatalf("after the refused kill: %+v %v, want server pid %d still running", f, err, before.ServerPID)
	}
	// A relaunch taken over between its kill and its launch says that it
	// killed the old server.
	calls.Store(0)
	refuseFrom.Store(3) // entry, before the signal: yes; before the launch: no
	_, err = ctl.Launch(ctx, plan)
	if want := fmt.Sprintf("relaunch: killed the old server (pid %d), then did not launch: read-only", before.ServerPID); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("relaunch refused after its kill: %v, want %q...", err, want)
	}
}

// TestKillFencedByTheLock: a take-over that lands after the guard's check
// but before the signal (the two are separate host commands) is caught by
// the kill's own script, which checks the driver lock file under its
// mutex right before the SIGTERM: nothing is signalled.
func TestKillFencedByTheLock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, host := simHost(t, ctx)
	local := remote.NewLocal()
	defer local.Close()
	dir := t.TempDir()
	mine := &driver.Lock{Host: local, Dir: dir, Me: event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123}}
	if st, err := mine.Acquire(ctx, false); err != nil || st.Role != event.RoleDriving {
		t.Fatalf("acquire: %+v %v", st, err)
	}
	var calls atomic.Int32
	takeOverAt := int32(1 << 30) // the guard call after which bob takes over
	ctl := &Control{Host: host, Config: config.Builtins(), Target: simTarget(h, "none"), NoProcessMatch: true,
		Grace: time.Second, GPUTimeout: 10 * time.Second,
		Guard: func(ctx context.Context) error {
			err := mine.Confirm(ctx)
			if err == nil && calls.Add(1) == takeOverAt {
				// Bob takes over right after the check passed.
				bob := &driver.Lock{Host: local, Dir: dir, Me: event.DriverInfo{User: "bob", Machine: "desk", PID: 77}}
				if _, terr := bob.Acquire(ctx, true); terr != nil {
					t.Errorf("take-over: %v", terr)
				}
			}
			return err
		},
		Fence: func() server.Fence { f, tok := mine.Fence(); return server.Fence{File: f, Token: tok} },
	}
	_, before := launchOnSim(t, ctx, ctl)
	// Kill asks the guard on entry and again right before the signal:
	// bob takes over right after the second check.
	calls.Store(0)
	takeOverAt = 2
	if err := ctl.Kill(ctx); !errors.Is(err, server.ErrFenced) {
		t.Fatalf("Kill after a take-over between the check and the signal: %v, want ErrFenced", err)
	}
	if f, err := ctl.Find(ctx); err != nil || !f.Running || f.ServerPID != before.ServerPID {
		t.Fatalf("after the fenced kill: %+v %v, want server pid %d running", f, err, before.ServerPID)
	}
}

// launchOnSim launches ctl's default plan and returns it with the server
// found running.
func launchOnSim(t *testing.T, ctx context.Context, ctl *Control) (Plan, event.ServerFound) {
	t.Helper()
	plan, err := ctl.Plan(ctl.Request())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Launch(ctx, plan); err != nil {
		t.Fatal(err)
	}
	f, err := ctl.Find(ctx)
	if err != nil || !f.Running {
		t.Fatalf("after the launch: %+v %v", f, err)
	}
	return plan, f
}
