package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// A batch of samples and log lines waits for the next frame; a batch
// holding an Xid or a kill step is drawn at once, and so is any message
// that is not a batch of events.
func TestHeldEventsDrawsUrgentKindsAtOnce(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name string
		msg  tea.Msg
		held bool
	}{
		{"samples and lines", EventsMsg{{At: at, Data: event.GPUSample{}}, {At: at, Data: event.LogLines{}}}, true},
		{"empty batch", EventsMsg{}, true},
		{"an Xid among samples", EventsMsg{{At: at, Data: event.GPUSample{}}, {At: at, Data: event.Xid{Index: 2, Code: 79}}}, false},
		{"a kill step", EventsMsg{{At: at, Data: event.KillStep{}}}, false},
		{"a key", tea.KeyPressMsg{Code: 'q'}, false},
	}
	for _, c := range cases {
		if got := heldEvents(c.msg); got != c.held {
			t.Errorf("%s: held %v, want %v", c.name, got, c.held)
		}
	}
}
