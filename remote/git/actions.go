package git

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Every action below follows one pattern (act): read HEAD, take a
// Snapshot, make the change, read HEAD again. It returns a non-nil error
// only when the action was not attempted (a refused ref or path, a failed
// snapshot, a lost connection before the change); when git refused or
// failed partway, the Action comes back with Err set and a nil error, and
// its Snapshot undoes whatever happened.

// act runs do between a snapshot (of the present plus the extra paths,
// and those listed in extraFile on the host)
// and a HEAD read. do gets the snapshot and returns git's words, any
// conflicted paths, and its error. Lines of git's words that start with
// "note: " become Action.Notes.
//
// Once the snapshot is taken, the change runs to its end even if ctx is
// cancelled (a quitting cockpit): a change cut in the middle is the one
// way an action could leave the checkout half-done.
func (r *Repo) act(ctx context.Context, op string, args []string, reason, extraFile string, extra []string, do func(context.Context, Snapshot) (string, []string, error)) (event.GitAction, error) {
	a := event.GitAction{Op: op, Args: args, Started: time.Now()}
	before, _, err := r.head(ctx)
	if err != nil {
		return a, err
	}
	a.From = before
	snap, err := r.snapshot(ctx, reason, extraFile, extra)
	if err != nil {
		return a, fmt.Errorf("%s not done: %w", op, err)
	}
	a.Snapshot = snap.ID
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	defer cancel()
	out, conflict, derr := do(dctx, snap)
	a.Output, a.Conflict = out, conflict
	for _, l := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(l), "note: "); ok {
			a.Notes = append(a.Notes, n)
		}
	}
	if derr != nil {
		a.Err = derr.Error()
	}
	if a.To, a.Branch, err = r.head(dctx); err != nil && a.Err == "" {
		a.Err = "done, but HEAD could not be read after: " + err.Error()
	}
	if snap.Skipped > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("%d untracked file(s) of %d MiB or more were not copied into the snapshot (skipped.list in %s): revert and restore leave them alone", snap.Skipped, BigFile>>20, snap.Dir))
	}
	r.prune(dctx)
	a.Took = time.Since(a.Started)
	return a, nil
}

// ErrUnmerged is wrapped by the error of an action refused because the
// checkout has unmerged paths (a merge or stash apply that conflicted):
// git would refuse it too, with words that are easy to misread.
var ErrUnmerged = errors.New("unmerged paths")

// clean refuses an action while paths are unmerged, naming them, and
// returns the status it read.
func (r *Repo) clean(ctx context.Context, op string) (event.GitStatus, error) {
	st, err := r.Status(ctx, 1)
	if err != nil {
		return st, err
	}
	var un []string
	for _, f := range st.Files {
		if f.Conflicted() {
			un = append(un, f.Path)
		}
	}
	if len(un) > 0 {
		return st, unmergedError(op, un)
	}
	return st, nil
}

func unmergedError(op string, paths []string) error {
	return fmt.Errorf("%s: %s unmerged — resolve (edit, then git add), revert the file, or undo first: %w", op, strings.Join(paths, ", "), ErrUnmerged)
}

