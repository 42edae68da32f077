package sessions

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// runFence runs mirrorFenceScript for dst with tok on this machine.
func runFence(t *testing.T, dst, tok string) (string, error) {
	t.Helper()
	cmd, err := remote.Command("sh", "-s", "--", dst, filepath.Dir(dst), mirrorSidecar(dst), tok)
	if err != nil {
		t.Fatal(err)
	}
	res, err := remote.NewLocal().Run(context.Background(), cmd, strings.NewReader(mirrorFenceScript))
	return string(res.Stdout), err
}

// runWriter runs mirrorWriterScript for dst with tok, stdin in.
func runWriter(t *testing.T, dst, tok, in string) error {
	t.Helper()
	cmd, err := remote.Command("sh", "-c", mirrorWriterScript, "flightdeck-mirror", dst, mirrorSidecar(dst), tok)
	if err != nil {
		t.Fatal(err)
	}
	_, err = remote.NewLocal().Run(context.Background(), cmd, strings.NewReader(in))
	return err
}

// A writer whose command reaches the host after a later resynchronisation
// (held by a frozen sshd) writes nothing; the files are 0600 in a 0700
// directory.
func TestMirrorWriterAfterALaterResyncWritesNothing(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "journals", "m.jsonl")
	if out, err := runFence(t, dst, "one"); err != nil || out != "missing\n" {
		t.Fatalf("fence: %q %v", out, err)
	}
	if err := runWriter(t, dst, "one", "a\n"); err != nil {
		t.Fatal(err)
	}
	if out, err := runFence(t, dst, "two"); err != nil || out != "2\n" {
		t.Fatalf("fence: %q %v", out, err)
	}
	err := runWriter(t, dst, "one", "late\n")
	if ee, ok := errors.AsType[*remote.ExitError](err); !ok || ee.Code != mirrorSuperseded {
		t.Errorf("the superseded writer: %v, want exit %d", err, mirrorSuperseded)
	}
	if err := runWriter(t, dst, "two", "b\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "a\nb\n" {
		t.Errorf("the mirror holds %q", b)
	}
	for p, want := range map[string]os.FileMode{filepath.Dir(dst): 0o700 | os.ModeDir, dst: 0o600, mirrorSidecar(dst): 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode() != want {
			t.Errorf("%s: %v %v, want %v", p, st.Mode(), err, want)
		}
	}
}

// The fence kills the recorded writer only while its pid has the recorded
// start time: a pid reused since is left alone.
func TestMirrorFenceKillsTheRecordedWriterOnly(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "m.jsonl")
	if _, err := runFence(t, dst, "one"); err != nil {
		t.Fatal(err)
	}
	p := exec.Command("sleep", "60")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { p.Wait(); close(exited) }()
	t.Cleanup(func() { p.Process.Kill(); <-exited })
	pid := p.Process.Pid
	f := procFields(pid)
	if len(f) < 20 {
		t.Fatalf("/proc/%d/stat: %q", pid, f)
	}
	start, _ := strconv.Atoi(f[19])
	record := func(st int) {
		if err := os.WriteFile(mirrorSidecar(dst), []byte("one "+strconv.Itoa(pid)+" "+strconv.Itoa(st)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	record(start + 1) // another process than the one recorded
	if _, err := runFence(t, dst, "two"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Fatal("the fence killed a process with another start time")
	case <-time.After(100 * time.Millisecond):
	}

	record(start)
	if _, err := runFence(t, dst, "three"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited: // dead when the fence returned; reaped here
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded writer is alive after the fence")
	}
	if b, _ := os.ReadFile(mirrorSidecar(dst)); string(b) != "three\n" {
		t.Errorf("sidecar %q", b)
	}
}
