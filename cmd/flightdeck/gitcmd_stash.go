package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The stash verb: flightdeck git stash list, push, apply, pop and drop,
// and how a STASH argument is resolved to one of the stashes.

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
				return t.report(a, fmt.Sprintf("stashed as stash@{0}: %s", sanitize.Name(args[2])))
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
				q := fmt.Sprintf("%s %s in %s on %s?", map[string]string{"apply": "Apply", "pop": "Pop", "drop": "Drop"}[verb], s.Ref(), sanitize.Name(r.Path), r.Host.Name())
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
			return t.report(a, fmt.Sprintf("%s %s (%s): %s", done, s.Ref(), git.ShortID(s.ID), sanitize.Name(s.Message)))
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
	fmt.Fprintf(w, "%s %s (%s) in %s: %s\n", verb, s.Ref(), git.ShortID(s.ID), sanitize.Name(repo), sanitize.Name(s.Message))
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
		return event.Stash{}, refusedf("%s is not stash@{N}, N or a stash's commit id (list them: flightdeck git stash %s)", sanitize.Name(strconv.Quote(arg)), alias)
	}
	id, err := r.Resolve(ctx, ref)
	if errors.Is(err, git.ErrBadRef) {
		return event.Stash{}, fmt.Errorf("no stash %s (want stash@{N}, N or a stash's commit id; list them: flightdeck git stash %s): %w", sanitize.Name(strconv.Quote(arg)), alias, err)
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
