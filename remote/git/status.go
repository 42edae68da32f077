package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"strconv"
	"strings"
	"time"
)

// statusScript prints the eight sections of a Status, each ended by
// "\036\036\n": HEAD's commit, the branch, the upstream and its
// ahead/behind counts, an operation in progress, `status --porcelain=v1
// -z`, `diff --numstat -z HEAD`, the stash list and HEAD's reflog. It is
// fixed text sent on stdin to "sh -s -- TOP GITDIR N"; a failure of the
// first section (no commit yet, not a repository) fails the script.
const statusScript = `top=$1 gd=$2 n=$3
g() { git -C "$top" -c core.quotepath=off -c color.ui=false --no-pager "$@"; }
s() { printf '\036\036\n'; }
g log -1 --format='%H%x1f%h%x1f%ct%x1f%an%x1f%s' HEAD || exit
s
g symbolic-ref -q HEAD
s
if u=$(g rev-parse --abbrev-ref --symbolic-full-name '@{upstream}' 2>/dev/null); then
  printf '%s\n' "$u"
  g rev-list --left-right --count 'HEAD...@{upstream}' 2>/dev/null
fi
s
for op in MERGE_HEAD:merge rebase-merge:rebase rebase-apply:rebase CHERRY_PICK_HEAD:cherry-pick REVERT_HEAD:revert BISECT_LOG:bisect; do
  if [ -e "$gd/${op%%:*}" ]; then printf '%s\n' "${op#*:}"; break; fi
done
s
g --no-optional-locks status --porcelain=v1 -z --untracked-files=all || exit
s
g --no-optional-locks diff --find-renames --no-ext-diff --numstat -z HEAD || exit
s
g stash list -z --format='%H%x1f%ct%x1f%gs'
s
g reflog -z -n "$n" --date=unix --format='%H%x1f%h%x1f%gd%x1f%gs' 2>/dev/null
s
`

// sectionEnd ends each section of the status script's output.
var sectionEnd = []byte("\x1e\x1e\n")

// sections splits a script's output into its n sections, each ended by
// sectionEnd; what names the script in the error for any other shape.
func sections(out []byte, n int, what string) ([][]byte, error) {
	secs := bytes.Split(out, sectionEnd)
	if len(secs) != n+1 || len(secs[n]) != 0 {
		return nil, fmt.Errorf("%s: unexpected output: %d sections, want %d: %q", what, len(secs)-1, n, truncate(out))
	}
	return secs[:n], nil
}

// ErrNoCommits is wrapped by the error of Status for a repository whose
// branch has no commit yet.
var ErrNoCommits = errors.New("no commits")

// DefaultReflog is how many reflog entries Status reads.
const DefaultReflog = 20

// Status reads the checkout's full status in one command on the host:
// HEAD, branch, upstream ahead/behind, an operation in progress, the dirty
// files with their diffstat against HEAD, the stash list and the last
// reflog entries (reflog ≤ 0 reads DefaultReflog). It takes no lock in the
// repository (--no-optional-locks), so polling never disturbs the user's
// own git commands. Errors: the host's error, a *GitError (e.g. a
// repository without commits), or a parse error naming the section.
func (r *Repo) Status(ctx context.Context, reflog int) (event.GitStatus, error) {
	if reflog <= 0 {
		reflog = DefaultReflog
	}
	res, err := r.script(ctx, "status", statusScript, r.Path, r.GitDir, strconv.Itoa(reflog))
	var ge *GitError
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "'HEAD'") {
		return event.GitStatus{}, fmt.Errorf("%s has no commits yet: commit once, then flightdeck can show and protect it: %w", r.Path, ErrNoCommits)
	}
	if err != nil {
		return event.GitStatus{}, err
	}
	st, err := ParseStatus(res.Stdout)
	if err != nil {
		return event.GitStatus{}, err
	}
	st.Path = r.Path
	st.Read = time.Now()
	return st, nil
}

