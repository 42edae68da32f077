package tui

// The git panel's actions: revert (marked files, the cursor's, deletions
// warned of), stash (the form, apply, pop, drop by id), and how their
// outcomes, failures and notes show.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

func TestGitRevertMarkedFiles(t *testing.T) {
	m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	// Mark the first and the untracked file, unmark and remark the second.
	m.Update(space())
	press(m, "j")
	m.Update(space())
	m.Update(space())
	press(m, "end")
	press(m, "home", "j", "j", "j", "j", "j")
	m.Update(space())
	if !strings.Contains(plain(m), "2 marked") {
		t.Errorf("marks not counted:\n%s", plain(m))
	}
	if cmd := press(m, "r"); cmd != nil {
		t.Fatal("r acted before the confirmation")
	}
	box := boxText(m)
	for _, want := range []string{"Revert 2 files to HEAD", "pynccl.py", "?? bench/notes.txt",
		"Untracked files will be deleted: notes.txt.", "A snapshot of the tree is taken first (u undoes).", "y/enter revert n/esc cancel"} {
		if !strings.Contains(box, want) {
			t.Errorf("confirmation lacks %q: %s", want, box)
		}
	}
	if strings.Contains(box, "parallel_state.py") {
		t.Error("an unmarked file is listed")
	}
	cmd := press(m, "y")
	if cmd == nil || len(f.Calls()) != 1 {
		t.Fatalf("y: cmd %v, calls %v", cmd != nil, f.Calls())
	}
	// In flight: a banner, and the git keys are busy.
	if ls := screenLines(m); ls[1] != "git: reverting 2 files ..." {
		t.Errorf("banner %q", ls[1])
	}
	press(m, "s")
	if m.Status() != "git is busy: reverting 2 files" {
		t.Errorf("s while busy: %q", m.Status())
	}
	msgs := run(cmd)
	want := []string{"python/sglang/srt/distributed/device_communicators/pynccl.py", "bench/notes.txt"}
	if len(f.paths) != 1 || strings.Join(f.paths[0], "|") != strings.Join(want, "|") {
		t.Fatalf("Revert(%q), want %q", f.paths, want)
	}
	m.Update(msgs[0])
	if m.Status() != "reverted 2 files (snapshot "+snapID+"; u undoes)" || !painted(m, m.styles.OK, m.Status()) {
		t.Errorf("flash %q", m.Status())
	}
	if strings.Contains(plain(m), "git: reverting") {
		t.Error("banner stayed")
	}
	if got := f.Calls(); len(got) != 2 || got[1] != "Revert 2" {
		t.Errorf("calls %v: the panel must not re-read the status itself", got)
	}
}

func TestGitRevertCursorFileAndCancel(t *testing.T) {
	for _, k := range []string{"n", "esc"} {
		m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
		openGit(t, m)
		press(m, "j", "r")
		if !strings.Contains(boxText(m), "Revert 1 file to HEAD") || !strings.Contains(boxText(m), "parallel_state.py") {
			t.Errorf("confirmation: %s", boxText(m))
		}
		if strings.Contains(boxText(m), "Untracked") {
			t.Error("warns about untracked files that are not reverted")
		}
		if cmd := press(m, k); cmd != nil || m.DialogOpen() {
			t.Errorf("%s did not cancel", k)
		}
		if m.Status() != "revert cancelled" || lastCall(f) != "Refresh" {
			t.Errorf("%s: status %q, calls %v", k, m.Status(), f.Calls())
		}
		if !m.git.Open {
			t.Errorf("%s closed the panel too", k)
		}
	}
	// On a stash row with nothing marked there is nothing to revert.
	m, _ := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	press(m, "end", "r")
	if m.DialogOpen() || m.Status() != "nothing selected: move to a changed file or mark files with space" {
		t.Errorf("r on the reflog: %q", m.Status())
	}
	m.Update(space())
	if m.Status() != "the cursor is not on a changed file" {
		t.Errorf("space on the reflog: %q", m.Status())
	}
}

