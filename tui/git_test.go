package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	gitdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/git"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/launch"
	gitpanel "github.com/flightdeck-dev/flightdeck/tui/panels/git"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// fakeGit records what the git panel asks of GitControl and answers with
// canned commits, previews and actions.
type fakeGit struct {
	callLog // "Checkout main", "StashApply <id> pop=true", ...
	mu      sync.Mutex
	paths   [][]string

	log        []event.Commit
	logErr     error
	previews   map[string]git.Preview
	previewErr error
	snaps      []git.Snapshot
	refreshErr error
	// act, when set, makes an action's outcome from the canned one.
	act    func(*event.GitAction)
	actErr error
	lastID string
	lastRe string
	// stashMsgs, when set, are the stash messages by commit id that a
	// stash apply, pop or drop puts in Args after the id.
	stashMsgs map[string]string
}

const snapID = "20261129-215807-3f9a"

func newFakeGit() *fakeGit {
	return &fakeGit{
		log:      testLog(),
		previews: map[string]git.Preview{},
		snaps: []git.Snapshot{
			{ID: snapID, Reason: "checkout 3207427", Time: at(-5 * time.Minute), Head: strings.Repeat("b", 40), Branch: "main", Files: 4},
			{ID: "20261128-101500-77aa", Reason: "stash", Time: at(-26 * time.Hour), Head: strings.Repeat("c", 40), Files: 1},
		},
	}
}

func (f *fakeGit) action(op string, args ...string) (event.GitAction, error) {
	a := event.GitAction{Op: op, Args: args, Snapshot: snapID, From: strings.Repeat("b", 40), To: strings.Repeat("b", 40), Branch: "main"}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.act != nil {
		f.act(&a)
	}
	return a, f.actErr
}

func (f *fakeGit) Refresh(context.Context) error {
	f.record("Refresh")
	return f.refreshErr
}

func (f *fakeGit) Log(_ context.Context, n int) ([]event.Commit, error) {
	f.record(fmt.Sprintf("Log %d", n))
	return f.log, f.logErr
}

func (f *fakeGit) Preview(_ context.Context, ref string) (git.Preview, error) {
	f.record("Preview " + ref)
	if f.previewErr != nil {
		return git.Preview{}, f.previewErr
	}
	if p, ok := f.previews[ref]; ok {
		return p, nil
	}
	return git.Preview{Target: ref, From: testLog()[1], To: testLog()[2], BackCount: 1, Back: testLog()[1:2]}, nil
}

func (f *fakeGit) Checkout(_ context.Context, ref string) (event.GitAction, error) {
	f.record("Checkout " + ref)
	return f.action("checkout", ref)
}

func (f *fakeGit) Stash(_ context.Context, name string, untracked bool) (event.GitAction, error) {
	f.record(fmt.Sprintf("Stash %q untracked=%v", name, untracked))
	return f.action("stash", name)
}

func (f *fakeGit) StashApply(_ context.Context, id string, pop bool) (event.GitAction, error) {
	f.record(fmt.Sprintf("StashApply %s pop=%v", id, pop))
	op := "stash-apply"
	if pop {
		op = "stash-pop"
	}
	return f.action(op, f.stashArgs(id)...)
}

func (f *fakeGit) StashDrop(_ context.Context, id string) (event.GitAction, error) {
	f.record("StashDrop " + id)
	return f.action("stash-drop", f.stashArgs(id)...)
}

// stashArgs are a stash action's Args: the id, and its message when
// stashMsgs has it.
func (f *fakeGit) stashArgs(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if msg, ok := f.stashMsgs[id]; ok {
		return []string{id, msg}
	}
	return []string{id}
}

func (f *fakeGit) Revert(_ context.Context, paths []string) (event.GitAction, error) {
	f.record(fmt.Sprintf("Revert %d", len(paths)))
	f.mu.Lock()
	f.paths = append(f.paths, paths)
	f.mu.Unlock()
	return f.action("revert", paths...)
}

func (f *fakeGit) Undo(context.Context) (event.GitAction, error) {
	f.record("Undo")
	return f.action("restore", f.lastID)
}

func (f *fakeGit) LastSnapshot() (string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastID, f.lastRe
}

