package follow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestFollowerOverRealSSHD repeats the user's test over OpenSSH, where
// stdout and stderr are separate channel buffers: rounds of 50 lines, then
// a truncation and 2000 lines in one write; every line exactly once, after
// one Reset. A forged notice in the log stays a line.
func TestFollowerOverRealSSHD(t *testing.T) {
	requireTail(t)
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	host, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile:      os.DevNull,
		IdentityFiles:   []string{srv.ClientKeyPath()},
		KnownHostsFiles: []string{known},
		NoAgent:         true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()

	path := filepath.Join(t.TempDir(), "sglang.log")
	gens := [][]string{genLines("start", 50)}
	if err := os.WriteFile(path, []byte(joinLines(gens[0])), 0o644); err != nil {
		t.Fatal(err)
	}
	_, c := startFollower(t, host, path, Options{CheckInterval: 10 * time.Millisecond})
	c.waitStream(t, "the first lines", expectStream(gens...))
	for round := range 6 {
		for _, n := range []int{2000, 50} {
			lines := genLines(fmt.Sprintf("round %d of %d", round, n), n)
			if n == 50 {
				lines[7] = "tail: " + path + ": file truncated" // forged
			}
			gens = append(gens, lines)
			if err := os.WriteFile(path, []byte(joinLines(lines)), 0o644); err != nil {
				t.Fatal(err)
			}
			c.waitStream(t, fmt.Sprintf("round %d: %d lines rewritten", round, n), expectStream(gens...))
		}
	}
}

// TestAgentFollowerOverRealSSHD: the agent path over OpenSSH: the user's
// log life (agentScenario: truncation, cp over the log, rotation, a
// removal and a new file, sshd killed and restarted while lines are
// written) with every line exactly once; and at steady state, a few
// seconds of appends open no session: the one agent session carries it
// all.
func TestAgentFollowerOverRealSSHD(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ssh, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile:      os.DevNull,
		IdentityFiles:   []string{srv.ClientKeyPath()},
		KnownHostsFiles: []string{known},
		NoAgent:         true,
		ReconnectMin:    50 * time.Millisecond,
		ReconnectMax:    300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ssh.Close()
	h := &countingHost{Host: ssh}

	path := filepath.Join(t.TempDir(), "sglang.log")
	writeFile(t, path, joinLines(genLines("start", 50)))
	_, c := startFollower(t, h, path, Options{Agent: &testAgent{}})
	c.waitStream(t, "the first lines", expectStream(genLines("start", 50)))

	// Steady state: lines every 50 ms for 3 s, no new session.
	runs0, starts0 := h.counts()
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		appendFile(t, path, joinLines(genLines(fmt.Sprintf("steady %d", time.Now().UnixNano()), 2)))
		time.Sleep(50 * time.Millisecond)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "the steady lines", func(l []string, _ []event.LogReset) bool { return len(l) == strings.Count(string(want), "\n") })
	if runs, starts := h.counts(); starts0 != 1 || starts != 1 || runs != runs0 {
		t.Errorf("sessions: %d runs, %d starts before 3 s of appends; %d, %d after: want one start, no run", runs0, starts0, runs, starts)
	}

	// The user's log life, with its own Follower.
	path2 := filepath.Join(t.TempDir(), "server.log")
	writeFile(t, path2, joinLines(genLines("start", 50)))
	_, c2 := startFollower(t, h, path2, Options{Agent: &testAgent{}})
	agentScenario(t, c2, path2, func(change func()) {
		srv.Stop()
		change()
		srv.Restart()
	})
}

// dialSSHD starts sshd and connects to it.
func dialSSHD(t *testing.T) (*sshdtest.Server, remote.Host) {
	t.Helper()
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile:      os.DevNull,
		IdentityFiles:   []string{srv.ClientKeyPath()},
		KnownHostsFiles: []string{known},
		NoAgent:         true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return srv, h
}

