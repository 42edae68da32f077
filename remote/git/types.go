// Package git reads and changes the inference server's git checkout on a
// host (remote.Host: over SSH or local) with the git CLI, and makes sure no
// action loses uncommitted work: every action that changes the worktree
// first saves a Snapshot (the binary diff against HEAD plus copies of the
// untracked files) that Restore brings back byte for byte.
//
// Safety rules every function here keeps:
//   - a ref from the user is resolved to a commit id with
//     `git rev-parse --verify --quiet --end-of-options REF^{commit}` (git ≥
//     2.39) after rejecting refs that start with "-", and only the id (or a
//     branch name checked with `git check-ref-format --branch`) reaches the
//     action;
//   - paths go after "--", with --literal-pathspecs, so "*" or ":(glob)" are
//     plain names;
//   - every command line is built with remote.Command (mvdan.cc/sh quoting).
//
// Text fields of the types here are raw remote text: sanitise before display.
package git

import (
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"time"
)

// Preview is what a checkout of a target would do, shown before it is
// confirmed.
type Preview struct {
	Target string       // the ref as given
	Branch string       // the branch it switches to; "" for a detached checkout
	From   event.Commit // HEAD now
	To     event.Commit // the target commit
	// Forward are the commits reachable from To but not from HEAD (the
	// checkout brings them in), Back those reachable from HEAD but not To
	// (it leaves them), newest first, each at most the limit asked for;
	// ForwardCount and BackCount are the full counts.
	Forward, Back           []event.Commit
	ForwardCount, BackCount int
	// Files are the paths that differ between HEAD and the target
	// (`git diff --name-status`), as "M\tpath" style pairs.
	Files []Change
	// Blocking are dirty paths that the checkout would have to overwrite:
	// git refuses the checkout while they are dirty (stash them first).
	Blocking []string
	// Unmerged are paths with conflict stages: git refuses any checkout
	// until they are resolved, and so does Checkout.
	Unmerged []string
	// Overwrites are ignored files in the worktree that the target tracks:
	// git replaces them without asking. Checkout saves them in its
	// snapshot first.
	Overwrites []string
}

// Change is one path of a diff between two commits.
type Change struct {
	Status byte   // 'A', 'M', 'D', 'R', 'C', 'T'
	Path   string // the new path
	Orig   string // for R and C: the old path
}

// Snapshot is a saved copy of a checkout's uncommitted work, in a directory
// on the host: staged.patch (`git diff --binary --cached`), unstaged.patch
// (`git diff --binary`), untracked.tar (every untracked, not ignored file),
// and meta.json.
type Snapshot struct {
	ID        string    // "20261129-215807-3f9a": sortable, unique per repository
	Dir       string    // its directory on the host
	Reason    string    // the action it was taken before, e.g. "checkout 3207427"
	Time      time.Time // when it was taken
	Head      string    // commit id HEAD pointed to
	Branch    string    // checked-out branch then; "" when detached
	Files     int       // dirty paths then (staged, unstaged and untracked)
	Bytes     int64     // size of its patches and tar on the host
	Untracked int       // untracked files copied
	Skipped   int       // untracked files of BigFile bytes or more, not copied (listed in skipped.list)
}

// MaxActionFiles is the most paths an event.GitAction lists.
const MaxActionFiles = 50
