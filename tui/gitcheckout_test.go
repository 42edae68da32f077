package tui

// The git panel's checkout picker (a typed ref, a branch or an id, the
// filter), undo, and the snapshots' restore.

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	gitdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/git"
)

// checkoutPicker opens the picker and delivers the log.
func checkoutPicker(t *testing.T, m *Model, f *fakeGit) {
	t.Helper()
	cmd := press(m, "c")
	if m.overlay.TopID() != "git-checkout" {
		t.Fatalf("c: %q", m.Status())
	}
	if !strings.Contains(boxText(m), "loading commits ...") {
		t.Errorf("no loading line: %s", boxText(m))
	}
	if lastCall(f) == "Log 40" {
		t.Fatal("Log ran inside Update")
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	if lastCall(f) != "Log 40" {
		t.Fatalf("calls %v", f.Calls())
	}
}

func TestGitCheckoutTypedRef(t *testing.T) {
	m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	checkoutPicker(t, m, f)
	box := boxText(m)
	for _, want := range []string{"> 3207427 2h Fix PCG MoE Error (HEAD -> main, origin/main)", "bba2fc4 5h Tune NCCL ring", "[log] reflog"} {
		if !strings.Contains(box, want) {
			t.Errorf("picker lacks %q: %s", want, box)
		}
	}
	typeText(m, "HEAD~2")
	if !strings.Contains(boxText(m), "> checkout HEAD~2") || strings.Contains(boxText(m), "3207427") {
		t.Errorf("typed: %s", boxText(m))
	}
	f.previews["HEAD~2"] = git.Preview{
		Target: "HEAD~2", From: testLog()[0], To: testLog()[2],
		Back: testLog()[:2], BackCount: 9,
		Files:    []git.Change{{Status: 'M', Path: "python/sglang/srt/distributed/device_communicators/pynccl.py"}, {Status: 'M', Path: "python/sglang/srt/distributed/parallel_state.py"}},
		Blocking: []string{"python/sglang/srt/distributed/parallel_state.py"},
	}
	cmd := press(m, "enter")
	if !strings.Contains(boxText(m), "previewing HEAD~2 ...") {
		t.Errorf("no previewing line: %s", boxText(m))
	}
	m.Update(run(cmd)[0])
	if lastCall(f) != "Preview HEAD~2" {
		t.Fatalf("calls %v", f.Calls())
	}
	box = boxText(m)
	for _, want := range []string{
		"checkout HEAD~2 -> a6d51c0 Add EAGLE3 draft loader (detached)",
		"leaves 9 commits: - 3207427 Fix PCG MoE Error - bba2fc4 Tune NCCL ring for 8xH200 ... and 7 more",
		"touches 2 files: pynccl.py, parallel_state.py",
		"dirty files the checkout would overwrite: python/sglang/srt/distributed/parallel_state.py; git will refuse: stash them first",
		"y/enter checkout esc back n cancel",
	} {
		if !strings.Contains(box, want) {
			t.Errorf("preview lacks %q: %s", want, box)
		}
	}
	if !painted(m, m.styles.Crit, "dirty files the checkout would overwrite:") {
		t.Error("blocking files not critical")
	}
	// esc goes back to the picker, the text kept; enter previews again.
	press(m, "esc")
	if co, ok := m.overlay.Top().(*gitdialog.Checkout); !ok || co.Typed() != "HEAD~2" {
		t.Fatalf("esc in the preview: top %q", m.overlay.TopID())
	}
	m.Update(run(press(m, "enter"))[0])
	cmd = press(m, "y")
	if cmd == nil || m.DialogOpen() {
		t.Fatal("y did not check out")
	}
	if ls := screenLines(m); ls[1] != "git: checking out a6d51c0 ..." {
		t.Errorf("banner %q", ls[1])
	}
	m.Update(run(cmd)[0])
	if lastCall(f) != "Checkout HEAD~2" {
		t.Errorf("calls %v", f.Calls())
	}
	if m.Status() != "checked out a6d51c0 (snapshot "+snapID+"; u undoes)" {
		t.Errorf("flash %q", m.Status())
	}
}

func TestGitCheckoutChoosesBranchOrID(t *testing.T) {
	cases := []struct {
		name string
		keys []string
		want string
	}{
		{"HEAD's branch", nil, "main"},
		{"a tagged commit: its id", []string{"down"}, hexID('b')},
		{"a plain commit", []string{"down", "down"}, hexID('a')},
		{"a local branch with a slash, not its remote", []string{"down", "down", "down"}, "feature/moe"},
		{"the reflog: its id", []string{"tab", "down"}, hexID('b')},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
			openGit(t, m)
			checkoutPicker(t, m, f)
			press(m, c.keys...)
			m.Update(run(press(m, "enter"))[0])
			if lastCall(f) != "Preview "+c.want {
				t.Fatalf("calls %v, want Preview %s", f.Calls(), c.want)
			}
			m.Update(run(press(m, "enter"))[0])
			if lastCall(f) != "Checkout "+c.want {
				t.Errorf("calls %v", f.Calls())
			}
		})
	}
}

