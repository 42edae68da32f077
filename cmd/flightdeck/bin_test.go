package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// runBin runs the built flightdeck with args in a process of its own, as
// a user's shell does (so that tests doing so may run in parallel: the
// in-process commands share the package's state), under ctx. It returns
// stdout, stderr and, for a non-zero exit status, an exitCode that
// wantExit reads as it reads runCLI's; a process that a signal killed
// returns an error saying so. hook, when not nil, is called with all of
// stderr so far after each write; its send signals the process (once:
// later calls do nothing), os.Interrupt being a Ctrl-C.
func runBin(t *testing.T, ctx context.Context, hook func(stderr string, send func(os.Signal)), args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, flightdeckBinary(t), args...)
	// A state directory of the test's own (the same for each of its
	// commands): other tests' journals are of other simulated hosts
	// named sim too, and a bisect takes the A/A noise of the host's.
	state := filepath.Join(os.Getenv("XDG_STATE_HOME"), "bin", strings.ReplaceAll(t.Name(), "/", "_"))
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	var out bytes.Buffer
	errb := &hookBuffer{}
	cmd.Stdout, cmd.Stderr = &out, errb
	var once sync.Once
	send := func(sig os.Signal) {
		once.Do(func() { _ = cmd.Process.Signal(sig) })
	}
	if hook != nil {
		errb.hook = func(s string) { hook(s, send) }
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	removeMirrors(cmd.Process.Pid)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() < 0 {
			return out.String(), errb.String(), fmt.Errorf("flightdeck %s: %w", args[0], err)
		}
		return out.String(), errb.String(), exitCode(ee.ExitCode())
	}
	return out.String(), errb.String(), err
}

// removeMirrors removes the journal mirrors that process pid wrote to the
// simulated hosts, which are this machine: in this user's home; and their
// writers' sidecar files (.NAME.writer).
func removeMirrors(pid int) {
	home, err := os.UserHomeDir()
	if err != nil {
		return
	}
	dir := filepath.Join(home, ".flightdeck", "journals")
	mirrors, _ := filepath.Glob(filepath.Join(dir, "*-"+strconv.Itoa(pid)+"-*.jsonl"))
	sidecars, _ := filepath.Glob(filepath.Join(dir, ".*-"+strconv.Itoa(pid)+"-*.jsonl.writer"))
	for _, p := range append(mirrors, sidecars...) {
		os.Remove(p)
	}
}

// hookBuffer is a bytes.Buffer safe for concurrent writers, which calls
// hook with everything written so far after each write.
type hookBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	hook func(string)
}

func (s *hookBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.hook != nil {
		s.hook(s.b.String())
	}
	return n, err
}

func (s *hookBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
