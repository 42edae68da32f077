package git

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// The diff options of a snapshot: patches that `git apply` takes back
// whatever the user's configuration says (no external diff or textconv,
// standard a/ b/ prefixes, whole tree, binary as full-index binary hunks).
const diffOpts = `--binary --no-ext-diff --no-textconv --no-color --no-relative --src-prefix=a/ --dst-prefix=b/ --submodule=short --ignore-submodules=none`

// snapshotScript saves the checkout's uncommitted work in a new directory
// DIR (made as DIR.tmp, then renamed, so a listed snapshot is complete):
// meta.json (META, written by flightdeck), HEAD (commit id, empty when the
// branch has no commit yet), BRANCH (full ref name, empty when detached),
// staged.patch, unstaged.patch and worktree.patch (the diff against HEAD:
// the one file to `git apply` by hand), untracked.list and untracked.tar
// (the untracked, not ignored files, NUL-separated), status (porcelain v1
// -z, to verify a restore) and stashes (the stash list: "ID MESSAGE"
// lines, so a restore can bring back a dropped or popped stash). It prints
// "files untracked bytes". Sent on stdin to "sh -s -- TOP DIR META".
const snapshotScript = `top=$1 dir=$2 meta=$3
g() { git -C "$top" -c core.quotepath=off -c color.ui=false -c diff.noprefix=false -c diff.mnemonicPrefix=false --no-pager "$@"; }
umask 077
t="$dir.tmp"
rm -rf -- "$t" && mkdir -p -- "$t" || exit
printf '%s\n' "$meta" > "$t/meta.json" || exit
{ g rev-parse -q --verify 'HEAD^{commit}' || :; } > "$t/HEAD"
{ g symbolic-ref -q HEAD || :; } > "$t/BRANCH"
if [ -s "$t/HEAD" ]; then
  g diff ` + diffOpts + ` --cached HEAD > "$t/staged.patch" || exit
  g diff ` + diffOpts + ` HEAD > "$t/worktree.patch" || exit
else
  g diff ` + diffOpts + ` --cached > "$t/staged.patch" || exit
  : > "$t/worktree.patch"
fi
g diff ` + diffOpts + ` > "$t/unstaged.patch" || exit
g ls-files -z --others --exclude-standard > "$t/untracked.list" || exit
if [ -s "$t/untracked.list" ]; then
  (cd -- "$top" && tar --null -T "$t/untracked.list" -cf "$t/untracked.tar") || exit
fi
g --no-optional-locks status --porcelain=v1 -z --untracked-files=all > "$t/status" || exit
g stash list --format='%H %gs' > "$t/stashes" || exit
mv -- "$t" "$dir" || exit
files=$(tr -dc '\000' < "$dir/status" | wc -c)
untracked=$(tr -dc '\000' < "$dir/untracked.list" | wc -c)
bytes=$(cat "$dir/staged.patch" "$dir/unstaged.patch" "$dir/untracked.tar" 2>/dev/null | wc -c)
echo $files $untracked $bytes
`

// snapshotMeta is meta.json of a snapshot.
type snapshotMeta struct {
	ID     string    `json:"id"`
	Reason string    `json:"reason"`
	Time   time.Time `json:"time"`
	Repo   string    `json:"repo"`
}