func TestGitCheckoutFilterAndCancel(t *testing.T) {
	m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	checkoutPicker(t, m, f)
	typeText(m, "eagle")
	box := boxText(m)
	if !strings.Contains(box, "a6d51c0") || strings.Contains(box, "bba2fc4") {
		t.Errorf("filter: %s", box)
	}
	// down from the typed text chooses the match.
	press(m, "down")
	m.Update(run(press(m, "enter"))[0])
	if lastCall(f) != "Preview "+hexID('a') {
		t.Errorf("calls %v", f.Calls())
	}
	// n in the preview cancels everything; no checkout.
	press(m, "n")
	if m.DialogOpen() || m.Status() != "checkout cancelled" {
		t.Errorf("n: top %q %q", m.overlay.TopID(), m.Status())
	}
	// esc in the picker cancels; a late preview answer is dropped.
	checkoutPicker(t, m, f)
	cmd := press(m, "enter")
	press(m, "esc")
	m.Update(run(cmd)[0])
	if m.DialogOpen() {
		t.Error("a stale preview reopened the overlay")
	}
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "Checkout") {
			t.Errorf("checked out: %v", f.Calls())
		}
	}
	// A preview error is flashed; the picker stays.
	f.previewErr = errors.New(`unknown ref "nope"`)
	checkoutPicker(t, m, f)
	typeText(m, "nope")
	m.Update(run(press(m, "enter"))[0])
	if m.overlay.TopID() != "git-checkout" || m.Status() != `preview nope: unknown ref "nope"` {
		t.Errorf("preview error: top %q %q", m.overlay.TopID(), m.Status())
	}
}

func TestGitUndo(t *testing.T) {
	m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	press(m, "u")
	if m.DialogOpen() || m.Status() != "nothing to undo: no action was made from here" {
		t.Errorf("u without a snapshot: %q", m.Status())
	}
	f.lastID, f.lastRe = snapID, "checkout 3207427"
	press(m, "u")
	if box := boxText(m); !strings.HasPrefix(box, "Restore snapshot "+snapID+" taken before checkout 3207427?") {
		t.Errorf("undo: %s", box)
	}
	if press(m, "esc"); lastCall(f) == "Undo" {
		t.Fatal("esc undid")
	}
	press(m, "u")
	m.Update(run(press(m, "y"))[0])
	if lastCall(f) != "Undo" || m.Status() != "undid checkout 3207427: restored snapshot "+snapID+" (snapshot "+snapID+"; u undoes)" {
		t.Errorf("undo: %v %q", f.Calls(), m.Status())
	}
}