func (f *fakeGit) Snapshots(context.Context) ([]git.Snapshot, error) {
	f.record("Snapshots")
	return f.snaps, nil
}

func (f *fakeGit) Restore(_ context.Context, id string) (event.GitAction, error) {
	f.record("Restore " + id)
	return f.action("restore", id)
}

var _ GitControl = (*fakeGit)(nil)

func hexID(c byte) string { return strings.Repeat(string(c), 40) }

// testLog is Log's answer: HEAD on main, an origin/main commit, a tag, a
// plain commit and a local branch's tip.
func testLog() []event.Commit {
	return []event.Commit{
		{ID: hexID('3'), Short: "3207427", Subject: "Fix PCG MoE Error", Time: at(-2 * time.Hour), Refs: []string{"HEAD -> main", "origin/main"}},
		{ID: hexID('b'), Short: "bba2fc4", Subject: "Tune NCCL ring for 8xH200", Time: at(-5 * time.Hour), Refs: []string{"tag: v0.5.1"}},
		{ID: hexID('a'), Short: "a6d51c0", Subject: "Add EAGLE3 draft loader", Time: at(-26 * time.Hour)},
		{ID: hexID('f'), Short: "f00dbab", Subject: "Try MoE kernel from PR 9001", Time: at(-50 * time.Hour), Refs: []string{"feature/moe", "origin/feature/moe"}},
	}
}

// dirtyStatus is a checkout mid-merge with staged, unstaged, renamed,
// conflicted, untracked and binary changes, two stashes and a reflog.
func dirtyStatus() event.GitStatus {
	return event.GitStatus{
		Path:     "/root/sglang",
		Branch:   "main",
		Head:     event.Commit{ID: hexID('3'), Short: "3207427", Subject: "Fix PCG MoE Error", Time: at(-2 * time.Hour)},
		Upstream: "origin/main", Ahead: 1, Behind: 2,
		Operation: "merge",
		Files: []event.GitFile{
			{Path: "python/sglang/srt/distributed/device_communicators/pynccl.py", X: ' ', Y: 'M', Added: 12, Deleted: 3},
			{Path: "python/sglang/srt/distributed/parallel_state.py", X: 'M', Y: 'M', Added: 4, Deleted: 1},
			{Path: "python/sglang/srt/new_name.py", Orig: "python/sglang/srt/old_name.py", X: 'R', Y: ' ', Added: 0, Deleted: 0},
			{Path: "python/sglang/srt/layers/moe/fused_moe.py", X: 'U', Y: 'U', Added: 30, Deleted: 2},
			{Path: "weights/draft.bin", X: ' ', Y: 'M', Added: -1, Deleted: -1, Binary: true},
			{Path: "bench/notes.txt", X: '?', Y: '?', Added: -1, Deleted: -1},
		},
		Stashes: []event.Stash{
			{Index: 0, ID: hexID('5'), Message: "On main: before checkout", Time: at(-2 * time.Hour)},
			{Index: 1, ID: hexID('6'), Message: "WIP on main: bba2fc4 Tune NCCL ring", Time: at(-5 * 24 * time.Hour)},
		},
		Reflog: []event.RefEntry{
			{ID: hexID('3'), Short: "3207427", Action: "pull", Message: "pull: Fast-forward", Time: at(-5 * time.Minute)},
			{ID: hexID('b'), Short: "bba2fc4", Action: "checkout", Message: "checkout: moving from feature/moe to main", Time: at(-2 * time.Hour)},
			{ID: hexID('f'), Short: "f00dbab", Action: "commit", Message: "commit: Try MoE kernel from PR 9001", Time: at(-50 * time.Hour)},
		},
	}
}

// gitNow is the clock of the git scenes (as in controlled).
var gitNow = at(41*time.Second + 3*time.Minute + 12*time.Second)

// gitScene is a connected cockpit with a fake GitControl and st as the
// latest event.GitStatus (none when nil).
func gitScene(w, h int, st *event.GitStatus, o Options) (*Model, *fakeGit) {
	f := newFakeGit()
	if o.Git == nil {
		o.Git = f
	}
	m := scene(w, h, 8, 200, o)
	if st != nil {
		send(m, ev(4*time.Second, *st))
	}
	m.Update(ClockMsg{Now: gitNow})
	return m, f
}