// steadyFor is how long the steady-state measurements append lines:
// FLIGHTDECK_FOLLOW_STEADY (a Go duration, e.g. 60s for the figures in
// docs/performance.md), else 3 s.
func steadyFor(t *testing.T) time.Duration {
	if v := os.Getenv("FLIGHTDECK_FOLLOW_STEADY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("FLIGHTDECK_FOLLOW_STEADY: %v", err)
		}
		return d
	}
	return 3 * time.Second
}

// TestFollowerSessionsAtSteadyStateOverRealSSHD counts the sessions (each
// at least one process on the host) that a Follower opens over OpenSSH
// while a line is appended every 50 ms: CheckStrict (what the cockpit ran
// before issue 20) about one per CheckInterval; CheckLazy (the fallback)
// at most one per LazyInterval; the agent none.
func TestFollowerSessionsAtSteadyStateOverRealSSHD(t *testing.T) {
	requireTail(t)
	_, ssh := dialSSHD(t)
	steady := steadyFor(t)
	for _, tc := range []struct {
		name string
		opts Options
		most int // sessions during steady (-1: only reported)
	}{
		{"strict", Options{Agent: noAgent()}, -1},
		{"lazy", Options{Agent: noAgent(), Check: CheckLazy}, int(steady/(30*time.Second)) + 1},
		{"agent", Options{Agent: &testAgent{}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &countingHost{Host: ssh}
			path := filepath.Join(t.TempDir(), "steady.log")
			writeFile(t, path, joinLines(genLines("start", 50)))
			_, c := startFollower(t, h, path, tc.opts)
			c.waitStream(t, "the first lines", expectStream(genLines("start", 50)))
			runs0, starts0 := h.counts()
			n := 0
			for end := time.Now().Add(steady); time.Now().Before(end); n++ {
				appendFile(t, path, joinLines(genLines(fmt.Sprintf("steady %d", n), 1)))
				time.Sleep(50 * time.Millisecond)
			}
			c.waitFor(t, "every line", func(l []string, _ []event.LogReset) bool { return len(l) == 50+n })
			runs, starts := h.counts()
			got := runs - runs0 + starts - starts0
			t.Logf("%s: %d sessions in %v of %d lines (%.1f a minute)", tc.name, got, steady, n, float64(got)/steady.Minutes())
			if tc.most >= 0 && got > tc.most {
				t.Errorf("%d sessions in %v, want at most %d", got, steady, tc.most)
			}
			if tc.most < 0 && got == 0 {
				t.Errorf("no session in %v: the strict checks did not run", steady)
			}
		})
	}
}

// TestFollowerLazyOverRealSSHD: CheckLazy with a real tail over OpenSSH:
// `cp` of a larger file over the log (a rewrite tail may miss) ends with
// the new file, every line once, after the last Reset.
func TestFollowerLazyOverRealSSHD(t *testing.T) {
	requireTail(t)
	_, ssh := dialSSHD(t)
	path := filepath.Join(t.TempDir(), "lazy.log")
	writeFile(t, path, joinLines(genLines("start", 50)))
	_, c := startFollower(t, ssh, path, Options{Check: CheckLazy, LazyInterval: 300 * time.Millisecond})
	c.waitStream(t, "the first lines", expectStream(genLines("start", 50)))
	for round := range 4 {
		fresh := genLines(fmt.Sprintf("round %d", round), 2000+10*round)
		tmp := path + ".new"
		writeFile(t, tmp, joinLines(fresh))
		if err := os.Rename(tmp, path+".cp"); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path + ".cp")
		if err != nil {
			t.Fatal(err)
		}
		_, r0 := c.lines()
		writeFile(t, path, string(b)) // O_TRUNC and one write, like cp
		deadline := time.Now().Add(20 * time.Second)
		for {
			l, r := c.lines()
			if len(r) > len(r0) && strings.Join(l, "\n") == strings.Join(fresh, "\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d lines after %d Resets (%d before the rewrite), want the new file's %d after a new one",
					round, len(l), len(r), len(r0), len(fresh))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