// snapshotID matches the ids that newID makes.
var snapshotID = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}\.[0-9]{3}-[0-9a-f]{4}$`)

// newID returns "20261129-215807.123-3f9a": local time to the millisecond,
// then two random bytes; ids sort by time.
func newID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return now.Format("20060102-150405.000") + "-" + hex.EncodeToString(b[:])
}

// Snapshot saves every byte of the checkout's uncommitted work in a new
// directory under r.SnapshotDir: the staged and unstaged binary diffs
// against HEAD, a tar of the untracked (not ignored) files, the HEAD
// commit, the branch and the stash list; reason says why ("checkout
// 3207427"). Ignored files (build outputs, .venv) are not saved. Errors:
// the host's error, or a *GitError naming the step that failed (a full
// disk, an unreadable file); a failed snapshot leaves only a .tmp
// directory and the caller must not act.
func (r *Repo) Snapshot(ctx context.Context, reason string) (Snapshot, error) {
	now := time.Now()
	id := newID(now)
	meta, err := json.Marshal(snapshotMeta{ID: id, Reason: reason, Time: now, Repo: r.Path})
	if err != nil {
		return Snapshot{}, err
	}
	dir := path.Join(r.SnapshotDir, id)
	res, err := r.script(ctx, "snapshot", snapshotScript, r.Path, dir, string(meta))
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of %s: %w", r.Path, err)
	}
	f := strings.Fields(string(res.Stdout))
	s := Snapshot{ID: id, Dir: dir, Reason: reason, Time: now}
	if len(f) != 3 {
		return s, fmt.Errorf("snapshot of %s: unexpected output %q", r.Path, truncate(res.Stdout))
	}
	s.Files, _ = strconv.Atoi(f[0])
	s.Untracked, _ = strconv.Atoi(f[1])
	s.Bytes, _ = strconv.ParseInt(f[2], 10, 64)
	return s, r.fillHead(ctx, &s)
}

// fillHead reads HEAD and BRANCH of a snapshot directory.
func (r *Repo) fillHead(ctx context.Context, s *Snapshot) error {
	cmd, err := remote.Command("cat", "--", path.Join(s.Dir, "HEAD"), path.Join(s.Dir, "BRANCH"))
	if err != nil {
		return err
	}
	res, err := r.Host.Run(ctx, cmd, nil)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", s.ID, err)
	}
	lines := strings.Split(string(res.Stdout), "\n")
	if len(lines) > 0 {
		s.Head = strings.TrimSpace(lines[0])
	}
	if len(lines) > 1 {
		s.Branch = strings.TrimPrefix(strings.TrimSpace(lines[1]), "refs/heads/")
	}
	return nil
}

// listScript prints every complete snapshot under SD as "ID\037META\037HEAD
// BRANCH FILES UNTRACKED BYTES\036". Sent on stdin to "sh -s -- SD".
const listScript = `sd=$1
[ -d "$sd" ] || exit 0
for d in "$sd"/*; do
  [ -f "$d/meta.json" ] && [ -f "$d/status" ] || continue
  case $d in *.tmp) continue;; esac
  printf '%s\037' "${d##*/}"
  tr -d '\n' < "$d/meta.json"
  printf '\037%s %s %s %s %s\036' "$(cat "$d/HEAD")" "$(cat "$d/BRANCH")" \
    "$(tr -dc '\000' < "$d/status" | wc -c)" "$(tr -dc '\000' < "$d/untracked.list" | wc -c)" \
    "$(cat "$d/staged.patch" "$d/unstaged.patch" "$d/untracked.tar" 2>/dev/null | wc -c)"
done
`

// Snapshots lists the repository's snapshots, newest first. Errors: the
// host's error; a snapshot directory that cannot be parsed is skipped.
func (r *Repo) Snapshots(ctx context.Context) ([]Snapshot, error) {
	res, err := r.script(ctx, "snapshots", listScript, r.SnapshotDir)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	return parseSnapshots(r.SnapshotDir, res.Stdout), nil
}

func parseSnapshots(dir string, out []byte) []Snapshot {
	var list []Snapshot
	for _, rec := range bytes.Split(out, []byte{0x1e}) {
		f := bytes.SplitN(rec, []byte{0x1f}, 3)
		if len(f) != 3 || !snapshotID.Match(f[0]) {
			continue
		}
		var m snapshotMeta
		if json.Unmarshal(f[1], &m) != nil || m.ID != string(f[0]) {
			continue
		}
		s := Snapshot{ID: m.ID, Dir: path.Join(dir, m.ID), Reason: m.Reason, Time: m.Time}
		w := strings.Fields(string(f[2]))
		if len(w) == 5 || len(w) == 4 { // BRANCH is empty when detached
			s.Head = w[0]
			if len(w) == 5 {
				s.Branch, w = strings.TrimPrefix(w[1], "refs/heads/"), append(w[:1], w[2:]...)
			}
			s.Files, _ = strconv.Atoi(w[1])
			s.Untracked, _ = strconv.Atoi(w[2])
			s.Bytes, _ = strconv.ParseInt(w[3], 10, 64)
		}
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b Snapshot) int { return strings.Compare(b.ID, a.ID) })
	return list
}

// ErrBadSnapshot is wrapped by the error for a snapshot id that is
// malformed or not on the host.
var ErrBadSnapshot = errors.New("no such snapshot")

// restoreScript puts the checkout back in the state saved in DIR: HEAD
// (the saved branch when it still points at the saved commit, else that
// commit detached), the index and worktree (the present is discarded with
// checkout -f and clean: the caller has snapshotted it), the untracked
// files, and any saved stash that is no longer in the list. It then
// compares the porcelain status with the saved one and prints "same" or
// "differs". Sent on stdin to "sh -s -- TOP DIR".
const restoreScript = `top=$1 dir=$2
g() { git -C "$top" -c core.quotepath=off -c color.ui=false --no-pager "$@"; }
[ -f "$dir/status" ] || { echo "no snapshot $dir" >&2; exit 4; }
head=$(cat "$dir/HEAD") && branch=$(cat "$dir/BRANCH") || exit
if [ -z "$head" ]; then echo "snapshot of a branch without commits: restore it by hand from $dir" >&2; exit 1; fi
g rev-parse -q --verify "$head^{commit}" >/dev/null || { echo "commit $head is no longer in the repository" >&2; exit 1; }
if [ -n "$branch" ] && [ "$(g rev-parse -q --verify "$branch")" = "$head" ]; then
  g checkout -q -f "${branch#refs/heads/}" -- || exit