// openGit presses g and runs its Refresh.
func openGit(t *testing.T, m *Model) {
	t.Helper()
	cmd := press(m, "g")
	if !m.git.Open {
		t.Fatalf("g did not open the panel: %q", m.Status())
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
}

// do presses keys and feeds every resulting message back, as the program
// would; it returns the messages.
func do(m *Model, keys ...string) []tea.Msg {
	var out []tea.Msg
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		for _, msg := range run(cmd) {
			out = append(out, msg)
			m.Update(msg)
		}
	}
	return out
}

// lastCall is the latest GitControl call, "" when none.
func lastCall(f *fakeGit) string {
	c := f.Calls()
	if len(c) == 0 {
		return ""
	}
	return c[len(c)-1]
}

func TestGitKeyNeedsARepository(t *testing.T) {
	m := newSized(80, 24, Options{})
	if cmd := press(m, "g"); cmd != nil || m.git.Open {
		t.Fatal("g opened the panel without git")
	}
	if m.Status() != "the git panel needs --repo PATH (or repo in the host's config)" {
		t.Errorf("g: %q", m.Status())
	}
	// The panel keys say the same, not "open the panel".
	press(m, "c")
	if m.Status() != gitpanel.NoRepoText {
		t.Errorf("c: %q", m.Status())
	}
	// With git control, the panel keys outside the panel say to open it.
	g, _ := gitScene(80, 24, ptr(dirtyStatus()), Options{})
	press(g, "s")
	if g.Status() != "open the git panel first (g)" {
		t.Errorf("s with the panel closed: %q", g.Status())
	}
}

func TestGitPanelOpensRefreshesAndCloses(t *testing.T) {
	m, f := gitScene(100, 30, nil, Options{})
	cmd := press(m, "g")
	if !m.git.Open || cmd == nil {
		t.Fatal("g did not open the panel with a refresh")
	}
	if len(f.Calls()) != 0 {
		t.Fatal("Refresh ran inside Update")
	}
	if !strings.Contains(plain(m), "reading git status ...") {
		t.Errorf("no placeholder before the status:\n%s", plain(m))
	}
	for _, msg := range run(cmd) {
		m.Update(msg)
	}
	if got := f.Calls(); len(got) != 1 || got[0] != "Refresh" {
		t.Fatalf("calls %v", got)
	}
	// The status arrives as an event.
	send(m, ev(5*time.Second, dirtyStatus()))
	scr := plain(m)
	for _, want := range []string{"changes  2 staged  3 unstaged  1 untracked  1 conflicted", "stashes  2", "reflog"} {
		if !strings.Contains(scr, want) {
			t.Errorf("panel lacks %q:\n%s", want, scr)
		}
	}
	if strings.Contains(scr, "log /data/logs") {
		t.Error("the log title is still shown")
	}
	// The log keeps ingesting underneath.
	send(m, ev(6*time.Second, linesOf("a line that arrived under the git panel")))
	press(m, "f")
	if m.Status() != "the git panel is open (g or esc returns to the log)" {
		t.Errorf("f in the panel: %q", m.Status())
	}
	press(m, "esc")
	if m.git.Open {
		t.Fatal("esc did not close the panel")
	}
	if body := logBody(m); len(body) == 0 || body[len(body)-1] != "a line that arrived under the git panel" {
		t.Errorf("log after the panel: %q", body)
	}
	// g toggles.
	press(m, "g")
	if press(m, "g"); m.git.Open {
		t.Error("g did not close the panel")
	}
	// A failed refresh says so and keeps the last status.
	f.refreshErr = errors.New("ssh: connection lost")
	openGit(t, m)
	if m.Status() != "git status: ssh: connection lost" || !painted(m, m.styles.Crit, m.Status()) {
		t.Errorf("refresh error: %q", m.Status())
	}
	if !strings.Contains(plain(m), "refresh failed: ssh: connection lost (showing the last status)") {
		t.Errorf("panel after a failed refresh:\n%s", plain(m))
	}
}

