package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// exitRefused is the exit status of a git command that refused its input
// before acting: a ref that names no commit or looks like an option, a bad
// path, an unknown stash or snapshot, no repository or not a git
// checkout, a usage error.
const exitRefused = 2

// previewLimit is how many commits a checkout preview lists each way.
const previewLimit = 20

// gitFlags are the options shared by the git subcommands.
type gitFlags struct {
	ssh   sshFlags
	repo  string
	yes   bool
	force bool
}

func (f *gitFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", "", "the git checkout on the host (default: repo of the host's [hosts.NAME] table in the config)")
	addSSHFlags(fl, &f.ssh, true)
}

// addYes registers the flags of a subcommand that changes the checkout:
// --yes, and --force, for acting while a cockpit drives the host.
func (f *gitFlags) addYes(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&f.force, "force", false, "act even while a cockpit drives the host (its driver lock is held)")
}

// gitTarget is an opened checkout on a host: the repository to read, and
// the session whose actions change it (the git panel's, guarded by the
// driver lock as flightdeck server's are).
type gitTarget struct {
	alias string
	repo  *git.Repo
	s     *sessions.Session
	cmd   *cobra.Command
	f     *gitFlags
	close func()
}

// openRepo loads the config, finds the checkout of alias (--repo, else the
// host's repo), connects and opens it.
func (f *gitFlags) openRepo(cmd *cobra.Command, alias string) (*gitTarget, error) {
	ctx := cmd.Context()
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	hc := cfg.Host(alias)
	dir := f.repo
	if dir == "" {
		dir = hc.Repo
	}
	if dir == "" {
		file := cfg.Path
		if file == "" {
			if file, err = configFile(); err != nil {
				file = "the config file"
			}
		}
		return nil, refusedf("no repository for %s: pass --repo PATH, or set repo = \"/path/to/checkout\" in [hosts.%s] of %s", alias, tomlKey(alias), file)
	}
	host, err := openHost(ctx, hc.Target, f.ssh)
	if err != nil {
		return nil, err
	}
	r, err := git.Open(ctx, host, dir)
	if err != nil {
		host.Close()
		return nil, err
	}
	s, err := sessions.Open(sessions.Options{Name: alias, Config: cfg, Journal: sessions.JournalOptions{Off: true},
		Driver: sessions.DriverOptions{Mode: sessions.DriverCheck, Force: f.force}})
	if err == nil {
		err = s.Attach(ctx, sessions.AttachOptions{Host: host, Target: hc, Repo: r.Path})
	}
	if err != nil {
		host.Close()
		return nil, err
	}
	return &gitTarget{alias: alias, repo: r, s: s, cmd: cmd, f: f, close: func() {
		s.Close(context.WithoutCancel(ctx), nil)
		host.Close()
	}}, nil
}

// mayAct refuses an action while a cockpit drives the host (unless
// --force), before any question is asked.
func (t *gitTarget) mayAct() error { return t.s.MayAct(t.cmd.Context()) }

