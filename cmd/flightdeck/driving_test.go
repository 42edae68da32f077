package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestServerCLIRespectsTheDriver: while a cockpit holds the host's driver
// lock, server kill and launch refuse and name it, server status shows
// it, and --force acts anyway.
func TestServerCLIRespectsTheDriver(t *testing.T) {
	h, _, ssh := simHostConfig(t)
	args := func(a ...string) []string { return append(a, ssh...) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The cockpit's lock, taken on this machine: the sim's log directory
	// is local.
	l := &driver.Lock{Host: remote.NewLocal(), Dir: filepath.Dir(h.LogPath), Me: event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123}}
	if st, err := l.Acquire(ctx, false); err != nil || st.Role != event.RoleDriving {
		t.Fatalf("acquire: %+v %v", st, err)
	}
	var err error
	for _, cmd := range [][]string{{"server", "kill", "sim", "--yes"}, {"server", "launch", "sim", "--yes", "--no-wait"}} {
		_, _, err = runCLI(t, nil, args(cmd...)...)
		if err == nil || !strings.Contains(err.Error(), "alice@laptop (pid 4123) drives") || !strings.Contains(err.Error(), "--force") {
			t.Errorf("%v while a cockpit drives: %v", cmd, err)
		}
	}
	out, _, _ := runCLI(t, nil, args("server", "status", "sim")...)
	if !strings.Contains(out, "driver:  alice@laptop pid 4123") {
		t.Errorf("status does not name the driver:\n%s", out)
	}
	// A repeat drives the host itself: it refuses to start under a cockpit.
	if _, stderr, err := runCLI(t, nil, args("server", "launch", "sim", "--force", "--yes", "--timeout", "60s")...); err != nil {
		t.Fatalf("launch --force: %v\n%s", err, stderr)
	}
	_, _, err = runCLI(t, nil, args("server", "repeat", "sim", "-n", "1", "--samples", "3")...)
	if err == nil || !strings.Contains(err.Error(), "alice@laptop (pid 4123) drives") || !strings.Contains(err.Error(), "--take-over") {
		t.Errorf("repeat while a cockpit drives: %v", err)
	}
	if _, stderr, err := runCLI(t, nil, args("server", "kill", "sim", "--yes", "--force", "--grace", "2s")...); err != nil {
		t.Fatalf("kill --force: %v\n%s", err, stderr)
	}
	// --force goes past the lock: the kill then finds no server.
	_, stderr, err := runCLI(t, nil, args("server", "kill", "sim", "--yes", "--force")...)
	wantExit(t, err, exitNoServer, "kill --force with no server")
	if !strings.Contains(stderr, "no server running") {
		t.Errorf("kill --force: %q", stderr)
	}
	// Released: the CLI acts without --force.
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCLI(t, nil, args("server", "kill", "sim", "--yes")...)
	wantExit(t, err, exitNoServer, "kill after the release")
}

// TestGitCLIRespectsTheDriver: while a cockpit holds the host's driver
// lock, the git commands that change the checkout refuse and name it
// (before any question), the ones that read still read, and --force acts
// anyway, as for flightdeck server.
func TestGitCLIRespectsTheDriver(t *testing.T) {
	h, _, ssh := simHostConfig(t)
	args := func(a ...string) []string { return append(a, ssh...) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := &driver.Lock{Host: remote.NewLocal(), Dir: filepath.Dir(h.LogPath), Me: event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123}}
	if st, err := l.Acquire(ctx, false); err != nil || st.Role != event.RoleDriving {
		t.Fatalf("acquire: %+v %v", st, err)
	}
	head := gitT(t, h.RepoPath, "rev-parse", "HEAD")
	writeFile(t, h.RepoPath, "scratch.txt", "mine\n")
	for _, cmd := range [][]string{
		{"git", "checkout", "sim", "HEAD~1", "--yes"},
		{"git", "stash", "sim", "push", "mine", "-u"},
		{"git", "revert", "sim", "scratch.txt", "--yes"},
		{"git", "restore", "sim", "--yes"},
	} {
		_, _, err := runCLI(t, nil, args(cmd...)...)
		if err == nil || !strings.Contains(err.Error(), "alice@laptop (pid 4123) drives") || !strings.Contains(err.Error(), "--force") {
			t.Errorf("%v while a cockpit drives: %v", cmd, err)
		}
	}
	if got := gitT(t, h.RepoPath, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved to %s while refused", got)
	}
	if _, err := os.Stat(filepath.Join(h.RepoPath, "scratch.txt")); err != nil {
		t.Fatalf("the untracked file went while refused: %v", err)
	}
	if out, stderr, err := runCLI(t, nil, args("git", "status", "sim")...); err != nil || !strings.Contains(out, "scratch.txt") {
		t.Errorf("status while a cockpit drives: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err := runCLI(t, nil, args("git", "stash", "sim", "push", "mine", "-u", "--force")...)
	wantExit(t, err, 0, "stash --force:\n"+stderr)
	if !strings.Contains(out, "stashed as stash@{0}: mine") {
		t.Errorf("stash --force:\n%s", out)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = runCLI(t, nil, args("git", "stash", "sim", "pop", "0", "--yes")...)
	wantExit(t, err, 0, "pop after the release:\n"+stderr)
	if _, err := os.Stat(filepath.Join(h.RepoPath, "scratch.txt")); err != nil {
		t.Errorf("the pop did not bring the file back: %v\n%s", err, out)
	}
}
