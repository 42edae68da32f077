package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// fakeLink is a LinkControl that records its calls.
type fakeLink struct {
	callLog
	err error
}

func (f *fakeLink) RetryNow() error {
	f.record("RetryNow")
	return f.err
}

// TestRedialKey: C redials (in a tea.Cmd) while the connection is
// reconnecting or not answering, and says why not otherwise; the header
// hints at it.
func TestRedialKey(t *testing.T) {
	link := &fakeLink{}
	m := newSized(160, 24, Options{Link: link})
	send(m, connected())
	if cmd := press(m, "C"); cmd != nil || m.Status() != "connected and answering: nothing to redial" {
		t.Errorf("C while connected: cmd %v, status %q", cmd != nil, m.Status())
	}

	send(m, connReconnecting(10*time.Second, 4, 12*time.Second))
	if h := screenLines(m)[0]; !strings.Contains(h, "reconnecting (attempt 4, next in 2s, C now)") {
		t.Errorf("reconnecting header %q", h)
	}
	cmd := press(m, "C")
	if cmd == nil || m.Status() != "redialing now ..." {
		t.Fatalf("C while reconnecting: cmd %v, status %q", cmd != nil, m.Status())
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	if got := strings.Join(link.Calls(), " "); got != "RetryNow" || m.Status() != "" {
		t.Errorf("calls %q, status %q", got, m.Status())
	}

	send(m, ev(20*time.Second, event.ConnState{Host: "root@gpu-box:22", Conn: event.NotAnswering, Heard: at(16 * time.Second), NextTry: at(24 * time.Second)}))
	if h := screenLines(m)[0]; !strings.Contains(h, "root@gpu-box:22  not answering for 4s (redial in 4s, C now)") {
		t.Errorf("not answering header %q", h)
	}
	if !painted(m, m.Styles().Warn, "not answering for 4s (redial in 4s, C now)") {
		t.Error("not answering is not painted as a warning")
	}
	link.err = errors.New("the connection is up and answering: nothing to redial")
	for _, msg := range run(press(m, "C")) {
		m.Update(msg)
	}
	if m.Status() != "redial: the connection is up and answering: nothing to redial" {
		t.Errorf("status after a refused redial %q", m.Status())
	}
	if n := len(link.Calls()); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
	if why := killUnavailable(m); why != "the host is not answering" && !strings.Contains(why, "server control") {
		t.Errorf("K while not answering: %q", why)
	}

	// Narrow: the short form.
	m = newSized(60, 24, Options{Link: link})
	send(m, ev(20*time.Second, event.ConnState{Host: "root@gpu-box:22", Conn: event.NotAnswering, Heard: at(16 * time.Second), NextTry: at(24 * time.Second)}))
	if h := screenLines(m)[0]; !strings.Contains(h, "not answering for 4s") || strings.Contains(h, "C now") {
		t.Errorf("narrow not answering header %q", h)
	}

	// Without a LinkControl, or in a replay, C says so and the header has
	// no hint.
	for _, o := range []Options{{}, {ReadOnly: true, Link: link}} {
		m := newSized(160, 24, o)
		send(m, connReconnecting(10*time.Second, 4, 12*time.Second))
		if cmd := press(m, "C"); cmd != nil || m.Status() == "" {
			t.Errorf("C with %+v: cmd %v, status %q", o, cmd != nil, m.Status())
		}
		if h := screenLines(m)[0]; strings.Contains(h, "C now") {
			t.Errorf("header hints at C with %+v: %q", o, h)
		}
	}
}
