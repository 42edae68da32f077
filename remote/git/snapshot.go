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
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The diff options of a snapshot: patches that `git apply` takes back
// whatever the user's configuration says (no external diff or textconv,
// standard a/ b/ prefixes, whole tree, binary as full-index binary hunks).
const diffOpts = `--binary --no-ext-diff --no-textconv --no-color --no-relative --src-prefix=a/ --dst-prefix=b/ --submodule=short --ignore-submodules=none`

// BigFile is the size from which an untracked file is not copied into a
// snapshot (a profiler dump or a model checkpoint in the checkout would
// fill the host's disk at every action): 256 MiB. Such a file is listed in
// the snapshot's skipped.list, and no action removes it (a restore leaves
// it alone; a revert of it is refused).
const BigFile = 256 << 20

// KeepSnapshots is how many snapshots are always kept; older ones are
// pruned once they are a week old.
const KeepSnapshots = 50

// snapshotScript saves the checkout's uncommitted work in a new directory
// DIR (made as DIR.tmp, then renamed, so a listed snapshot is complete):
//
//	meta.json        META, written by flightdeck (id, reason, time)
//	HEAD, BRANCH     the commit id (empty before the first commit) and the full branch ref (empty when detached)
//	staged.patch     git diff --binary --cached HEAD: the index, put back with git apply --cached
//	unstaged.patch   git diff --binary: index to worktree, for people
//	worktree.patch   git diff --binary HEAD: everything, the one patch to git apply by hand
//	tracked.list     dirty tracked paths (diff --name-only HEAD), assume-unchanged and
//	                 skip-worktree files, and the EXTRA paths (ignored files a checkout will
//	                 replace), NUL-separated
//	tracked.tar      the worktree bytes of those that exist (present.list); absent.list the others
//	unmerged.info    the conflict stages of unmerged paths, for update-index -z --index-info
//	untracked.list   untracked, not ignored files below BIG bytes, and untracked.tar of them;
//	                 skipped.list the bigger ones (not copied)
//	gitstate/        MERGE_HEAD, MERGE_MSG, ... of an operation in progress
//	status           git status --porcelain=v1 -z, to verify a restore
//	stashes          the stash list, "ID MESSAGE" lines
//	summary          "FILES UNTRACKED SKIPPED KIB"
//
// It prints the summary. Sent on stdin to "sh -s -- TOP GITDIR DIR META BIG
// EXTRAFILE EXTRA..." (EXTRAFILE: a NUL-separated list of more paths on
// the host, or ""). A path that is a directory is saved with everything
// in it (a directory that replaced a tracked file keeps its contents). Signals that a dropped connection or a quitting cockpit send
// are ignored: a snapshot, once started, completes.
const snapshotScript = `top=$1 gd=$2 dir=$3 meta=$4 big=$5 xf=$6
shift 6
trap '' HUP INT TERM PIPE
g() { git -C "$top" -c core.quotepath=off -c color.ui=false -c diff.noprefix=false -c diff.mnemonicPrefix=false --no-pager "$@"; }
umask 077
t="$dir.tmp"
rm -rf -- "$t" && mkdir -p -- "$t/gitstate" || exit
printf '%s\n' "$meta" > "$t/meta.json" || exit
{ g rev-parse -q --verify 'HEAD^{commit}' || :; } > "$t/HEAD"
{ g symbolic-ref -q HEAD || :; } > "$t/BRANCH"
if [ -s "$t/HEAD" ]; then
  g diff ` + diffOpts + ` --cached HEAD > "$t/staged.patch" || exit
  g diff ` + diffOpts + ` HEAD > "$t/worktree.patch" || exit
  g diff --no-ext-diff --no-renames --name-only -z HEAD > "$t/tracked.list" || exit
else
  g diff ` + diffOpts + ` --cached > "$t/staged.patch" || exit
  : > "$t/worktree.patch"
  g ls-files -z > "$t/tracked.list" || exit
fi
g diff ` + diffOpts + ` > "$t/unstaged.patch" || exit
g ls-files -z -v | xargs -0 sh -c 'for r; do case $r in [a-z]\ *|S\ *) printf "%s\0" "${r#??}";; esac; done' sh >> "$t/tracked.list" || exit
for p; do printf '%s\0' "$p"; done >> "$t/tracked.list"
if [ -n "$xf" ] && [ -f "$xf" ]; then cat -- "$xf" >> "$t/tracked.list" || exit; fi
g ls-files -z -u | xargs -0 sh -c 'for r; do printf "0 0000000000000000000000000000000000000000\t%s\0" "${r#*	}"; done' sh > "$t/unmerged.info" || exit
g ls-files -z -u >> "$t/unmerged.info" || exit
for f in MERGE_HEAD MERGE_MSG MERGE_MODE MERGE_RR AUTO_MERGE CHERRY_PICK_HEAD REVERT_HEAD; do
  if [ -f "$gd/$f" ]; then cp -p -- "$gd/$f" "$t/gitstate/" || exit; fi
done
g ls-files -z --others --exclude-standard > "$t/untracked.all" || exit
cd -- "$top" || exit
xargs -0 sh -c 'for p; do if [ -e "$p" ] || [ -h "$p" ]; then printf "%s\0" "$p" >&3; else printf "%s\0" "$p"; fi; done' sh < "$t/tracked.list" > "$t/absent.list" 3> "$t/present.list" || exit
if [ -s "$t/present.list" ]; then tar --null -T "$t/present.list" -cf "$t/tracked.tar" || exit; fi
xargs -0 sh -c 'b=$1; shift; for p; do if [ -f "$p" ] && [ ! -h "$p" ] && [ "$(wc -c < "$p")" -ge "$b" ]; then printf "%s\0" "$p" >&3; else printf "%s\0" "$p"; fi; done' sh "$big" < "$t/untracked.all" > "$t/untracked.list" 3> "$t/skipped.list" || exit
rm -f -- "$t/untracked.all"
if [ -s "$t/untracked.list" ]; then tar --null -T "$t/untracked.list" -cf "$t/untracked.tar" || exit; fi
g --no-optional-locks status --porcelain=v1 -z --untracked-files=all > "$t/status" || exit
g stash list --format='%H %gs' > "$t/stashes" || exit
files=$(g --no-optional-locks status --porcelain=v1 --untracked-files=all | wc -l)
n() { tr -dc '\000' < "$1" | wc -c; }
echo $files $(n "$t/untracked.list") $(n "$t/skipped.list") $(du -sk "$t" | cut -f1) > "$t/summary" || exit
mv -- "$t" "$dir" || exit
cat "$dir/summary"
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
// directory under r.SnapshotDir (see snapshotScript for its files): the
// index as a binary patch against HEAD, the worktree bytes of every dirty
// tracked file (and of assume-unchanged and skip-worktree files), the
// conflict stages of unmerged paths, the state of a merge in progress, the
// untracked (not ignored) files below BigFile, HEAD, the branch and the
// stash list; reason says why ("checkout 3207427"). extra are more paths
// (relative to the top level) to save, e.g. ignored files a checkout will
// replace. Ignored files are not saved otherwise. Errors: the host's
// error, or a *GitError naming the step that failed (a full disk, an
// unreadable file); a failed snapshot leaves only a .tmp directory, and
// the caller must not act.
func (r *Repo) Snapshot(ctx context.Context, reason string, extra ...string) (Snapshot, error) {
	return r.snapshot(ctx, reason, "", extra)
}

// snapshot is Snapshot with more paths also read from extraFile on the
// host (NUL-separated; "" for none).
func (r *Repo) snapshot(ctx context.Context, reason, extraFile string, extra []string) (Snapshot, error) {
	now := time.Now()
	id := newID(now)
	meta, err := json.Marshal(snapshotMeta{ID: id, Reason: reason, Time: now, Repo: r.Path})
	if err != nil {
		return Snapshot{}, err
	}
	dir := path.Join(r.SnapshotDir, id)
	args := append([]string{r.Path, r.GitDir, dir, string(meta), strconv.Itoa(BigFile), extraFile}, extra...)
	// Once started, a snapshot completes even if the caller gives up.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	defer cancel()
	res, err := r.script(sctx, "snapshot", snapshotScript, args...)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of %s: %w", r.Path, err)
	}
	s := Snapshot{ID: id, Dir: dir, Reason: reason, Time: now}
	if !parseSummary(&s, string(res.Stdout)) {
		return s, fmt.Errorf("snapshot of %s: unexpected output %q", r.Path, truncate(res.Stdout))
	}
	return s, r.fillHead(sctx, &s)
}

// parseSummary reads "FILES UNTRACKED SKIPPED KIB" into s.
func parseSummary(s *Snapshot, line string) bool {
	f := strings.Fields(line)
	if len(f) != 4 {
		return false
	}
	var n [4]int64
	for i, x := range f {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil || v < 0 {
			return false
		}
		n[i] = v
	}
	s.Files, s.Untracked, s.Skipped, s.Bytes = int(n[0]), int(n[1]), int(n[2]), n[3]<<10
	return true
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

// listScript prints every complete snapshot under SD as
// "ID\037META\037HEAD\037BRANCH\037SUMMARY\036" (small files only: a
// listing never reads a tar). Sent on stdin to "sh -s -- SD".
const listScript = `sd=$1
[ -d "$sd" ] || exit 0
for d in "$sd"/*; do
  case $d in *.tmp) continue;; esac
  [ -f "$d/meta.json" ] && [ -f "$d/summary" ] || continue
  printf '%s\037' "${d##*/}"
  tr -d '\n' < "$d/meta.json"
  printf '\037%s\037%s\037%s\036' "$(cat "$d/HEAD")" "$(cat "$d/BRANCH")" "$(cat "$d/summary")"
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
		f := bytes.Split(rec, []byte{0x1f})
		if len(f) != 5 || !snapshotID.Match(f[0]) {
			continue
		}
		var m snapshotMeta
		if json.Unmarshal(f[1], &m) != nil || m.ID != string(f[0]) {
			continue
		}
		s := Snapshot{ID: m.ID, Dir: path.Join(dir, m.ID), Reason: m.Reason, Time: m.Time,
			Head: string(f[2]), Branch: strings.TrimPrefix(string(f[3]), "refs/heads/")}
		if !parseSummary(&s, string(f[4])) {
			continue
		}
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b Snapshot) int { return strings.Compare(b.ID, a.ID) })
	return list
}

