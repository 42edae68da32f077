package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// Repo is a git checkout on a host. Create it with Open. Its methods are
// safe for concurrent use as far as git itself is: callers that act on one
// checkout from several goroutines serialise the actions (sessions.Git does).
type Repo struct {
	Host remote.Host
	// Path is the repository's top level on the host (absolute).
	Path string
	// GitDir is its git directory (absolute; .git of the top level, or the
	// gitdir of a worktree).
	GitDir string
	// SnapshotDir holds the snapshots on the host; Open sets it to
	// GitDir/flightdeck/snapshots, which survives checkouts, resets and
	// `git clean -fdx`, and goes with the repository.
	SnapshotDir string
}

// ErrBadRef is wrapped by the error for a ref that is refused before git
// sees it (it starts with "-", is empty, has control characters) or that
// does not name a commit.
var ErrBadRef = errors.New("not a commit")

// ErrBadPath is wrapped by the error for a path that is refused: empty,
// absolute, leaving the repository (".."), or with control characters.
var ErrBadPath = errors.New("bad path")

// NotRepoError reports a path that is not inside a git checkout, or a
// host without git.
type NotRepoError struct {
	Path string
	Msg  string // git's words
}

func (e *NotRepoError) Error() string {
	return fmt.Sprintf("%s is not a git checkout: %s", e.Path, e.Msg)
}

// Open checks that dir is inside a git checkout on host and returns the
// Repo of its top level. A dir starting with "~/" is taken from the
// remote $HOME (it is never given to a shell unquoted). Errors: a
// *NotRepoError, a quoting error for an unusable dir, or the host's error
// (wrapping remote.ErrDisconnected when the connection is down).
func Open(ctx context.Context, host remote.Host, dir string) (*Repo, error) {
	if dir == "" {
		return nil, errors.New("no repository path given")
	}
	given, prefix := dir, ""
	switch {
	case dir == "~":
		prefix, dir = `cd -- "$HOME" && `, "."
	case strings.HasPrefix(dir, "~/"):
		prefix, dir = `cd -- "$HOME" && `, dir[2:]
	}
	cmd, err := remote.Command("git", "-C", dir, "rev-parse", "--show-toplevel", "--absolute-git-dir")
	if err != nil {
		return nil, err
	}
	res, err := host.Run(ctx, prefix+cmd, nil)
	if err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) {
			return nil, &NotRepoError{Path: given, Msg: gitWords(ee.Stderr, err)}
		}
		return nil, fmt.Errorf("open repository %s: %w", given, err)
	}
	lines := strings.Split(strings.TrimRight(string(res.Stdout), "\n"), "\n")
	if len(lines) != 2 || !path.IsAbs(lines[0]) || !path.IsAbs(lines[1]) {
		return nil, &NotRepoError{Path: given, Msg: fmt.Sprintf("unexpected rev-parse output %q (a bare repository has no worktree)", truncate(res.Stdout))}
	}
	return &Repo{Host: host, Path: lines[0], GitDir: lines[1], SnapshotDir: path.Join(lines[1], "flightdeck", "snapshots")}, nil
}

// git returns the command line `git -C <top> ARGS...` with every word
// quoted; the -c settings keep the output machine-readable whatever the
// user's configuration says (no pager, no colour, plain quoting of paths).
func (r *Repo) git(args ...string) (string, error) {
	base := []string{"-C", r.Path, "-c", "core.quotepath=off", "-c", "color.ui=false", "--no-pager"}
	return remote.Command("git", append(base, args...)...)
}

// run runs one git command and returns its stdout. A non-zero exit is an
// error with git's stderr in it (a *GitError).
func (r *Repo) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd, err := r.git(args...)
	if err != nil {
		return nil, err
	}
	res, err := r.Host.Run(ctx, cmd, nil)
	if err != nil {
		return res.Stdout, wrapErr(args, res, err)
	}
	return res.Stdout, nil
}

// script runs a fixed sh script, sent on stdin to "sh -s -- ARGS…", and
// returns what it printed. A non-zero exit is a *GitError named by what
// (its Code is the script's exit status).
func (r *Repo) script(ctx context.Context, what, script string, args ...string) (remote.Result, error) {
	cmd, err := remote.Command("sh", append([]string{"-s", "--"}, args...)...)
	if err != nil {
		return remote.Result{}, err
	}
	res, err := r.Host.Run(ctx, cmd, strings.NewReader(script))
	if err != nil {
		return res, wrapErr([]string{what}, res, err)
	}
	return res, nil
}

