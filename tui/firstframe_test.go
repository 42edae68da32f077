package tui

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/tui/screen"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// syncBuffer is a bytes.Buffer safe for the renderer's writes and the
// test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// waitFor polls out until cond holds, failing t after 10 s. It is a
// deadline for a broken program, not a measure of speed.
func waitFor(t *testing.T, what string, out func() []byte, cond func([]byte) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(out()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen in %.400q", what, out())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFirstFrameNeedsNoReply: on a terminal that never answers (tmux and
// SSH can drop replies), the program still asks its questions (Bubble
// Tea's DECRQM for synchronized output 2026 and unicode core 2027, the
// model's OSC 11 background colour) and draws the first full frame, header
// and GPU rows, without waiting for any answer: nothing in the startup
// path blocks on a reply.
func TestFirstFrameNeedsNoReply(t *testing.T) {
	in, inw := io.Pipe() // keys never come, replies never come
	defer inw.Close()
	var out syncBuffer
	// The data is there before the program starts, so the very first
	// frame written has everything (later frames are only differences).
	m := New(Options{Host: "gpu-box", Color: Color256})
	send(m, connected(), ev(time.Second, h200s(8)))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		// No TERM_PROGRAM, no SSH_TTY: the screen sends Bubble Tea's mode queries.
		env := []string{"TERM=xterm-256color"}
		b := Bridge{Screen: screen.Target{Out: &out, Env: env, Width: 120, Height: 40}}
		errc <- b.Run(ctx, m,
			tea.WithInput(in), tea.WithOutput(&out), tea.WithWindowSize(120, 40), tea.WithoutSignalHandler(),
			tea.WithEnvironment(env))
	}()
	waitFor(t, "the first frame", out.Bytes, func(b []byte) bool {
		s := ansi.Strip(string(b))
		return strings.Contains(s, "flightdeck  root@gpu-box:22  connected") &&
			strings.Count(s, "Gen5x16") == 8 && strings.Contains(s, "7    H200")
	})
	// The screen's mode queries go with the first frame; the model's
	// OSC 11 is written by Bubble Tea's once-a-second flush, so it may
	// follow the frame (by 1 s at most).
	for name, q := range map[string]string{
		"DECRQM 2026": ansi.RequestModeSynchronizedOutput,
		"DECRQM 2027": ansi.RequestModeUnicodeCore,
		"OSC 11":      ansi.RequestBackgroundColor,
	} {
		waitFor(t, name+" sent (else the test no longer shows the frame comes without its reply)", out.Bytes,
			func(b []byte) bool { return bytes.Contains(b, []byte(q)) })
	}
	cancel()
	select {
	case <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestEveryKeyHasAPlainBinding: every binding can be typed as a plain key
// (a letter, a symbol, or an unmodified named key such as tab or up), so
// nothing depends on tmux passing modified keys through (extended-keys) or
// on escape-time to tell alt+x from esc x. esc itself is never the only
// way: it is the same byte that starts every escape sequence, and tmux
// holds it back escape-time (default 500 ms).
func TestEveryKeyHasAPlainBinding(t *testing.T) {
	m := newSized(80, 24, Options{})
	// The replay's keys: tui/replay's TestReplayKeysHaveAPlainBinding.
	tuitest.AuditPlainKeys(t, m.all(), 30)
}
