package git

import (
	"context"
	"errors"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	rgit "github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Control acts on the server's git checkout behind the panel;
// *sessions.Git implements it. Every method does I/O and runs only inside
// a tea.Cmd. Methods that change the checkout take a snapshot first,
// publish an event.GitAction and then a fresh event.GitStatus on the
// event stream (which is what the panel renders), and also return the
// Action for the key's immediate answer; a failed action returns it with
// Err set and a nil error unless it could not be attempted at all.
type Control interface {
	// Refresh reads the full status and publishes it as an
	// event.GitStatus event.
	Refresh(ctx context.Context) error
	// Log lists recent commits of HEAD, the branches, tags and
	// remote-tracking branches, newest first: the checkout picker's list.
	Log(ctx context.Context, n int) ([]event.Commit, error)
	// Preview says what checking out ref would do, for the confirmation.
	Preview(ctx context.Context, ref string) (rgit.Preview, error)
	// Checkout checks out ref (a branch by name, anything else detached).
	Checkout(ctx context.Context, ref string) (event.GitAction, error)
	// Stash stashes the dirty tree under name, with the untracked files
	// when untracked is set.
	Stash(ctx context.Context, name string, untracked bool) (event.GitAction, error)
	// StashApply applies the stash whose commit id is id; pop also drops
	// it, unless the apply conflicted (then it is kept).
	StashApply(ctx context.Context, id string, pop bool) (event.GitAction, error)
	// StashDrop drops the stash whose commit id is id.
	StashDrop(ctx context.Context, id string) (event.GitAction, error)
	// Revert restores paths (relative to the repository root) to HEAD,
	// staged and unstaged changes both; an untracked path is removed.
	Revert(ctx context.Context, paths []string) (event.GitAction, error)
	// Undo restores the snapshot taken before the last action made here;
	// it fails when there is none.
	Undo(ctx context.Context) (event.GitAction, error)
	// LastSnapshot is the snapshot Undo would restore, "" when none; it
	// does no I/O and may be called from Update.
	LastSnapshot() (id, reason string)
	// Snapshots lists the snapshots on the host, newest first.
	Snapshots(ctx context.Context) ([]rgit.Snapshot, error)
	// Restore brings back the checkout saved in snapshot id (HEAD, branch,
	// index, worktree and untracked files), after snapshotting the present.
	Restore(ctx context.Context, id string) (event.GitAction, error)
}

// RefreshMsg is the answer of the Refresh made when the panel opens: the
// fresh event.GitStatus itself arrives as an event, so only an error is
// reported here.
type RefreshMsg struct{ Err error }

// ActionMsg is the answer of an action started from the panel. What and
// Done are sanitised texts prepared when it started.
type ActionMsg struct {
	Op     string          // "checkout", "stash", "stash-apply", "stash-pop", "stash-drop", "revert", "undo", "restore"
	What   string          // the action and its target, for a failure: "checkout 3207427"
	Done   string          // the success text: "checked out 3207427" (a stash apply, pop or drop names the stash from Action.Args when they have it)
	Action event.GitAction // the outcome; Err set when git failed
	Err    error           // why the action could not be attempted at all
}

// opNames are the actions' names in messages.
var opNames = map[string]string{
	"checkout": "checkout", "stash": "stash", "stash-apply": "stash apply", "stash-pop": "stash pop",
	"stash-drop": "stash drop", "revert": "revert", "undo": "undo", "restore": "restore",
}

// call is an action's call of the Control.
type call func(context.Context, Control) (event.GitAction, error)

// start starts an action unless one cannot start now (never two at once:
// it flashes why, what naming it): it marks the action in flight (its
// banner says doing; brief on a narrow terminal) and returns the tea.Cmd
// that calls it.
func (p *Panel) start(what string, op, target, done, doing, brief string, c call) tea.Cmd {
	if why := p.can(what); why != "" {
		p.flash(why, style.Warn)
		return nil
	}
	ctl, ctx := p.Ctl, p.ctx()
	p.doing, p.brief = doing, brief
	rec := func() {}
	if p.Record != nil {
		rec = p.Record("git " + target)
	}
	return func() tea.Msg {
		rec()
		a, err := c(ctx, ctl)
		return ActionMsg{Op: op, What: target, Done: done, Action: a, Err: err}
	}
}

// Revert starts the revert of files (raw paths) to HEAD.
func (p *Panel) Revert(files []event.GitFile) tea.Cmd {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	target := FileName(files[0])
	if len(files) > 1 {
		target = style.Plural(len(files), "file")
	}
	return p.start("revert", "revert", "revert "+target, "reverted "+target, "reverting "+target, "reverting "+style.Plural(len(files), "file"),
		func(ctx context.Context, c Control) (event.GitAction, error) { return c.Revert(ctx, paths) })
}

// StashOp starts applying ("stash-apply"), popping ("stash-pop") or
// dropping ("stash-drop") the stash s, named by its commit id.
func (p *Panel) StashOp(op string, s event.Stash) tea.Cmd {
	id, ref := s.ID, s.Ref()
	var verb, done, doing string
	var c call
	switch op {
	case "stash-apply":
		verb, done, doing = "apply", "applied "+ref, "applying "+ref
		c = func(ctx context.Context, g Control) (event.GitAction, error) { return g.StashApply(ctx, id, false) }
	case "stash-pop":
		verb, done, doing = "pop", "popped "+ref, "popping "+ref
		c = func(ctx context.Context, g Control) (event.GitAction, error) { return g.StashApply(ctx, id, true) }
	default:
		verb, done, doing = "drop", "dropped "+ref+" (commit "+rgit.ShortID(sanitize.Name(id))+")", "dropping "+ref
		c = func(ctx context.Context, g Control) (event.GitAction, error) { return g.StashDrop(ctx, id) }
	}
	return p.start(verb, op, opNames[op]+" "+ref, done, doing, doing, c)
}

// Undo starts the undo: restoring snapshot id, taken before reason (both
// sanitised, as LastSnapshot gave them when asked). The restore it
// publishes is shown as the undo.
func (p *Panel) Undo(id, reason string) tea.Cmd {
	undid := "undid the last action"
	if reason != "" {
		undid = "undid " + reason
	}
	cmd := p.start("restore", "undo", "undo", undid+": restored snapshot "+id, "restoring snapshot "+id, "undoing",
		func(ctx context.Context, g Control) (event.GitAction, error) { return g.Undo(ctx) })
	if cmd != nil {
		p.undoFrom, p.undoWhy, p.undoSnap = id, reason, ""
	}
	return cmd
}

// Stash starts stashing the dirty tree (files of it) under name, with
// the untracked files when untracked is set.
func (p *Panel) Stash(name string, untracked bool, files int) tea.Cmd {
	done := "stashed " + style.Plural(files, "file")
	if name != "" {
		done += " as " + strconv.Quote(sanitize.Name(name))
	}
	return p.start("a stash", "stash", "stash", done, "stashing "+style.Plural(files, "file"), "stashing",
		func(ctx context.Context, g Control) (event.GitAction, error) { return g.Stash(ctx, name, untracked) })
}

// Checkout starts checking out ref; label ("main at 3207427") and to
// ("3207427") name it.
func (p *Panel) Checkout(ref, label, to string) tea.Cmd {
	return p.start("checkout", "checkout", "checkout "+label, "checked out "+label, "checking out "+label, "checking out "+to,
		func(ctx context.Context, g Control) (event.GitAction, error) { return g.Checkout(ctx, ref) })
}

// Restore starts restoring snapshot id.
func (p *Panel) Restore(id string) tea.Cmd {
	idText := sanitize.Name(id)
	return p.start("restore", "restore", "restore "+idText, "restored snapshot "+idText, "restoring snapshot "+idText, "restoring",
		func(ctx context.Context, g Control) (event.GitAction, error) { return g.Restore(ctx, id) })
}

// Result applies the answer of the panel's tea.Cmds (a RefreshMsg or an
// ActionMsg): quit reports that q was pressed while the action ran, so the
// cockpit quits now that it has ended.
func (p *Panel) Result(msg tea.Msg) (quit bool) {
	switch r := msg.(type) {
	case RefreshMsg:
		if r.Err != nil {
			p.readErr = style.ErrText(r.Err)
			p.flash("git status: "+p.readErr, style.Crit)
		}
	case ActionMsg:
		p.doing, p.brief = "", ""
		p.actionDone(r)
		if p.QuitWhen {
			p.QuitWhen = false
			return true
		}
	}
	return false
}

// actionDone flashes an action's outcome: success (with its snapshot, how
// to undo it, and its notes), a conflict, or a failure (the snapshot that
// holds the tree before it first, then the first line of git's error).
// The fresh status follows on the event stream.
func (p *Panel) actionDone(r ActionMsg) {
	a := r.Action
	name := opNames[r.Op]
	snap := sanitize.Name(a.Snapshot)
	if r.Op == "undo" {
		p.undoSnap = snap
		if snap == "" { // not made: no restore to show as the undo
			p.undoFrom = ""
		}
	}
	switch {
	case r.Err != nil:
		why := style.ErrText(r.Err)
		if !errors.Is(r.Err, context.Canceled) {
			why = sanitize.FirstLine(r.Err.Error())
		}
		p.flash(r.What+" failed: "+why, style.Crit)
	case len(a.Conflict) > 0:
		kept := ""
		if r.Op == "stash-pop" || r.Op == "stash-apply" {
			kept = ": the stash is kept"
		}
		p.flash(name+" conflicted in "+style.BaseNames(sanitize.Names(a.Conflict), 0, 3)+kept+" (u restores the tree as it was)", style.Warn)
	case a.Err != "":
		why := sanitize.FirstLine(a.Err)
		if why == "" {
			why = sanitize.FirstLine(a.Output)
		}
		if snap != "" {
			p.flash(name+" failed (tree before it: snapshot "+snap+", S restores): "+why, style.Crit)
		} else {
			p.flash(r.What+" failed (nothing was changed): "+why, style.Crit)
		}
	default:
		done := r.Done
		if isStashOp(r.Op) && len(a.Args) > 0 {
			done = stashDone(r.Op, sanitize.Names(a.Args))
		}
		if snap != "" {
			done += " (snapshot " + snap + "; u undoes)"
		}
		var notes []string
		for _, n := range a.Notes {
			notes = append(notes, sanitize.Lines(n, 0)...)
		}
		if len(notes) > 0 {
			p.flash(done+"; "+strings.Join(notes, "; "), style.Warn)
			return
		}
		p.flash(done, style.OK)
	}
}

// isStashOp reports a stash apply, pop or drop.
func isStashOp(op string) bool {
	return op == "stash-apply" || op == "stash-pop" || op == "stash-drop"
}

// stashName names the stash of a stash apply, pop or drop from its
// Action.Args (sanitised): [commit id, message] gives `stash "message"`,
// [commit id] `stash 5555555`.
func stashName(args []string) string {
	switch {
	case len(args) > 1 && args[1] != "":
		return `stash "` + args[1] + `"`
	case len(args) > 0:
		return "stash " + rgit.ShortID(args[0])
	}
	return "stash"
}

// stashDone is the success text of a stash apply, pop or drop, naming the
// stash by the Action's Args (sanitised): `popped stash "On main: x"`;
// a drop adds the commit id that brings it back.
func stashDone(op string, args []string) string {
	verb := map[string]string{"stash-apply": "applied", "stash-pop": "popped", "stash-drop": "dropped"}[op]
	s := verb + " " + stashName(args)
	if op == "stash-drop" && len(args) > 1 && args[1] != "" {
		s += " (commit " + rgit.ShortID(args[0]) + ")"
	}
	return s
}
