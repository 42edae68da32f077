package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// The checkout verb: flightdeck git checkout, with its preview (the
// commits it brings in and leaves, the files it touches) and its question.

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
			printPreview(w, st, p, measuredAt(r.Host.Name()))
			if p.To.ID == st.Head.ID && p.Branch == st.Branch {
				fmt.Fprintln(w, "already there: nothing to do")
				return nil
			}
			if !f.yes {
				if err := confirm(ctx, fmt.Sprintf("Check out %s in %s on %s?", sanitize.Name(ref), sanitize.Name(r.Path), r.Host.Name())); err != nil {
					return err
				}
			}
			a, err := t.s.Checkout(ctx, ref)
			if err != nil {
				return err
			}
			return t.report(a, "checked out "+sanitize.Name(ref)+": HEAD "+headText(a.To, a.Branch)+", was "+headText(a.From, st.Branch))
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
	return git.ShortID(id) + " on " + sanitize.Name(branch)
}

// measuredAt is the tok/s the host's journals (the default journals
// directory) measured at a commit, for the preview's commit lists
// (history.MeasuredText); nil when none was measured on the host.
func measuredAt(host string) func(commit string) string {
	dir, err := journal.DefaultDir()
	if err != nil {
		return nil
	}
	h, err := history.Collect(dir, host, history.Own{}, 0)
	if err != nil || len(h.Journals) == 0 {
		return nil
	}
	exps := history.Experiments(history.Fold(h))
	return func(commit string) string { return history.MeasuredText(exps, commit) }
}

// printPreview prints what checking out p.Target does; measured, when
// set, gives each commit listed the tok/s measured at it.
func printPreview(w io.Writer, st event.GitStatus, p git.Preview, measured func(commit string) string) {
	s := sanitize.Name
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
			if measured != nil {
				fmt.Fprintf(w, "  %s %s %-15s %s\n", sign, s(c.Short), s(measured(c.ID)), s(c.Subject))
				continue
			}
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
