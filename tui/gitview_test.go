package tui

import (
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func ansiWidth(s string) int { return ansi.StringWidth(s) }

// The git panel goldens: the panel with a dirty tree, stashes and reflog
// at 100x30, the checkout preview, the HEAD-moved banner, and a 60-column
// terminal. Regenerate with go test -update.
func TestGitGolden(t *testing.T) {
	panel := func(w, h int) (*Model, *fakeGit) {
		m, f := gitScene(w, h, ptr(dirtyStatus()), Options{})
		openGit(t, m)
		m.Update(space())
		press(m, "j", "j")
		return m, f
	}
	t.Run("panel_100x30", func(t *testing.T) {
		m, _ := panel(100, 30)
		golden.RequireEqual(t, plain(m))
	})
	t.Run("panel_100x30_colour", func(t *testing.T) {
		m, _ := panel(100, 30)
		golden.RequireEqual(t, m.View().Content)
	})
	t.Run("preview_100x30", func(t *testing.T) {
		m, f := panel(100, 30)
		tl := testLog()
		f.previews["main"] = git.Preview{Target: "main", Branch: "main", From: tl[2], To: tl[0],
			Forward: append(tl[:2:2], event.Commit{Short: "9abc123", Subject: "Bump flashinfer"}, event.Commit{Short: "77de001", Subject: "Log NCCL init"},
				event.Commit{Short: "66aa002", Subject: "Pin torch 2.8"}, event.Commit{Short: "55bb003", Subject: "More"}),
			ForwardCount: 14, Back: tl[3:], BackCount: 1,
			Files: []git.Change{{Status: 'M', Path: "python/sglang/srt/distributed/device_communicators/pynccl.py"},
				{Status: 'M', Path: "python/sglang/srt/distributed/parallel_state.py"}, {Status: 'A', Path: "docs/nccl.md"},
				{Status: 'D', Path: "old.py"}, {Status: 'M', Path: "a.py"}, {Status: 'M', Path: "b.py"}},
			Blocking: []string{"python/sglang/srt/distributed/parallel_state.py"}}
		checkoutPicker(t, m, f)
		m.Update(run(press(m, "enter"))[0])
		golden.RequireEqual(t, plain(m))
	})
	t.Run("checkout_picker_100x30", func(t *testing.T) {
		m, f := panel(100, 30)
		checkoutPicker(t, m, f)
		press(m, "down")
		golden.RequireEqual(t, plain(m))
	})
	t.Run("moved_100x30", func(t *testing.T) {
		m, _ := gitScene(100, 30, ptr(dirtyStatus()), Options{})
		send(m, ev(5*time.Second, event.GitMoved{From: hexID('b'), To: hexID('3'), FromShort: "bba2fc4", ToShort: "3207427",
			FromBranch: "main", ToBranch: "main", Action: "pull", Forward: 2,
			Files: []string{"python/sglang/srt/distributed/device_communicators/pynccl.py", "python/sglang/srt/distributed/parallel_state.py"}, FilesTotal: 2}))
		golden.RequireEqual(t, plain(m))
	})
	t.Run("panel_60x24", func(t *testing.T) {
		m, _ := panel(60, 24)
		send(m, ev(5*time.Second, event.GitMoved{From: hexID('b'), To: hexID('3'), FromShort: "bba2fc4", ToShort: "3207427",
			FromBranch: "main", ToBranch: "main", Action: "pull", Forward: 2, Files: []string{"pynccl.py"}, FilesTotal: 1}))
		golden.RequireEqual(t, plain(m))
	})
}
