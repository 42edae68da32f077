package tui

import (
	"context"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	gitdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/git"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The git panel's dialogs (tui/dialogs/git) are opened on the overlay
// stack by gitDialogs; they act through gitActions.

// gitDialogs is the git dialogs' host, wired to the model.
func (m *Model) gitDialogs() *gitdialog.Host {
	return &gitdialog.Host{
		Panel:  gitActions{m},
		Ctl:    m.git.ctl,
		Ctx:    func() context.Context { return m.ctx },
		Now:    func() time.Time { return m.now },
		Flash:  m.flash,
		Push:   m.overlay.Push,
		Remove: m.overlay.Remove,
		Inputs: m.inputStyles,
	}
}

// gitActions is the git panel as its dialogs see it (gitdialog.Panel):
// each action checks that none runs first (never two at once).
type gitActions struct{ m *Model }

func (a gitActions) Status() event.GitStatus { return a.m.git.st }

// can flashes why no git action can start now, what naming it.
func (a gitActions) can(what string) bool {
	if why := gitCan(a.m, what); why != "" {
		a.m.flash(why, style.Warn)
		return false
	}
	return true
}

func (a gitActions) Revert(files []event.GitFile) tea.Cmd {
	if !a.can("revert") {
		return nil
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	target := fileName(files[0])
	if len(files) > 1 {
		target = style.Plural(len(files), "file")
	}
	return a.m.startGit("revert", "revert "+target, "reverted "+target, "reverting "+target, "reverting "+style.Plural(len(files), "file"),
		func(ctx context.Context, c GitControl) (event.GitAction, error) { return c.Revert(ctx, paths) })
}

func (a gitActions) StashOp(op string, s event.Stash) tea.Cmd {
	verb := map[string]string{"stash-apply": "apply", "stash-pop": "pop", "stash-drop": "drop"}[op]
	if !a.can(verb) {
		return nil
	}
	id, ref := s.ID, s.Ref()
	var done, doing string
	var call func(context.Context, GitControl) (event.GitAction, error)
	switch op {
	case "stash-apply":
		done, doing = "applied "+ref, "applying "+ref
		call = func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.StashApply(ctx, id, false) }
	case "stash-pop":
		done, doing = "popped "+ref, "popping "+ref
		call = func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.StashApply(ctx, id, true) }
	default:
		done, doing = "dropped "+ref+" (commit "+git.ShortID(sanitize.String(id))+")", "dropping "+ref
		call = func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.StashDrop(ctx, id) }
	}
	return a.m.startGit(op, gitOpNames[op]+" "+ref, done, doing, doing, call)
}

func (a gitActions) Undo(id, reason string) tea.Cmd {
	if !a.can("restore") {
		return nil
	}
	undid := "undid the last action"
	if reason != "" {
		undid = "undid " + reason
	}
	g := &a.m.git
	g.undoFrom, g.undoWhy, g.undoSnap = id, reason, ""
	return a.m.startGit("undo", "undo", undid+": restored snapshot "+id, "restoring snapshot "+id, "undoing",
		func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.Undo(ctx) })
}

func (a gitActions) Stash(name string, untracked bool, files int) tea.Cmd {
	if !a.can("a stash") {
		return nil
	}
	done := "stashed " + style.Plural(files, "file")
	if name != "" {
		done += " as " + strconv.Quote(sanitize.String(name))
	}
	return a.m.startGit("stash", "stash", done, "stashing "+style.Plural(files, "file"), "stashing",
		func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.Stash(ctx, name, untracked) })
}

func (a gitActions) Checkout(ref, label, to string) tea.Cmd {
	if !a.can("checkout") {
		return nil
	}
	return a.m.startGit("checkout", "checkout "+label, "checked out "+label, "checking out "+label, "checking out "+to,
		func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.Checkout(ctx, ref) })
}

func (a gitActions) Restore(id string) tea.Cmd {
	if !a.can("restore") {
		return nil
	}
	idText := sanitize.String(id)
	return a.m.startGit("restore", "restore "+idText, "restored snapshot "+idText, "restoring snapshot "+idText, "restoring",
		func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.Restore(ctx, id) })
}

// revertFiles are the marked files, or the cursor's file when none is
// marked.
func (g *gitState) revertFiles() []event.GitFile {
	var files []event.GitFile
	for _, f := range g.st.Files {
		if g.marked[f.Path] {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		f, _ := g.cursorFile()
		files = []event.GitFile{f}
	}
	return files
}
