package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestServerStatusSince: `server status` compares the host with the last
// session recorded for it, as a cockpit's banner does: never seen, then,
// after a session's state and a `git pull`, the pull.
func TestServerStatusSince(t *testing.T) {
	h, _, ssh := simHostConfig(t)
	args := func(a ...string) []string { return append(a, ssh...) }

	out, _, err := runCLI(t, nil, args("server", "status", "sim", "--json")...)
	wantExit(t, err, exitNoServer, "status")
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if st.Since == nil || st.Since.Seen || st.Since.Repo != h.RepoPath || st.Since.Host == "" {
		t.Fatalf("since %+v", st.Since)
	}

	// A session recorded the host at the baseline commit (what a cockpit's
	// RecordSinceLast writes), in the default journal directory.
	s, err := sessions.Open(sessions.Options{Name: "sim", Header: event.SessionHeader{Host: st.Since.Host}})
	if err != nil {
		t.Fatal(err)
	}
	s.Publish(event.Event{At: time.Now(), Data: event.HostState{Host: st.Since.Host, Fingerprint: event.Fingerprint{At: time.Now(),
		Git: &event.GitState{Repo: h.RepoPath, Head: h.Commits.Baseline, Branch: "main"}}}})
	if err := s.Close(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	pull := exec.Command("git", "-C", h.RepoPath, "pull", "-q", "--ff-only")
	pull.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	if b, err := pull.CombinedOutput(); err != nil {
		t.Fatalf("git pull: %v\n%s", err, b)
	}
	out, _, err = runCLI(t, nil, args("server", "status", "sim")...)
	wantExit(t, err, exitNoServer, "status")
	for _, want := range []string{"since your last session here (today ", ": 1 change", "recorded in " + s.JournalPath(),
		"  HEAD " + h.Commits.Baseline[:7] + " -> ", " by git pull, 3 commits, touches piecewise_context_manager.py, pynccl.py", "    + 65b09bf Fix PCG MoE Error"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runCLI(t, nil, args("server", "status", "sim", "--no-since")...)
	if strings.Contains(out, "since your last session") {
		t.Errorf("--no-since:\n%s", out)
	}
}
