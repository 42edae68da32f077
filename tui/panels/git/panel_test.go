package git

import (
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func hexID(c byte) string { return strings.Repeat(string(c), 40) }

// TestScrollKeepsSectionHeader: the header of the cursor's section
// stays on screen whenever it fits with the cursor.
func TestScrollKeepsSectionHeader(t *testing.T) {
	// 0 changes, 1-3 files, 4 blank, 5 stashes, 6-7 stashes, 8 blank,
	// 9 reflog, 10-29 reflog entries (rows 5-24).
	var body []line
	add := func(n, row int) {
		for i := range n {
			r := -1
			if row >= 0 {
				r = row + i
			}
			body = append(body, line{row: r})
		}
	}
	add(1, -1)
	add(3, 0)
	add(2, -1)
	add(2, 3)
	add(2, -1)
	add(20, 5)
	cases := []struct {
		name           string
		cursor, oldTop int
		bh             int
		want           int
	}{
		{"stash under a stale top: back to its header", 4, 6, 5, 5},
		{"stash: blank and header above it when scrolling up", 3, 7, 5, 4},
		{"reflog entry near its header", 7, 12, 8, 9},
		{"moving down into the reflog: its header stays", 8, 2, 5, 9},
		{"deep in a long section: the cursor at the bottom", 20, 0, 5, 21},
		{"first file", 0, 10, 5, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Panel{cursor: c.cursor, top: c.oldTop}
			if got := g.scrollTop(body, c.bh); got != c.want {
				t.Errorf("top %d, want %d", got, c.want)
			}
			ci := 0
			for i, l := range body {
				if l.row == c.cursor {
					ci = i
				}
			}
			if ci < g.top || ci >= g.top+c.bh {
				t.Errorf("cursor line %d not in [%d, %d)", ci, g.top, g.top+c.bh)
			}
		})
	}
}

// TestMovedBanner: the HEAD-moved banner's forms, longest (with its keys)
// and shortest, for every kind of move made outside the cockpit.
func TestMovedBanner(t *testing.T) {
	pull := event.GitMoved{From: hexID('b'), To: hexID('3'), FromShort: "bba2fc4", ToShort: "3207427", FromBranch: "main", ToBranch: "main",
		Action: "pull", Forward: 2, Files: []string{"python/sglang/srt/distributed/device_communicators/pynccl.py", "python/sglang/srt/distributed/parallel_state.py"}, FilesTotal: 2}
	with := func(mv event.GitMoved, f func(*event.GitMoved)) event.GitMoved { f(&mv); return mv }
	const keys = "  (g: git panel, esc: dismiss)"
	cases := []struct {
		name  string
		mv    event.GitMoved
		n     int
		text  string
		short string
	}{
		{"pull", pull, 1, "HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits, touches pynccl.py, parallel_state.py)" + keys,
			"HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits)  g/esc"},
		{"reset back", with(pull, func(m *event.GitMoved) { m.Action, m.Forward, m.Back = "reset", 0, 3 }), 1,
			"HEAD moved bba2fc4 -> 3207427 (git reset, 3 commits back, touches pynccl.py, parallel_state.py)" + keys, ""},
		{"both ways, many files", with(pull, func(m *event.GitMoved) {
			m.Action, m.Back, m.Files, m.FilesTotal = "", 1, []string{"a/x.py", "b/y.py", "c/z.py", "d/w.py"}, 57
		}), 1, "HEAD moved bba2fc4 -> 3207427 (2 commits ahead, 1 back, touches x.py, y.py, z.py +54 more)" + keys, ""},
		{"one commit", with(pull, func(m *event.GitMoved) { m.Forward, m.Files, m.FilesTotal = 1, nil, 0 }), 1,
			"HEAD moved bba2fc4 -> 3207427 (git pull, 1 commit)" + keys, ""},
		{"branch and commit", with(pull, func(m *event.GitMoved) { m.Action, m.ToBranch = "checkout", "" }), 1,
			"HEAD moved bba2fc4 -> 3207427 (git checkout, branch main -> detached, 2 commits, touches pynccl.py, parallel_state.py)" + keys, ""},
		{"branch only", event.GitMoved{From: hexID('3'), To: hexID('3'), FromShort: "3207427", ToShort: "3207427", FromBranch: "main", ToBranch: "feature", Action: "checkout"}, 1,
			"branch changed outside flightdeck: main -> feature (HEAD 3207427 as before) (git checkout)" + keys, "branch changed outside flightdeck: main -> feature (HEAD 3207427 as before)  g/esc"},
		{"worktree", event.GitMoved{From: hexID('3'), To: hexID('3'), FromBranch: "main", ToBranch: "main", DirtyBefore: 1, DirtyAfter: 3,
			DirtyChanged: []string{"python/sglang/srt/distributed/device_communicators/pynccl.py", "foo.py"}}, 1,
			"worktree changed outside flightdeck: pynccl.py, foo.py (3 dirty files now)" + keys, "worktree changed outside flightdeck (3 dirty files now)  g/esc"},
		{"worktree, one dirty file", event.GitMoved{From: hexID('3'), To: hexID('3'), FromBranch: "main", ToBranch: "main", DirtyBefore: 0, DirtyAfter: 1,
			DirtyChanged: []string{"a.py"}}, 1,
			"worktree changed outside flightdeck: a.py (1 dirty file now)" + keys, "worktree changed outside flightdeck (1 dirty file now)  g/esc"},
		{"worktree, no names", event.GitMoved{From: hexID('3'), To: hexID('3'), DirtyBefore: 2, DirtyAfter: 2}, 1,
			"worktree changed outside flightdeck (2 dirty files now)" + keys, ""},
		{"worktree clean again", event.GitMoved{From: hexID('3'), To: hexID('3'), FromBranch: "main", ToBranch: "main", DirtyBefore: 1, DirtyAfter: 0,
			DirtyChanged: []string{"docs/nccl.md"}}, 1,
			"worktree clean again (changed outside flightdeck: nccl.md)" + keys, "worktree clean again  g/esc"},
		{"worktree clean again, many", event.GitMoved{From: hexID('3'), To: hexID('3'), DirtyBefore: 5, DirtyAfter: 0,
			DirtyChanged: []string{"a/1.py", "a/2.py", "a/3.py", "a/4.py", "a/5.py"}}, 2,
			"worktree clean again (changed outside flightdeck: 1.py, 2.py, 3.py +2 more) (2 changes since dismissed)" + keys, "worktree clean again (2 changes since dismissed)  g/esc"},
		{"worktree clean again, no names", event.GitMoved{From: hexID('3'), To: hexID('3'), DirtyBefore: 1}, 1,
			"worktree clean again (changed outside flightdeck)" + keys, ""},
		{"HEAD moved, tree clean: not 'clean again'", with(pull, func(m *event.GitMoved) { m.DirtyBefore, m.DirtyAfter = 2, 0 }), 1,
			"HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits, touches pynccl.py, parallel_state.py)" + keys, ""},
		{"several", pull, 2, "HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits, touches pynccl.py, parallel_state.py) (2 changes since dismissed)" + keys,
			"HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits) (2 changes since dismissed)  g/esc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forms := movedForms(c.mv, c.n)
			text, short := forms[0], forms[len(forms)-1]
			if text != c.text {
				t.Errorf("text\n %q\nwant\n %q", text, c.text)
			}
			if c.short != "" && short != c.short {
				t.Errorf("short\n %q\nwant\n %q", short, c.short)
			}
		})
	}
}