// ParseStatus parses the output of the status script (exported for the
// fuzz test and `flightdeck parse`-style tools). It never panics; a
// malformed section is an error that names it.
func ParseStatus(out []byte) (event.GitStatus, error) {
	var st event.GitStatus
	secs, err := sections(out, 8, "git status")
	if err != nil {
		return st, err
	}
	if st.Head, err = parseHead(secs[0]); err != nil {
		return st, err
	}
	st.Branch = strings.TrimPrefix(string(bytes.TrimSpace(secs[1])), "refs/heads/")
	if st.Upstream, st.Ahead, st.Behind, err = parseUpstream(secs[2]); err != nil {
		return st, err
	}
	st.Operation = string(bytes.TrimSpace(secs[3]))
	if st.Files, err = parsePorcelain(secs[4]); err != nil {
		return st, err
	}
	if err := addNumstat(st.Files, secs[5]); err != nil {
		return st, err
	}
	if st.Stashes, err = parseStashes(secs[6]); err != nil {
		return st, err
	}
	if st.Reflog, err = parseReflog(secs[7]); err != nil {
		return st, err
	}
	return st, nil
}

// parseHead parses "%H\x1f%h\x1f%ct\x1f%an\x1f%s\n".
func parseHead(b []byte) (event.Commit, error) {
	f := bytes.SplitN(bytes.TrimSuffix(b, []byte("\n")), []byte{0x1f}, 5)
	if len(f) != 5 || !IsCommitID(string(f[0])) || len(f[1]) < 4 {
		return event.Commit{}, fmt.Errorf("git log: unexpected HEAD line %q", truncate(b))
	}
	t, err := unixTime(f[2])
	if err != nil {
		return event.Commit{}, fmt.Errorf("git log: commit time: %w", err)
	}
	return event.Commit{ID: string(f[0]), Short: string(f[1]), Time: t, Author: string(f[3]), Subject: string(f[4])}, nil
}

func unixTime(b []byte) (time.Time, error) {
	secs, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a Unix time", truncate(b))
	}
	return time.Unix(secs, 0), nil
}

// parseUpstream parses "origin/main\n3\t0\n" (rev-list --left-right
// --count HEAD...@{u}: ahead, then behind), or nothing.
func parseUpstream(b []byte) (string, int, int, error) {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] == "" {
		return "", 0, 0, nil
	}
	if len(lines) < 2 {
		return lines[0], 0, 0, nil // upstream gone (branch deleted on the remote)
	}
	f := strings.Fields(lines[1])
	if len(lines) != 2 || len(f) != 2 {
		return "", 0, 0, fmt.Errorf("git rev-list: unexpected upstream counts %q", truncate(b))
	}
	ahead, err1 := strconv.Atoi(f[0])
	behind, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || ahead < 0 || behind < 0 {
		return "", 0, 0, fmt.Errorf("git rev-list: unexpected upstream counts %q", truncate(b))
	}
	return lines[0], ahead, behind, nil
}

// parsePorcelain parses `git status --porcelain=v1 -z`: "XY path\0", and
// for a rename or copy in the index "XY path\0orig\0".
func parsePorcelain(b []byte) ([]event.GitFile, error) {
	var files []event.GitFile
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return files, fmt.Errorf("git status: entry without NUL: %q", truncate(b))
		}
		e := b[:i]
		b = b[i+1:]
		if len(e) < 4 || e[2] != ' ' {
			return files, fmt.Errorf("git status: unexpected entry %q", truncate(e))
		}
		f := event.GitFile{X: e[0], Y: e[1], Path: string(e[3:]), Added: -1, Deleted: -1}
		if f.X == '!' {
			continue
		}
		if f.X == 'R' || f.X == 'C' {
			j := bytes.IndexByte(b, 0)
			if j < 0 {
				return files, fmt.Errorf("git status: rename of %q without its old path", truncate(e))
			}
			f.Orig = string(b[:j])
			b = b[j+1:]
		}
		files = append(files, f)
	}
	return files, nil
}

