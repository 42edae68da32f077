package tui

// What guards the git panel: read-only cockpits, HEAD moved behind the
// cockpit's back, sanitised remote text, small terminals, and quitting or
// launching while an action runs.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/launch"
)

// TestGitReadOnly: a replayed journal shows the panel; nothing acts.
func TestGitReadOnly(t *testing.T) {
	m := scene(100, 30, 8, 20, Options{ReadOnly: true})
	press(m, "g")
	if m.git.Open {
		t.Fatal("g opened a panel with nothing to show")
	}
	send(m, ev(4*time.Second, dirtyStatus()))
	if cmd := press(m, "g"); cmd != nil || !m.git.Open {
		t.Fatalf("g in a replay: %q", m.Status())
	}
	if !strings.Contains(plain(m), "stash@{0}") {
		t.Errorf("replayed panel:\n%s", plain(m))
	}
	for k, what := range map[string]string{"r": "a revert", "s": "a stash", "a": "a stash apply", "P": "a stash pop",
		"D": "a stash drop", "c": "a checkout", "u": "an undo", "S": "a restore"} {
		if cmd := press(m, k); cmd != nil || m.DialogOpen() {
			t.Errorf("%s acted in a replay", k)
		}
		if want := "read-only replay: " + what + " would change the host"; m.Status() != want {
			t.Errorf("%s: %q, want %q", k, m.Status(), want)
		}
	}
	// A replayed action shows as the last action.
	send(m, ev(5*time.Second, event.GitAction{Op: "checkout", Args: []string{"3207427"}, Snapshot: snapID}))
	m.Update(ClockMsg{Now: at(5*time.Second + 4*time.Minute)})
	if !strings.Contains(plain(m), "last action 4m ago: checkout 3207427 ok (snapshot "+snapID+")") {
		t.Errorf("last action:\n%s", plain(m))
	}
}

func TestGitMovedAcknowledged(t *testing.T) {
	mv := event.GitMoved{From: hexID('b'), To: hexID('3'), FromShort: "bba2fc4", ToShort: "3207427", FromBranch: "main", ToBranch: "main",
		Action: "pull", Forward: 2, Files: []string{"pynccl.py", "parallel_state.py"}, FilesTotal: 2}
	m, _ := gitScene(200, 30, ptr(dirtyStatus()), Options{})
	send(m, ev(5*time.Second, mv))
	want := "HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits, touches pynccl.py, parallel_state.py)  (g: git panel, esc: dismiss)"
	if l := screenLines(m)[1]; l != want {
		t.Errorf("banner %q", l)
	}
	if !painted(m, m.styles.Warn, want) {
		t.Error("banner not in warning tone")
	}
	press(m, "j") // any other key leaves it
	send(m, ev(6*time.Second, mv))
	if l := screenLines(m)[1]; !strings.Contains(l, "(2 changes since dismissed)") {
		t.Errorf("second move: %q", l)
	}
	press(m, "esc")
	if strings.Contains(plain(m), "HEAD moved") {
		t.Error("esc did not dismiss")
	}
	// Opening the panel acknowledges too; while it is open, esc closes it
	// first.
	send(m, ev(7*time.Second, mv))
	openGit(t, m)
	if strings.Contains(plain(m), "HEAD moved") {
		t.Error("g did not acknowledge")
	}
	send(m, ev(8*time.Second, mv))
	press(m, "esc")
	if m.git.Open || !strings.Contains(plain(m), "HEAD moved") {
		t.Error("esc in the panel should close it, not dismiss the banner")
	}
	// An overlay takes esc first.
	openGit(t, m)
	send(m, ev(9*time.Second, mv))
	press(m, "c", "esc")
	if !strings.Contains(plain(m), "HEAD moved") {
		t.Error("esc in the checkout picker dismissed the banner")
	}
	// Narrow: the short form.
	m.Update(tea.WindowSizeMsg{Width: 70, Height: 30})
	if l := screenLines(m)[1]; l != "HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits)  g/esc" {
		t.Errorf("narrow banner %q", l)
	}
}