// tomlKey writes a table name as TOML wants it: bare, or quoted.
func tomlKey(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// undo is the command line that restores snapshot id: the same host, and
// the flags this command was given that the restore needs too.
func (t *gitTarget) undo(id string) string {
	words := []string{"flightdeck", "git", "restore", t.alias, id}
	if configPath != "" {
		words = append(words, "--config", configPath)
	}
	fl := t.cmd.Flags()
	if t.f.repo != "" {
		words = append(words, "--repo", t.repo.Path)
	}
	if fl.Changed("ssh-config") {
		words = append(words, "-F", t.f.ssh.sshConfig)
	}
	for _, i := range t.f.ssh.identities {
		words = append(words, "-i", i)
	}
	for _, k := range t.f.ssh.knownHosts {
		words = append(words, "--known-hosts", k)
	}
	if t.f.ssh.user != "" {
		words = append(words, "-l", t.f.ssh.user)
	}
	if t.f.ssh.port != 0 {
		words = append(words, "--ssh-port", strconv.Itoa(t.f.ssh.port))
	}
	line, err := remote.Command(words[0], words[1:]...)
	if err != nil { // a word the shell cannot carry: show it, inert
		line = strings.Join(words, " ")
	}
	return sanitize.String(line)
}

// report prints an action's outcome: done, its snapshot, its notes
// ("note: main has moved since ...") and the undo command; or why it
// failed (exit status 1).
func (t *gitTarget) report(a event.GitAction, done string) error {
	if a.OK() {
		w := t.cmd.OutOrStdout()
		fmt.Fprintf(w, "%s (snapshot before it: %s)\n", done, a.Snapshot)
		for _, n := range a.Notes {
			for _, l := range sanitizedLines(n) {
				fmt.Fprintln(w, "note: "+l)
			}
		}
		fmt.Fprintf(w, "undo: %s\n", t.undo(a.Snapshot))
		return nil
	}
	w := t.cmd.ErrOrStderr()
	fmt.Fprintf(w, "%s failed:\n", a.Op)
	for _, l := range sanitizedLines(a.Err) {
		fmt.Fprintln(w, "  "+l)
	}
	if len(a.Conflict) > 0 {
		fmt.Fprintln(w, "conflicts:")
		for _, p := range a.Conflict {
			fmt.Fprintln(w, "  "+sanitize.String(p))
		}
	}
	if a.Output != "" && !strings.Contains(a.Err, a.Output) {
		fmt.Fprintln(w, "git said:")
		for _, l := range sanitizedLines(a.Output) {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if a.From != "" && a.To != "" && a.From != a.To {
		fmt.Fprintf(w, "HEAD moved: %s -> %s\n", git.ShortID(a.From), git.ShortID(a.To))
	}
	if a.Snapshot != "" {
		fmt.Fprintf(w, "the tree as it was before is in snapshot %s\nundo: %s\n", a.Snapshot, t.undo(a.Snapshot))
	}
	return exitCode(1)
}

// refusedError is input the command refuses before acting (exit status 2).
type refusedError struct{ msg string }

func (e refusedError) Error() string { return e.msg }

func refusedf(format string, args ...any) error {
	return refusedError{fmt.Sprintf(format, args...)}
}

// cleanError prints a remote error safely (git's words are remote text).
type cleanError struct{ err error }

func (e cleanError) Error() string { return sanitize.String(e.err.Error()) }
func (e cleanError) Unwrap() error { return e.err }

// gitRunE wraps a git subcommand: refused input (a bad ref, path, stash
// or snapshot, no repository or not a git checkout) prints its reason and
// exits 2; other errors are sanitised for main to print.
func gitRunE(run func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return refusingRunE(func(err error) bool {
		var notRepo *git.NotRepoError
		return errors.As(err, &notRepo) || errors.Is(err, git.ErrBadRef) || errors.Is(err, git.ErrBadPath) ||
			errors.Is(err, git.ErrBadSnapshot) || errors.Is(err, git.ErrNoCommits) || errors.Is(err, git.ErrUnmerged) || errors.Is(err, git.ErrRestoreBlocked)
	}, run)
}

// refusingRunE wraps a subcommand's run: an error that is an exitCode is
// returned as is; a refusedError, or an error refused reports true for,
// prints "flightdeck: " and its sanitised text to stderr and exits
// exitRefused (2); any other error is returned as a cleanError, sanitised
// for main to print.
func refusingRunE(refused func(error) bool, run func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		var ec exitCode
		var re refusedError
		switch {
		case err == nil || errors.As(err, &ec):
			return err
		case errors.As(err, &re) || refused(err):
			fmt.Fprintln(cmd.ErrOrStderr(), "flightdeck:", sanitize.String(err.Error()))
			return exitCode(exitRefused)
		}
		return cleanError{err}
	}
}

// usageError prints a usage error (a bad flag, the wrong arguments) and
// exits 2, like the refused refs that a mistyped "--" would let through.
func usageError(cmd *cobra.Command, err error) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: %s (see %s --help)\n", sanitize.String(err.Error()), cmd.CommandPath())
	return exitCode(exitRefused)
}

func gitArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError(cmd, err)
		}
		return nil
	}
}

func newGitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "git",
		RunE:  runGroup,
		Short: "Status, checkout, stash, revert and undo in the server's git checkout on a host (the cockpit's git panel)",
		Long: `git reads and changes the inference server's git checkout on HOST (an SSH
target, an alias from ~/.ssh/config or the flightdeck config, or "local"),
as the cockpit's git panel does. --repo PATH names the checkout; without
it, the repo of the host's [hosts.NAME] table in the config.

Every action (checkout, stash push/apply/pop/drop, revert, restore) first
saves a snapshot of the uncommitted work (diffs and untracked files, in
.git/flightdeck/snapshots on the host) and prints the command that brings
it back: flightdeck git restore HOST ID.

Refs are resolved to a commit before git sees them; a ref that starts with
"-" is refused, also after "--". Paths are literal, relative to the
repository root.

Exit statuses: 0 success; 1 failure (git's words are printed, e.g. a stash
conflict) or not confirmed; 2 input refused before anything runs: a ref
naming no commit, a bad path, an unknown stash or snapshot, no repository
(or one that is not a git checkout, or has no commits), unmerged paths, a
restore that would write over what it cannot save first, a usage error.`,
		Example: `  flightdeck git status gpu-box
  flightdeck git checkout gpu-box origin/main
  flightdeck git stash gpu-box push "before pull" -u
  flightdeck git restore gpu-box`,
	}
	cmd.SetFlagErrorFunc(usageError)
	cmd.AddCommand(newGitStatusCmd(), newGitLogCmd(), newGitStashCmd(), newGitCheckoutCmd(),
		newGitRevertCmd(), newGitSnapshotsCmd(), newGitRestoreCmd())
	return cmd
}