func TestGitPanelFooterAndHelp(t *testing.T) {
	m, _ := gitScene(200, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	ls := screenLines(m)
	want := "? help  spc mark  r revert  s stash  a apply  P pop  D drop  c checkout  u undo  S snapshots  g/esc close  q quit"
	if ls[len(ls)-1] != want {
		t.Errorf("footer %q\nwant   %q", ls[len(ls)-1], want)
	}
	// u cannot act (no snapshot yet): dimmed.
	if !painted(m, m.styles.Dim, "u") || !painted(m, m.styles.Key, "c") {
		t.Error("footer tones")
	}
	// Narrow: help, close and quit stay; checkout before snapshots.
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 30})
	ls = screenLines(m)
	f := ls[len(ls)-1]
	if !strings.HasPrefix(f, "? help") || !strings.HasSuffix(f, "g/esc close  q quit") || !strings.Contains(f, "c checkout") || strings.Contains(f, "snapshots") {
		t.Errorf("narrow footer %q", f)
	}
	press(m, "?")
	scr := plain(m)
	for _, want := range []string{"git", "spc  mark", "r    revert", "S    snapshots"} {
		if !strings.Contains(scr, want) {
			t.Errorf("help lacks %q:\n%s", want, scr)
		}
	}
}

func TestGitCursorMoves(t *testing.T) {
	m, _ := gitScene(100, 30, ptr(dirtyStatus()), Options{})
	openGit(t, m)
	cursorLine := func() string {
		for _, l := range screenLines(m) {
			if strings.HasPrefix(l, ">") {
				return l
			}
		}
		return ""
	}
	if l := cursorLine(); !strings.Contains(l, "pynccl.py") {
		t.Errorf("cursor starts on %q", l)
	}
	press(m, "j", "down")
	if l := cursorLine(); !strings.Contains(l, "new_name.py") {
		t.Errorf("two down: %q", l)
	}
	press(m, "end")
	if l := cursorLine(); !strings.Contains(l, "f00dbab") {
		t.Errorf("end: %q", l)
	}
	press(m, "pgup", "home", "k")
	if l := cursorLine(); !strings.Contains(l, "pynccl.py") {
		t.Errorf("home: %q", l)
	}
	// A new status keeps the cursor on the same stash.
	press(m, "end", "k", "k", "k")
	if l := cursorLine(); !strings.Contains(l, "stash@{1}") {
		t.Fatalf("cursor %q", l)
	}
	st := dirtyStatus()
	st.Files = st.Files[:2]
	send(m, ev(10*time.Second, st))
	if l := cursorLine(); !strings.Contains(l, "stash@{1}") {
		t.Errorf("after a new status the cursor is on %q", l)
	}
}

