package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
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

// TestJournalNameTakenTheSameSecond: two cockpits started in the same
// second (a pair pressing enter together) get two journals, not a refusal.
func TestJournalNameTakenTheSameSecond(t *testing.T) {
	dir, err := journal.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, d := range []time.Duration{0, time.Second} {
		w, err := journal.Create(journal.NewPath(dir, "same-second", "pair", now.Add(d)), event.SessionHeader{Label: "pair"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
	}
	w, _, err := journalFlags{}.openCounting("same-second", event.SessionHeader{Label: "pair"})
	if err != nil {
		t.Fatalf("second cockpit's journal: %v", err)
	}
	defer w.Close()
	if !strings.HasSuffix(w.Path(), "-pair-2.jsonl") {
		t.Errorf("journal %s, want the -2 name", w.Path())
	}
}