// The JSON of git status --json, git log --json and git snapshots --json.
type (
	gitStatusJSON struct {
		Path      string          `json:"path"`
		Branch    string          `json:"branch"`
		Detached  bool            `json:"detached"`
		Head      gitCommitJSON   `json:"head"`
		Upstream  string          `json:"upstream"`
		Ahead     int             `json:"ahead"`
		Behind    int             `json:"behind"`
		Operation string          `json:"operation"`
		Files     []gitFileJSON   `json:"files"`
		Stashes   []gitStashJSON  `json:"stashes"`
		Reflog    []gitReflogJSON `json:"reflog"`
		ReadAt    time.Time       `json:"read_at"`
	}
	gitCommitJSON struct {
		ID      string    `json:"id"`
		Short   string    `json:"short"`
		Subject string    `json:"subject"`
		Author  string    `json:"author"`
		Time    time.Time `json:"time"`
		Refs    []string  `json:"refs,omitempty"`
	}
	gitFileJSON struct {
		Path       string `json:"path"`
		Orig       string `json:"orig,omitempty"`
		XY         string `json:"xy"`
		Staged     bool   `json:"staged"`
		Unstaged   bool   `json:"unstaged"`
		Untracked  bool   `json:"untracked"`
		Conflicted bool   `json:"conflicted"`
		Added      *int   `json:"added"`
		Deleted    *int   `json:"deleted"`
		Binary     bool   `json:"binary"`
	}
	gitStashJSON struct {
		Ref     string    `json:"ref"`
		Index   int       `json:"index"`
		ID      string    `json:"id"`
		Message string    `json:"message"`
		Time    time.Time `json:"time"`
	}
	gitReflogJSON struct {
		ID      string    `json:"id"`
		Short   string    `json:"short"`
		Action  string    `json:"action"`
		Message string    `json:"message"`
		Time    time.Time `json:"time"`
	}
	gitSnapshotJSON struct {
		ID        string    `json:"id"`
		Time      time.Time `json:"time"`
		Reason    string    `json:"reason"`
		Head      string    `json:"head"`
		Branch    string    `json:"branch"`
		Files     int       `json:"files"`
		Untracked int       `json:"untracked"`
		Bytes     int64     `json:"bytes"`
		Dir       string    `json:"dir"`
	}
)

func commitJSON(c event.Commit) gitCommitJSON {
	return gitCommitJSON{ID: c.ID, Short: c.Short, Subject: c.Subject, Author: c.Author, Time: c.Time, Refs: c.Refs}
}

func toStatusJSON(st event.GitStatus) gitStatusJSON {
	j := gitStatusJSON{Path: st.Path, Branch: st.Branch, Detached: st.Branch == "", Head: commitJSON(st.Head),
		Upstream: st.Upstream, Ahead: st.Ahead, Behind: st.Behind, Operation: st.Operation, ReadAt: st.Read,
		Files: []gitFileJSON{}, Stashes: []gitStashJSON{}, Reflog: []gitReflogJSON{}}
	for _, f := range st.Files {
		fj := gitFileJSON{Path: f.Path, Orig: f.Orig, XY: string([]byte{f.X, f.Y}), Staged: f.Staged(), Unstaged: f.Unstaged(),
			Untracked: f.Untracked(), Conflicted: f.Conflicted(), Binary: f.Binary}
		if f.Added >= 0 && f.Deleted >= 0 {
			a, d := f.Added, f.Deleted
			fj.Added, fj.Deleted = &a, &d
		}
		j.Files = append(j.Files, fj)
	}
	for _, s := range st.Stashes {
		j.Stashes = append(j.Stashes, gitStashJSON{Ref: s.Ref(), Index: s.Index, ID: s.ID, Message: s.Message, Time: s.Time})
	}
	for _, e := range st.Reflog {
		j.Reflog = append(j.Reflog, gitReflogJSON{ID: e.ID, Short: e.Short, Action: e.Action, Message: e.Message, Time: e.Time})
	}
	return j
}

// writeJSON prints v indented. encoding/json escapes the C0 controls; the
// C1 controls (U+009B is an 8-bit CSI) and the bidi controls are escaped
// here too, so that raw remote text cannot drive the terminal. The decoded
// values are unchanged.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	out := make([]byte, 0, len(b)+1)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r >= 0x80 && r <= 0x9f || unicode.Is(unicode.Bidi_Control, r) || r == 0x2028 || r == 0x2029 {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

func newGitStatusCmd() *cobra.Command {
	var f gitFlags
	var asJSON bool
	var reflog int
	cmd := &cobra.Command{
		Use:   "status HOST",
		Short: "Show branch, HEAD, upstream, dirty files with their diffstat, stashes and the reflog",
		Long: `status shows the checkout on HOST: the branch (or detached HEAD), HEAD's short
id, subject and age, ahead/behind the upstream, a merge or rebase left in
progress, the dirty files (porcelain XY, +added -deleted lines against HEAD,
"bin" for binary, "new" for untracked), the stashes and the last -n reflog
entries.

--json prints one object:
  path, branch ("" when detached), detached, upstream, ahead, behind,
  operation ("merge", "rebase", "cherry-pick", "revert", "bisect" or ""),
  read_at;
  head: {id, short, subject, author, time};
  files: [{path, orig (old path of a rename), xy, staged, unstaged,
    untracked, conflicted, added, deleted (null for binary and untracked
    files), binary}];
  stashes: [{ref, index, id, message, time}], newest first;
  reflog: [{id, short, action, message, time}], newest first.
Times are RFC 3339. Strings are git's raw text.`,
		Example: `  flightdeck git status gpu-box
  flightdeck git status local --repo ~/sglang -n 3
  flightdeck git status gpu-box --json | jq -r '.files[].path'`,
		Args: gitArgs(cobra.ExactArgs(1)),
		RunE: gitRunE(func(cmd *cobra.Command, args []string) error {
			if reflog < 0 {
				return refusedf("-n %d: want 0 or more reflog entries", reflog)
			}
			t, err := f.openRepo(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.close()
			st, err := t.repo.Status(cmd.Context(), max(reflog, 1))
			if err != nil {
				return err
			}
			st.Reflog = st.Reflog[:min(reflog, len(st.Reflog))]
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), toStatusJSON(st))
			}
			printGitStatus(cmd.OutOrStdout(), st, reflog, time.Now())
			return nil
		}),
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (fields in the help)")
	cmd.Flags().IntVarP(&reflog, "reflog", "n", 10, "reflog entries to show")
	return cmd
}

