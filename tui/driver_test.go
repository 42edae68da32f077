package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/server"
)

func aliceDrives() driver.State {
	return driver.State{Host: "root@gpu-box", Role: driver.RoleWatching,
		Holder: driver.Info{User: "alice", Machine: "laptop", PID: 4123, Since: at(-90 * time.Second), Token: "ab"}}
}

// TestWatchingRefusesEveryAction: a cockpit that another one's lock makes
// read-only says who drives, and every key that acts answers with it
// instead of acting; view keys still work.
func TestWatchingRefusesEveryAction(t *testing.T) {
	m, f := controlled(160, 40, ptr(readyStatus()))
	send(m, ev(5*time.Second, aliceDrives()))
	screen := plain(m)
	head := strings.SplitN(screen, "\n", 2)[0]
	if !strings.Contains(head, "read-only: alice@laptop drives") {
		t.Errorf("header does not say who drives:\n%s", head)
	}
	since := at(-90 * time.Second).Local().Format("15:04:05")
	want := "read-only: alice@laptop pid 4123 drives (since " + since + "); flightdeck connect --take-over takes over"
	if !strings.Contains(screen, want) {
		t.Errorf("no banner %q:\n%s", want, screen)
	}
	for _, k := range []string{"K", "L", "p", "b", "R"} {
		press(m, "esc")
		if cmd := press(m, k); cmd != nil {
			run(cmd)
		}
		if m.modal != modalNone {
			t.Errorf("%s opened an overlay while watching", k)
		}
		if m.Status() != want {
			t.Errorf("%s: status %q, want %q", k, m.Status(), want)
		}
	}
	if plans, launched, kills := f.counts(); plans+launched+kills != 0 {
		t.Errorf("control called while watching: plans %d launches %d kills %d", plans, launched, kills)
	}
	// View keys act: help opens.
	press(m, "?")
	if !m.showHelp {
		t.Error("? does not open the help while watching")
	}
}

// TestTakenOverClosesTheForm: losing the lock while the launch form is open
// closes it, and the note says who took over; getting the lock back makes
// the keys act again.
func TestTakenOverClosesTheForm(t *testing.T) {
	m, _ := controlled(160, 40, ptr(readyStatus()))
	send(m, ev(5*time.Second, driver.State{Role: driver.RoleDriving, Holder: driver.Info{User: "bob", Machine: "desk", Since: at(5 * time.Second)}}))
	if strings.Contains(plain(m), "read-only") {
		t.Fatalf("driving cockpit says read-only:\n%s", plain(m))
	}
	press(m, "L")
	if m.modal != modalLaunch {
		t.Fatal("L did not open the launch form while driving")
	}
	st := aliceDrives()
	st.Note = "alice@laptop took over at 10:29:00"
	send(m, ev(10*time.Second, st))
	if m.modal != modalNone {
		t.Error("the launch form stayed open after the lock was taken")
	}
	if !strings.Contains(plain(m), "alice@laptop took over at 10:29:00") {
		t.Errorf("no take-over note:\n%s", plain(m))
	}
	press(m, "K")
	if !strings.HasPrefix(m.Status(), "read-only: ") {
		t.Fatalf("K while watching: %q", m.Status())
	}
	back := driver.State{Role: driver.RoleDriving, Holder: driver.Info{User: "bob", Machine: "desk", Since: at(20 * time.Second)},
		Note: "alice@laptop quit: you drive now"}
	send(m, ev(20*time.Second, back))
	if m.Status() != "" {
		t.Errorf("the watcher's refusal stays after getting the lock: %q", m.Status())
	}
	if s := plain(m); strings.Contains(s, "read-only") || !strings.Contains(s, "you drive now") {
		t.Errorf("after getting the lock back:\n%s", s)
	}
	press(m, "K")
	if m.modal != modalKill {
		t.Errorf("K does not ask to kill once driving again: %q", m.Status())
	}
}

// TestReplayShowsTheDriver: a replayed or followed journal shows who drove,
// never the read-only banner meant for a live watcher.
func TestReplayShowsTheDriver(t *testing.T) {
	m := scene(160, 40, 8, 10, Options{ReadOnly: true})
	send(m, ev(5*time.Second, driver.State{Role: driver.RoleDriving, Holder: driver.Info{User: "alice", Machine: "laptop"}}),
		ev(6*time.Second, server.Status{Phase: server.PhaseReady, Exit: -1}))
	head := strings.SplitN(plain(m), "\n", 2)[0]
	if !strings.Contains(head, "driver alice@laptop") {
		t.Errorf("replay header: %q", head)
	}
	send(m, ev(7*time.Second, aliceDrives()))
	head = strings.SplitN(plain(m), "\n", 2)[0]
	since := at(-90 * time.Second).Local().Format("15:04:05")
	if !strings.Contains(head, "watching; alice@laptop drives since "+since) {
		t.Errorf("replay of a watching cockpit's journal: %q", head)
	}
	if strings.Contains(plain(m), "take-over") {
		t.Errorf("replay shows the watcher's banner:\n%s", plain(m))
	}
}
