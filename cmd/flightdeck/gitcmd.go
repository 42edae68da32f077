package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
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

// writeJSON prints v indented. encoding/json escapes the C0 controls; the
// C1 controls (U+009B is an 8-bit CSI) and the invisible characters
// (sanitize.Invisible: bidi controls, zero-width, tags) are escaped
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
		switch {
		case r >= 0x80 && r <= 0x9f || r >= 0xa0 && r <= 0xffff && sanitize.Invisible(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		case r > 0xffff && sanitize.Invisible(r):
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		default:
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	_, err = w.Write(append(out, '\n'))
	return err
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

// sanitizedLines splits remote text into lines, each safe to print.
func sanitizedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		out = append(out, sanitize.String(l))
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
