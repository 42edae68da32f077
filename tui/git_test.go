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
	gitpanel "github.com/flightdeck-dev/flightdeck/tui/panels/git"
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
	want := "? help  spc mark  r revert  s stash  a apply  P pop  D drop  c checkout  u undo  S snapshots  I bisect  g/esc close  q quit"
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