func printGitStatus(w io.Writer, st event.GitStatus, reflog int, now time.Time) {
	s := sanitize.String
	fmt.Fprintf(w, "repo       %s\n", s(st.Path))
	branch := "(detached HEAD)"
	if st.Branch != "" {
		branch = s(st.Branch)
	}
	switch {
	case st.Upstream == "":
		if st.Branch != "" {
			branch += ", no upstream"
		}
	case st.Ahead == 0 && st.Behind == 0:
		branch += ", up to date with " + s(st.Upstream)
	case st.Ahead == 0:
		branch += fmt.Sprintf(", %d behind %s", st.Behind, s(st.Upstream))
	case st.Behind == 0:
		branch += fmt.Sprintf(", %d ahead of %s", st.Ahead, s(st.Upstream))
	default:
		branch += fmt.Sprintf(", %d ahead, %d behind %s", st.Ahead, st.Behind, s(st.Upstream))
	}
	fmt.Fprintf(w, "branch     %s\n", branch)
	fmt.Fprintf(w, "HEAD       %s %s (%s, %s)\n", s(st.Head.Short), s(st.Head.Subject), ago(st.Head.Time, now), s(st.Head.Author))
	if st.Operation != "" {
		fmt.Fprintf(w, "operation  %s in progress (finish or abort it with git)\n", s(st.Operation))
	}
	if len(st.Files) == 0 {
		fmt.Fprintln(w, "changes    none")
	} else {
		fmt.Fprintf(w, "changes    %d file%s: %s\n", len(st.Files), plural(len(st.Files)), strings.Join(st.CountWords(), ", "))
		names := make([]string, len(st.Files))
		width := 0
		for i, f := range st.Files {
			names[i] = s(f.Path)
			if f.Orig != "" {
				names[i] += " <- " + s(f.Orig)
			}
			width = min(max(width, utf8.RuneCountInString(names[i])), 60)
		}
		for i, f := range st.Files {
			fmt.Fprintf(w, "  %s %-*s  %s\n", s(string([]byte{f.X, f.Y})), width, names[i], diffstat(f))
		}
	}
	if len(st.Stashes) == 0 {
		fmt.Fprintln(w, "stashes    none")
	} else {
		fmt.Fprintf(w, "stashes    %d\n", len(st.Stashes))
		printStashes(w, st.Stashes, now)
	}
	if reflog > 0 && len(st.Reflog) > 0 {
		fmt.Fprintf(w, "reflog     last %d\n", len(st.Reflog))
		for _, e := range st.Reflog {
			fmt.Fprintf(w, "  %s  %-8s  %s\n", s(e.Short), ago(e.Time, now), s(e.Message))
		}
	}
}

func printStashes(w io.Writer, stashes []event.Stash, now time.Time) {
	for _, st := range stashes {
		fmt.Fprintf(w, "  %-10s %s  %-8s  %s\n", st.Ref(), git.ShortID(st.ID), ago(st.Time, now), sanitize.String(st.Message))
	}
}

func diffstat(f event.GitFile) string {
	switch {
	case f.Untracked():
		return "new"
	case f.Binary:
		return "bin"
	case f.Added < 0:
		return ""
	}
	return fmt.Sprintf("+%d -%d", f.Added, f.Deleted)
}

// ago says how long before now t was: "42s ago", "5m ago", "3h ago",
// "4d ago", and a date past 60 days (or in the future).
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < -time.Minute || d >= 60*24*time.Hour:
		return t.Format("2006-01-02")
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// sizeText prints a byte count in binary units.
func sizeText(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	case n < 1024*1024*1024:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1024*1024*1024))
}

// sanitizedLines splits remote text into lines, each safe to print.
func sanitizedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		out = append(out, sanitize.String(l))
	}
	return out
}

