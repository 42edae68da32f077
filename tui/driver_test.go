package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/launch"
)

func aliceDrives() event.DriverState {
	return event.DriverState{Host: "root@gpu-box", Role: event.RoleWatching,
		Holder: event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123, Since: at(-90 * time.Second), Token: "ab"}}
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
	want := "read-only: alice@laptop pid 4123 drives (since " + since + "); flightdeck connect HOST --take-over takes over"
	if !strings.Contains(screen, want) {
		t.Errorf("no banner %q:\n%s", want, screen)
	}
	for _, k := range []string{"K", "L", "p", "b", "R"} {
		press(m, "esc")
		if cmd := press(m, k); cmd != nil {
			run(cmd)
		}
		if m.DialogOpen() {
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
	send(m, ev(5*time.Second, event.DriverState{Role: event.RoleDriving, Holder: event.DriverInfo{User: "bob", Machine: "desk", Since: at(5 * time.Second)}}))
	if strings.Contains(plain(m), "read-only") {
		t.Fatalf("driving cockpit says read-only:\n%s", plain(m))
	}
	press(m, "L")
	if m.overlay.TopID() != launch.ID {
		t.Fatal("L did not open the launch form while driving")
	}
	st := aliceDrives()
	st.Note = "alice@laptop took over at 10:29:00"
	send(m, ev(10*time.Second, st))
	if m.DialogOpen() {
		t.Error("the launch form stayed open after the lock was taken")
	}
	if !strings.Contains(plain(m), "alice@laptop took over at 10:29:00") {
		t.Errorf("no take-over note:\n%s", plain(m))
	}
	press(m, "K")
	if !strings.HasPrefix(m.Status(), "read-only: ") {
		t.Fatalf("K while watching: %q", m.Status())
	}
	back := event.DriverState{Role: event.RoleDriving, Holder: event.DriverInfo{User: "bob", Machine: "desk", Since: at(20 * time.Second)},
		Note: "alice@laptop quit: you drive now"}
	send(m, ev(20*time.Second, back))
	if m.Status() != "" {
		t.Errorf("the watcher's refusal stays after getting the lock: %q", m.Status())
	}
	if s := plain(m); strings.Contains(s, "read-only") || !strings.Contains(s, "you drive now") {
		t.Errorf("after getting the lock back:\n%s", s)
	}
	press(m, "K")
	if m.overlay.TopID() != dialogKill {
		t.Errorf("K does not ask to kill once driving again: %q", m.Status())
	}
}

// TestReplayShowsTheDriver: a replayed or followed journal shows who drove,
// never the read-only banner meant for a live watcher.
func TestReplayShowsTheDriver(t *testing.T) {
	m := scene(160, 40, 8, 10, Options{ReadOnly: true})
	send(m, ev(5*time.Second, event.DriverState{Role: event.RoleDriving, Holder: event.DriverInfo{User: "alice", Machine: "laptop"}}),
		ev(6*time.Second, event.ServerStatus{Phase: event.PhaseReady, Exit: -1}))
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

type fakeDriver struct{ takes int }

func (f *fakeDriver) TakeOver(context.Context) error { f.takes++; return nil }

// TestTakeOverKey: a watching cockpit offers T in its footer; T asks, n
// cancels, y takes over in a command (not in Update).
func TestTakeOverKey(t *testing.T) {
	m, _ := controlled(160, 40, ptr(readyStatus()))
	fd := &fakeDriver{}
	m.opts.Driver = fd
	press(m, "T")
	if m.Status() != "no driver lock here: this cockpit acts alone" {
		t.Errorf("T before any lock state: %q", m.Status())
	}
	send(m, ev(5*time.Second, aliceDrives()))
	press(m, "esc") // clears the answer to T
	lines := strings.Split(plain(m), "\n")
	if footer := lines[len(lines)-1]; !strings.Contains(footer, "T take over") || strings.Contains(footer, "K kill") {
		t.Errorf("watching footer %q", footer)
	}
	if !strings.Contains(plain(m), "; T takes over") {
		t.Errorf("the banner does not say T takes over:\n%s", plain(m))
	}
	press(m, "T")
	if m.overlay.TopID() != dialogTakeOver || !strings.Contains(screenText(m), "Take over from alice@laptop? Its keys stop acting") {
		t.Fatalf("T did not ask:\n%s", plain(m))
	}
	press(m, "n")
	if m.DialogOpen() || fd.takes != 0 {
		t.Fatalf("n: top %q, takes %d", m.overlay.TopID(), fd.takes)
	}
	press(m, "T")
	cmd := press(m, "y")
	if fd.takes != 0 || cmd == nil {
		t.Fatalf("y: took over inside Update (%d) or returned no command", fd.takes)
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	if fd.takes != 1 {
		t.Errorf("TakeOver called %d times", fd.takes)
	}
	// A kill refused while alice drove no longer shows once this cockpit
	// drives.
	m.Update(KillResultMsg{Target: "sglang pid 4123", Err: errors.New("read-only: alice@laptop (pid 4123) drives this host now (driver lock)")})
	if !strings.Contains(plain(m), "kill failed: read-only") {
		t.Fatalf("the refusal is not shown:\n%s", plain(m))
	}
	send(m, ev(8*time.Second, event.DriverState{Role: event.RoleDriving, Holder: event.DriverInfo{User: "bob", Machine: "desk"}, Note: "took over from alice@laptop"}))
	if strings.Contains(plain(m), "kill failed: read-only") {
		t.Errorf("the old refusal still shows while driving:\n%s", plain(m))
	}
	press(m, "T")
	if m.Status() != "this cockpit drives the host already" {
		t.Errorf("T while driving: %q", m.Status())
	}
}

// TestLosingTheLockStopsWhatRunsHere: a repeat or benchmark started here
// stops when another cockpit takes over (it would go on relaunching the
// server under the new driver), and when the lock is unsure.
func TestLosingTheLockStopsWhatRunsHere(t *testing.T) {
	for _, lost := range []event.DriverState{aliceDrives(), {Role: event.RoleUnsure, Err: "connection to host lost"}} {
		m, _ := controlled(160, 40, ptr(readyStatus()))
		send(m, ev(5*time.Second, event.DriverState{Role: event.RoleDriving, Holder: event.DriverInfo{User: "bob", Machine: "desk"}}))
		var repStopped, benchStopped bool
		m.bench.RepeatRun.Cancel, m.bench.RepeatRun.Running = func() { repStopped = true }, true
		m.bench.BenchRun.Cancel, m.bench.BenchRun.Running = func() { benchStopped = true }, true
		send(m, ev(6*time.Second, lost))
		if !repStopped || !benchStopped {
			t.Errorf("%v: repeat stopped %v, bench stopped %v", lost.Role, repStopped, benchStopped)
		}
		press(m, "K")
		if !strings.HasPrefix(m.Status(), "read-only") {
			t.Errorf("%v: K says %q", lost.Role, m.Status())
		}
	}
}

// TestQuittingTheDemoThatServesTheHost: the demo serving the simulated
// host asks once before quitting while another cockpit drives it.
func TestQuittingTheDemoThatServesTheHost(t *testing.T) {
	m, _ := controlled(160, 40, ptr(readyStatus()))
	m.opts.ServesHost = true
	send(m, ev(5*time.Second, aliceDrives()))
	if cmd := press(m, "q"); cmd != nil || m.quitting {
		t.Fatal("q quit at once")
	}
	if !strings.Contains(m.Status(), "quitting ends it for everyone - q again to quit") {
		t.Errorf("status %q", m.Status())
	}
	press(m, "q")
	if !m.quitting {
		t.Error("q again did not quit")
	}
}
