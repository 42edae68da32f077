package tui

// The C key: redial the host now, while its connection is down or not
// answering.

import (
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// LinkControl redials the host's connection on request (C). The cockpit
// calls it in a tea.Cmd; the event.ConnState events then tell the outcome.
type LinkControl interface {
	// RetryNow redials without waiting for the backoff (reconnecting) or
	// for the keepalive to give up (not answering). It does not wait for
	// the dial; it errors when there is nothing to redial.
	RetryNow() error
}

// RetryResultMsg is the answer of C: nil Err when a redial was started.
type RetryResultMsg struct{ Err error }

// redialUnavailable is why C cannot act: a replay, no LinkControl, or a
// connection that is not waiting to be redialed.
func redialUnavailable(m *Model) string {
	switch {
	case m.opts.ReadOnly:
		return m.roPrefix() + ": no connection to redial"
	case m.opts.Link == nil:
		return "the connection cannot be redialed from here"
	case !m.hasConn:
		return "no connection to redial"
	}
	switch m.conn.Conn {
	case event.Reconnecting, event.NotAnswering:
		return ""
	case event.Connected:
		return "connected and answering: nothing to redial"
	case event.Connecting:
		return "the first dial is under way"
	case event.ConnFailed:
		return "the connection failed for good: redialing cannot fix it (the error is printed on quit)"
	case event.ConnClosed:
		return "the connection is closed"
	}
	return "nothing to redial"
}

// redialNow redials the host (C) in a tea.Cmd.
func (m *Model) redialNow() tea.Cmd {
	ctl := m.opts.Link
	m.flash("redialing now ...", style.Dim)
	rec := m.recorder("redial")
	return func() tea.Msg {
		rec()
		return RetryResultMsg{Err: ctl.RetryNow()}
	}
}

// redialResult shows a redial that could not start; one that did shows in
// the header.
func (m *Model) redialResult(msg RetryResultMsg) {
	if msg.Err != nil {
		m.flash("redial: "+style.ErrText(msg.Err), style.Warn)
	} else if m.status == "redialing now ..." {
		m.status = ""
	}
}

// redialHint is the header's ", C now" while C can act, "" otherwise.
func (m *Model) redialHint() string {
	if redialUnavailable(m) != "" {
		return ""
	}
	return ", C now"
}