func newGitLogCmd() *cobra.Command {
	var f gitFlags
	var asJSON bool
	var n int
	cmd := &cobra.Command{
		Use:   "log HOST",
		Short: "List the commits the checkout picker offers: HEAD, branches, tags and remote branches, newest first",
		Long: `log lists up to -n commits reachable from HEAD, the local branches, the tags
and the remote-tracking branches, newest first: what flightdeck git checkout
can go to, including what a pull would bring in (as of the last fetch).

--json prints an array of {id, short, subject, author, time, refs}.`,
		Example: `  flightdeck git log gpu-box -n 10
  flightdeck git log gpu-box --json | jq -r '.[0].id'`,
		Args: gitArgs(cobra.ExactArgs(1)),
		RunE: gitRunE(func(cmd *cobra.Command, args []string) error {
			if n < 1 {
				return refusedf("-n %d: want 1 or more commits", n)
			}
			t, err := f.openRepo(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.close()
			commits, err := t.repo.Log(cmd.Context(), n)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				js := []gitCommitJSON{}
				for _, c := range commits {
					js = append(js, commitJSON(c))
				}
				return writeJSON(w, js)
			}
			now := time.Now()
			for _, c := range commits {
				refs := ""
				if len(c.Refs) > 0 {
					refs = " (" + sanitize.String(strings.Join(c.Refs, ", ")) + ")"
				}
				fmt.Fprintf(w, "%s  %-8s  %s%s  [%s]\n", sanitize.String(c.Short), ago(c.Time, now), sanitize.String(c.Subject), refs, sanitize.String(c.Author))
			}
			return nil
		}),
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVarP(&n, "max-count", "n", 40, "how many commits")
	return cmd
}

func newGitStashCmd() *cobra.Command {
	var f gitFlags
	var untracked bool
	cmd := &cobra.Command{
		Use:   "stash HOST [list | push NAME | apply STASH | pop STASH | drop STASH]",
		Short: "List, push (by name), apply, pop or drop stashes",
		Long: `stash lists the stashes of the checkout on HOST (the default), pushes the
uncommitted changes as a new stash named NAME (-u: the untracked files too),
or applies, pops or drops one. STASH is stash@{N}, N (as in stash@{N}), or a
stash's commit id (at least 4 hex digits); it is resolved to the stash's
commit first, so a list that shifted in between cannot pick another.

apply, pop and drop say what they will do (the stash, its message, and
for a drop its commit id) and ask first; --yes skips the question. A pop
or apply that conflicts stops with the conflicted paths listed and the
stash kept (exit status 1); the printed undo command puts the tree back
as it was before, and brings back a dropped stash.`,
		Example: `  flightdeck git stash gpu-box
  flightdeck git stash gpu-box push "before pull: my all_reduce" -u
  flightdeck git stash gpu-box pop stash@{0}
  flightdeck git stash gpu-box drop 3f9a2c1 --yes`,
		Args: gitArgs(func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return errors.New("stash needs HOST")
			}
			verb := "list"
			if len(args) > 1 {
				verb = args[1]
			}
			want := map[string]int{"list": 2, "push": 3, "apply": 3, "pop": 3, "drop": 3}[verb]
			switch {
			case want == 0:
				return fmt.Errorf("stash %q: want list, push, apply, pop or drop", verb)
			case len(args) > want || (len(args) < want && verb != "list"):
				return fmt.Errorf("stash %s takes %s", verb, map[string]string{"list": "nothing more", "push": "one NAME (quote it)", "apply": "one STASH", "pop": "one STASH", "drop": "one STASH"}[verb])
			case untracked && verb != "push":
				return errors.New("-u/--include-untracked goes with stash push")
			}
			return nil
		}),
		RunE: gitRunE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			verb := "list"
			if len(args) > 1 {
				verb = args[1]
			}
			if verb == "push" {
				if err := git.CheckMessage(args[2]); err != nil {
					return refusedError{err.Error()}
				}
			}
			t, err := f.openRepo(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.close()
			r := t.repo
			if verb != "list" {
				if err := t.mayAct(); err != nil {
					return err
				}
			}
			switch verb {
			case "list":
				st, err := r.Status(ctx, 1)
				if err != nil {
					return err
				}
				if len(st.Stashes) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "no stashes")
				}
				printStashes(cmd.OutOrStdout(), st.Stashes, time.Now())
				return nil
			case "push":
				a, err := t.s.Stash(ctx, args[2], untracked)
				if err != nil {
					return err
				}
				return t.report(a, fmt.Sprintf("stashed as stash@{0}: %s", sanitize.String(args[2])))
			}
			st, err := r.Status(ctx, 1)
			if err != nil {
				return err
			}
			s, err := resolveStash(ctx, r, st.Stashes, args[2], t.alias)
			if err != nil {
				return err
			}
			printStashOp(cmd.OutOrStdout(), verb, s, r.Path)
			if !f.yes {
				q := fmt.Sprintf("%s %s in %s on %s?", map[string]string{"apply": "Apply", "pop": "Pop", "drop": "Drop"}[verb], s.Ref(), sanitize.String(r.Path), r.Host.Name())
				if err := confirm(ctx, q); err != nil {
					return err
				}
			}
			var a event.GitAction
			switch verb {
			case "drop":
				a, err = t.s.StashDrop(ctx, s.ID)
			default:
				a, err = t.s.StashApply(ctx, s.ID, verb == "pop")
			}
			if err != nil {
				return err
			}
			done := map[string]string{"apply": "applied", "pop": "popped", "drop": "dropped"}[verb]
			return t.report(a, fmt.Sprintf("%s %s (%s): %s", done, s.Ref(), git.ShortID(s.ID), sanitize.String(s.Message)))
		}),
	}
	f.add(cmd)
	f.addYes(cmd)
	cmd.Flags().BoolVarP(&untracked, "include-untracked", "u", false, "push: stash the untracked files too")
	return cmd
}

