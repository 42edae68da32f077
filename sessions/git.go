package sessions

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/hostwatch"
	"github.com/flightdeck-dev/flightdeck/probes/repo"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Git is the cockpit's side of the server's git checkout: it polls HEAD,
// the branch and the dirty set cheaply (probes/repo.Read, every Interval,
// or with an Agent only when the host's watch stream says they may have
// changed),
// runs the git actions (remote/git) one at a time, and publishes on the
// event stream: event.RepoHead when the checkout changes, event.GitStatus after each
// change or Refresh, event.GitAction for each action, and event.GitMoved when HEAD,
// the branch or the dirty set changed without an action made here (a `git
// pull` in another pane). It implements tui.GitControl; the CLI calls
// remote/git directly.
type Git struct {
	Host remote.Host
	// Path is the checkout on the host (may start with "~/"); Open finds
	// its top level.
	Path string
	// Publish receives the events; Live wires it to its Sink when nil.
	Publish event.Sink
	// Interval between polls; default 3 s. Timeout of one poll; default 10 s.
	Interval, Timeout time.Duration
	// Agent, when set, makes Run poll only when the host says the checkout
	// may have changed (hostwatch.Trigger: `flightdeck agent watch`, else
	// the shell watcher, else every Interval); Live sets its host's. Nil
	// polls every Interval.
	Agent remote.Agent
	// WatchInterval is how often the host side checks the checkout;
	// default 1 s.
	WatchInterval time.Duration
	// Guard, when set, is asked right before each action that changes the
	// checkout: an error refuses it (the driver lock, as Control.Guard).
	Guard func(context.Context) error

	mu      sync.Mutex     // serialises polls and actions; guards the fields below
	repo    *git.Repo      // opened on first use
	last    event.RepoHead // the checkout as last seen (by a poll or after an action)
	hasLast bool
	lastErr string // the last Unreadable published

	undoMu   sync.Mutex // guards undo (read from the UI goroutine)
	undo     string     // snapshot id Undo restores
	undoWhy  string     // its reason
	undoSeen bool       // undo was set by an action here (not only from the host's list)
}