// TestGitUndoOutcome: the restore an undo publishes shows as the undo in
// the panel, whether its event comes before or after the key's answer; a
// later restore of the same snapshot from S shows as a restore.
func TestGitUndoOutcome(t *testing.T) {
	const before = "20261129-220000-aaaa" // the snapshot the undo takes first
	restored := event.GitAction{Op: "restore", Args: []string{snapID}, Snapshot: before}
	undoLine := "last action 0s ago: undo checkout 3207427 ok (restored snapshot " + snapID + "; snapshot " + before + " before it)"
	for _, eventFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("event first ", eventFirst), func(t *testing.T) {
			m, f := gitScene(160, 30, ptr(dirtyStatus()), Options{})
			openGit(t, m)
			f.lastID, f.lastRe = snapID, "checkout 3207427"
			f.act = func(a *event.GitAction) { a.Snapshot = before }
			press(m, "u")
			cmd := press(m, "y")
			if eventFirst {
				send(m, ev(gitNow.Sub(t0), restored))
			}
			m.Update(run(cmd)[0])
			if !eventFirst {
				send(m, ev(gitNow.Sub(t0), restored))
			}
			if want := "undid checkout 3207427: restored snapshot " + snapID + " (snapshot " + before + "; u undoes)"; m.Status() != want {
				t.Errorf("flash %q\nwant  %q", m.Status(), want)
			}
			if !strings.Contains(plain(m), undoLine) {
				t.Errorf("panel lacks %q:\n%s", undoLine, plain(m))
			}
			// The same snapshot restored again from S is a restore.
			send(m, ev(gitNow.Sub(t0), event.GitAction{Op: "restore", Args: []string{snapID}, Snapshot: "20261129-220500-bbbb"}))
			if want := "last action 0s ago: restore " + snapID + " ok (snapshot 20261129-220500-bbbb)"; !strings.Contains(plain(m), want) {
				t.Errorf("panel lacks %q:\n%s", want, plain(m))
			}
		})
	}
	t.Run("failed", func(t *testing.T) {
		m, f := gitScene(220, 30, ptr(dirtyStatus()), Options{})
		openGit(t, m)
		f.lastID, f.lastRe = snapID, "checkout 3207427"
		f.act = func(a *event.GitAction) {
			a.Snapshot, a.Err = before, "error: patch failed: README.md:1\nerror: README.md: patch does not apply"
		}
		press(m, "u")
		msg := run(press(m, "y"))[0]
		m.Update(msg)
		if want := "undo failed (tree before it: snapshot " + before + ", S restores): error: patch failed: README.md:1"; m.Status() != want {
			t.Errorf("flash %q\nwant  %q", m.Status(), want)
		}
		send(m, ev(gitNow.Sub(t0), msg.(GitActionMsg).Action))
		want := "last action 0s ago: undo checkout 3207427 failed (restoring snapshot " + snapID + "; snapshot " + before + " before it): error: patch failed: README.md:1"
		if !strings.Contains(plain(m), want) || !strings.Contains(plain(m), "  error: README.md: patch does not apply") {
			t.Errorf("panel lacks %q:\n%s", want, plain(m))
		}
	})
}

func TestGitSnapshotsRestore(t *testing.T) {
	m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	cmd := press(m, "S")
	if !strings.Contains(boxText(m), "loading snapshots ...") {
		t.Errorf("no loading line: %s", boxText(m))
	}
	m.Update(run(cmd)[0])
	box := boxText(m)
	for _, want := range []string{"> " + snapID + " 8m checkout 3207427 HEAD bbbbbbb main 4 files", "20261128-101500-77aa 1d stash HEAD ccccccc 1 file"} {
		if !strings.Contains(box, want) {
			t.Errorf("snapshots lack %q: %s", want, box)
		}
	}
	press(m, "down", "enter")
	if box := boxText(m); !strings.HasPrefix(box, "Restore snapshot 20261128-101500-77aa taken before stash (1d ago)?") {
		t.Errorf("restore: %s", box)
	}
	press(m, "esc")
	if m.overlay.TopID() != "git-snapshots" {
		t.Errorf("esc in the confirmation: top %q", m.overlay.TopID())
	}
	press(m, "enter")
	m.Update(run(press(m, "y"))[0])
	if lastCall(f) != "Restore 20261128-101500-77aa" {
		t.Errorf("calls %v", f.Calls())
	}
}
