package event

import (
	"slices"
	"strconv"
	"time"
)

// Commit is one commit as git log prints it.
type Commit struct {
	ID      string    // full commit id (40 hex digits, 64 in SHA-256 repositories)
	Short   string    // abbreviated id, as git abbreviates it in this repository
	Subject string    // first line of the message
	Author  string    // author name
	Time    time.Time // committer date
	Refs    []string  // decorations (%D): "HEAD -> main", "origin/main", "tag: v0.5"
}

// GitFile is one path with uncommitted changes, from
// `git status --porcelain=v1 -z` and `git diff --numstat -z HEAD`.
type GitFile struct {
	Path string // path relative to the repository root
	Orig string // for a rename or copy in the index: the old path; else ""
	// X and Y are the porcelain v1 status letters: X the index against
	// HEAD, Y the worktree against the index ('M', 'A', 'D', 'R', 'C', 'U',
	// ' ', and "??" for untracked, "!!" never: ignored files are not listed).
	X, Y byte
	// Added and Deleted are the line counts of the change against HEAD
	// (staged and unstaged together); -1 for a binary file, and for an
	// untracked file (not diffed).
	Added, Deleted int
	Binary         bool // git diffs it as binary
}

// Untracked reports a file git does not track ("??").
func (f GitFile) Untracked() bool { return f.X == '?' }

// Staged reports a change in the index against HEAD.
func (f GitFile) Staged() bool { return f.X != ' ' && f.X != '?' && !f.Conflicted() }

// Unstaged reports a change in the worktree against the index.
func (f GitFile) Unstaged() bool { return f.Y != ' ' && f.Y != '?' && !f.Conflicted() }

// Conflicted reports an unmerged path (a merge or stash apply conflict):
// porcelain XY of DD, AU, UD, UA, DU, AA or UU.
func (f GitFile) Conflicted() bool {
	return f.X == 'U' || f.Y == 'U' || (f.X == 'A' && f.Y == 'A') || (f.X == 'D' && f.Y == 'D')
}

// Stash is one entry of `git stash list`.
type Stash struct {
	Index   int       // N of stash@{N} at the time of reading; it shifts when entries are added or dropped
	ID      string    // the stash commit id: identifies the entry across shifts
	Message string    // "On main: before checkout" or "WIP on main: a6d51c0 subject"
	Time    time.Time // when it was made
}

// Ref returns the stash@{N} selector of s.
func (s Stash) Ref() string { return "stash@{" + strconv.Itoa(s.Index) + "}" }

// RefEntry is one entry of HEAD's reflog (`git reflog`).
type RefEntry struct {
	ID      string    // commit id HEAD pointed to after the entry
	Short   string    // abbreviated id
	Action  string    // first word of the reflog message: "pull", "checkout", "reset", "commit", "rebase", "merge", "clone", ...
	Message string    // the whole reflog message, e.g. "pull: Fast-forward"
	Time    time.Time // when HEAD moved
}

// GitStatus is everything the git panel shows about a checkout. It is an event
// payload (Kind "git-status").
type GitStatus struct {
	Path     string // repository top level on the host (absolute)
	Branch   string // checked-out branch; "" when HEAD is detached
	Head     Commit
	Upstream string // e.g. "origin/main"; "" when the branch tracks none
	Ahead    int    // commits in HEAD not in the upstream
	Behind   int    // commits in the upstream not in HEAD
	// Operation is a git operation left in progress: "merge", "rebase",
	// "cherry-pick", "revert", "bisect", or "".
	Operation string
	Files     []GitFile  // dirty paths in porcelain order (ignored files excluded)
	Stashes   []Stash    // newest first
	Reflog    []RefEntry // newest first, at most the requested count
	Read      time.Time  // when the status was read (local clock)
}

// Counts counts the dirty files by kind: staged, unstaged, untracked and
// conflicted (a file both staged and unstaged counts in both).
func (s GitStatus) Counts() (staged, unstaged, untracked, conflicted int) {
	for _, f := range s.Files {
		switch {
		case f.Untracked():
			untracked++
		case f.Conflicted():
			conflicted++
		default:
			if f.Staged() {
				staged++
			}
			if f.Unstaged() {
				unstaged++
			}
		}
	}
	return
}

