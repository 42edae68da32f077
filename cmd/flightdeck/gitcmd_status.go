package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The read verbs: flightdeck git status and git log, and the JSON that
// they and git snapshots print.

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
	s := sanitize.Name
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
		fmt.Fprintf(w, "  %-10s %s  %-8s  %s\n", st.Ref(), git.ShortID(st.ID), ago(st.Time, now), sanitize.Name(st.Message))
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
					refs = " (" + sanitize.Name(strings.Join(c.Refs, ", ")) + ")"
				}
				fmt.Fprintf(w, "%s  %-8s  %s%s  [%s]\n", sanitize.Name(c.Short), ago(c.Time, now), sanitize.Name(c.Subject), refs, sanitize.Name(c.Author))
			}
			return nil
		}),
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVarP(&n, "max-count", "n", 40, "how many commits")
	return cmd
}