func TestGitStashForm(t *testing.T) {
	m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	press(m, "s")
	if m.overlay.TopID() != "git-stash" {
		t.Fatalf("s: %q", m.Status())
	}
	box := boxText(m)
	for _, want := range []string{"name", "[ ] include untracked files (1; tab)", "Stashes 5 files: pynccl.py, parallel_state.py, new_name.py, fused_moe.py, draft.bin.",
		"Untracked files stay in the worktree.", "enter stash esc cancel"} {
		if !strings.Contains(box, want) {
			t.Errorf("form lacks %q: %s", want, box)
		}
	}
	typeText(m, "before checkout sq") // keys are text: s, q do not act
	press(m, "tab")
	if !strings.Contains(boxText(m), "[x] include untracked files") || m.Quitting() {
		t.Errorf("tab: %s", boxText(m))
	}
	press(m, "backspace", "backspace", "backspace")
	cmd := press(m, "enter")
	if cmd == nil || m.DialogOpen() {
		t.Fatal("enter did not stash")
	}
	m.Update(run(cmd)[0])
	if lastCall(f) != `Stash "before checkout" untracked=true` {
		t.Errorf("calls %v", f.Calls())
	}
	if m.Status() != `stashed 6 files as "before checkout" (snapshot `+snapID+"; u undoes)" {
		t.Errorf("flash %q", m.Status())
	}
	// esc cancels without a call; a clean tree is refused.
	press(m, "s", "esc")
	if m.DialogOpen() || m.Status() != "stash cancelled" || strings.HasPrefix(lastCall(f), "Stash") && len(f.Calls()) != 2 {
		t.Errorf("esc: %q %v", m.Status(), f.Calls())
	}
	clean := dirtyStatus()
	clean.Files, clean.Operation = nil, ""
	send(m, ev(10*time.Second, clean))
	if !strings.Contains(plain(m), "clean: nothing to stash or revert") {
		t.Errorf("clean tree:\n%s", plain(m))
	}
	press(m, "s")
	if m.DialogOpen() || m.Status() != "nothing to stash: the tree is clean" {
		t.Errorf("s on a clean tree: %q", m.Status())
	}
	// ctrl+u toggles too; only untracked files: included from the start.
	only := dirtyStatus()
	only.Files = only.Files[5:]
	send(m, ev(11*time.Second, only))
	press(m, "s")
	if !strings.Contains(boxText(m), "[x] include untracked") {
		t.Errorf("untracked only: %s", boxText(m))
	}
	m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	if !strings.Contains(boxText(m), "[ ] include untracked") {
		t.Errorf("ctrl+u: %s", boxText(m))
	}
	if cmd := press(m, "enter"); cmd != nil || !strings.HasPrefix(m.Status(), "nothing to stash without the untracked files") {
		t.Errorf("stash of nothing: %q", m.Status())
	}
}

func TestGitStashApplyPopDropByID(t *testing.T) {
	m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	// The cursor on stash@{1}: apply it, by its commit id.
	press(m, "home")
	for range len(dirtyStatus().Files) + 1 {
		press(m, "j")
	}
	press(m, "a")
	if box := boxText(m); !strings.Contains(box, "Apply stash@{1} (WIP on main: bba2fc4 Tune NCCL ring) to the worktree?") {
		t.Errorf("apply: %s", box)
	}
	m.Update(run(press(m, "enter"))[0])
	if lastCall(f) != "StashApply "+hexID('6')+" pop=false" {
		t.Errorf("apply called %v", f.Calls())
	}
	if m.Status() != "applied stash 6666666 (snapshot "+snapID+"; u undoes)" {
		t.Errorf("flash %q", m.Status())
	}
	// The cursor on a file: pop and drop take stash@{0}.
	press(m, "home", "P")
	if box := boxText(m); !strings.Contains(box, "Pop stash@{0} (On main: before checkout): apply it to the worktree, then drop it (kept if it conflicts).") {
		t.Errorf("pop: %s", box)
	}
	f.act = func(a *event.GitAction) { a.Conflict = []string{"python/a.py", "b.py"}; a.Err = "CONFLICT (content)" }
	m.Update(run(press(m, "y"))[0])
	if lastCall(f) != "StashApply "+hexID('5')+" pop=true" {
		t.Errorf("pop called %v", f.Calls())
	}
	if m.Status() != "stash pop conflicted in a.py, b.py: the stash is kept (u restores the tree as it was)" || !painted(m, m.styles.Warn, m.Status()) {
		t.Errorf("conflict flash %q", m.Status())
	}
	f.act = nil
	press(m, "D")
	box := boxText(m)
	if !strings.Contains(box, "Drop stash@{0} (On main: before checkout)?") || !strings.Contains(box, "Its commit "+hexID('5')+" stays recoverable from the snapshot.") {
		t.Errorf("drop: %s", box)
	}
	if press(m, "n"); lastCall(f) == "StashDrop "+hexID('5') {
		t.Fatal("n dropped")
	}
	press(m, "D")
	m.Update(run(press(m, "y"))[0])
	if lastCall(f) != "StashDrop "+hexID('5') {
		t.Errorf("drop called %v", f.Calls())
	}
	if m.Status() != "dropped stash 5555555 (snapshot "+snapID+"; u undoes)" {
		t.Errorf("drop flash %q", m.Status())
	}
	// No stashes: a, P and D say so.
	st := dirtyStatus()
	st.Stashes = nil
	send(m, ev(10*time.Second, st))
	if !strings.Contains(plain(m), "no stashes") {
		t.Error("empty stash section")
	}
	for _, k := range []string{"a", "P", "D"} {
		if press(m, k); m.Status() != "no stashes" || m.DialogOpen() {
			t.Errorf("%s without stashes: %q", k, m.Status())
		}
	}
}