// TestGitScrolls: a tree taller than the area scrolls with the cursor.
func TestGitScrolls(t *testing.T) {
	st := dirtyStatus()
	for i := range 40 {
		st.Files = append(st.Files, event.GitFile{Path: fmt.Sprintf("gen/file%02d.py", i), X: ' ', Y: 'M', Added: i, Deleted: 1})
	}
	m, _ := gitScene(100, 30, &st, Options{})
	openGit(t, m)
	plain(m) // the page is the height of the last frame
	m.Update(tea.KeyPressMsg{Code: tea.KeyPgDown})
	m.Update(tea.KeyPressMsg{Code: tea.KeyPgDown})
	scr := plain(m)
	if strings.Contains(scr, "changes  ") {
		t.Error("the top did not scroll away")
	}
	if !strings.Contains(scr, ">") {
		t.Errorf("cursor off screen:\n%s", scr)
	}
	press(m, "end")
	if !strings.Contains(plain(m), "> ") || !strings.Contains(plain(m), "commit: Try MoE kernel") {
		t.Errorf("end:\n%s", plain(m))
	}
	press(m, "home")
	if !strings.Contains(plain(m), "changes  ") {
		t.Errorf("home did not show the header:\n%s", plain(m))
	}
	if len(screenLines(m)) != 30 {
		t.Error("frame height")
	}
}

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
		if cmd := press(m, k); cmd != nil || m.dialogOpen() {
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
	if m.dialogOpen() || m.Status() != "nothing selected: move to a changed file or mark files with space" {
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
	if cmd == nil || m.dialogOpen() {
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
	if m.dialogOpen() || m.Status() != "stash cancelled" || strings.HasPrefix(lastCall(f), "Stash") && len(f.Calls()) != 2 {
		t.Errorf("esc: %q %v", m.Status(), f.Calls())
	}
	clean := dirtyStatus()
	clean.Files, clean.Operation = nil, ""
	send(m, ev(10*time.Second, clean))
	if !strings.Contains(plain(m), "clean: nothing to stash or revert") {
		t.Errorf("clean tree:\n%s", plain(m))
	}
	press(m, "s")
	if m.dialogOpen() || m.Status() != "nothing to stash: the tree is clean" {
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
		if press(m, k); m.Status() != "no stashes" || m.dialogOpen() {
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

// TestGitCursorStartsOnFirstRow: when the panel first opens, the cursor
// is on the first file, else the first stash, else the first reflog
// entry, whatever statuses came before and after it opened.
func TestGitCursorStartsOnFirstRow(t *testing.T) {
	clean := dirtyStatus()
	clean.Files, clean.Stashes, clean.Operation = nil, nil, ""
	cleanStashed := clean
	cleanStashed.Stashes = dirtyStatus().Stashes
	cases := []struct {
		name   string
		before []event.GitStatus // received while the panel was closed
		after  *event.GitStatus  // the open's refresh
		want   string
	}{
		{"a clean tree that got dirty", []event.GitStatus{clean, dirtyStatus()}, nil, "pynccl.py"},
		{"dirtied after the open", []event.GitStatus{clean}, ptr(dirtyStatus()), "pynccl.py"},
		{"clean with stashes", []event.GitStatus{clean, cleanStashed}, nil, "stash@{0}"},
		{"clean without stashes", []event.GitStatus{dirtyStatus(), clean}, nil, "3207427  "},
		{"no status before the open", nil, ptr(dirtyStatus()), "pynccl.py"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _ := gitScene(100, 30, nil, Options{})
			for i, st := range c.before {
				send(m, ev(time.Duration(i)*time.Second, st))
			}
			openGit(t, m)
			if c.after != nil {
				send(m, ev(10*time.Second, *c.after))
			}
			if l := cursorLine(m); !strings.Contains(l, c.want) {
				t.Errorf("cursor on %q, want %q", l, c.want)
			}
			// Once moved, the cursor follows its row.
			press(m, "end")
			send(m, ev(11*time.Second, dirtyStatus()))
			if l := cursorLine(m); !strings.Contains(l, "f00dbab") {
				t.Errorf("after end and a new status: %q", l)
			}
		})
	}
}

// cursorLine is the panel's line with the cursor, "" when none is shown.
func cursorLine(m *Model) string {
	for _, l := range screenLines(m) {
		if strings.HasPrefix(l, ">") {
			return l
		}
	}
	return ""
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
	if cmd == nil || m.dialogOpen() {
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
	if m.dialogOpen() || m.Status() != "checkout cancelled" {
		t.Errorf("n: top %q %q", m.overlay.TopID(), m.Status())
	}
	// esc in the picker cancels; a late preview answer is dropped.
	checkoutPicker(t, m, f)
	cmd := press(m, "enter")
	press(m, "esc")
	m.Update(run(cmd)[0])
	if m.dialogOpen() {
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
	if m.dialogOpen() || m.Status() != "nothing to undo: no action was made from here" {
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
		if cmd := press(m, k); cmd != nil || m.dialogOpen() {
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
	for _, want := range []string{`evil\xff.py`, "Fix red", "clipboard", "Fast-forward"} {
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
			c := m.View().Content
			ls := strings.Split(c, "\n")
			if len(ls) != sz[1] {
				t.Errorf("%dx%d %v: %d lines", sz[0], sz[1], keys, len(ls))
			}
			for i, l := range ls {
				if w := ansiWidth(l); w > sz[0] {
					t.Errorf("%dx%d %v: line %d is %d wide", sz[0], sz[1], keys, i, w)
				}
			}
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