// TestGitSanitised: escape sequences and invalid UTF-8 in paths, subjects,
// branch names and messages never reach the terminal, and the raw path
// still reaches Revert.
func TestGitSanitised(t *testing.T) {
	evil := "evil\x1b]0;pwn\x07\x1b[2J\xff.py"
	st := dirtyStatus()
	st.Files[0].Path = evil
	st.Head.Subject = "Fix \x1b[31mred\x1b[0m \x9b2J subject \xfe"
	st.Branch = "main\x1b[1A"
	st.Stashes[0].Message = "On main: \x1b]52;c;cHdu\x07clipboard"
	st.Reflog[0].Message = "pull: \x1b[2K\rFast-forward"
	m, f := gitScene(120, 30, &st, Options{})
	openGit(t, m)
	send(m, ev(5*time.Second, event.GitMoved{From: "a", To: "b", FromShort: "a\x1b[2J", ToShort: "b", Files: []string{evil}, FilesTotal: 1, Forward: 1}))
	c := m.View().Content
	if err := onlySGR(c); err != nil {
		t.Error(err)
	}
	if strings.Contains(c, "\xff") || strings.Contains(c, "\xfe") || strings.Contains(c, "\u009b") {
		t.Error("invalid UTF-8 or a C1 control on screen")
	}
	scr := plain(m)
	// Escape sequences in names are shown escaped, not stripped: two
	// different names never look alike (issue 19).
	for _, want := range []string{`evil\x1b]0;pwn\x07\x1b[2J\xff.py`, `Fix \x1b[31mred`, "clipboard", "Fast-forward"} {
		if !strings.Contains(scr, want) {
			t.Errorf("screen lacks %q:\n%s", want, scr)
		}
	}
	do(m, "r")
	if err := onlySGR(m.View().Content); err != nil {
		t.Error(err)
	}
	m.Update(run(press(m, "y"))[0])
	if len(f.paths) != 1 || len(f.paths[0]) != 1 || f.paths[0][0] != evil {
		t.Errorf("Revert got %q, want the raw path", f.paths)
	}
	// A commit subject in the checkout picker and preview.
	f.log[0].Subject = "subject \x1b[2J\x1b]8;;http://x\x07link\xff"
	f.previews["main"] = git.Preview{To: f.log[0], Branch: "main\x1b[1m", Forward: f.log[:1], ForwardCount: 1}
	checkoutPicker(t, m, f)
	if err := onlySGR(m.View().Content); err != nil {
		t.Error(err)
	}
	m.Update(run(press(m, "enter"))[0])
	if err := onlySGR(m.View().Content); err != nil {
		t.Error(err)
	}
	if !strings.Contains(boxText(m), `+ 3207427 subject link\xff`) {
		t.Errorf("preview: %s", boxText(m))
	}
}

// TestGitFits: the panel and every git overlay fit every size, in ASCII
// chrome.
func TestGitFits(t *testing.T) {
	long := dirtyStatus()
	long.Path = "/" + strings.Repeat("very-long-dir/", 20) + "sglang"
	long.Head.Subject = strings.Repeat("a long subject ", 10)
	long.Files = append(long.Files, event.GitFile{Path: strings.Repeat("deep/", 40) + "x.py", Y: 'M', X: ' ', Added: 123456, Deleted: 7654321})
	for _, sz := range [][2]int{{100, 30}, {80, 24}, {60, 20}, {40, 10}, {20, 5}, {1, 1}, {300, 100}} {
		for _, keys := range [][]string{nil, {"r"}, {"s"}, {"c"}, {"c", "enter"}, {"P"}, {"D"}, {"S"}, {"S", "enter"}, {"?"}} {
			m, f := gitScene(sz[0], sz[1], &long, Options{})
			f.lastID, f.lastRe = snapID, "checkout 3207427"
			f.previews["main"] = git.Preview{To: testLog()[0], Branch: "main", Forward: testLog(), ForwardCount: 40, Back: testLog(), BackCount: 40,
				Blocking: []string{strings.Repeat("x", 300)}}
			openGit(t, m)
			send(m, ev(5*time.Second, event.GitMoved{From: "a", To: "b", FromShort: "a", ToShort: "b", Files: []string{"x"}, Forward: 1}))
			do(m, keys...)
			assertFits(t, m, sz[0], sz[1], fmt.Sprint(keys))
			for _, r := range plain(m) {
				if r > 0x7e && (r < 0x2581 || r > 0x2588) {
					t.Errorf("%dx%d %v: non-ASCII %q in chrome", sz[0], sz[1], keys, r)
					break
				}
			}
		}
	}
}