// pollDefaults returns the poll interval and timeout.
func (g *Git) pollDefaults() (time.Duration, time.Duration) {
	every, timeout := g.Interval, g.Timeout
	if every <= 0 {
		every = 3 * time.Second
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return every, timeout
}

// open returns the Repo, opening it on first use. Call with g.mu held.
func (g *Git) open(ctx context.Context) (*git.Repo, error) {
	if g.repo != nil {
		return g.repo, nil
	}
	r, err := git.Open(ctx, g.Host, g.Path)
	if err != nil {
		return nil, err
	}
	g.repo = r
	return r, nil
}

func (g *Git) publish(at time.Time, p event.Payload) {
	if g.Publish != nil {
		g.Publish(event.Event{At: at, Data: p})
	}
}

// Run polls until ctx ends, then returns nil. The first poll publishes
// the HEAD and the full status; a change made outside publishes event.GitMoved,
// the new HEAD and the full status; an unreadable repository publishes
// event.RepoUnreadable once per distinct error. While the host is unreachable
// nothing is published: the last state stands.
func (g *Git) Run(ctx context.Context) error {
	every, timeout := g.pollDefaults()
	var tick <-chan time.Time
	var wake <-chan struct{}
	if g.Agent != nil {
		tr := &hostwatch.Trigger{Host: g.Host, Agent: g.Agent, Poll: every,
			Watch: hostwatch.Options{Repo: g.Path, Interval: g.WatchInterval}}
		wake = tr.Start(ctx)
	} else {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		settled := g.poll(pctx)
		cancel()
		var again <-chan time.Time
		if !settled && tick == nil {
			// Still changing: look again after an interval, whether or
			// not the stream says more.
			again = time.After(every)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		case <-wake:
		case <-again:
		}
	}
}

// poll reads the cheap state once and publishes what changed. It returns
// false when the checkout was still changing (the next poll looks again).
func (g *Git) poll(ctx context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.open(ctx)
	var h event.RepoHead
	if err == nil {
		h, err = repo.Read(ctx, g.Host, r.Path)
	}
	switch {
	case ctx.Err() != nil, errors.Is(err, remote.ErrDisconnected), errors.Is(err, context.DeadlineExceeded):
		return true // the stream's restart after the reconnection polls again
	case err != nil:
		if msg := err.Error(); msg != g.lastErr {
			g.lastErr, g.hasLast = msg, false
			g.publish(time.Now(), event.RepoUnreadable{Path: g.Path, Err: msg})
		}
		return true
	case g.hasLast && h.Same(g.last):
		return true
	}
	if g.hasLast {
		var ok bool
		if h, ok = g.settle(ctx, r, h); !ok {
			return false // still changing: the next poll looks again
		}
	}
	g.lastErr = ""
	before, had := g.last, g.hasLast
	g.last, g.hasLast = h, true
	now := time.Now()
	g.publish(now, h)
	st, serr := r.Status(ctx, 0)
	if had {
		g.publish(now, g.moved(ctx, r, before, h, st, serr == nil))
	}
	if !had {
		g.loadUndo(ctx, r)
	}
	if serr == nil {
		g.publish(now, st)
	}
	return true
}

// settleGap is how long settle waits between its reads.
const settleGap = 150 * time.Millisecond

// settle re-reads a checkout that changed until two reads settleGap apart
// agree while no git command holds the index lock, and returns the settled
// state; false when it does not settle in a few reads (or ctx ends). A
// `git pull` writes the worktree before it moves HEAD: a read between the
// two would report a dirty tree that nobody made.
func (g *Git) settle(ctx context.Context, r *git.Repo, h event.RepoHead) (event.RepoHead, bool) {
	lock, err := remote.Command("test", "-e", path.Join(r.GitDir, "index.lock"))
	if err != nil {
		return h, true
	}
	for range 8 {
		select {
		case <-ctx.Done():
			return h, false
		case <-time.After(settleGap):
		}
		if _, err := g.Host.Run(ctx, lock, nil); err == nil {
			continue // a git command is changing the index and worktree
		}
		again, err := repo.Read(ctx, g.Host, r.Path)
		if err != nil {
			return h, false
		}
		if again.Same(h) {
			return h, true
		}
		h = again
	}
	return h, false
}

// moved describes a change made outside the cockpit.
func (g *Git) moved(ctx context.Context, r *git.Repo, from, to event.RepoHead, st event.GitStatus, hasSt bool) event.GitMoved {
	m := event.GitMoved{
		From: from.Commit, To: to.Commit, FromShort: from.Short, ToShort: to.Short,
		FromBranch: from.Branch, ToBranch: to.Branch,
		DirtyBefore: from.Dirty, DirtyAfter: to.Dirty, At: time.Now(),
	}
	if from.Commit != to.Commit {
		if hasSt && len(st.Reflog) > 0 && st.Reflog[0].ID == to.Commit {
			m.Action = st.Reflog[0].Action
		}
		if fwd, back, files, err := r.Compare(ctx, from.Commit, to.Commit); err == nil {
			m.Forward, m.Back, m.FilesTotal = fwd, back, len(files)
			m.Files = files[:min(len(files), 50)]
		}
	}
	m.DirtyChanged = changedPaths(from.Entries, to.Entries, 50)
	return m
}

// changedPaths lists the paths whose "XY path" entry appears in only one
// of a and b, at most max.
func changedPaths(a, b []string, max int) []string {
	var out []string
	add := func(e string) {
		p := e
		if len(e) > 3 {
			p = e[3:]
		}
		if !slices.Contains(out, p) && len(out) < max {
			out = append(out, p)
		}
	}
	for _, e := range a {
		if !slices.Contains(b, e) {
			add(e)
		}
	}
	for _, e := range b {
		if !slices.Contains(a, e) {
			add(e)
		}
	}
	return out
}

// loadUndo offers the newest snapshot on the host for Undo when no action
// has been made here yet (a restarted cockpit can still undo the last
// action). Call with g.mu held.
func (g *Git) loadUndo(ctx context.Context, r *git.Repo) {
	snaps, err := r.Snapshots(ctx)
	if err != nil || len(snaps) == 0 {
		return
	}
	g.undoMu.Lock()
	if !g.undoSeen {
		g.undo, g.undoWhy = snaps[0].ID, snaps[0].Reason
	}
	g.undoMu.Unlock()
}

// Refresh reads the full status and publishes it. It leaves the poll's
// baseline alone: a change made outside is still reported as moved.
func (g *Git) Refresh(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.open(ctx)
	if err != nil {
		return err
	}
	st, err := r.Status(ctx, 0)
	if err != nil {
		return err
	}
	g.publish(time.Now(), st)
	return nil
}

// Log lists the checkout picker's commits (git.Repo.Log).
func (g *Git) Log(ctx context.Context, n int) ([]event.Commit, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.open(ctx)
	if err != nil {
		return nil, err
	}
	return r.Log(ctx, n)
}

// Preview says what a checkout of ref would do (git.Repo.Preview, 20
// commits each way).
func (g *Git) Preview(ctx context.Context, ref string) (git.Preview, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.open(ctx)
	if err != nil {
		return git.Preview{}, err
	}
	return r.Preview(ctx, ref, 20)
}

// Snapshots lists the snapshots on the host, newest first.
func (g *Git) Snapshots(ctx context.Context) ([]git.Snapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.open(ctx)
	if err != nil {
		return nil, err
	}
	return r.Snapshots(ctx)
}

// do runs one action under the lock, then publishes it, takes its
// outcome as the new baseline (so the poll does not call it a move), and
// publishes the fresh HEAD and status.
func (g *Git) do(ctx context.Context, act func(*git.Repo) (event.GitAction, error)) (event.GitAction, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.Guard != nil {
		if err := g.Guard(ctx); err != nil {
			return event.GitAction{}, err
		}
	}
	r, err := g.open(ctx)
	if err != nil {
		return event.GitAction{}, err
	}
	a, err := act(r)
	if a.Snapshot == "" {
		return a, err // nothing was done
	}
	g.publish(time.Now(), a)
	g.undoMu.Lock()
	g.undo, g.undoWhy, g.undoSeen = a.Snapshot, actionText(a), true
	g.undoMu.Unlock()
	// The aftermath is read even if the caller gave up: the panel and the
	// poll's baseline must show where the action left the checkout.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if h, herr := repo.Read(actx, g.Host, r.Path); herr == nil {
		g.last, g.hasLast = h, true
		g.publish(time.Now(), h)
	}
	if st, serr := r.Status(actx, 0); serr == nil {
		g.publish(time.Now(), st)
	}
	return a, err
}

