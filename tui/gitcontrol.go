package tui

import (
	"context"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// GitControl acts on the server's git checkout behind the git panel (g);
// *sessions.Git implements it. Every method does I/O and runs only inside a
// tea.Cmd. Methods that change the checkout take a snapshot first, publish a
// event.GitAction and then a fresh event.GitStatus on the event stream (which is what
// the panel renders), and also return the Action for the key's immediate
// answer; a failed action returns it with Err set and a nil error unless it
// could not be attempted at all.
type GitControl interface {
	// Refresh reads the full status and publishes it as a event.GitStatus event.
	Refresh(ctx context.Context) error
	// Log lists recent commits of HEAD, the branches, tags and
	// remote-tracking branches, newest first: the checkout picker's list.
	Log(ctx context.Context, n int) ([]event.Commit, error)
	// Preview says what checking out ref would do, for the confirmation.
	Preview(ctx context.Context, ref string) (git.Preview, error)
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
	Snapshots(ctx context.Context) ([]git.Snapshot, error)
	// Restore brings back the checkout saved in snapshot id (HEAD, branch,
	// index, worktree and untracked files), after snapshotting the present.
	Restore(ctx context.Context, id string) (event.GitAction, error)
}

var _ GitControl = (*sessions.Git)(nil)
