package driver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/remote/sim/simtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestMain lets the simulated host re-execute this test binary.
func TestMain(m *testing.M) {
	simtest.Setup()
	os.Exit(m.Run())
}

// dial opens one more SSH connection to the simulated host.
func dial(t *testing.T, ctx context.Context, h *sim.Host) remote.Host {
	t.Helper()
	host, err := remote.DialSSH(ctx, h.Target(), remote.SSHOptions{ConfigFile: os.DevNull,
		IdentityFiles: []string{h.IdentityPath}, KnownHostsFiles: []string{h.KnownHostsPath}, NoAgent: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	return host
}

// Two cockpits on one simulated host, each over its own SSH connection:
// the first drives, the second watches and says who drives; a take-over
// flips the roles and the first cockpit's heartbeat notices it.
func TestTwoCockpitsOverSSH(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := sim.Start(ctx, sim.Options{GPUs: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	dir := filepath.Join(h.Dir, "run", "driver lock's dir")
	pub := make(chan event.DriverState, 64)
	a := &driver.Lock{Host: dial(t, ctx, h), Dir: dir, Heartbeat: 100 * time.Millisecond,
		Me:      event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123, Journal: "/j/a.jsonl"},
		Publish: func(e event.Event) { pub <- e.Data.(event.DriverState) }}
	b := &driver.Lock{Host: dial(t, ctx, h), Dir: dir, Heartbeat: 100 * time.Millisecond,
		Me: event.DriverInfo{User: "bob", Machine: "desk", PID: 77}}

	st, err := a.Acquire(ctx, false)
	if err != nil || st.Role != event.RoleDriving || st.Host == "local" || st.Host == "" {
		t.Fatalf("a: %+v %v", st, err)
	}
	<-pub
	st, err = b.Acquire(ctx, false)
	if err != nil || st.Role != event.RoleWatching || st.Holder.Who() != "alice@laptop" || st.Holder.Journal != "/j/a.jsonl" || st.Holder.PID != 4123 {
		t.Fatalf("b: %+v %v", st, err)
	}
	info, held, err := driver.Read(ctx, b.Host, dir)
	if err != nil || !held || info.Who() != "alice@laptop" {
		t.Fatalf("Read: %+v %v %v", info, held, err)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	st, err = b.Acquire(ctx, true)
	if err != nil || st.Role != event.RoleDriving || !strings.HasPrefix(st.Note, "took over from alice@laptop (pid 4123, driving since ") {
		t.Fatalf("take-over: %+v %v", st, err)
	}
	select {
	case got := <-pub:
		if got.Role != event.RoleWatching || !strings.HasPrefix(got.Note, "bob@desk (pid 77) took over at ") || got.Holder.PID != 77 {
			t.Errorf("a after the take-over: %+v", got)
		}
	case <-ctx.Done():
		t.Fatal("a never noticed the take-over")
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("a's Run: %v", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, driver.FileName)); !os.IsNotExist(err) {
		t.Errorf("lock file left: %v", err)
	}
}
