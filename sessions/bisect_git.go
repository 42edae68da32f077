package sessions

import (
	"context"
	"fmt"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The checkout side of a bisect: the range, the state it starts from,
// and putting it back at the end.

// Status reads the checkout's full status (HEAD, branch, dirty files,
// stashes, an operation in progress) without publishing it.
func (g *Git) Status(ctx context.Context) (event.GitStatus, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.open(ctx)
	if err != nil {
		return event.GitStatus{}, err
	}
	return r.Status(ctx, 0)
}

// FirstParent lists a bisect's range from good to bad, oldest first
// (git.Repo.FirstParent).
func (g *Git) FirstParent(ctx context.Context, good, bad string) ([]event.BisectCommit, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.open(ctx)
	if err != nil {
		return nil, err
	}
	return r.FirstParent(ctx, good, bad)
}

// bisectStash is the stash message a bisect keeps the dirty work under.
func bisectStash(id string) string { return "flightdeck bisect " + id }

// stashOf is bisect id's stash in st, if it is there.
func stashOf(st event.GitStatus, id string) (event.Stash, bool) {
	for _, s := range st.Stashes {
		if strings.HasSuffix(s.Message, ": "+bisectStash(id)) {
			return s, true
		}
	}
	return event.Stash{}, false
}

// keptAside reports whether the dirty work bisect id set aside (o's
// snapshot) is still in its stash: a bisect killed before its end never
// put it back.
func keptAside(st event.GitStatus, id string, o event.BisectOrigin) bool {
	_, ok := stashOf(st, id)
	return o.Snapshot != "" && ok
}

// checkNotMidBisect refuses to start while an earlier bisect's dirty
// work is still in its stash: that bisect did not end (taken over,
// killed) or left its culprit checked out (--stay), so the checkout is
// its, and an origin taken here would restore to it, never giving the
// user's work back.
func checkNotMidBisect(st event.GitStatus) error {
	for _, s := range st.Stashes {
		if _, id, ok := strings.Cut(s.Message, ": "+bisectStash("")); ok {
			return fmt.Errorf("bisect: bisect %s's dirty work is still in %s (HEAD at %s): resume that bisect (flightdeck bisect HOST --resume) or put the work back (git stash pop %s) first",
				id, s.Ref(), git.ShortID(st.Head.ID), s.Ref())
		}
	}
	return nil
}

// checkIdle refuses a bisect while git is in the middle of something (a
// merge, a rebase, unmerged paths): its checkouts would fail or mix.
func checkIdle(st event.GitStatus) error {
	if st.Operation != "" {
		return fmt.Errorf("bisect: a git %s is in progress in %s: finish or abort it first", st.Operation, st.Path)
	}
	for _, f := range st.Files {
		if f.Conflicted() {
			return fmt.Errorf("bisect: %s is unmerged: resolve it first", f.Path)
		}
	}
	return nil
}

// takeOrigin reads the checkout the bisect starts from and, when the tree
// is dirty, stashes the work (untracked files too): every commit is then
// launched as committed. Origin.Snapshot is the stash's never-lose-work
// snapshot, which the end restores.
func (g *Git) takeOrigin(ctx context.Context, id string) (event.BisectOrigin, error) {
	st, err := g.Status(ctx)
	if err != nil {
		return event.BisectOrigin{}, err
	}
	if err := checkIdle(st); err != nil {
		return event.BisectOrigin{}, err
	}
	if err := checkNotMidBisect(st); err != nil {
		return event.BisectOrigin{}, err
	}
	o := event.BisectOrigin{Head: st.Head.ID, Branch: st.Branch, Dirty: len(st.Files) > 0}
	if !o.Dirty {
		return o, nil
	}
	a, err := g.Stash(ctx, bisectStash(id), true)
	if err == nil && a.Err != "" {
		err = fmt.Errorf("%s", a.Err)
	}
	if err != nil {
		return o, fmt.Errorf("bisect: keeping the dirty work aside: %w", err)
	}
	o.Snapshot = a.Snapshot
	return o, nil
}

// restoreOrigin puts the checkout back as o was: the snapshot restored
// (HEAD, branch, dirty work) and the bisect's stash dropped, or, from a
// clean tree, the branch (or commit) checked out again. It returns what
// the checkout was left at, for BisectEnd.Restored.
func (g *Git) restoreOrigin(ctx context.Context, id string, o event.BisectOrigin) (string, error) {
	at := originAt(o)
	if o.Snapshot != "" {
		a, err := g.Restore(ctx, o.Snapshot)
		if err == nil && a.Err != "" {
			err = fmt.Errorf("%s", a.Err)
		}
		if err != nil {
			return "", fmt.Errorf("restoring snapshot %s: %w", o.Snapshot, err)
		}
		if st, err := g.Status(ctx); err == nil {
			if s, ok := stashOf(st, id); ok {
				_, _ = g.StashDrop(ctx, s.ID)
			}
		}
		return at + ", dirty work restored", nil
	}
	st, err := g.Status(ctx)
	if err == nil && st.Head.ID == o.Head && st.Branch == o.Branch {
		return at, nil
	}
	ref := originRef(o)
	a, err := g.Checkout(ctx, ref)
	if err == nil && a.Err != "" {
		err = fmt.Errorf("%s", a.Err)
	}
	if err != nil {
		return "", fmt.Errorf("checking out %s again: %w", ref, err)
	}
	return at, nil
}

// checkoutFor checks out commit id for a launch, unless HEAD is there
// already with a clean tree.
func (g *Git) checkoutFor(ctx context.Context, id string) error {
	if st, err := g.Status(ctx); err == nil && st.Head.ID == id && len(st.Files) == 0 {
		return nil
	}
	a, err := g.Checkout(ctx, id)
	if err == nil && a.Err != "" {
		err = fmt.Errorf("%s", a.Err)
	}
	if err == nil && a.To != id {
		err = fmt.Errorf("HEAD is at %s, not %s", git.ShortID(a.To), git.ShortID(id))
	}
	return err
}

// originAt is where o was: "main at a6d51c0", or the commit alone when
// HEAD was detached.
func originAt(o event.BisectOrigin) string {
	if o.Branch != "" {
		return o.Branch + " at " + git.ShortID(o.Head)
	}
	return git.ShortID(o.Head)
}

// originRef is what checks o out again: its branch, else its commit.
func originRef(o event.BisectOrigin) string {
	if o.Branch != "" {
		return o.Branch
	}
	return o.Head
}

// undoHint says how to put the checkout back as o was by hand, for an
// end whose restore failed.
func undoHint(o event.BisectOrigin, id string) string {
	if o.Snapshot != "" {
		return "it was " + originAt(o) + ", the dirty work is in snapshot " + o.Snapshot + " (stash \"" + bisectStash(id) + "\"): flightdeck git restore HOST " + o.Snapshot + " puts both back"
	}
	return "it was " + originAt(o) + ": flightdeck git checkout HOST " + originRef(o) + " goes back"
}