// addNumstat fills Added/Deleted/Binary from `git diff --numstat -z
// --find-renames HEAD`: "added\tdeleted\tpath\0", "-\t-\tpath\0" for
// binary, "added\tdeleted\t\0old\0new\0" for a rename.
func addNumstat(files []event.GitFile, b []byte) error {
	byPath := make(map[string]int, len(files))
	for i, f := range files {
		byPath[f.Path] = i
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return fmt.Errorf("git diff --numstat: entry without NUL: %q", truncate(b))
		}
		e := b[:i]
		b = b[i+1:]
		f := bytes.SplitN(e, []byte{'\t'}, 3)
		if len(f) != 3 {
			return fmt.Errorf("git diff --numstat: unexpected entry %q", truncate(e))
		}
		if len(f[2]) == 0 { // a rename: "A\tD\t\0OLD\0NEW\0"
			var ok bool
			if _, b, ok = bytes.Cut(b, []byte{0}); !ok {
				return fmt.Errorf("git diff --numstat: rename without its paths: %q", truncate(e))
			}
			var newPath []byte
			if newPath, b, ok = bytes.Cut(b, []byte{0}); !ok {
				return fmt.Errorf("git diff --numstat: rename without its new path: %q", truncate(e))
			}
			f[2] = newPath
		}
		bin := string(f[0]) == "-" && string(f[1]) == "-"
		add, err1 := strconv.Atoi(string(f[0]))
		del, err2 := strconv.Atoi(string(f[1]))
		if !bin && (err1 != nil || err2 != nil || add < 0 || del < 0) {
			return fmt.Errorf("git diff --numstat: unexpected counts in %q", truncate(e))
		}
		k, ok := byPath[string(f[2])]
		switch {
		case !ok:
			// e.g. the old side of a rename
		case bin:
			files[k].Binary = true
		default:
			files[k].Added, files[k].Deleted = add, del
		}
	}
	return nil
}

// parseStashes parses `git stash list -z --format=%H%x1f%ct%x1f%gs`.
func parseStashes(b []byte) ([]event.Stash, error) {
	var out []event.Stash
	for n, e := range records(b) {
		f := bytes.SplitN(e, []byte{0x1f}, 3)
		if len(f) != 3 || !IsCommitID(string(f[0])) {
			return out, fmt.Errorf("git stash list: unexpected entry %q", truncate(e))
		}
		t, err := unixTime(f[1])
		if err != nil {
			return out, fmt.Errorf("git stash list: %w", err)
		}
		out = append(out, event.Stash{Index: n, ID: string(f[0]), Time: t, Message: string(f[2])})
	}
	return out, nil
}

// parseReflog parses `git reflog -z --date=unix
// --format=%H%x1f%h%x1f%gd%x1f%gs`, where %gd is "HEAD@{UNIX}".
func parseReflog(b []byte) ([]event.RefEntry, error) {
	var out []event.RefEntry
	for _, e := range records(b) {
		f := bytes.SplitN(e, []byte{0x1f}, 4)
		if len(f) != 4 || !IsCommitID(string(f[0])) {
			return out, fmt.Errorf("git reflog: unexpected entry %q", truncate(e))
		}
		sel := string(f[2])
		i, j := strings.LastIndex(sel, "@{"), strings.LastIndex(sel, "}")
		if i < 0 || j < i+2 {
			return out, fmt.Errorf("git reflog: unexpected selector %q", sel)
		}
		t, err := unixTime([]byte(sel[i+2 : j]))
		if err != nil {
			return out, fmt.Errorf("git reflog: %w", err)
		}
		msg := string(f[3])
		out = append(out, event.RefEntry{ID: string(f[0]), Short: string(f[1]), Time: t, Message: msg, Action: reflogAction(msg)})
	}
	return out, nil
}

// reflogAction is the first word of a reflog message: "pull" of "pull:
// Fast-forward", "commit" of "commit (amend): x", "checkout" of
// "checkout: moving from a to b".
func reflogAction(msg string) string {
	w, _, _ := strings.Cut(msg, ":")
	w, _, _ = strings.Cut(w, " ")
	return w
}

// records splits NUL-terminated records (a missing final NUL is allowed).
func records(b []byte) [][]byte {
	b = bytes.TrimSuffix(bytes.TrimRight(b, "\n"), []byte{0})
	if len(b) == 0 {
		return nil
	}
	return bytes.Split(b, []byte{0})
}
