// Package git is the git panel's dialogs, pushed on the cockpit's overlay
// stack: the confirmation every action asks first (revert, stash apply,
// pop and drop, undo, restore, and the checkout's preview), the stash
// form, the checkout picker and the snapshots list. Each confirmed action
// is started by the panel they act for (Panel), runs in a tea.Cmd and
// names the snapshot taken before it; the reads the dialogs make (Log,
// Preview, Snapshots) run in tea.Cmds too, and their answers come back as
// LogMsg, PreviewMsg and SnapshotsMsg for the root to route to the dialog
// that asked.
package git

import (
	"context"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	rgit "github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The dialogs' IDs on the overlay stack.
const (
	// ConfirmID is a y/N question: a revert, a stash apply, pop or drop,
	// an undo, or a restore (over the snapshots list).
	ConfirmID = "git-confirm"
	// PreviewID is the checkout's preview, asked over the picker.
	PreviewID = "git-preview"
	// StashID is the stash form: a name, untracked files in or out.
	StashID = "git-stash"
	// CheckoutID is the checkout picker: a typed ref, the log or the
	// reflog.
	CheckoutID = "git-checkout"
	// SnapshotsID is the snapshots list: enter asks to restore one.
	SnapshotsID = "git-snapshots"
)

// Control is what the dialogs read of the checkout (the git panel's
// control does it); every method does I/O and runs only in a tea.Cmd.
type Control interface {
	// Log lists recent commits of HEAD, the branches, tags and
	// remote-tracking branches, newest first.
	Log(ctx context.Context, n int) ([]event.Commit, error)
	// Preview says what checking out ref would do.
	Preview(ctx context.Context, ref string) (rgit.Preview, error)
	// Snapshots lists the snapshots on the host, newest first.
	Snapshots(ctx context.Context) ([]rgit.Snapshot, error)
}

// Panel is the git panel the dialogs act for: its latest status, and the
// actions they confirm. Each action says why it cannot start now (a flash)
// instead of starting, and returns the tea.Cmd that runs it; names and ids
// are raw, but for Undo's (sanitised, as asked).
type Panel interface {
	// Status is the latest event.GitStatus, raw.
	Status() event.GitStatus
	// Revert restores files to HEAD.
	Revert(files []event.GitFile) tea.Cmd
	// StashOp applies ("stash-apply"), pops ("stash-pop") or drops
	// ("stash-drop") the stash s.
	StashOp(op string, s event.Stash) tea.Cmd
	// Undo restores snapshot id, taken before reason.
	Undo(id, reason string) tea.Cmd
	// Stash stashes the dirty tree (files of it) under name.
	Stash(name string, untracked bool, files int) tea.Cmd
	// Checkout checks out ref; label ("main at 3207427") and to
	// ("3207427") name it.
	Checkout(ref, label, to string) tea.Cmd
	// Restore restores snapshot id.
	Restore(id string) tea.Cmd
}

// Dialogs opens the git dialogs (it is the git panel's Dialogs) and holds
// what they need of the cockpit: the panel they act for, the reads they
// make, the clock, the flash and the stack they open on. The root sets
// every field once; use it by pointer.
type Dialogs struct {
	Panel Panel
	Ctl   Control
	// Ctx is the context the reads run under (it ends when the program
	// does).
	Ctx func() context.Context
	// Now is the cockpit's clock, for ages.
	Now func() time.Time
	// Flash answers in the status line until the next key.
	Flash func(text string, tone style.Token)
	// Push opens a dialog on top; Remove closes one by ID wherever it is.
	Push   func(component.Dialog)
	Remove func(id string) bool
	// Inputs are the text fields' styles.
	Inputs func() textinput.Styles
	// Measured, when set, is the tok/s measured at a commit (its full
	// id), for the checkout picker's log: "89.4 tok/s n=2" (the median of
	// the launches measured there, this session's and the host's earlier
	// ones), "-" when none was.
	Measured func(commit string) string

	seq int // numbers the reads a dialog waits for; stale answers are dropped
}

// next numbers a read.
func (ds *Dialogs) next() int {
	ds.seq++
	return ds.seq
}

// LogMsg is the answer of the checkout picker's Log.
type LogMsg struct {
	Seq     int // the request it answers; answers to a closed picker are dropped
	Commits []event.Commit
	Err     error
}

// PreviewMsg is the answer of a Preview asked from the checkout picker.
type PreviewMsg struct {
	Seq     int    // the request it answers
	Ref     string // the ref as it will be checked out
	Preview rgit.Preview
	Err     error
}

// SnapshotsMsg is the answer of the snapshots list's Snapshots.
type SnapshotsMsg struct {
	Seq       int // the request it answers
	Snapshots []rgit.Snapshot
	Err       error
}

const snapshotNote = "A snapshot of the tree is taken first (u undoes)."

const restoreNote = "HEAD, the branch, the index, the worktree and the untracked files come back as they were; the present tree is snapshotted first (u undoes)."

// maxListed is how many items a dialog's list shows before "... and K
// more".
const maxListed = 8

// arrow joins the two sides of a change. ASCII: the arrow characters are
// ambiguous-width (two cells in some CJK setups).
const arrow = " -> "

// stagedNew reports a file added in the index that HEAD does not have
// ("A " or "AM"): a revert deletes it from disk.
func stagedNew(f event.GitFile) bool { return f.X == 'A' && !f.Conflicted() }

// age is t's age at the host's now, in one unit.
func (ds *Dialogs) age(t time.Time) string { return style.Age(ds.Now(), t) }
