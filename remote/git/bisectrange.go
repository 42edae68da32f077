package git

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// MaxBisectFiles is how many paths FirstParent lists per commit (the
// total counts them all).
const MaxBisectFiles = 20

// firstParentScript prints GOOD's commit, then those of
// `rev-list --first-parent --reverse GOOD..BAD`, each as a record started
// by "\036": "ID\037SHORT\037PARENTS\037AUTHOR\037UNIX-DATE\037SUBJECT"
// on one line, then the paths it touches (name-only), one a line. An
// unknown ref exits 3 with its name on stderr, GOOD not an ancestor of BAD
// exits 4 (saying so, and when BAD is GOOD's ancestor that the two look
// swapped). Sent on stdin to "sh -s -- TOP GOOD BAD": the refs travel as
// arguments, never as script text.
const firstParentScript = `top=$1 good=$2 bad=$3
g() { git -C "$top" -c core.quotepath=off -c color.ui=false --no-pager "$@"; }
f=$(g rev-parse --verify --quiet --end-of-options "$good^{commit}") || { printf 'unknown commit %s\n' "$good" >&2; exit 3; }
t=$(g rev-parse --verify --quiet --end-of-options "$bad^{commit}") || { printf 'unknown commit %s\n' "$bad" >&2; exit 3; }
g merge-base --is-ancestor "$f" "$t" || {
  if g merge-base --is-ancestor "$t" "$f"; then
    printf '%s is not an ancestor of %s: it comes after it (--good and --bad swapped?)\n' "$good" "$bad" >&2
  else
    printf '%s is not an ancestor of %s\n' "$good" "$bad" >&2
  fi
  exit 4
}
fmt='%x1e%H%x1f%h%x1f%P%x1f%an%x1f%at%x1f%s'
g log -1 --no-decorate --no-renames --name-only --format="$fmt" "$f" -- || exit
g log --first-parent --reverse --no-decorate --no-renames --name-only --format="$fmt" "$f..$t" -- || exit
`

// FirstParent lists the commits a bisect from good to bad tests, oldest
// first: good's commit, then `git rev-list --first-parent --reverse
// good..bad` (bad's commit last), each with its subject, author, author
// date and at most MaxBisectFiles paths (FilesTotal counts all; a merge
// lists none). Errors: ErrBadRef for a refused ref; a *GitError whose
// Stderr says "unknown commit X" (Code 3) or "X is not an ancestor of Y"
// (Code 4; "… swapped?" when Y is X's); an error when good and bad are
// one commit or good is not on bad's first-parent line;
// the host's error, or a parse error for output of another shape.
func (r *Repo) FirstParent(ctx context.Context, good, bad string) ([]event.BisectCommit, error) {
	for _, ref := range []string{good, bad} {
		if err := CheckRef(ref); err != nil {
			return nil, err
		}
	}
	res, err := r.script(ctx, "bisect range", firstParentScript, r.Path, good, bad)
	if err != nil {
		return nil, err
	}
	cs, err := ParseFirstParent(res.Stdout)
	if err != nil {
		return nil, err
	}
	if len(cs) < 2 {
		return cs, fmt.Errorf("both are commit %s: nothing lies between", ShortID(cs[0].ID))
	}
	return cs, nil
}

// ParseFirstParent parses firstParentScript's output and checks that each
// commit's first parent is the one before it (the first-parent line from
// good). It never panics.
func ParseFirstParent(out []byte) ([]event.BisectCommit, error) {
	var cs []event.BisectCommit
	prev := ""
	for i, rec := range bytes.Split(out, []byte{0x1e}) {
		if i == 0 {
			if len(bytes.TrimSpace(rec)) > 0 {
				return nil, fmt.Errorf("bisect range: unexpected output %q", truncate(rec))
			}
			continue
		}
		head, rest, _ := bytes.Cut(rec, []byte("\n"))
		f := strings.Split(strings.TrimRight(string(head), "\r"), "\x1f")
		if len(f) != 6 || !IsCommitID(f[0]) {
			return nil, fmt.Errorf("bisect range: unexpected commit line %q", truncate(head))
		}
		parents := strings.Fields(f[2])
		if prev != "" && (len(parents) == 0 || parents[0] != prev) {
			return nil, fmt.Errorf("bisect range: %s does not follow %s on the first-parent line", ShortID(f[0]), ShortID(prev))
		}
		unix, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bisect range: author date %q of %s", f[4], ShortID(f[0]))
		}
		c := event.BisectCommit{ID: f[0], Short: f[1], Author: f[3], Date: time.Unix(unix, 0).UTC(), Subject: f[5]}
		for line := range bytes.Lines(rest) {
			p := string(bytes.TrimRight(line, "\r\n"))
			if p == "" {
				continue
			}
			c.FilesTotal++
			if len(c.Files) < MaxBisectFiles {
				c.Files = append(c.Files, p)
			}
		}
		cs = append(cs, c)
		prev = c.ID
	}
	return cs, nil
}