// actionText names an action for the undo prompt: "checkout 3207427",
// "stash pop On main: nccl exp", "revert a.py b.py".
func actionText(a event.GitAction) string {
	op := strings.ReplaceAll(a.Op, "-", " ")
	if strings.HasPrefix(a.Op, "stash-") && len(a.Args) == 2 {
		return op + " " + a.Args[1] // the stash's message, not its commit id
	}
	return op + " " + joinArgs(a.Args)
}

// joinArgs joins an action's arguments, commit ids abbreviated.
func joinArgs(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		if git.IsCommitID(a) {
			a = git.ShortID(a)
		}
		words[i] = a
	}
	return strings.Join(words, " ")
}

// Checkout checks out ref (git.Repo.Checkout).
func (g *Git) Checkout(ctx context.Context, ref string) (event.GitAction, error) {
	return g.do(ctx, func(r *git.Repo) (event.GitAction, error) { return r.Checkout(ctx, ref) })
}

// Stash stashes the dirty tree under name (git.Repo.Stash).
func (g *Git) Stash(ctx context.Context, name string, untracked bool) (event.GitAction, error) {
	return g.do(ctx, func(r *git.Repo) (event.GitAction, error) { return r.Stash(ctx, name, untracked) })
}

// StashApply applies (pop: and drops) the stash with commit id id.
func (g *Git) StashApply(ctx context.Context, id string, pop bool) (event.GitAction, error) {
	return g.do(ctx, func(r *git.Repo) (event.GitAction, error) { return r.StashApply(ctx, id, pop) })
}

// StashDrop drops the stash with commit id id.
func (g *Git) StashDrop(ctx context.Context, id string) (event.GitAction, error) {
	return g.do(ctx, func(r *git.Repo) (event.GitAction, error) { return r.StashDrop(ctx, id) })
}

// Revert restores paths to HEAD (git.Repo.Revert).
func (g *Git) Revert(ctx context.Context, paths []string) (event.GitAction, error) {
	return g.do(ctx, func(r *git.Repo) (event.GitAction, error) { return r.Revert(ctx, paths) })
}

// Restore brings back snapshot id (git.Repo.Restore).
func (g *Git) Restore(ctx context.Context, id string) (event.GitAction, error) {
	return g.do(ctx, func(r *git.Repo) (event.GitAction, error) { return r.Restore(ctx, id) })
}

// ErrNothingToUndo is returned by Undo when no snapshot is known.
var ErrNothingToUndo = errors.New("nothing to undo: no git action has been made from flightdeck on this checkout")

// Undo restores the snapshot taken before the last action (made here, or
// the newest snapshot on the host when none was made here yet). Undoing
// an undo redoes: the restore's own snapshot becomes the next undo.
func (g *Git) Undo(ctx context.Context) (event.GitAction, error) {
	id, _ := g.LastSnapshot()
	if id == "" {
		return event.GitAction{}, ErrNothingToUndo
	}
	return g.Restore(ctx, id)
}

// LastSnapshot returns the snapshot Undo would restore and why it was
// taken ("checkout 3207427"); "" when none. It does no I/O.
func (g *Git) LastSnapshot() (id, reason string) {
	g.undoMu.Lock()
	defer g.undoMu.Unlock()
	return g.undo, g.undoWhy
}

// Idle waits until no git action or poll runs, or ctx ends, and reports
// whether it is idle. busy is called first when one is running (to say
// why quitting waits). A cockpit calls it before closing the host, so a
// started action is not cut off.
func (g *Git) Idle(ctx context.Context, busy func()) bool {
	if g.mu.TryLock() {
		g.mu.Unlock()
		return true
	}
	if busy != nil {
		busy()
	}
	done := make(chan struct{})
	go func() { g.mu.Lock(); g.mu.Unlock(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