// prune removes snapshots beyond the newest KeepSnapshots that are older
// than a week. Errors are ignored: pruning never stands in an action's way.
func (r *Repo) prune(ctx context.Context) {
	snaps, err := r.Snapshots(ctx)
	if err != nil || len(snaps) <= KeepSnapshots {
		return
	}
	var dirs []string
	for _, s := range snaps[KeepSnapshots:] {
		if time.Since(s.Time) > 7*24*time.Hour && snapshotID.MatchString(s.ID) {
			dirs = append(dirs, s.Dir)
		}
	}
	if len(dirs) == 0 {
		return
	}
	if cmd, err := remote.Command("rm", append([]string{"-rf", "--"}, dirs...)...); err == nil {
		_, _ = r.Host.Run(ctx, cmd, nil)
	}
}

// ErrBadSnapshot is wrapped by the error for a snapshot id that is
// malformed or not on the host.
var ErrBadSnapshot = errors.New("no such snapshot")

// ErrRestoreBlocked is wrapped by the error of a restore refused before it
// began: it would overwrite an untracked file too big to save first
// (BigFile), or write through a symlink to a directory.
var ErrRestoreBlocked = errors.New("move those paths away first")

// restorePlanScript lists, NUL-separated in DIR.overwrite, the paths that
// exist now and that restoring snapshot DIR will write over: those its
// HEAD adds against the present HEAD and those it holds the bytes of. It
// prints a line per problem: "X: a symlink to a directory (the restore
// would write through it)" and "X: an untracked file of BIG bytes or more
// (it cannot be saved first)". Sent on stdin to "sh -s -- TOP DIR BIG".
const restorePlanScript = `top=$1 dir=$2 big=$3
g() { git -C "$top" -c core.quotepath=off -c color.ui=false --no-pager "$@"; }
head=$(cat "$dir/HEAD") || exit
cd -- "$top" || exit
{
  if [ -n "$head" ]; then g diff --no-ext-diff --no-renames --name-only -z --diff-filter=A HEAD "$head" || exit; fi
  cat -- "$dir/present.list" "$dir/untracked.list" 2>/dev/null
} | xargs -0 sh -c '
  for p; do
    if [ -e "$p" ] || [ -h "$p" ]; then printf "%s\0" "$p"; fi
    d=$p
    while case $d in */*) d=${d%/*}; true;; *) false;; esac; do
      if [ -h "$d" ]; then printf "%s: a symlink to a directory (the restore would write through it)\n" "$d" >&2; break; fi
    done
  done' sh > "$dir.overwrite" 2> "$dir.problems" || exit
g ls-files -z --others --exclude-standard | xargs -0 sh -c 'b=$1 ow=$2; shift 2
  for p; do
    if [ -f "$p" ] && [ ! -h "$p" ] && [ "$(wc -c < "$p")" -ge "$b" ] && tr "\000" "\n" < "$ow" | grep -Fxq -- "$p"; then
      printf "%s: an untracked file of %s bytes or more (it cannot be saved first)\n" "$p" "$b"
    fi
  done' sh "$big" "$dir.overwrite" >> "$dir.problems" || exit
sort -u "$dir.problems"
rm -f -- "$dir.problems"
`