// TestGitStashOutcomeNames: the outcome of a stash apply, pop or drop
// names the stash by the message in Action.Args (stash@{N} has shifted by
// then), else by its short commit id; a drop also gives the commit id.
func TestGitStashOutcomeNames(t *testing.T) {
	const msg = "On main: before checkout"
	cases := []struct {
		key      string
		withMsg  bool
		flash    string
		lastLine string
	}{
		{"a", true, `applied stash "On main: before checkout"`, `: stash apply "On main: before checkout" ok (snapshot ` + snapID + ")"},
		{"P", true, `popped stash "On main: before checkout"`, `: stash pop "On main: before checkout" ok (snapshot ` + snapID + ")"},
		{"D", true, `dropped stash "On main: before checkout" (commit 5555555)`, `: stash drop "On main: before checkout" ok (snapshot ` + snapID + ")"},
		{"a", false, "applied stash 5555555", ": stash apply 5555555 ok"},
		{"P", false, "popped stash 5555555", ": stash pop 5555555 ok"},
		{"D", false, "dropped stash 5555555", ": stash drop 5555555 ok"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s message %v", c.key, c.withMsg), func(t *testing.T) {
			m, f := gitScene(120, 30, ptr(dirtyStatus()), Options{})
			openGit(t, m)
			if c.withMsg {
				f.stashMsgs = map[string]string{hexID('5'): msg}
			}
			press(m, c.key)
			msgs := run(press(m, "y"))
			m.Update(msgs[0])
			if want := c.flash + " (snapshot " + snapID + "; u undoes)"; m.Status() != want {
				t.Errorf("flash %q\nwant  %q", m.Status(), want)
			}
			// The Action as the event stream brings it.
			send(m, ev(gitNow.Sub(t0), msgs[0].(GitActionMsg).Action))
			if !strings.Contains(plain(m), "last action 0s ago"+c.lastLine) {
				t.Errorf("panel lacks %q:\n%s", c.lastLine, plain(m))
			}
		})
	}
}