// head returns HEAD's commit id and the checked-out branch ("" detached).
func (r *Repo) head(ctx context.Context) (id, branch string, err error) {
	rp, err := r.git("rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", "", err
	}
	sr, _ := r.git("symbolic-ref", "-q", "HEAD")
	res, err := r.Host.Run(ctx, rp+" && { "+sr+" || true; }", nil)
	if err != nil {
		return "", "", wrapErr([]string{"rev-parse"}, res, err)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if !IsCommitID(lines[0]) {
		return "", "", fmt.Errorf("git rev-parse HEAD: unexpected output %q", truncate(res.Stdout))
	}
	if len(lines) > 1 {
		branch = strings.TrimPrefix(lines[1], "refs/heads/")
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
// (commit id, tag, HEAD~2, origin/main) detached at its commit, found as
// Preview finds it (a branch wins over a tag of the same name, as git
// checkout has it). Git refuses when dirty files would be overwritten
// (Action.Err says which; Preview.Blocking lists them beforehand); other
// uncommitted changes are carried over, as git does. Ignored files the
// target tracks (Preview.Overwrites) are saved in the snapshot first.
// Errors: ErrBadRef, ErrUnmerged, the host's.
func (r *Repo) Checkout(ctx context.Context, ref string) (event.GitAction, error) {
	none := event.GitAction{Op: "checkout", Args: []string{ref}}
	p, err := r.Preview(ctx, ref, 1)
	if err != nil {
		return none, err
	}
	if len(p.Unmerged) > 0 {
		return none, unmergedError("checkout", p.Unmerged)
	}
	a, err := r.act(ctx, "checkout", []string{ref}, "checkout "+ref, "", p.Overwrites, func(ctx context.Context, _ Snapshot) (string, []string, error) {
		if p.Branch != "" {
			out, err := r.gitDo(ctx, "checkout", "-q", p.Branch, "--")
			return out, nil, err
		}
		out, err := r.gitDo(ctx, "checkout", "-q", "--detach", p.To.ID, "--")
		return out, nil, err
	})
	if a.OK() && a.To != a.From && a.To == p.To.ID {
		// What the journal and its reports name as the change.
		a.FilesTotal = len(p.Files)
		for _, c := range p.Files[:min(len(p.Files), MaxActionFiles)] {
			a.Files = append(a.Files, c.Path)
		}
	}
	return a, err
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

// ErrNothingToStash is returned by Stash for a clean tree (or one with
// only untracked files, when they are not to be stashed): nothing is done.
var ErrNothingToStash = errors.New("nothing to stash: no local changes")

// Stash stashes the uncommitted changes under name (`git stash push
// --message=NAME`), with the untracked files too when untracked is set.
// A clean tree returns ErrNothingToStash, without a snapshot.
func (r *Repo) Stash(ctx context.Context, name string, untracked bool) (event.GitAction, error) {
	if err := CheckMessage(name); err != nil {
		return event.GitAction{Op: "stash", Args: []string{name}}, err
	}
	args := []string{"stash", "push", "--quiet", "--message=" + name}
	if untracked {
		args = append(args, "--include-untracked")
	}
	st, err := r.clean(ctx, "stash")
	if err != nil {
		return event.GitAction{Op: "stash", Args: []string{name}}, err
	}
	if !slices.ContainsFunc(st.Files, func(f event.GitFile) bool { return untracked || !f.Untracked() }) {
		return event.GitAction{Op: "stash", Args: []string{name}}, ErrNothingToStash
	}
	return r.act(ctx, "stash", []string{name}, "stash "+name, "", nil, func(ctx context.Context, _ Snapshot) (string, []string, error) {
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
if [ "$cmd" = drop ]; then g stash drop "stash@{$i}"; exit; fi
# With --index the staged state comes back too; git refuses that when the
# index cannot take it, before touching anything: then without.
e=$(mktemp) || exit
if ! g stash "$cmd" --index "stash@{$i}" 2> "$e"; then
  if grep -q -- '--index' "$e"; then
    rm -f -- "$e"
    # Without --index the staged state is lost: apply, and keep the stash.
    echo "note: the staged state could not be restored, so the changes are back unstaged and the stash is kept" >&2
    g stash apply "stash@{$i}"; exit
  fi
  cat -- "$e" >&2; rm -f -- "$e"; exit 1
fi
rm -f -- "$e"
`

// StashApply applies the stash whose commit id is id (a full id, as in
// Stash.ID); pop also drops it when the apply succeeded. A conflict stops
// with Action.Conflict listing the unmerged paths and the stash kept (git
// keeps it on a failed pop); the snapshot taken before undoes the apply.
func (r *Repo) StashApply(ctx context.Context, id string, pop bool) (event.GitAction, error) {
	op, cmd := "stash-apply", "apply"
	if pop {
		op, cmd = "stash-pop", "pop"
	}
	return r.stashOp(ctx, op, cmd, id)
}

// StashDrop drops the stash whose commit id is id. The snapshot taken
// before records it, so restoring that snapshot brings the stash back.
func (r *Repo) StashDrop(ctx context.Context, id string) (event.GitAction, error) {
	return r.stashOp(ctx, "stash-drop", "drop", id)
}

func (r *Repo) stashOp(ctx context.Context, op, cmd, id string) (event.GitAction, error) {
	none := event.GitAction{Op: op, Args: []string{id}}
	if !IsCommitID(id) {
		return none, fmt.Errorf("%q is not a stash commit id (40 hex digits): %w", id, ErrBadRef)
	}
	var st event.GitStatus
	var err error
	if cmd == "drop" {
		st, err = r.Status(ctx, 1)
	} else {
		st, err = r.clean(ctx, "stash "+cmd)
	}
	if err != nil {
		return none, err
	}
	i := slices.IndexFunc(st.Stashes, func(s event.Stash) bool { return s.ID == id })
	if i < 0 {
		return none, fmt.Errorf("no stash with commit id %s (dropped already?): %w", id[:12], ErrBadRef)
	}
	args := []string{id, st.Stashes[i].Message}
	return r.act(ctx, op, args, op+" "+st.Stashes[i].Message, "", nil, func(ctx context.Context, _ Snapshot) (string, []string, error) {
		res, err := r.script(ctx, "stash "+cmd, stashScript, r.Path, id, cmd)
		out := combined(res)
		if err == nil || cmd == "drop" {
			return out, nil, err
		}
		after, serr := r.Status(ctx, 1)
		if serr != nil {
			return out, nil, err
		}
		var conflict []string
		for _, f := range after.Files {
			if f.Conflicted() {
				conflict = append(conflict, f.Path)
			}
		}
		if len(conflict) > 0 {
			msg := fmt.Sprintf("stash %s conflicted in %s: the stash is kept; undo restores the tree as it was", cmd, strings.Join(conflict, ", "))
			if strings.Contains(out, "already exists") {
				msg += "; untracked files of the stash that already exist were not restored"
			}
			err = errors.New(msg)
		}
		return out, conflict, err
	})
}

// Revert restores paths (relative to the repository root, each a dirty
// file of Status) to HEAD — index and worktree — and removes those that are
// untracked, leaving every other file alone. A renamed file's old path is
// restored with it. Errors: ErrBadPath for a refused path, an error naming
// a path that has no uncommitted change (also wrapping ErrBadPath).
func (r *Repo) Revert(ctx context.Context, paths []string) (event.GitAction, error) {
	a := event.GitAction{Op: "revert", Args: paths}
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
	dirty := make(map[string]event.GitFile, len(st.Files))
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
	return r.act(ctx, "revert", paths, "revert "+strings.Join(paths, " "), "", nil, func(ctx context.Context, pre Snapshot) (string, []string, error) {
		var outs []string
		if len(tracked) > 0 {
			out, err := r.gitDo(ctx, append([]string{"--literal-pathspecs", "restore", "--source=HEAD", "--staged", "--worktree", "--"}, tracked...)...)
			if err != nil {
				return out, nil, err
			}
			outs = append(outs, out)
		}
		if len(untracked) > 0 {
			if skipped := r.skipped(ctx, pre); len(skipped) > 0 {
				for _, p := range untracked {
					if slices.Contains(skipped, p) {
						return "", nil, fmt.Errorf("%s is %d MiB or more and was not saved in the snapshot: not deleting it (delete it yourself if you mean it)", p, BigFile>>20)
					}
				}
			}
			out, err := r.gitDo(ctx, append([]string{"--literal-pathspecs", "clean", "-f", "-q", "--"}, untracked...)...)
			if err != nil {
				return out, nil, err
			}
			outs = append(outs, out)
		}
		return strings.TrimSpace(strings.Join(outs, "\n")), nil, nil
	})
}

// skipped lists the untracked files a snapshot did not copy (BigFile).
func (r *Repo) skipped(ctx context.Context, s Snapshot) []string {
	if s.Skipped == 0 {
		return nil
	}
	cmd, err := remote.Command("cat", "--", path.Join(s.Dir, "skipped.list"))
	if err != nil {
		return nil
	}
	res, err := r.Host.Run(ctx, cmd, nil)
	if err != nil {
		return nil
	}
	var out []string
	for _, rec := range records(res.Stdout) {
		out = append(out, string(rec))
	}
	return out
}
