package sessions

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// recorder keeps every event a live run published.
type recorder struct {
	mu     sync.Mutex
	events []event.Event
	notify chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) sink(e event.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// waitFor polls the recorded events until cond holds or the deadline.
func (r *recorder) waitFor(t *testing.T, what string, d time.Duration, cond func([]event.Event) bool) {
	t.Helper()
	deadline := time.After(d)
	for {
		r.mu.Lock()
		ok := cond(r.events)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

func (r *recorder) snapshot() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.events...)
}

// TestLiveOverRealSSHDSurvivesRestart is the first slice end to end below the
// screen: a real OpenSSH sshd serves the simulated host; the live source sees
// 8 GPUs, the modelled tok/s and HEAD; then sshd is killed mid-stream and
// restarted, and the live source reconnects with no log line lost or
// repeated.
func TestLiveOverRealSSHDSurvivesRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	h, err := sim.Start(ctx, sim.Options{NoSSH: true, NCCLProfile: true, TimeScale: 4, StartupDelay: time.Second, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.StartServer(ctx, nil); err != nil {
		t.Fatal(err)
	}

	srv := sshdtest.Start(t, sshdtest.Options{PathDirs: []string{h.BinDir}})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	host, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile:        os.DevNull,
		IdentityFiles:     []string{srv.ClientKeyPath()},
		KnownHostsFiles:   []string{known},
		NoAgent:           true,
		ReconnectMin:      50 * time.Millisecond,
		ReconnectMax:      300 * time.Millisecond,
		KeepaliveInterval: 2 * time.Second, // sshd is killed, not frozen: no need to be quick
	})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()

	rec := newRecorder()
	liveCtx, stopLive := context.WithCancel(ctx)
	liveDone := make(chan error, 1)
	go func() {
		liveDone <- RunLive(liveCtx, LiveConfig{
			Host: host, LogPath: h.LogPath, RepoPath: h.RepoPath,
			Interval: 200 * time.Millisecond, Server: serverlog.ServerSGLang,
		}, rec.sink)
	}()

	want := sim.ModelTokPerSec(true, false, false) // NCCL profile at the baseline HEAD: ~89
	rec.waitFor(t, "8 GPUs with valid readings", time.Minute, func(es []event.Event) bool {
		for _, e := range es {
			if s, ok := e.Data.(event.GPUSample); ok && len(s.GPUs) == 8 && allValid(s) {
				return true
			}
		}
		return false
	})
	rec.waitFor(t, fmt.Sprintf("tok/s near %.1f", want), time.Minute, func(es []event.Event) bool {
		n := 0
		for _, e := range es {
			if r, ok := e.Data.(event.TokRate); ok && !r.Dropped && math.Abs(r.TokPerSec-want) <= 0.05*want {
				n++
			}
		}
		return n >= 3
	})
	rec.waitFor(t, "HEAD at the baseline commit (the checkout before the unrecorded pull)", time.Minute, func(es []event.Event) bool {
		for _, e := range es {
			if hd, ok := e.Data.(event.RepoHead); ok && hd.Commit == h.Commits.Baseline {
				return true
			}
		}
		return false
	})

	// Kill sshd mid-stream: the connection and the remote tail die.
	before := len(rec.snapshot())
	srv.Stop()
	rec.waitFor(t, "reconnecting state", 30*time.Second, func(es []event.Event) bool {
		for _, e := range es[before:] {
			if st, ok := e.Data.(event.ConnState); ok && st.Conn == event.Reconnecting {
				return true
			}
		}
		return false
	})
	// The server keeps writing while we are away.
	sizeAtDrop := fileSize(t, h.LogPath)
	waitFileGrows(t, h.LogPath, sizeAtDrop+500, 30*time.Second)
	srv.Restart()
	afterRestart := len(rec.snapshot())
	rec.waitFor(t, "connected again", 30*time.Second, func(es []event.Event) bool {
		for _, e := range es[before:] {
			if st, ok := e.Data.(event.ConnState); ok && st.Conn == event.Connected {
				return true
			}
		}
		return false
	})
	rec.waitFor(t, "GPU samples after reconnect", 30*time.Second, func(es []event.Event) bool {
		for _, e := range es[afterRestart:] {
			if s, ok := e.Data.(event.GPUSample); ok && len(s.GPUs) == 8 {
				return true
			}
		}
		return false
	})
	target := fileSize(t, h.LogPath)
	rec.waitFor(t, "the log tail to catch up", 30*time.Second, func(es []event.Event) bool {
		return receivedUpTo(es) >= target
	})
	stopLive()
	if err := <-liveDone; err != nil {
		t.Fatalf("RunLive: %v", err)
	}

	// Exactly-once: the received lines, in order, are the file's bytes.
	var got bytes.Buffer
	next := int64(0)
	for _, e := range rec.snapshot() {
		switch p := e.Data.(type) {
		case event.LogReset:
			t.Fatalf("unexpected log reset: %+v", p)
		case event.LogLines:
			for _, l := range p.Lines {
				if l.Offset != next {
					t.Fatalf("line at offset %d, want %d: gap or duplicate", l.Offset, next)
				}
				got.Write(l.Text)
				got.WriteByte('\n')
				next += int64(len(l.Text)) + 1
			}
		}
	}
	file, err := os.ReadFile(h.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() < int(target) || !bytes.Equal(got.Bytes(), file[:got.Len()]) {
		t.Fatalf("received %d bytes of log that differ from the file's first %d", got.Len(), got.Len())
	}
}

func allValid(s event.GPUSample) bool {
	for _, g := range s.GPUs {
		if !g.UtilGPUPct.Valid() || !g.MemUsedMiB.Valid() || !g.PowerDrawW.Valid() || !g.TempC.Valid() || !g.SMClockMHz.Valid() {
			return false
		}
	}
	return true
}

// receivedUpTo is the file offset just past the last line received.
func receivedUpTo(es []event.Event) int64 {
	var end int64
	for _, e := range es {
		if p, ok := e.Data.(event.LogLines); ok && len(p.Lines) > 0 {
			l := p.Lines[len(p.Lines)-1]
			end = l.Offset + int64(len(l.Text)) + 1
		}
	}
	return end
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func waitFileGrows(t *testing.T, path string, size int64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for fileSize(t, path) < size {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not grow to %d bytes in %v", path, size, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