// TestGitRevertWarnsOfDeletions: the revert confirmation says which files
// leave the disk: untracked ones, and those new in the index (staged, not
// in HEAD).
func TestGitRevertWarnsOfDeletions(t *testing.T) {
	modified := event.GitFile{Path: "model/pynccl.py", X: ' ', Y: 'M', Added: 1}
	added := event.GitFile{Path: "model/new_kernel.py", X: 'A', Y: ' ', Added: 3}
	addedEdited := event.GitFile{Path: "model/other_kernel.py", X: 'A', Y: 'M', Added: 5}
	untracked := event.GitFile{Path: "scratch/notes.txt", X: '?', Y: '?', Added: -1, Deleted: -1}
	bothAdded := event.GitFile{Path: "model/both.py", X: 'A', Y: 'A', Added: 2}
	const untrackedText = "Untracked files will be deleted:"
	const addedText = "New in the index (staged, not in HEAD): deleted from disk too, like untracked files:"
	cases := []struct {
		name  string
		files []event.GitFile
		want  []string
		not   []string
	}{
		{"modified only", []event.GitFile{modified}, nil, []string{untrackedText, addedText}},
		{"staged new", []event.GitFile{modified, added}, []string{addedText + " new_kernel.py."}, []string{untrackedText}},
		{"staged new, edited since, and untracked", []event.GitFile{addedEdited, untracked, added},
			[]string{untrackedText + " notes.txt.", addedText + " other_kernel.py, new_kernel.py."}, nil},
		{"conflicted (both added) is not new", []event.GitFile{bothAdded}, nil, []string{addedText}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := dirtyStatus()
			st.Files = c.files
			m, _ := gitScene(120, 40, &st, Options{})
			openGit(t, m)
			for range c.files {
				m.Update(space())
				press(m, "j")
			}
			press(m, "r")
			box := boxText(m)
			for _, w := range c.want {
				if !strings.Contains(box, w) {
					t.Errorf("confirmation lacks %q: %s", w, box)
				}
			}
			for _, n := range c.not {
				if strings.Contains(box, n) {
					t.Errorf("confirmation says %q: %s", n, box)
				}
			}
		})
	}
}

// TestGitActionFailureFlash: a failure's flash names the snapshot that
// holds the tree before it first, then only the first non-empty line of
// git's error, sanitised (no "\x0a" for a newline); at 80 columns the
// snapshot id is still on screen.
func TestGitActionFailureFlash(t *testing.T) {
	const gitErr = "error: Your local changes to the following files would be overwritten by merge:\n\tREADME.md\nPlease commit your changes or stash them before you merge.\x1b]0;pwn\x07\nAborting"
	cases := []struct {
		name   string
		act    func(*event.GitAction)
		actErr error
		want   string
	}{
		{"multi-line git error", func(a *event.GitAction) { a.Err, a.Output = gitErr, gitErr }, nil,
			"stash pop failed (tree before it: snapshot " + snapID + ", S restores): error: Your local changes to the following files would be overwritten by merge:"},
		{"blank lines first", func(a *event.GitAction) { a.Err = "\n\n  fatal: unable to write new index file\x1b[2J\nmore" }, nil,
			"stash pop failed (tree before it: snapshot " + snapID + ", S restores): fatal: unable to write new index file"},
		{"no snapshot: nothing was changed", func(a *event.GitAction) {
			a.Snapshot, a.Err = "", "snapshot: write /root/.git/flightdeck: no space left on device\nsecond"
		}, nil,
			"stash pop stash@{0} failed (nothing was changed): snapshot: write /root/.git/flightdeck: no space left on device"},
		{"not attempted", nil, errors.New("ssh: connection lost\nreconnecting in 2s"), "stash pop stash@{0} failed: ssh: connection lost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, f := gitScene(100, 30, ptr(dirtyStatus()), Options{})
			openGit(t, m)
			f.act, f.actErr = c.act, c.actErr
			press(m, "P")
			m.Update(run(press(m, "y"))[0])
			if m.Status() != c.want || !painted(m, m.styles.Crit, style.Truncate(m.Status(), 100)) {
				t.Errorf("flash\n %q\nwant\n %q", m.Status(), c.want)
			}
			if strings.Contains(m.Status(), `\x0a`) || strings.Contains(m.Status(), `\x09`) {
				t.Errorf("escaped newline or tab in the flash %q", m.Status())
			}
			if err := onlySGR(m.View().Content); err != nil {
				t.Error(err)
			}
			m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
			if c.act != nil && strings.Contains(c.want, snapID) && !strings.Contains(plain(m), snapID) {
				t.Errorf("the snapshot id is cut at 80 columns:\n%s", plain(m))
			}
		})
	}
}