// TestGitQuitWhileBusy: q or ctrl+c during a git action does not cancel
// it: the cockpit quits when the action's answer comes, or at a second
// press.
func TestGitQuitWhileBusy(t *testing.T) {
	for _, first := range []string{"q", "ctrl+c"} {
		for _, then := range []string{"answer", "q", "ctrl+c"} {
			t.Run(first+" then "+then, func(t *testing.T) {
				m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
				openGit(t, m)
				press(m, "P")
				cmd := press(m, "y")
				if q := press(m, first); isQuit(q) || m.Quitting() {
					t.Fatalf("%s quit during a git action", first)
				}
				if m.Status() != gitQuitText || !painted(m, m.styles.Warn, m.Status()) {
					t.Errorf("status %q", m.Status())
				}
				if l := screenLines(m)[1]; l != "git: popping stash@{0} ... (quitting when it ends)" {
					t.Errorf("banner %q", l)
				}
				press(m, "j") // another key does not forget the request
				if then == "answer" {
					_, q := m.Update(run(cmd)[0])
					if !isQuit(q) || !m.Quitting() {
						t.Error("the action's answer did not quit")
					}
					if lastCall(f) != "StashApply "+hexID('5')+" pop=true" {
						t.Errorf("calls %v", f.Calls())
					}
					return
				}
				if !isQuit(press(m, then)) || !m.Quitting() {
					t.Errorf("a second %s did not quit at once", then)
				}
			})
		}
	}
	// Without a quit request the answer does not quit.
	m, _ := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	press(m, "P")
	if _, q := m.Update(run(press(m, "y"))[0]); isQuit(q) || m.Quitting() {
		t.Error("an action's answer quit")
	}
}

// TestGitQuitWhileServerBusyToo: when the git action ends while a kill
// still runs, the cockpit does not quit (that would cancel the kill): it
// asks as q does during a kill.
func TestGitQuitWhileServerBusyToo(t *testing.T) {
	m, _ := gitScene(100, 30, ptr(dirtyStatus()), Options{Control: newFake()})
	send(m, ev(5*time.Second, readyStatus()))
	press(m, "K", "y")
	if m.srv.busy == actionNone {
		t.Fatal("no kill in flight")
	}
	openGit(t, m)
	press(m, "P")
	cmd := press(m, "y")
	press(m, "q")
	if _, q := m.Update(run(cmd)[0]); isQuit(q) || m.Quitting() {
		t.Fatal("quit while a kill runs")
	}
	if m.Status() != "the git action ended; a kill is in progress; quitting cancels it - q again to quit" {
		t.Errorf("status %q", m.Status())
	}
	if !isQuit(press(m, "q")) {
		t.Error("q did not quit")
	}
}

// A launch while a git action changes the checkout would start the server
// on a half-changed tree: L waits for git.
func TestGitBusyRefusesLaunch(t *testing.T) {
	m, _ := gitScene(100, 30, ptr(dirtyStatus()), Options{Control: newFake()})
	send(m, ev(5*time.Second, readyStatus()))
	openGit(t, m)
	press(m, "P")
	cmd := press(m, "y")
	if cmd == nil || m.git.Doing() == "" {
		t.Fatal("no git action in flight")
	}
	press(m, "L")
	if m.overlay.TopID() == launch.ID || !strings.HasPrefix(m.Status(), "git is busy (") {
		t.Fatalf("L during a git action: dialog %q, status %q", m.overlay.TopID(), m.Status())
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	press(m, "L")
	if m.overlay.TopID() != launch.ID {
		t.Errorf("L after the git action: status %q", m.Status())
	}
}
