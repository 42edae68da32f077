package git

import (
	"strconv"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Banners are the lines under the header about git, for a w-cell
// terminal, whether the panel is open or not: the action in flight and a
// HEAD move made outside the cockpit (the longest of its forms that fits).
func (p *Panel) Banners(w int) []component.Banner {
	var out []component.Banner
	if p.doing != "" {
		quit := ""
		if p.QuitWhen {
			quit = " (quitting when it ends)"
		}
		out = append(out, component.Banner{Text: "git: " + p.doing + " ..." + quit, Short: "git: " + p.brief + " ..." + quit, Tone: style.Warn})
	}
	if p.movedN > 0 {
		forms := movedForms(p.moved, p.movedN)
		text := forms[len(forms)-1]
		for _, f := range forms {
			if style.Width(f) <= w {
				text = f
				break
			}
		}
		out = append(out, component.Banner{Text: text, Tone: style.Warn})
	}
	return out
}

// arrow joins the two sides of a change in banners. ASCII: the arrow
// characters are ambiguous-width (two cells in some CJK setups), which
// would misalign the screen in tmux.
const arrow = " -> "

// movedForms is the HEAD-moved banner for n moves since the last
// acknowledgement (mv the latest), longest form first: the full text with
// its keys, the full text with the keys brief, and a short form:
//
//	HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits, touches pynccl.py, parallel_state.py)  (g: git panel, esc: dismiss)
//	HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits, touches pynccl.py, parallel_state.py)  g/esc
//	HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits)  g/esc
//
// and likewise "branch changed outside flightdeck: main -> feature (HEAD
// 3207427 as before) (git checkout)" when
// only the branch changed, and "worktree changed outside flightdeck:
// pynccl.py, foo.py (3 dirty files now)" when only the dirty set did, or
// "worktree clean again (changed outside flightdeck: nccl.md)" when that
// left the tree clean.
func movedForms(mv event.GitMoved, n int) []string {
	text, short := movedText(mv, n, 3)
	one, _ := movedText(mv, n, 1)
	return []string{text + movedKeys, text + movedKeysBrief, one + movedKeysBrief, short + movedKeysBrief}
}

// The keys a HEAD-moved banner mentions, in full and brief.
const movedKeys, movedKeysBrief = "  (g: git panel, esc: dismiss)", "  g/esc"

// movedText is a HEAD-moved banner's text, naming at most files paths,
// and its short form, without keys.
func movedText(mv event.GitMoved, n, files int) (text, short string) {
	more := ""
	if n > 1 {
		more = " (" + strconv.Itoa(n) + " changes since dismissed)"
	}
	branch := ""
	if mv.FromBranch != mv.ToBranch {
		branch = "branch " + orDetached(mv.FromBranch) + arrow + orDetached(mv.ToBranch)
	}
	var how string
	if mv.Action != "" {
		how = "git " + mv.Action
	}
	switch {
	case mv.From == mv.To && branch == "" && mv.DirtyAfter == 0:
		head := "worktree clean again"
		text = head + " (changed outside flightdeck)"
		if len(mv.DirtyChanged) > 0 {
			text = head + " (changed outside flightdeck: " + style.BaseNames(mv.DirtyChanged, 0, files) + ")"
		}
		return text + more, head + more
	case mv.From == mv.To && branch == "":
		head := "worktree changed outside flightdeck"
		now := " (" + style.Plural(mv.DirtyAfter, "dirty file") + " now)"
		text = head + now
		if len(mv.DirtyChanged) > 0 {
			text = head + ": " + style.BaseNames(mv.DirtyChanged, 0, files) + now
		}
		return text + more, head + now + more
	case mv.From == mv.To:
		head := "branch changed outside flightdeck: " + orDetached(mv.FromBranch) + arrow + orDetached(mv.ToBranch) + " (HEAD " + mv.ToShort + " as before)"
		return head + component.Paren(how) + more, head + more
	}
	head := "HEAD moved " + mv.FromShort + arrow + mv.ToShort
	details := []string{how, branch, commitCount(mv.Forward, mv.Back)}
	if total := max(mv.FilesTotal, len(mv.Files)); total > 0 {
		details = append(details, "touches "+style.BaseNames(mv.Files, mv.FilesTotal, files))
	}
	return head + component.Paren(details...) + more, head + component.Paren(how, commitCount(mv.Forward, mv.Back)) + more
}

// orDetached is a branch name, "detached" for none.
func orDetached(b string) string {
	if b == "" {
		return "detached"
	}
	return b
}

// commitCount is "2 commits" (forward), "3 commits back", or "2 commits
// ahead, 3 back"; "" when HEAD moved by neither.
func commitCount(fwd, back int) string {
	switch {
	case fwd > 0 && back > 0:
		return style.Plural(fwd, "commit") + " ahead, " + strconv.Itoa(back) + " back"
	case back > 0:
		return style.Plural(back, "commit") + " back"
	case fwd > 0:
		return style.Plural(fwd, "commit")
	}
	return ""
}