// TestGitFailedActionInPanel: under a failed "last action" line, the
// first lines of git's output (at most 3, sanitised, one per line, without
// the error's own line); after a success, the notes.
func TestGitFailedActionInPanel(t *testing.T) {
	out := "error: Your local changes would be overwritten by merge:\n\tREADME.md\x1b[2J\n\nPlease commit your changes.\nAborting\nnever shown"
	cases := []struct {
		name  string
		a     event.GitAction
		lines []string // the "last action" line and those under it
		not   []string
	}{
		{"failure", event.GitAction{Op: "checkout", Args: []string{hexID('a')}, Snapshot: snapID, Err: out, Output: out},
			[]string{"last action 0s ago: checkout aaaaaaa failed (snapshot " + snapID + "): error: Your local changes would be overwrit", // cut at 120 columns after the snapshot
				"  README.md", "  Please commit your changes.", "  Aborting"},
			[]string{"never shown", `\x0a`}},
		{"conflict", event.GitAction{Op: "stash-pop", Args: []string{hexID('5'), "On main: x"}, Snapshot: snapID, Conflict: []string{"a.py"},
			Err: "CONFLICT", Output: "Auto-merging a.py\nCONFLICT (content): Merge conflict in a.py\nThe stash entry is kept in case you need it again."},
			[]string{`last action 0s ago: stash pop "On main: x" conflicted in a.py (snapshot ` + snapID + ")",
				"  Auto-merging a.py", "  CONFLICT (content): Merge conflict in a.py", "  The stash entry is kept in case you need it again."}, nil},
		{"success with notes", event.GitAction{Op: "restore", Args: []string{snapID}, Snapshot: "20261129-220000-aaaa",
			Output: "note: main has moved since\nignored", Notes: []string{"main has moved since the snapshot: restored at 3207427, detached\x1b[2J", "big.bin was left alone"}},
			[]string{"last action 0s ago: restore " + snapID + " ok (snapshot 20261129-220000-aaaa)",
				"  note: main has moved since the snapshot: restored at 3207427, detached", "  note: big.bin was left alone"},
			[]string{"ignored"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _ := gitScene(120, 30, ptr(dirtyStatus()), Options{})
			openGit(t, m)
			send(m, ev(gitNow.Sub(t0), c.a))
			ls := screenLines(m)
			at := -1
			for i, l := range ls {
				if strings.HasPrefix(l, "last action") {
					at = i
				}
			}
			if at < 0 || at+len(c.lines) > len(ls) {
				t.Fatalf("no last action:\n%s", plain(m))
			}
			for i, want := range c.lines {
				if got := strings.TrimRight(ls[at+i], " "); got != want {
					t.Errorf("line %d\n %q\nwant\n %q", i, got, want)
				}
			}
			if got := strings.TrimSpace(ls[at+len(c.lines)]); got != "changes  2 staged  3 unstaged  1 untracked  1 conflicted" {
				t.Errorf("after the action's lines: %q", got)
			}
			for _, n := range c.not {
				if strings.Contains(plain(m), n) {
					t.Errorf("panel shows %q:\n%s", n, plain(m))
				}
			}
			if err := onlySGR(m.View().Content); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestGitSuccessNotes: an action's notes follow its success flash, in
// warning tone.
func TestGitSuccessNotes(t *testing.T) {
	cases := []struct {
		name  string
		notes []string
		want  string
		tone  func(m *Model) style.Tone
	}{
		{"none", nil, "restored snapshot 20261128-101500-77aa (snapshot " + snapID + "; u undoes)", func(m *Model) style.Tone { return m.styles.OK }},
		{"two", []string{"main had moved: HEAD is detached", "big.bin (3.0 GiB, untracked) was not saved\x1b[2J"},
			"restored snapshot 20261128-101500-77aa (snapshot " + snapID + "; u undoes); main had moved: HEAD is detached; big.bin (3.0 GiB, untracked) was not saved",
			func(m *Model) style.Tone { return m.styles.Warn }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, f := gitScene(200, 30, ptr(dirtyStatus()), Options{})
			openGit(t, m)
			f.act = func(a *event.GitAction) { a.Notes = c.notes }
			m.Update(run(press(m, "S"))[0])
			press(m, "down", "enter")
			m.Update(run(press(m, "y"))[0])
			if m.Status() != c.want || !painted(m, c.tone(m), m.Status()) {
				t.Errorf("flash\n %q\nwant\n %q", m.Status(), c.want)
			}
		})
	}
}
