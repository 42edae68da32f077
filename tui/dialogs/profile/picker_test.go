package profile

import (
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/tui/style"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

type fakeControl struct {
	names  []string
	picked []string
}

func (f *fakeControl) Profiles() []string              { return f.names }
func (f *fakeControl) Request() sessions.LaunchRequest { return sessions.LaunchRequest{} }
func (f *fakeControl) SetProfile(name string) error {
	if name == "broken" {
		return errors.New("unknown profile\x1b[2J")
	}
	f.picked = append(f.picked, name)
	return nil
}

// harness is a picker's cockpit: what it said, picked and recorded.
type harness struct {
	ctl      *fakeControl
	said     []string
	next     string
	recorded []string
}

func (h *harness) host() Host {
	return Host{Ctl: h.ctl, Running: func() bool { return true }, Picked: func(n string) { h.next = n },
		Record: func(a string) tea.Cmd { h.recorded = append(h.recorded, a); return nil },
		Flash:  func(s string, _ style.Token) { h.said = append(h.said, s) }}
}

// TestPickerPicks: the current profile ("none" for an empty request) is
// marked and has the cursor; enter picks for the next launch; q leaves
// it unchanged; a refused pick says why; no profiles, no picker.
func TestPickerPicks(t *testing.T) {
	st := style.Plain()
	h := &harness{ctl: &fakeControl{names: []string{"broken", "nccl-ll-ring", "none"}}}
	p := Open(h.host())
	if b := p.View(&st, 80, 24); !strings.Contains(style.StripSGR(strings.Join(b.Body, "\n")), "> * none  (current)") || b.Title != "env profile for the next launch" {
		t.Errorf("opened: %q", b.Body)
	}
	p.Key(tuitest.KeyMsg("up"))
	if cmd, done := p.Key(tuitest.KeyMsg("enter")); cmd != nil || !done || h.next != "nccl-ll-ring" || h.recorded[0] != "profile nccl-ll-ring" ||
		h.said[0] != "profile nccl-ll-ring for the next launch - L to relaunch" {
		t.Errorf("enter: next %q recorded %q said %q", h.next, h.recorded, h.said)
	}
	p = Open(h.host())
	if _, done := p.Key(tuitest.KeyMsg("q")); !done || h.said[1] != "profile unchanged" {
		t.Errorf("q: said %q", h.said)
	}
	p = Open(h.host())
	p.Key(tuitest.KeyMsg("g"))
	if _, done := p.Key(tuitest.KeyMsg("enter")); !done || h.said[2] != "profile broken: unknown profile" {
		t.Errorf("refused: said %q", h.said)
	}
	h.ctl.names = nil
	if Open(h.host()) != nil || h.said[3] != "no env profiles configured" {
		t.Errorf("no profiles: said %q", h.said)
	}
}

// TestTinyScreens: the picker draws at any size without panicking, and no
// box where there is no room for one.
func TestTinyScreens(t *testing.T) {
	st := style.Plain()
	h := &harness{ctl: &fakeControl{names: []string{"nccl-ll-ring-with-a-very-long-name", "none"}}}
	p := Open(h.host())
	tuitest.AuditDialogSizes(t, &st, "profile picker", p, [][2]int{{0, 0}, {1, 1}, {7, 4}, {8, 5}, {12, 6}, {300, 100}})
}