// printStashOp says what a stash apply, pop or drop of s will do, before
// it is confirmed.
func printStashOp(w io.Writer, verb string, s event.Stash, repo string) {
	fmt.Fprintf(w, "%s %s (%s) in %s: %s\n", verb, s.Ref(), git.ShortID(s.ID), sanitize.String(repo), sanitize.String(s.Message))
	switch verb {
	case "apply":
		fmt.Fprintln(w, "  applies it to the worktree; the stash is kept")
	case "pop":
		fmt.Fprintln(w, "  applies it to the worktree, then drops it; if the apply conflicts, the stash is kept")
	case "drop":
		fmt.Fprintf(w, "  drops commit %s; the printed undo command brings the stash back\n", s.ID)
	}
	fmt.Fprintln(w, "  a snapshot of the tree is saved first")
}

// The forms of STASH: stash@{N}, N (at most 3 digits, so that an all-digit
// short commit id is not taken for an index), or a commit id.
var (
	stashRef   = regexp.MustCompile(`^stash@\{[0-9]{1,3}\}$`)
	stashIndex = regexp.MustCompile(`^[0-9]{1,3}$`)
	stashID    = regexp.MustCompile(`^[0-9a-f]{4,64}$`)
)

// resolveStash finds the stash that arg names: stash@{N}, N, or a commit
// id that must be one of the stashes'.
func resolveStash(ctx context.Context, r *git.Repo, stashes []event.Stash, arg, alias string) (event.Stash, error) {
	ref := arg
	switch {
	case stashIndex.MatchString(arg):
		ref = "stash@{" + arg + "}"
	case !stashRef.MatchString(arg) && !stashID.MatchString(arg):
		// git itself reads "stash@{0}xyz" or "stash@{1}:f.txt" as stash@{N}.
		return event.Stash{}, refusedf("%s is not stash@{N}, N or a stash's commit id (list them: flightdeck git stash %s)", sanitize.String(strconv.Quote(arg)), alias)
	}
	id, err := r.Resolve(ctx, ref)
	if errors.Is(err, git.ErrBadRef) {
		return event.Stash{}, fmt.Errorf("no stash %s (want stash@{N}, N or a stash's commit id; list them: flightdeck git stash %s): %w", sanitize.String(strconv.Quote(arg)), alias, err)
	}
	if err != nil {
		return event.Stash{}, err
	}
	for _, s := range stashes {
		if s.ID == id {
			return s, nil
		}
	}
	return event.Stash{}, refusedf("%q is commit %s, not one of the %d stash%s (list them: flightdeck git stash %s)", arg, git.ShortID(id), len(stashes), map[bool]string{true: "", false: "es"}[len(stashes) == 1], alias)
}

func newGitCheckoutCmd() *cobra.Command {
	var f gitFlags
	cmd := &cobra.Command{
		Use:   "checkout HOST REF",
		Short: "Preview, confirm and check out a branch or commit (a snapshot first; prints the undo)",
		Long: `checkout shows what checking out REF would do — the commits it brings in and
those it leaves, the files it touches, and the dirty files git would refuse
to overwrite — asks, then checks it out. REF is a local branch (checked out
by name) or anything naming a commit (id, tag, HEAD~2, origin/main: checked
out detached). Uncommitted changes are carried over as git does; a snapshot
of them is saved first, and the undo command printed.`,
		Example: `  flightdeck git checkout gpu-box origin/main
  flightdeck git checkout gpu-box 3207427 --yes
  flightdeck git checkout local --repo ~/sglang feature/pcg`,
		Args: gitArgs(cobra.ExactArgs(2)),
		RunE: gitRunE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ref := args[1]
			if err := git.CheckRef(ref); err != nil { // before connecting
				return err
			}
			t, err := f.openRepo(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.close()
			if err := t.mayAct(); err != nil {
				return err
			}
			r := t.repo
			st, err := r.Status(ctx, 1)
			if err != nil {
				return err
			}
			p, err := r.Preview(ctx, ref, previewLimit)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			printPreview(w, st, p)
			if p.To.ID == st.Head.ID && p.Branch == st.Branch {
				fmt.Fprintln(w, "already there: nothing to do")
				return nil
			}
			if !f.yes {
				if err := confirm(ctx, fmt.Sprintf("Check out %s in %s on %s?", sanitize.String(ref), sanitize.String(r.Path), r.Host.Name())); err != nil {
					return err
				}
			}
			a, err := t.s.Checkout(ctx, ref)
			if err != nil {
				return err
			}
			return t.report(a, "checked out "+sanitize.String(ref)+": HEAD "+headText(a.To, a.Branch)+", was "+headText(a.From, st.Branch))
		}),
	}
	f.add(cmd)
	f.addYes(cmd)
	return cmd
}

