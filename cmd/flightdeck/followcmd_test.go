package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// writeJournal creates a journal at path holding a note and one log line,
// written to the file; the writer stays open (the journal is live) until
// the test ends unless the caller closes it.
func writeJournal(t *testing.T, path, line string) *journal.Writer {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	w, err := journal.Create(path, event.SessionHeader{Created: now, Host: "root@gpu-box:22", Label: "pair"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	writeEvents(t, w, event.Event{At: now, Data: event.Note{Text: "started"}}, logEvent(now, line))
	return w
}

func logEvent(at time.Time, text string) event.Event {
	return event.Event{At: at, Data: event.LogLines{Path: "/data/logs/sglang.log", Lines: []event.LogLine{{Offset: at.UnixMicro() % 1e9, Text: []byte(text)}}}}
}

func writeEvents(t *testing.T, w *journal.Writer, evs ...event.Event) {
	t.Helper()
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(false); err != nil {
		t.Fatal(err)
	}
}

func TestFollowWithoutArgumentPicksTheNewestLiveJournal(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "gpu-box", "2026-11-29-090000-a.jsonl")
	live := filepath.Join(dir, "gpu-box", "2026-11-29-100000-b.jsonl")
	finished := filepath.Join(dir, "other", "2026-11-29-110000-c.jsonl")
	writeJournal(t, old, "x")
	writeJournal(t, live, "y")
	writeJournal(t, finished, "z").Close()
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	got, others, err := newestLiveJournal(dir)
	if err != nil || got != live || len(others) != 1 || others[0] != old {
		t.Errorf("newestLiveJournal = %q, %q, %v; want %q and %q", got, others, err, live, old)
	}
	// A pair on one box: the older journal is the driving cockpit's, the
	// newer a watcher's; the driver's is followed.
	drives := filepath.Join(dir, "gpu-box", "2026-11-29-080000-d.jsonl")
	wd := writeJournal(t, drives, "d")
	writeEvents(t, wd, event.Event{At: time.Now(), Data: event.DriverState{Role: event.RoleDriving, Holder: event.DriverInfo{User: "alice"}}})
	for _, p := range []string{drives} {
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	if got, _, err := newestLiveJournal(dir); err != nil || got != drives {
		t.Errorf("with a driving cockpit's journal: %q, %v; want %q", got, err, drives)
	}
}

// TestFollowRefusesClearly: the errors name what is missing and how to go
// on; they exit 2 before any screen.
func TestFollowRefusesClearly(t *testing.T) {
	empty := t.TempDir()
	_, stderr, err := runCLI(t, nil, "follow", "--dir", empty)
	var ec exitCode
	if !errors.As(err, &ec) || ec != exitRefused || !strings.Contains(stderr, "no journal is being written under "+empty) ||
		!strings.Contains(stderr, "flightdeck follow FILE") || !strings.Contains(stderr, "flightdeck follow HOST") {
		t.Errorf("no live journal: err %v, stderr %q", err, stderr)
	}
	_, stderr, err = runCLI(t, nil, "follow", empty)
	if !errors.As(err, &ec) || !strings.Contains(stderr, "is a directory, not a journal") {
		t.Errorf("a directory: err %v, stderr %q", err, stderr)
	}
	notJournal := filepath.Join(empty, "notes.txt")
	os.WriteFile(notJournal, []byte("hello\n"), 0o644)
	_, stderr, err = runCLI(t, nil, "follow", notJournal)
	if !errors.As(err, &ec) || !strings.Contains(stderr, "not a flightdeck journal") {
		t.Errorf("not a journal: err %v, stderr %q", err, stderr)
	}
	_, stderr, err = runCLI(t, nil, "follow", "a", "b")
	if !errors.As(err, &ec) || !strings.Contains(stderr, "accepts at most 1 arg") {
		t.Errorf("two arguments: err %v, stderr %q", err, stderr)
	}
}

// simHost starts a simulated host and dials it over SSH.
func simHost(t *testing.T) (*sim.Host, remote.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := sim.Start(ctx, sim.Options{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	host, err := remote.DialSSH(ctx, h.Target(), remote.SSHOptions{ConfigFile: os.DevNull,
		IdentityFiles: []string{h.IdentityPath}, KnownHostsFiles: []string{h.KnownHostsPath}, NoAgent: true,
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	return h, host
}

// sshArgs are follow's flags to reach the simulated host.
func sshArgs(h *sim.Host) []string {
	return []string{"-i", h.IdentityPath, "--known-hosts", h.KnownHostsPath, "-F", os.DevNull}
}

// drive takes the driver lock on host in lockDir as a cockpit recording
// the journal at journalPath ("" none).
func drive(t *testing.T, host remote.Host, lockDir, journalPath string) {
	t.Helper()
	me := driver.Self()
	me.User, me.Machine, me.Journal = "alice", "laptop", journalPath
	l := &driver.Lock{Host: host, Dir: lockDir, Me: me}
	st, err := l.Acquire(context.Background(), false)
	if err != nil || st.Role != event.RoleDriving {
		t.Fatalf("Acquire: %+v, %v", st, err)
	}
}

func TestFollowHostRefusesClearly(t *testing.T) {
	h, host := simHost(t)
	lockDir := t.TempDir()
	args := append([]string{"follow", h.Target(), "--lock-dir", lockDir}, sshArgs(h)...)
	_, stderr, err := runCLI(t, nil, args...)
	var ec exitCode
	if !errors.As(err, &ec) || !strings.Contains(stderr, "is not driven: no cockpit holds a driver lock in ") {
		t.Errorf("not driven: err %v, stderr %q", err, stderr)
	}
	drive(t, host, lockDir, "")
	_, stderr, err = runCLI(t, nil, args...)
	if !errors.As(err, &ec) || !strings.Contains(stderr, "is driven by alice@laptop, whose cockpit records no journal") {
		t.Errorf("no journal: err %v, stderr %q", err, stderr)
	}
	lockDir2 := t.TempDir()
	drive(t, host, lockDir2, filepath.Join(lockDir2, "gone.jsonl"))
	args[3] = lockDir2
	_, stderr, err = runCLI(t, nil, args...)
	if !errors.As(err, &ec) || !strings.Contains(stderr, "gone.jsonl, is missing or not readable") {
		t.Errorf("journal missing: err %v, stderr %q", err, stderr)
	}
}

// TestHostStreamResumesAfterADrop: the local copy of a journal growing on
// the simulated host is byte-identical, across a dropped connection; a
// truncated remote file stops the stream with a sentence saying so.
func TestHostStreamResumesAfterADrop(t *testing.T) {
	h, host := simHost(t)
	remotePath := filepath.Join(t.TempDir(), "remote.jsonl") // the sim runs commands on this machine
	var want bytes.Buffer
	add := func(n int) {
		t.Helper()
		var b bytes.Buffer
		for range n {
			b.WriteString("[" + strconv.Itoa(want.Len()+b.Len()) + ",\"note\",{}]\n")
		}
		f, err := os.OpenFile(remotePath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b.Bytes())
		f.Close()
		want.Write(b.Bytes())
	}
	add(50)
	cache, err := newCacheFile(t.TempDir(), host.Name(), remotePath)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	s := &hostStream{host: host, remotePath: remotePath, local: cache}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := s.waitHeader(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFile(t, cache.Name(), want.String())
	add(10)
	waitFile(t, cache.Name(), want.String())

	if err := h.StopSSH(); err != nil {
		t.Fatal(err)
	}
	add(100)
	if err := h.RestartSSH(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, cache.Name(), want.String())
	if err := s.Err(); err != nil {
		t.Fatalf("a drop stopped the stream: %v", err)
	}

	if err := os.Truncate(remotePath, 10); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "changed under the follower") || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("after a truncation: %v", err)
	}
	j := &streamedJournal{s: s}
	if _, err := j.Refresh(); err == nil {
		t.Error("Refresh after the stream failed returned no error")
	}
}

func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if string(b) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d bytes, want %d:\n%s", path, len(b), len(want), lineDiff(want, string(b)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFollowFileInTmux: `flightdeck follow FILE` on a journal the test
// writes shows what was there, then a line written afterwards within a
// second or two; its acting keys say it is read-only.
func TestFollowFileInTmux(t *testing.T) {
	bin := flightdeckBinary(t)
	path := filepath.Join(t.TempDir(), "gpu-box", "2026-11-29-101500-pair.jsonl")
	w := writeJournal(t, path, "first line before the follower")
	s := startTmux(t, 120, 30, bin+" follow "+path)
	s.waitScreen(15*time.Second, func(screen string) string {
		for _, want := range []string{"flightdeck  follow  pair", "first line before the follower", "LIVE"} {
			if !strings.Contains(screen, want) {
				return "screen lacks " + want
			}
		}
		return ""
	})
	writeEvents(t, w, logEvent(time.Now(), "written while followed"))
	s.waitScreen(5*time.Second, has("written while followed"))
	s.keys("K")
	s.waitScreen(5*time.Second, has("follow: read-only"))
	s.quit()
}

// TestFollowHostInTmux: `flightdeck follow HOST` finds the journal the
// driver lock names on the simulated host and streams it over SSH.
func TestFollowHostInTmux(t *testing.T) {
	bin := flightdeckBinary(t)
	h, host := simHost(t)
	lockDir := t.TempDir()
	path := filepath.Join(t.TempDir(), "mirror.jsonl") // on the "host": this machine
	w := writeJournal(t, path, "first line on the host")
	drive(t, host, lockDir, path)
	cmd := "XDG_CACHE_HOME=" + t.TempDir() + " " + bin + " follow " + h.Target() + " --lock-dir " + lockDir + " " + strings.Join(sshArgs(h), " ")
	s := startTmux(t, 120, 30, cmd)
	s.waitScreen(20*time.Second, func(screen string) string {
		for _, want := range []string{"flightdeck  follow  pair", "first line on the host", "LIVE"} {
			if !strings.Contains(screen, want) {
				return "screen lacks " + want
			}
		}
		return ""
	})
	writeEvents(t, w, logEvent(time.Now(), "appended on the host"))
	s.waitScreen(5*time.Second, has("appended on the host"))
	s.quit()
}

// tail -F's notices that it goes on (polling instead of inotify) must not
// stop the follower; those that say the file was cut or replaced must.
func TestTailFatal(t *testing.T) {
	for line, want := range map[string]bool{
		"tail: inotify resources exhausted":                                                             false,
		"tail: inotify cannot be used, reverting to polling":                                            false,
		"tail: /root/.flightdeck/journals/s.jsonl: file truncated":                                      true,
		"tail: '/root/.flightdeck/journals/s.jsonl' has been replaced;  following new file":             true,
		"tail: '/root/.flightdeck/journals/s.jsonl' has become inaccessible: No such file or directory": true,
	} {
		if got := tailFatal(line); got != want {
			t.Errorf("tailFatal(%q) = %v, want %v", line, got, want)
		}
	}
}