// restoreScript puts the checkout back in the state saved in DIR, after
// the caller saved the present in PRE:
//   - HEAD: the saved branch when it still points at the saved commit, else
//     that commit detached (with a note); nothing moves, and no reflog
//     entry is written, when HEAD is already there;
//   - the index and tracked files as in HEAD (read-tree --reset -u), the
//     present's untracked files that PRE saved removed (the big ones PRE
//     skipped stay);
//   - the index: staged.patch applied with --cached, then the conflict
//     stages of unmerged paths, and a merge in progress (gitstate/);
//   - the worktree: every saved tracked file's bytes from tracked.tar,
//     absent ones removed, and the untracked files from untracked.tar;
//   - the stash list as saved (with stashes made since on top).
//
// It prints "same" when `git status` then matches the saved one, else
// "differs". Notes for the user go to stderr as "note: ..." lines. Sent
// on stdin to "sh -s -- TOP GITDIR DIR PRE".
const restoreScript = `top=$1 gd=$2 dir=$3 pre=$4
trap '' HUP INT TERM PIPE
g() { git -C "$top" -c core.quotepath=off -c color.ui=false --no-pager "$@"; }
# A git status in another pane holds index.lock for a moment: wait it out.
wl() { n=0; while [ -e "$gd/index.lock" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done; }
w() {
  wl
  "$@" && return
  n=0
  while [ $n -lt 20 ]; do sleep 0.1; "$@" 2>/dev/null && return; n=$((n + 1)); done
  "$@"
}
[ -f "$dir/summary" ] || { echo "no snapshot $dir" >&2; exit 4; }
head=$(cat "$dir/HEAD") && branch=$(cat "$dir/BRANCH") || exit
if [ -z "$head" ]; then echo "snapshot of a branch without commits: restore it by hand from $dir" >&2; exit 1; fi
g rev-parse -q --verify "$head^{commit}" >/dev/null || { echo "commit $head is no longer in the repository" >&2; exit 1; }
cur=$(g rev-parse -q --verify HEAD) curb=$(g symbolic-ref -q HEAD)
# The present's untracked files go first (PRE saved them; the big ones it
# skipped stay): after the checkout the same path may be a tracked file.
if [ -s "$pre/untracked.list" ]; then (cd -- "$top" && xargs -0 rm -rf -- < "$pre/untracked.list") || exit; fi
if [ -n "$branch" ] && [ "$(g rev-parse -q --verify "$branch")" = "$head" ]; then
  if [ "$cur" != "$head" ] || [ "$curb" != "$branch" ]; then w g checkout -q -f "${branch#refs/heads/}" -- || exit; fi
else
  if [ -n "$branch" ]; then echo "note: ${branch#refs/heads/} has moved since the snapshot: restored at ${head%"${head#???????}"}, detached" >&2; fi
  if [ "$cur" != "$head" ] || [ -n "$curb" ]; then w g checkout -q -f --detach "$head" -- || exit; fi
fi
w g read-tree --reset -u HEAD || exit
for f in MERGE_HEAD MERGE_MSG MERGE_MODE MERGE_RR AUTO_MERGE CHERRY_PICK_HEAD REVERT_HEAD; do rm -f -- "$gd/$f"; done
if [ -d "$dir/gitstate" ]; then for f in "$dir"/gitstate/*; do [ -f "$f" ] && cp -p -- "$f" "$gd/"; done; fi
if grep -q '^diff --git ' "$dir/staged.patch"; then
  w g apply --cached --binary --whitespace=nowarn "$dir/staged.patch" || echo "note: the staged changes could not be put back in the index (the files themselves are restored)" >&2
fi
if [ -s "$dir/unmerged.info" ]; then wl; g update-index -z --index-info < "$dir/unmerged.info" || echo "note: the conflict stages could not be put back in the index" >&2; fi
if [ -s "$dir/present.list" ]; then tar -xpf "$dir/tracked.tar" -C "$top" || exit; fi
if [ -s "$dir/absent.list" ]; then (cd -- "$top" && xargs -0 rm -f -- < "$dir/absent.list") || exit; fi
if [ -s "$dir/untracked.list" ]; then tar -xpf "$dir/untracked.tar" -C "$top" || exit; fi
g stash list --format='%H %gs' > "$dir.now" 2>/dev/null
missing=
while read -r id msg; do grep -q "^$id " "$dir.now" || missing=1; done < "$dir/stashes"
if [ -n "$missing" ]; then
  { awk '{ l[NR] = $0 } END { for (i = NR; i > 0; i--) print l[i] }' "$dir/stashes"
    awk 'NR == FNR { s[$1] = 1; next } !($1 in s) { l[++n] = $0 } END { for (i = n; i > 0; i--) print l[i] }' "$dir/stashes" "$dir.now"
  } > "$dir.want"
  g stash clear
  while read -r id msg; do
    g stash store -m "$msg" "$id" || echo "note: stash $id could not be brought back: $msg" >&2
  done < "$dir.want"
  echo "note: stashes brought back; the list is as it was" >&2
  rm -f -- "$dir.want"
fi
rm -f -- "$dir.now"
g --no-optional-locks status --porcelain=v1 -z --untracked-files=all > "$dir.after" || exit
if [ -s "$pre/skipped.list" ]; then
  # The big untracked files PRE could not save stay where they are: they
  # are not a difference.
  tr '\000' '\n' < "$pre/skipped.list" | sed 's/^/?? /' > "$dir.skip"
  tr '\000' '\n' < "$dir.after" | grep -vxF -f "$dir.skip" > "$dir.after2"
  tr '\000' '\n' < "$dir/status" | grep -vxF -f "$dir.skip" > "$dir.before2"
  if cmp -s "$dir.before2" "$dir.after2"; then echo same; else echo differs; fi
  rm -f -- "$dir.skip" "$dir.after2" "$dir.before2"
elif cmp -s "$dir/status" "$dir.after"; then echo same; else echo differs; fi
rm -f -- "$dir.after"
`

