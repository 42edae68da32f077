package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog/follow"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestAgentFollowFlags(t *testing.T) {
	marker := "//././/./././//./."
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "follow", "--marker", marker}, "accepts 1 arg"},
		{[]string{"agent", "follow", "--marker", marker, "--anchor", "zz", "--", "/x"}, "--anchor"},
		{[]string{"agent", "follow", "--", "/x"}, "marker"},
		{[]string{"agent", "follow", "--marker", marker, "--offset", "-3", "--", "/x"}, "negative"},
	} {
		if _, _, err := runCLI(t, nil, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one about %q", tc.args, err, tc.want)
		}
	}
	out, _, err := runCLI(t, nil, "agent", "--help")
	if err != nil || !strings.Contains(out, "follow") {
		t.Errorf("agent's help does not list follow: %v\n%s", err, out)
	}
}

// binAgent is a remote.Agent that runs a built flightdeck on this machine
// behind a launcher that writes the launch line, as agent.Runner's does.
type binAgent struct{ bin string }

func (a binAgent) AgentCommand(_ context.Context, args ...string) (string, error) {
	argv := append([]string{"-c", `printf '{"t":"launch","pid":%s}\n' "$$"; exec "$@"`, "sh", a.bin}, args...)
	return remote.Command("sh", argv...)
}

// TestAgentFollowWithTheFollower runs the built binary's `agent follow`
// under a log Follower on the local host: lines, a partial line, a
// truncation; every line once.
func TestAgentFollowWithTheFollower(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := flightdeckBinary(t)
	path := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(path, []byte("l1\nl2\npart"), 0o600); err != nil {
		t.Fatal(err)
	}
	host := remote.NewLocal()
	defer host.Close()
	var (
		mu     sync.Mutex
		lines  []string
		resets int
	)
	sink := func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch v := e.Data.(type) {
		case event.LogLines:
			for _, l := range v.Lines {
				lines = append(lines, string(l.Text))
			}
		case event.LogReset:
			resets++
		}
	}
	f := follow.New(host, path, sink, follow.Options{Agent: binAgent{bin}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	wait := func(want string, wantResets int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			got, r := strings.Join(lines, ","), resets
			mu.Unlock()
			if got == want && r == wantResets {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("lines %q, %d resets; want %q, %d", got, r, want, wantResets)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("l1,l2", 0)
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString("ial\nl4\n"); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	wait("l1,l2,partial,l4", 0)
	mu.Lock()
	lines = nil
	mu.Unlock()
	if err := os.WriteFile(path, []byte("n1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wait("n1", 1)
}