// GitAction is one git action made from flightdeck, with its outcome. It is an
// event payload (Kind "git-action"): the journal records what was done, the
// snapshot that can undo it, and where HEAD went.
type GitAction struct {
	Op       string   // "stash", "stash-apply", "stash-pop", "stash-drop", "checkout", "revert", "restore"
	Args     []string // what it acted on: the stash name, the ref, the paths, the snapshot id
	Snapshot string   // id of the snapshot taken before it (always taken, even of a clean tree: it also records HEAD and the branch); "" when taking it failed, and then the action was not made
	From     string   // HEAD commit id before
	To       string   // HEAD commit id after (== From unless the action moved HEAD)
	Branch   string   // branch after; "" detached
	Err      string   // why it failed; "" on success
	// Conflict is set when the action stopped with unmerged paths (a stash
	// apply or pop that conflicted); the stash is kept.
	Conflict []string
	Output   string // git's own words (stderr and stdout, trimmed, at most 4 KiB)
	// Notes are what the user must know about an action that succeeded:
	// "main has moved since: restored at 3207427, detached", "stash
	// brought back: On main: x", "big.bin (3.0 GiB, untracked) was not
	// saved in the snapshot and was left alone".
	Notes []string
	// Files are, for a checkout that moved HEAD, the paths that differ
	// between From and To (at most MaxActionFiles; FilesTotal counts all),
	// from the preview made before it.
	Files      []string `json:",omitempty"`
	FilesTotal int      `json:",omitempty"`
	Started    time.Time
	Took       time.Duration
}

// OK reports a successful action.
func (a GitAction) OK() bool { return a.Err == "" }

// GitMoved reports that HEAD, the branch or the dirty set changed without a
// flightdeck action (someone ran `git pull` in another pane). It is an event
// payload (Kind "git-moved").
type GitMoved struct {
	From, To      string   // HEAD commit ids before and after (equal when only the dirty set changed)
	FromShort     string   // abbreviated From
	ToShort       string   // abbreviated To
	FromBranch    string   // "" detached
	ToBranch      string   // "" detached
	Action        string   // latest reflog action when HEAD moved: "pull", "reset", "commit", "checkout"; "" unknown
	Forward, Back int      // commits To has that From lacks, and the reverse
	Files         []string // paths that differ between From and To (at most 50)
	FilesTotal    int      // how many differ in all
	DirtyBefore   int      // dirty paths before
	DirtyAfter    int      // dirty paths after
	DirtyChanged  []string // dirty paths that appeared, disappeared or changed state (at most 50)
	At            time.Time
}

// CountWords are the Counts as words, zero counts left out, in the order
// staged, unstaged, untracked, conflicted: ["2 staged", "3 untracked"].
func (s GitStatus) CountWords() []string {
	staged, unstaged, untracked, conflicted := s.Counts()
	var out []string
	for _, c := range []struct {
		n    int
		what string
	}{{staged, "staged"}, {unstaged, "unstaged"}, {untracked, "untracked"}, {conflicted, "conflicted"}} {
		if c.n > 0 {
			out = append(out, strconv.Itoa(c.n)+" "+c.what)
		}
	}
	return out
}

// RepoHead is the checked-out commit of a repository on the host. It is an
// event payload. Text fields are raw (remote) text: sanitise before display.
type RepoHead struct {
	Path       string    // repository path on the host
	Commit     string    // full commit id
	Short      string    // abbreviated commit id, as git abbreviates it
	Subject    string    // first line of the commit message
	Branch     string    // checked-out branch, "" when HEAD is detached
	CommitTime time.Time // committer date
	Dirty      int       // paths with uncommitted changes (staged, unstaged or untracked)
	// Entries are the dirty paths as "XY path" (porcelain v1 status letters,
	// "?? path" untracked), in git's order, at most MaxEntries: what
	// changed when the dirty set changed.
	Entries []string
}

// Same reports whether h and o show the same checkout state.
func (h RepoHead) Same(o RepoHead) bool {
	return h.Path == o.Path && h.Commit == o.Commit && h.Branch == o.Branch && h.Dirty == o.Dirty && slices.Equal(h.Entries, o.Entries)
}

// RepoUnreadable reports that the repository could not be read (not a git
// checkout, git missing, path gone). It is an event payload.
type RepoUnreadable struct {
	Path string
	Err  string
}
