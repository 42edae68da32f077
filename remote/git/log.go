package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"strconv"
	"strings"
)

// logFormat is the commit format of Log and Preview: id, short id, committer
// time, author, subject, decorations; records are NUL-terminated (-z).
const logFormat = "--format=%H%x1f%h%x1f%ct%x1f%an%x1f%s%x1f%D"

// Log lists up to n commits (n ≤ 0: 40) reachable from HEAD, the local
// branches, the tags and the remote-tracking branches, newest first: the
// checkout picker's list, which thus shows what a `git pull` would bring
// in. Errors: the host's error or a *GitError.
func (r *Repo) Log(ctx context.Context, n int) ([]event.Commit, error) {
	if n <= 0 {
		n = 40
	}
	out, err := r.run(ctx, "log", "-z", "--date-order", "-n", strconv.Itoa(n), logFormat, "HEAD", "--branches", "--tags", "--remotes")
	if err != nil {
		return nil, err
	}
	return ParseLog(out)
}

// ParseLog parses git log output in logFormat with -z. It never panics.
func ParseLog(b []byte) ([]event.Commit, error) {
	var out []event.Commit
	for _, e := range records(b) {
		e = bytes.TrimPrefix(e, []byte("\n"))
		f := bytes.SplitN(e, []byte{0x1f}, 6)
		if len(f) != 6 || !IsCommitID(string(f[0])) {
			return out, fmt.Errorf("git log: unexpected entry %q", truncate(e))
		}
		t, err := unixTime(f[2])
		if err != nil {
			return out, fmt.Errorf("git log: %w", err)
		}
		c := event.Commit{ID: string(f[0]), Short: string(f[1]), Time: t, Author: string(f[3]), Subject: string(f[4])}
		if d := strings.TrimSpace(string(f[5])); d != "" {
			c.Refs = strings.Split(d, ", ")
		}
		out = append(out, c)
	}
	return out, nil
}

// previewScript prints, each section ended by "\036\036\n": HEAD's commit,
// the target's, the commits of HEAD..TARGET (at most N) and their count, those of
// TARGET..HEAD and their count, `diff --name-status -z --no-renames HEAD
// TARGET`, and `status --porcelain=v1 -z`. Sent on stdin to
// "sh -s -- TOP TARGETID N".
const previewScript = `top=$1 to=$2 n=$3
g() { git -C "$top" -c core.quotepath=off -c color.ui=false --no-pager "$@"; }
s() { printf '\036\036\n'; }
f='--format=%H%x1f%h%x1f%ct%x1f%an%x1f%s%x1f%D'
g log -z -1 "$f" HEAD || exit
s
g log -z -1 "$f" "$to" || exit
s
g log -z -n "$n" "$f" "HEAD..$to" || exit
s
g rev-list --count "HEAD..$to" || exit
s
g log -z -n "$n" "$f" "$to..HEAD" || exit
s
g rev-list --count "$to..HEAD" || exit
s
g diff --no-ext-diff --no-renames --name-status -z HEAD "$to" || exit
s
g --no-optional-locks status --porcelain=v1 -z --untracked-files=all || exit
s
cd -- "$top" || exit
g diff --no-ext-diff --no-renames --name-only -z --diff-filter=A HEAD "$to" |
  xargs -0 sh -c 'for p; do if [ -e "$p" ] || [ -h "$p" ]; then printf "%s\0" "$p"; fi; done' sh || exit
s
`

// Preview says what checking out ref would do: the commits it brings in
// and leaves (up to limit of each; limit ≤ 0: 20), the files that differ,
// and the dirty files that block it. A ref that is the name of a local
// branch checks out that branch; anything else (commit id, tag, HEAD~2,
// origin/main) is a detached checkout. Errors: ErrBadRef for a refused or
// unknown ref, the host's error, a *GitError.
func (r *Repo) Preview(ctx context.Context, ref string, limit int) (Preview, error) {
	if limit <= 0 {
		limit = 20
	}
	branch, err := r.localBranch(ctx, ref)
	if err != nil {
		return Preview{}, err
	}
	target := ref
	if branch != "" {
		target = "refs/heads/" + branch // git checkout takes a branch over a tag of the same name
	}
	to, err := r.Resolve(ctx, target)
	if err != nil {
		return Preview{}, err
	}
	res, err := r.script(ctx, "log", previewScript, r.Path, to, strconv.Itoa(limit))
	if err != nil {
		return Preview{}, err
	}
	p, err := parsePreview(res.Stdout)
	if err != nil {
		return Preview{}, err
	}
	p.Target, p.Branch = ref, branch
	return p, nil
}

