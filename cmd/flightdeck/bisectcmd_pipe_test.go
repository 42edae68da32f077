package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBisectCLIRestoresWhenTeeDies: `flightdeck bisect … 2>&1 | tee log`
// and a Ctrl-C, which kills tee too: the bisect's next progress line goes
// to a closed pipe. It must not die of SIGPIPE there, before the restore:
// the checkout goes back to main at the baseline, the dirty work with it,
// and the exit status is Ctrl-C's, 130.
func TestBisectCLIRestoresWhenTeeDies(t *testing.T) {
	t.Parallel()
	ctx, h, ssh, checkRestored := dirtyBisectHost(t, 4*time.Minute)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, flightdeckBinary(t), append([]string{"bisect", "sim", "--good", h.Commits.Baseline, "--bad", "origin/main",
		"--samples", "3", "--max-wait", "2m", "--journal", filepath.Join(t.TempDir(), "tee.jsonl")}, ssh...)...)
	cmd.Stdout, cmd.Stderr = w, w // 2>&1 | tee
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var seen strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() { // tee, until the first launch is measured
		seen.WriteString(sc.Text() + "\n")
		if launchLine.MatchString(sc.Text()) {
			break
		}
	}
	r.Close() // tee dies with the Ctrl-C
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	removeMirrors(cmd.Process.Pid)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Errorf("bisect killed by %v", ws.Signal())
			}
		}
		t.Fatalf("bisect: %v, want exit status 130; it printed:\n%s", err, seen.String())
	}
	checkRestored("after the closed pipe")
}
