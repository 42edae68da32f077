package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/hostwatch"
)

// TestAgentWatchCommand runs `flightdeck agent watch` as the root command
// does and checks its stream: the watch line, one git and one server line
// at start, then a git line when HEAD moves.
func TestAgentWatchCommand(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "one"}} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	var out syncBuffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"agent", "watch", "--repo", dir, "--pidfile", filepath.Join(dir, "none.json"), "--port", "1", "--interval", "20ms"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	time.Sleep(200 * time.Millisecond)
	// As git writes it: a new file renamed over HEAD (a write in place
	// could be read half done, between its truncation and its bytes).
	tmp := filepath.Join(dir, ".git", "HEAD.lock")
	if err := os.WriteFile(tmp, []byte("ref: refs/heads/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ".git", "HEAD")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var types []string
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		l, err := hostwatch.ParseLine(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, l.T+":"+l.Why)
	}
	if got := strings.Join(types, " "); got != "watch: git:start server:start git:head,ref" {
		t.Fatalf("stream %q, want watch, git and server at start, then git:head,ref", got)
	}
}

func TestAgentWatchNeedsSomething(t *testing.T) {
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"agent", "watch"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "nothing to watch") {
		t.Fatalf("err = %v, want nothing to watch", err)
	}
}