// Restore brings back the checkout saved in snapshot id: HEAD and branch,
// index, worktree and untracked files, and stashes dropped or popped since.
// It first snapshots the present (Action.Snapshot), so a restore is itself
// undoable. Errors: a refused id (not of the form newID makes); an Action
// with Err set when the restore failed partway (the present is in
// Action.Snapshot).
func (r *Repo) Restore(ctx context.Context, id string) (event.GitAction, error) {
	if !snapshotID.MatchString(id) {
		return event.GitAction{}, fmt.Errorf("%q is not a snapshot id (like 20261129-215807.123-3f9a): %w", id, ErrBadSnapshot)
	}
	dir := path.Join(r.SnapshotDir, id)
	test, err := remote.Command("test", "-f", path.Join(dir, "summary"))
	if err != nil {
		return event.GitAction{}, err
	}
	if _, err := r.Host.Run(ctx, test, nil); err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) {
			return event.GitAction{Op: "restore", Args: []string{id}}, fmt.Errorf("%s is not in %s: %w", id, r.SnapshotDir, ErrBadSnapshot)
		}
		return event.GitAction{Op: "restore", Args: []string{id}}, err
	}
	// What the restore will write over: saved first, with the present. A
	// path it cannot save first (a big untracked file) or would reach
	// through a symlinked directory refuses the restore.
	overwrite := dir + ".overwrite"
	defer func() {
		if rm, err := remote.Command("rm", "-f", "--", overwrite); err == nil {
			_, _ = r.Host.Run(context.WithoutCancel(ctx), rm, nil)
		}
	}()
	res, err := r.script(ctx, "restore", restorePlanScript, r.Path, dir, strconv.Itoa(BigFile))
	if err != nil {
		return event.GitAction{Op: "restore", Args: []string{id}}, err
	}
	if problems := strings.TrimSpace(string(res.Stdout)); problems != "" {
		return event.GitAction{Op: "restore", Args: []string{id}}, fmt.Errorf("restore of %s refused: %s: %w", id, strings.ReplaceAll(problems, "\n", "; "), ErrRestoreBlocked)
	}
	return r.act(ctx, "restore", []string{id}, "restore "+id, overwrite, nil, func(ctx context.Context, pre Snapshot) (string, []string, error) {
		res, err := r.script(ctx, "restore", restoreScript, r.Path, r.GitDir, dir, pre.Dir)
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