func parsePreview(out []byte) (Preview, error) {
	var p Preview
	secs, err := sections(out, 9, "git preview")
	if err != nil {
		return p, err
	}
	for i, c := range []*event.Commit{&p.From, &p.To} {
		one, err := ParseLog(secs[0])
		if err != nil || len(one) != 1 {
			return p, fmt.Errorf("git preview: commit %d: unexpected output %q", i, truncate(secs[0]))
		}
		*c = one[0]
		secs = secs[1:]
	}
	if p.Forward, err = ParseLog(secs[0]); err != nil {
		return p, err
	}
	if p.ForwardCount, err = atoiSection(secs[1]); err != nil {
		return p, err
	}
	if p.Back, err = ParseLog(secs[2]); err != nil {
		return p, err
	}
	if p.BackCount, err = atoiSection(secs[3]); err != nil {
		return p, err
	}
	if p.Files, err = parseNameStatus(secs[4]); err != nil {
		return p, err
	}
	dirty, err := parsePorcelain(secs[5])
	if err != nil {
		return p, err
	}
	changed := make(map[string]bool, len(p.Files))
	for _, c := range p.Files {
		changed[c.Path] = true
	}
	isDirty := make(map[string]bool, len(dirty))
	for _, f := range dirty {
		isDirty[f.Path] = true
		if f.Conflicted() {
			p.Unmerged = append(p.Unmerged, f.Path)
		}
		if changed[f.Path] || (f.Orig != "" && changed[f.Orig]) {
			p.Blocking = append(p.Blocking, f.Path)
		}
	}
	for _, rec := range records(secs[6]) {
		if path := string(rec); !isDirty[path] {
			p.Overwrites = append(p.Overwrites, path) // exists, not listed by status: ignored
		}
	}
	return p, nil
}

func atoiSection(b []byte) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("git rev-list --count: unexpected output %q", truncate(b))
	}
	return n, nil
}

// parseNameStatus parses `git diff --name-status -z`: "M\0path\0", and
// "R100\0old\0new\0" for renames and copies.
func parseNameStatus(b []byte) ([]Change, error) {
	recs := records(b)
	var out []Change
	for i := 0; i < len(recs); i++ {
		st := recs[i]
		if len(st) == 0 || i+1 >= len(recs) {
			return out, fmt.Errorf("git diff --name-status: unexpected entry %q", truncate(st))
		}
		c := Change{Status: st[0], Path: string(recs[i+1])}
		i++
		if c.Status == 'R' || c.Status == 'C' {
			if i+1 >= len(recs) {
				return out, fmt.Errorf("git diff --name-status: rename without its new path")
			}
			c.Orig, c.Path = c.Path, string(recs[i+1])
			i++
		}
		out = append(out, c)
	}
	return out, nil
}

// localBranch returns ref when it names a local branch (refs/heads/REF
// exists and `git check-ref-format --branch` accepts it), else "".
func (r *Repo) localBranch(ctx context.Context, ref string) (string, error) {
	if err := CheckRef(ref); err != nil {
		return "", err
	}
	if strings.HasPrefix(ref, "refs/") || strings.ContainsAny(ref, "~^:@{}") {
		return "", nil
	}
	_, err := r.run(ctx, "show-ref", "--verify", "--quiet", "refs/heads/"+ref)
	var ge *GitError
	switch {
	case errors.As(err, &ge):
		return "", nil
	case err != nil:
		return "", err
	}
	if _, err := r.run(ctx, "check-ref-format", "--branch", ref); err != nil {
		if errors.As(err, &ge) {
			return "", nil
		}
		return "", err
	}
	return ref, nil
}

// compareScript prints the counts of FROM..TO and TO..FROM and the paths
// that differ between them (`diff --name-only -z`), each section ended by
// "\036\036\n". Sent on stdin to "sh -s -- TOP FROM TO".
const compareScript = `top=$1 from=$2 to=$3
g() { git -C "$top" -c core.quotepath=off -c color.ui=false --no-pager "$@"; }
s() { printf '\036\036\n'; }
g rev-list --count "$from..$to" || exit
s
g rev-list --count "$to..$from" || exit
s
g diff --no-ext-diff --no-renames --name-only -z "$from" "$to" || exit
s
`

// Compare counts the commits TO has that FROM lacks (forward) and the
// reverse (back), and lists the paths that differ between them, for the
// HEAD-moved banner. from and to must be full commit ids (as Head and
// Status carry). Errors: ErrBadRef for another string, the host's error,
// a *GitError (e.g. a commit pruned since).
func (r *Repo) Compare(ctx context.Context, from, to string) (forward, back int, files []string, err error) {
	if !IsCommitID(from) || !IsCommitID(to) {
		return 0, 0, nil, fmt.Errorf("compare %q %q: want full commit ids: %w", from, to, ErrBadRef)
	}
	res, err := r.script(ctx, "rev-list", compareScript, r.Path, from, to)
	if err != nil {
		return 0, 0, nil, err
	}
	secs, err := sections(res.Stdout, 3, "git compare")
	if err != nil {
		return 0, 0, nil, err
	}
	if forward, err = atoiSection(secs[0]); err != nil {
		return 0, 0, nil, err
	}
	if back, err = atoiSection(secs[1]); err != nil {
		return 0, 0, nil, err
	}
	for _, f := range records(secs[2]) {
		files = append(files, string(f))
	}
	return forward, back, files, nil
}
