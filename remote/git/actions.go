package git

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Every action below follows one pattern (act): read HEAD, take a
// Snapshot, make the change, read HEAD again. It returns a non-nil error
// only when the action was not attempted (a refused ref or path, a failed
// snapshot, a lost connection before the change); when git refused or
// failed partway, the Action comes back with Err set and a nil error, and
// its Snapshot undoes whatever happened.

// act runs do between a snapshot and a HEAD read. do returns git's words,
// any conflicted paths, and its error.
func (r *Repo) act(ctx context.Context, op string, args []string, reason string, do func(context.Context) (string, []string, error)) (Action, error) {
	a := Action{Op: op, Args: args, Started: time.Now()}
	before, _, err := r.head(ctx)
	if err != nil {
		return a, err
	}
	a.From = before
	snap, err := r.Snapshot(ctx, reason)
	if err != nil {
		return a, fmt.Errorf("%s not done: %w", op, err)
	}
	a.Snapshot = snap.ID
	out, conflict, derr := do(ctx)
	a.Output, a.Conflict = out, conflict
	if derr != nil {
		a.Err = derr.Error()
	}
	// The HEAD read after the change uses a fresh context: a caller that
	// gave up must still learn where HEAD is when the change went through.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if a.To, a.Branch, err = r.head(hctx); err != nil && a.Err == "" {
		a.Err = "done, but HEAD could not be read after: " + err.Error()
	}
	a.Took = time.Since(a.Started)
	return a, nil
}

// head returns HEAD's commit id and the checked-out branch ("" detached).
func (r *Repo) head(ctx context.Context) (id, branch string, err error) {
	rp, err := r.git("rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", "", err
	}
	sr, _ := r.git("symbolic-ref", "-q", "--short", "HEAD")
	res, err := r.Host.Run(ctx, rp+" && { "+sr+" || true; }", nil)
	if err != nil {
		return "", "", wrapErr([]string{"rev-parse"}, res, err)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if !isHexID(lines[0]) {
		return "", "", fmt.Errorf("git rev-parse HEAD: unexpected output %q", truncate(res.Stdout))
	}
	if len(lines) > 1 {
		branch = lines[1]
	}
	return lines[0], branch, nil
}

// gitDo runs one git command for an action and returns its combined
// output (clipped) and error.
func (r *Repo) gitDo(ctx context.Context, args ...string) (string, error) {
	cmd, err := r.git(args...)
	if err != nil {
		return "", err
	}
	res, err := r.Host.Run(ctx, cmd, nil)
	out := combined(res)
	if err != nil {
		return out, wrapErr(args, res, err)
	}
	return out, nil
}

// Checkout checks out ref: a local branch by its name, anything else
// (commit id, tag, HEAD~2, origin/main) detached at its commit, which
// Resolve finds first. Git refuses when dirty files would be overwritten
// (Action.Err says which; Preview.Blocking lists them beforehand); other
// uncommitted changes are carried over, as git does.
func (r *Repo) Checkout(ctx context.Context, ref string) (Action, error) {
	to, err := r.Resolve(ctx, ref)
	if err != nil {
		return Action{Op: "checkout", Args: []string{ref}}, err
	}
	branch, err := r.localBranch(ctx, ref)
	if err != nil {
		return Action{Op: "checkout", Args: []string{ref}}, err
	}
	return r.act(ctx, "checkout", []string{ref}, "checkout "+ref, func(ctx context.Context) (string, []string, error) {
		if branch != "" {
			out, err := r.gitDo(ctx, "checkout", "-q", branch, "--")
			return out, nil, err
		}
		out, err := r.gitDo(ctx, "checkout", "-q", "--detach", to, "--")
		return out, nil, err
	})
}

// CheckMessage refuses a stash name with control characters or invalid
// UTF-8 (it goes into a reflog line).
func CheckMessage(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("stash name is not valid UTF-8")
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("stash name %q has a control character", s)
		}
	}
	return nil
}

// ErrNothingToStash is Action.Err of a stash of a clean tree.
var ErrNothingToStash = errors.New("nothing to stash: no local changes")

// Stash stashes the uncommitted changes under name (`git stash push
// --message=NAME`), with the untracked files too when untracked is set.
// A clean tree gives Action.Err ErrNothingToStash's text.
func (r *Repo) Stash(ctx context.Context, name string, untracked bool) (Action, error) {
	if err := CheckMessage(name); err != nil {
		return Action{Op: "stash", Args: []string{name}}, err
	}
	args := []string{"stash", "push", "--quiet", "--message=" + name}
	if untracked {
		args = append(args, "--include-untracked")
	}
	return r.act(ctx, "stash", []string{name}, "stash "+name, func(ctx context.Context) (string, []string, error) {
		before, _ := r.stashTop(ctx)
		out, err := r.gitDo(ctx, args...)
		if err != nil {
			return out, nil, err
		}
		if after, _ := r.stashTop(ctx); after == before {
			return out, nil, ErrNothingToStash
		}
		return out, nil, nil
	})
}