else
  [ -n "$branch" ] && echo "note: ${branch#refs/heads/} has moved since; restored at $head, detached" >&2
  g checkout -q -f --detach "$head" -- || exit
fi
g reset -q --hard "$head" || exit
g clean -f -d -q || exit
if [ -s "$dir/staged.patch" ]; then g apply --index --binary --whitespace=nowarn "$dir/staged.patch" || exit; fi
if [ -s "$dir/unstaged.patch" ]; then g apply --binary --whitespace=nowarn "$dir/unstaged.patch" || exit; fi
if [ -s "$dir/untracked.list" ]; then tar -xpf "$dir/untracked.tar" -C "$top" || exit; fi
g stash list --format=%H > "$dir.now" 2>/dev/null
awk '{ l[NR] = $0 } END { for (i = NR; i > 0; i--) print l[i] }' "$dir/stashes" 2>/dev/null | while read -r id msg; do
  grep -qx "$id" "$dir.now" || { g stash store -m "$msg" "$id" && echo "note: stash brought back: $msg" >&2; }
done
rm -f -- "$dir.now"
g --no-optional-locks status --porcelain=v1 -z --untracked-files=all > "$dir.after" || exit
if cmp -s "$dir/status" "$dir.after"; then echo same; else echo differs; fi
rm -f -- "$dir.after"
`

// Restore brings back the checkout saved in snapshot id: HEAD and branch,
// index, worktree and untracked files, and stashes dropped or popped since.
// It first snapshots the present (Action.Snapshot), so a restore is itself
// undoable. Errors: a refused id (not of the form newID makes); an Action
// with Err set when the restore failed partway (the present is in
// Action.Snapshot).
func (r *Repo) Restore(ctx context.Context, id string) (Action, error) {
	if !snapshotID.MatchString(id) {
		return Action{}, fmt.Errorf("%q is not a snapshot id (like 20261129-215807.123-3f9a): %w", id, ErrBadSnapshot)
	}
	dir := path.Join(r.SnapshotDir, id)
	test, err := remote.Command("test", "-f", path.Join(dir, "status"))
	if err != nil {
		return Action{}, err
	}
	if _, err := r.Host.Run(ctx, test, nil); err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) {
			return Action{Op: "restore", Args: []string{id}}, fmt.Errorf("%s is not in %s: %w", id, r.SnapshotDir, ErrBadSnapshot)
		}
		return Action{Op: "restore", Args: []string{id}}, err
	}
	return r.act(ctx, "restore", []string{id}, "restore "+id, func(ctx context.Context) (string, []string, error) {
		res, err := r.script(ctx, "restore", restoreScript, r.Path, dir)
		out := combined(res)
		var ge *GitError
		if errors.As(err, &ge) && ge.Code == 4 {
			return out, nil, fmt.Errorf("%s: %w", id, ErrBadSnapshot)
		}
		if err != nil {
			return out, nil, err
		}
		if strings.HasSuffix(out, "differs") {
			return out, nil, fmt.Errorf("restored snapshot %s, but git status differs from the saved one (compare with %s)", id, dir)
		}
		return out, nil, nil
	})
}