func headText(id, branch string) string {
	if branch == "" {
		return git.ShortID(id) + " (detached)"
	}
	return git.ShortID(id) + " on " + sanitize.String(branch)
}

func printPreview(w io.Writer, st event.GitStatus, p git.Preview) {
	s := sanitize.String
	to := "detached at " + s(p.To.Short)
	if p.Branch != "" {
		to = "branch " + s(p.Branch)
	}
	fmt.Fprintf(w, "checkout %s (%s) in %s\n", s(p.Target), to, s(st.Path))
	fmt.Fprintf(w, "  from %s %s\n", headText(p.From.ID, st.Branch), s(p.From.Subject))
	fmt.Fprintf(w, "  to   %s %s\n", s(p.To.Short), s(p.To.Subject))
	commits := func(verb, sign string, list []event.Commit, count int) {
		fmt.Fprintf(w, "%s %d commit%s\n", verb, count, plural(count))
		for _, c := range list {
			fmt.Fprintf(w, "  %s %s %s\n", sign, s(c.Short), s(c.Subject))
		}
		if more := count - len(list); more > 0 {
			fmt.Fprintf(w, "  ... and %d more\n", more)
		}
	}
	commits("brings in", "+", p.Forward, p.ForwardCount)
	commits("leaves", "-", p.Back, p.BackCount)
	fmt.Fprintf(w, "files touched: %d\n", len(p.Files))
	const maxFiles = 50
	for i, c := range p.Files {
		if i == maxFiles {
			fmt.Fprintf(w, "  ... and %d more\n", len(p.Files)-maxFiles)
			break
		}
		name := s(c.Path)
		if c.Orig != "" {
			name = s(c.Orig) + " -> " + name
		}
		fmt.Fprintf(w, "  %c %s\n", c.Status, name)
	}
	if len(p.Blocking) > 0 {
		fmt.Fprintf(w, "warning: %d dirty file%s would be overwritten; git will refuse: stash them first\n", len(p.Blocking), plural(len(p.Blocking)))
		for _, b := range p.Blocking {
			fmt.Fprintln(w, "  "+s(b))
		}
	}
	if len(p.Overwrites) > 0 {
		fmt.Fprintf(w, "note: %d ignored file%s the target tracks will be replaced (git does not ask; the snapshot saves them first):\n", len(p.Overwrites), plural(len(p.Overwrites)))
		for _, o := range p.Overwrites {
			fmt.Fprintln(w, "  "+s(o))
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func newGitRevertCmd() *cobra.Command {
	var f gitFlags
	cmd := &cobra.Command{
		Use:   "revert HOST PATH...",
		Short: "Discard the uncommitted changes of some files (untracked ones are deleted); a snapshot first",
		Long: `revert restores each PATH (relative to the repository root, as git status
lists it) to HEAD, in the index and the worktree, and deletes the PATHs that
are untracked. Every other file is left alone. A snapshot of the
uncommitted work is saved first, and the undo command printed.`,
		Example: `  flightdeck git revert gpu-box python/sglang/srt/layers/moe/fused_moe.py
  flightdeck git revert local --repo ~/sglang scratch/notes.txt README.md --yes`,
		Args: gitArgs(cobra.MinimumNArgs(2)),
		RunE: gitRunE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			paths := args[1:]
			for i, p := range paths {
				if err := git.CheckPath(p); err != nil {
					return err
				}
				paths[i] = path.Clean(p)
			}
			t, err := f.openRepo(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.close()
			if err := t.mayAct(); err != nil {
				return err
			}
			r := t.repo
			st, err := r.Status(ctx, 1)
			if err != nil {
				return err
			}
			dirty := map[string]event.GitFile{}
			for _, f := range st.Files {
				dirty[f.Path] = f
			}
			for _, p := range paths {
				if _, ok := dirty[p]; !ok {
					return refusedf("%s has no uncommitted change (give paths relative to the repository root, as flightdeck git status %s lists them)", sanitize.String(strconv.Quote(p)), t.alias)
				}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "revert %d file%s in %s:\n", len(paths), plural(len(paths)), sanitize.String(r.Path))
			for _, p := range paths {
				f := dirty[p]
				fmt.Fprintf(w, "  %s %s  %s\n", sanitize.String(string([]byte{f.X, f.Y})), sanitize.String(p), revertEffect(f))
			}
			if !f.yes {
				if err := confirm(ctx, fmt.Sprintf("Revert %d file%s on %s?", len(paths), plural(len(paths)), r.Host.Name())); err != nil {
					return err
				}
			}
			a, err := t.s.Revert(ctx, paths)
			if err != nil {
				return err
			}
			return t.report(a, fmt.Sprintf("reverted %d file%s", len(paths), plural(len(paths))))
		}),
	}
	f.add(cmd)
	f.addYes(cmd)
	return cmd
}

func revertEffect(f event.GitFile) string {
	switch {
	case f.Untracked():
		return "untracked: will be deleted"
	case f.Conflicted():
		return "conflicted: back to HEAD"
	case f.X == 'A':
		return "new in the index: will be deleted"
	case f.Orig != "":
		return "renamed from " + sanitize.String(f.Orig) + ": both back to HEAD"
	case f.Staged() && f.Unstaged():
		return "staged and unstaged changes discarded"
	case f.Staged():
		return "staged change discarded"
	}
	return "change discarded"
}

func newGitSnapshotsCmd() *cobra.Command {
	var f gitFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "snapshots HOST",
		Short: "List the snapshots of uncommitted work taken before each action, newest first",
		Long: `snapshots lists the snapshots flightdeck saved in the checkout on HOST before
each action: id, age, the action it preceded, HEAD and branch then, the
dirty files it holds, and its size. flightdeck git restore HOST ID brings
one back.

--json prints an array of {id, time, reason, head, branch, files,
untracked, bytes, dir}.`,
		Example: `  flightdeck git snapshots gpu-box
  flightdeck git snapshots gpu-box --json | jq -r '.[0].id'`,
		Args: gitArgs(cobra.ExactArgs(1)),
		RunE: gitRunE(func(cmd *cobra.Command, args []string) error {
			t, err := f.openRepo(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.close()
			snaps, err := t.repo.Snapshots(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				js := []gitSnapshotJSON{}
				for _, s := range snaps {
					js = append(js, gitSnapshotJSON{ID: s.ID, Time: s.Time, Reason: s.Reason, Head: s.Head, Branch: s.Branch,
						Files: s.Files, Untracked: s.Untracked, Bytes: s.Bytes, Dir: s.Dir})
				}
				return writeJSON(w, js)
			}
			if len(snaps) == 0 {
				fmt.Fprintln(w, "no snapshots in", sanitize.String(t.repo.SnapshotDir))
				return nil
			}
			now := time.Now()
			fmt.Fprintf(w, "%-24s  %-8s  %-7s  %-12s  %5s  %9s  %s\n", "ID", "AGE", "HEAD", "BRANCH", "FILES", "SIZE", "REASON")
			for _, s := range snaps {
				fmt.Fprintf(w, "%-24s  %-8s  %-7s  %-12s  %5d  %9s  %s\n", s.ID, ago(s.Time, now), git.ShortID(s.Head),
					orDash(sanitize.String(s.Branch)), s.Files, sizeText(s.Bytes), sanitize.String(s.Reason))
			}
			return nil
		}),
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newGitRestoreCmd() *cobra.Command {
	var f gitFlags
	cmd := &cobra.Command{
		Use:   "restore HOST [ID]",
		Short: "Put the checkout back as a snapshot saved it (default: the newest); the present is saved first",
		Long: `restore brings back the checkout saved in snapshot ID (default: the newest,
see flightdeck git snapshots): HEAD and branch, the index, the worktree and
the untracked files, byte for byte, and any stash dropped or popped since.
The present state is discarded — after it is saved in a new snapshot, so a
restore can itself be undone.`,
		Example: `  flightdeck git restore gpu-box
  flightdeck git restore gpu-box 20261129-215807.123-3f9a --yes`,
		Args: gitArgs(cobra.RangeArgs(1, 2)),
		RunE: gitRunE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := f.openRepo(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.close()
			if err := t.mayAct(); err != nil {
				return err
			}
			r := t.repo
			snaps, err := r.Snapshots(ctx)
			if err != nil {
				return err
			}
			if len(snaps) == 0 {
				return refusedf("no snapshots in %s: nothing to restore", r.SnapshotDir)
			}
			s := snaps[0]
			if len(args) == 2 {
				found := false
				for _, x := range snaps {
					if x.ID == args[1] {
						s, found = x, true
					}
				}
				if !found {
					return refusedf("no snapshot %s in %s (list them: flightdeck git snapshots %s)", strconv.Quote(args[1]), r.SnapshotDir, t.alias)
				}
			}
			st, err := r.Status(ctx, 1)
			if err != nil {
				return err
			}
			now := time.Now()
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "snapshot %s, taken %s before %s\n", s.ID, ago(s.Time, now), sanitize.String(strconv.Quote(s.Reason)))
			fmt.Fprintf(w, "  HEAD %s, %d dirty file%s (%d untracked), %s\n", headText(s.Head, s.Branch), s.Files, plural(s.Files), s.Untracked, sizeText(s.Bytes))
			fmt.Fprintf(w, "now: HEAD %s, %d dirty file%s: saved in a new snapshot, then discarded\n", headText(st.Head.ID, st.Branch), len(st.Files), plural(len(st.Files)))
			if !f.yes {
				if err := confirm(ctx, fmt.Sprintf("Restore snapshot %s in %s on %s?", s.ID, sanitize.String(r.Path), r.Host.Name())); err != nil {
					return err
				}
			}
			a, err := t.s.Restore(ctx, s.ID)
			if err != nil {
				return err
			}
			return t.report(a, fmt.Sprintf("restored %s: HEAD %s", s.ID, headText(a.To, a.Branch)))
		}),
	}
	f.add(cmd)
	f.addYes(cmd)
	return cmd
}