// combined is a command's stderr then stdout, trimmed and clipped.
func combined(res remote.Result) string {
	return clip(append(append([]byte{}, res.Stderr...), res.Stdout...))
}

// GitError is a git command that exited non-zero.
type GitError struct {
	Args   []string // the git arguments (after the -C and -c options)
	Code   int      // exit status
	Stderr string   // git's words, trimmed (at most 4 KiB)
	Stdout string   // what it printed on stdout, trimmed (at most 4 KiB)
}

func (e *GitError) Error() string {
	sub := ""
	if len(e.Args) > 0 {
		sub = e.Args[0]
	}
	if e.Stderr != "" {
		return fmt.Sprintf("git %s: %s", sub, e.Stderr)
	}
	return fmt.Sprintf("git %s: exit status %d", sub, e.Code)
}

func wrapErr(args []string, res remote.Result, err error) error {
	var ee *remote.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("git %s: %w", firstArg(args), err)
	}
	return &GitError{Args: args, Code: ee.Code, Stderr: clip(ee.Stderr), Stdout: clip(res.Stdout)}
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

func clip(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

func gitWords(stderr []byte, err error) string {
	if s := clip(stderr); s != "" {
		return s
	}
	return err.Error()
}

func truncate(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// CheckRef refuses a ref before git sees it: empty, starting with "-" (it
// would be read as an option: "--orphan=x", "-f"), or containing control
// characters, whitespace at either end or invalid UTF-8. It does not say
// whether the ref exists: Resolve does.
func CheckRef(ref string) error {
	switch {
	case ref == "":
		return fmt.Errorf("empty ref: %w", ErrBadRef)
	case strings.HasPrefix(ref, "-"):
		return fmt.Errorf("ref %q starts with \"-\" (it would be read as an option): %w", ref, ErrBadRef)
	case !utf8.ValidString(ref):
		return fmt.Errorf("ref %q is not valid UTF-8: %w", ref, ErrBadRef)
	case strings.TrimSpace(ref) != ref:
		return fmt.Errorf("ref %q has spaces at its ends: %w", ref, ErrBadRef)
	}
	for _, c := range ref {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("ref %q has a control character: %w", ref, ErrBadRef)
		}
	}
	return nil
}

// Resolve returns the full commit id that ref names, with
// `git rev-parse --verify --quiet --end-of-options REF^{commit}` after
// CheckRef. Errors wrap ErrBadRef for a refused ref or one that names no
// commit.
func (r *Repo) Resolve(ctx context.Context, ref string) (string, error) {
	if err := CheckRef(ref); err != nil {
		return "", err
	}
	out, err := r.run(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	var ge *GitError
	if errors.As(err, &ge) {
		return "", fmt.Errorf("%q: %w", ref, ErrBadRef)
	}
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if !IsCommitID(id) {
		return "", fmt.Errorf("%q: rev-parse printed %q: %w", ref, truncate(out), ErrBadRef)
	}
	return id, nil
}

// IsCommitID reports a full commit id: 40 (SHA-1) or 64 (SHA-256)
// lower-case hex digits, as git prints them.
func IsCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ShortID abbreviates a commit id to 7 characters for display, where git
// did not abbreviate it.
func ShortID(id string) string {
	if len(id) > 7 {
		return id[:7]
	}
	return id
}

// CheckPath refuses a repository path before git sees it: empty, absolute,
// leaving the repository through "..", or with control characters or
// invalid UTF-8. Paths always go after "--" with --literal-pathspecs, so
// a path like "-f", "*" or ":(glob)x" is a plain file name.
func CheckPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path: %w", ErrBadPath)
	case path.IsAbs(p):
		return fmt.Errorf("path %q is absolute (give it relative to the repository): %w", p, ErrBadPath)
	case !utf8.ValidString(p):
		return fmt.Errorf("path %q is not valid UTF-8: %w", p, ErrBadPath)
	}
	if c := path.Clean(p); c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("path %q leaves the repository: %w", p, ErrBadPath)
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("path %q has a control character: %w", p, ErrBadPath)
		}
	}
	return nil
}
