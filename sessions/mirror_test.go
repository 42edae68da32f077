package sessions

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// mirrorRun runs m in the background; the returned stop cancels it and
// returns Run's error.
func mirrorRun(t *testing.T, m *Mirror) (polls <-chan string, stop func() error) {
	return mirrorRunCounting(t, m, new(atomic.Int32))
}

// mirrorRunCounting is mirrorRun counting the synchronisations in syncs.
func mirrorRunCounting(t *testing.T, m *Mirror, syncs *atomic.Int32) (polls <-chan string, stop func() error) {
	t.Helper()
	hooks := make(chan string, 64)
	m.hook = func(s string) {
		if s == "sync" {
			syncs.Add(1)
		}
		select {
		case hooks <- s:
		default: // the test is not waiting: never block the mirror
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- m.Run(ctx) }()
	var stopped bool
	var err error
	stop = func() error {
		if !stopped {
			cancel()
			err = <-errc
			stopped = true
		}
		return err
	}
	t.Cleanup(func() { stop() })
	return hooks, stop
}

// waitPolls waits until the mirror has polled the local file n more times.
func waitPolls(t *testing.T, hooks <-chan string, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for n > 0 {
		select {
		case h := <-hooks:
			if h == "poll" {
				n--
			}
		case <-deadline:
			t.Fatal("the mirror stopped polling")
		}
	}
}

// waitContent waits until the file at path holds want.
func waitContent(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if string(b) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q, want %q", path, b, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestMirrorSendsCompleteLinesOnly(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "local.jsonl")
	dst := filepath.Join(dir, "host", "journals", "local.jsonl") // the directory is made
	appendFile(t, local, "{\"header\":1}\n[1,\"note\",{}]\n")
	hooks, stop := mirrorRun(t, &Mirror{Host: remote.NewLocal(), Local: local, Remote: dst, Every: 5 * time.Millisecond})
	waitContent(t, dst, "{\"header\":1}\n[1,\"note\",{}]\n")

	appendFile(t, local, "[2,\"log-li") // a line being written
	waitPolls(t, hooks, 3)
	if b, _ := os.ReadFile(dst); string(b) != "{\"header\":1}\n[1,\"note\",{}]\n" {
		t.Fatalf("the torn tail was sent: %q", b)
	}
	appendFile(t, local, "nes\",{}]\n[3,\"gpu-sample\",{}]\n")
	want := "{\"header\":1}\n[1,\"note\",{}]\n[2,\"log-lines\",{}]\n[3,\"gpu-sample\",{}]\n"
	waitContent(t, dst, want)

	// At the end the complete lines are written, nothing is removed.
	appendFile(t, local, "[4,\"note\",{}]\n[5,")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(dst)
	if string(b) != want+"[4,\"note\",{}]\n" {
		t.Errorf("after stop the mirror holds %q", b)
	}
}

func TestMirrorResumesAnEarlierMirror(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "local.jsonl")
	appendFile(t, local, "a\nbb\nccc\n")
	for _, tc := range []struct{ name, remote, want string }{
		{"a prefix at a line boundary is kept", "a\nbb\n", "a\nbb\nccc\n"},
		{"a torn last line is completed", "a\nbb\ncc", "a\nbb\nccc\n"},
		{"a torn line that differs is cut", "a\nbb\ncX", "a\nbb\nccc\n"},
		{"the whole file: nothing is written twice", "a\nbb\nccc\n", "a\nbb\nccc\n"},
		{"another file is started over", "x\nyy\n", "a\nbb\nccc\n"},
		{"longer than the local file", "a\nbb\nccc\ndddd\n", "a\nbb\nccc\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "m.jsonl")
			appendFile(t, dst, tc.remote)
			hooks, stop := mirrorRun(t, &Mirror{Host: remote.NewLocal(), Local: local, Remote: dst, Every: 5 * time.Millisecond})
			waitPolls(t, hooks, 1) // after the sync
			waitContent(t, dst, tc.want)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			waitContent(t, dst, tc.want)
		})
	}
}

func TestMirrorDefaultPathIsUnderTheRemoteHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ctx := context.Background()
	got, err := MirrorPath(ctx, remote.NewLocal(), "/x/y/2026-11-29-101500-demo.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".flightdeck", "journals", "2026-11-29-101500-demo.jsonl"); got != want {
		t.Errorf("MirrorPath = %q, want %q", got, want)
	}
}

func TestMirrorRefusesAnUnreadableLocalJournal(t *testing.T) {
	err := (&Mirror{Host: remote.NewLocal(), Local: filepath.Join(t.TempDir(), "nope.jsonl")}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Errorf("Run = %v, want an error naming the file", err)
	}
}

// TestMirrorOverSSHSurvivesADrop: lines appended locally appear on the
// simulated host byte-identical; while the SSH server is down the local
// journal grows and the remote file gets a torn line (a write cut off
// with the connection); after the restart the mirror cuts it back and
// resumes with nothing lost or written twice.
func TestMirrorOverSSHSurvivesADrop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := sim.Start(ctx, sim.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	host, err := remote.DialSSH(ctx, h.Target(), remote.SSHOptions{ConfigFile: os.DevNull,
		IdentityFiles: []string{h.IdentityPath}, KnownHostsFiles: []string{h.KnownHostsPath}, NoAgent: true,
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()

	dir := t.TempDir()
	local := filepath.Join(dir, "local.jsonl")
	dst := filepath.Join(dir, "remote", "m.jsonl") // the sim runs commands on this machine
	var want bytes.Buffer
	line := func(i int) string {
		return "[" + strings.Repeat("7", i%50) + ",\"note\",{\"i\":" + strconv.Itoa(i) + "}]\n"
	}
	for i := range 200 {
		want.WriteString(line(i))
	}
	appendFile(t, local, want.String())
	var syncs atomic.Int32
	_, stop := mirrorRunCounting(t, &Mirror{Host: host, Local: local, Remote: dst, Every: 10 * time.Millisecond}, &syncs)
	waitContent(t, dst, want.String())

	if err := h.StopSSH(); err != nil {
		t.Fatal(err)
	}
	for i := 200; i < 400; i++ {
		want.WriteString(line(i))
	}
	appendFile(t, local, want.String()[fileLen(t, local):])
	// The first new line landed, the second only in part.
	appendFile(t, dst, line(200)+line(201)[:7])
	if err := h.RestartSSH(); err != nil {
		t.Fatal(err)
	}
	waitContent(t, dst, want.String())
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	waitContent(t, dst, want.String())
	if n := syncs.Load(); n < 2 {
		t.Errorf("%d synchronisations, want one after the drop too", n)
	}
}

func fileLen(t *testing.T, path string) int {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Size())
}