// stashTop returns the commit id of stash@{0}, "" when there is none.
func (r *Repo) stashTop(ctx context.Context) (string, error) {
	out, err := r.run(ctx, "rev-parse", "-q", "--verify", "refs/stash")
	var ge *GitError
	if errors.As(err, &ge) {
		return "", nil
	}
	return strings.TrimSpace(string(out)), err
}

// stashScript runs `git stash CMD stash@{N}` for the N whose commit id is
// ID, found in the same command so a shift of the list cannot pick another
// entry. Exit 3: no such stash. Sent on stdin to "sh -s -- TOP ID CMD".
const stashScript = `top=$1 id=$2 cmd=$3
g() { git -C "$top" -c core.quotepath=off -c color.ui=false --no-pager "$@"; }
i=$(g stash list --format=%H | awk -v id="$id" '$0 == id { print NR - 1; exit }')
[ -n "$i" ] || { echo "no stash with commit id $id (dropped already?)" >&2; exit 3; }
g stash "$cmd" "stash@{$i}"
`

// StashApply applies the stash whose commit id is id (a full id, as in
// Stash.ID); pop also drops it when the apply succeeded. A conflict stops
// with Action.Conflict listing the unmerged paths and the stash kept (git
// keeps it on a failed pop); the snapshot taken before undoes the apply.
func (r *Repo) StashApply(ctx context.Context, id string, pop bool) (Action, error) {
	op, cmd := "stash-apply", "apply"
	if pop {
		op, cmd = "stash-pop", "pop"
	}
	return r.stashOp(ctx, op, cmd, id)
}

// StashDrop drops the stash whose commit id is id. The snapshot taken
// before records it, so restoring that snapshot brings the stash back.
func (r *Repo) StashDrop(ctx context.Context, id string) (Action, error) {
	return r.stashOp(ctx, "stash-drop", "drop", id)
}

func (r *Repo) stashOp(ctx context.Context, op, cmd, id string) (Action, error) {
	if !isHexID(id) {
		return Action{Op: op, Args: []string{id}}, fmt.Errorf("%q is not a stash commit id (40 hex digits): %w", id, ErrBadRef)
	}
	return r.act(ctx, op, []string{id}, op+" "+id[:12], func(ctx context.Context) (string, []string, error) {
		res, err := r.script(ctx, "stash "+cmd, stashScript, r.Path, id, cmd)
		out := combined(res)
		if err == nil || cmd == "drop" {
			return out, nil, err
		}
		st, serr := r.Status(ctx, 1)
		if serr != nil {
			return out, nil, err
		}
		var conflict []string
		for _, f := range st.Files {
			if f.Conflicted() {
				conflict = append(conflict, f.Path)
			}
		}
		if len(conflict) > 0 {
			err = fmt.Errorf("stash %s conflicted in %s: the stash is kept; undo restores the tree as it was", cmd, strings.Join(conflict, ", "))
		}
		return out, conflict, err
	})
}

// Revert restores paths (relative to the repository root, each a dirty
// file of Status) to HEAD — index and worktree — and removes those that are
// untracked, leaving every other file alone. A renamed file's old path is
// restored with it. Errors: ErrBadPath for a refused path, an error naming
// a path that has no uncommitted change (also wrapping ErrBadPath).
func (r *Repo) Revert(ctx context.Context, paths []string) (Action, error) {
	a := Action{Op: "revert", Args: paths}
	if len(paths) == 0 {
		return a, errors.New("revert: no paths given")
	}
	for _, p := range paths {
		if err := CheckPath(p); err != nil {
			return a, err
		}
	}
	st, err := r.Status(ctx, 1)
	if err != nil {
		return a, err
	}
	dirty := make(map[string]File, len(st.Files))
	for _, f := range st.Files {
		dirty[f.Path] = f
	}
	var tracked, untracked []string
	for _, p := range paths {
		f, ok := dirty[p]
		switch {
		case !ok:
			return a, fmt.Errorf("revert: %q has no uncommitted change: %w", p, ErrBadPath)
		case f.Untracked():
			untracked = append(untracked, p)
		default:
			tracked = append(tracked, p)
			if f.Orig != "" {
				tracked = append(tracked, f.Orig)
			}
		}
	}
	return r.act(ctx, "revert", paths, "revert "+strings.Join(paths, " "), func(ctx context.Context) (string, []string, error) {
		var outs []string
		if len(tracked) > 0 {
			out, err := r.gitDo(ctx, append([]string{"--literal-pathspecs", "restore", "--source=HEAD", "--staged", "--worktree", "--"}, tracked...)...)
			if err != nil {
				return out, nil, err
			}
			outs = append(outs, out)
		}
		if len(untracked) > 0 {
			out, err := r.gitDo(ctx, append([]string{"--literal-pathspecs", "clean", "-f", "-q", "--"}, untracked...)...)
			if err != nil {
				return out, nil, err
			}
			outs = append(outs, out)
		}
		return strings.TrimSpace(strings.Join(outs, "\n")), nil, nil
	})
}
