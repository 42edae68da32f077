package git

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Range is what lies between two commits From and To of a checkout: the
// commits To has that From lacks (Ahead: `git log --oneline --no-decorate
// From..To`), the reverse (Behind: To..From, what a checkout of an older
// commit leaves out), and the paths that differ (`git diff --name-only
// From To`). Each list holds at most the limit asked for; the totals count
// them all.
type Range struct {
	From, To string // full commit ids
	// Ahead and Behind are "<short id> <subject>" lines, newest first, as
	// git printed them (not sanitised: remote text).
	Ahead, Behind []string
	// Files are the paths that differ, in git's order (sorted by path).
	Files []string
	// AheadTotal, BehindTotal and FilesTotal count them all, cut or not.
	AheadTotal, BehindTotal, FilesTotal int
}

// rangeScript prints, each section ended by "\036\036\n": the full ids of
// FROM and TO (rev-parse --verify; an unknown one exits 3 with its name on
// stderr), `log --oneline --no-decorate` of FROM..TO (at most N) and the
// count of that range, the same for TO..FROM, and `diff --name-only -z
// FROM TO`. Sent on stdin to "sh -s -- TOP FROM TO N": the refs travel as
// arguments, never as script text.
const rangeScript = `top=$1 from=$2 to=$3 n=$4
g() { git -C "$top" -c core.quotepath=off -c color.ui=false --no-pager "$@"; }
s() { printf '\036\036\n'; }
f=$(g rev-parse --verify --quiet --end-of-options "$from^{commit}") || { printf 'unknown commit %s\n' "$from" >&2; exit 3; }
t=$(g rev-parse --verify --quiet --end-of-options "$to^{commit}") || { printf 'unknown commit %s\n' "$to" >&2; exit 3; }
from=$f to=$t
printf '%s %s\n' "$from" "$to"
s
g log --oneline --no-decorate -n "$n" "$from..$to" -- || exit
s
g rev-list --count "$from..$to" -- || exit
s
g log --oneline --no-decorate -n "$n" "$to..$from" -- || exit
s
g rev-list --count "$to..$from" -- || exit
s
g diff --no-ext-diff --no-renames --name-only -z "$from" "$to" -- || exit
s
`

// Range reads what lies between from and to (commit ids, full or short,
// or any ref naming a commit) in one command on the host, listing at most
// limit commits each way and limit paths (limit ≤ 0: 50); the totals count
// all of them. Errors: ErrBadRef for a ref refused by CheckRef, a
// *GitError whose Stderr says "unknown commit X" for a ref that names no
// commit here (a pruned commit, a shallow clone), the host's error, or a
// parse error for output of another shape.
func (r *Repo) Range(ctx context.Context, from, to string, limit int) (Range, error) {
	if limit <= 0 {
		limit = 50
	}
	for _, ref := range []string{from, to} {
		if err := CheckRef(ref); err != nil {
			return Range{}, err
		}
	}
	res, err := r.script(ctx, "range", rangeScript, r.Path, from, to, strconv.Itoa(limit))
	if err != nil {
		return Range{}, err
	}
	return parseRange(res.Stdout, limit)
}

// parseRange parses rangeScript's output, cutting the lists at limit. It
// never panics.
func parseRange(out []byte, limit int) (Range, error) {
	var rg Range
	secs, err := sections(out, 6, "git range")
	if err != nil {
		return rg, err
	}
	ids := strings.Fields(string(secs[0]))
	if len(ids) != 2 || !IsCommitID(ids[0]) || !IsCommitID(ids[1]) {
		return rg, fmt.Errorf("git range: unexpected commit ids %q", truncate(secs[0]))
	}
	rg.From, rg.To = ids[0], ids[1]
	if rg.Ahead, err = onelines(secs[1], limit); err != nil {
		return rg, err
	}
	if rg.AheadTotal, err = atoiSection(secs[2]); err != nil {
		return rg, err
	}
	if rg.Behind, err = onelines(secs[3], limit); err != nil {
		return rg, err
	}
	if rg.BehindTotal, err = atoiSection(secs[4]); err != nil {
		return rg, err
	}
	files := records(secs[5])
	rg.FilesTotal = len(files)
	for _, f := range files[:min(len(files), limit)] {
		rg.Files = append(rg.Files, string(f))
	}
	return rg, nil
}

// onelines splits `git log --oneline` output into its lines, at most
// limit; each must start with a hex abbreviated id.
func onelines(b []byte, limit int) ([]string, error) {
	var out []string
	for line := range bytes.Lines(b) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			continue
		}
		id, _, _ := bytes.Cut(line, []byte(" "))
		if len(id) < 4 || !isHex(id) {
			return out, fmt.Errorf("git range: unexpected log line %q", truncate(line))
		}
		if len(out) < limit {
			out = append(out, string(line))
		}
	}
	return out, nil
}

func isHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
