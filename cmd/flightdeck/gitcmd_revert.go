package main

import (
	"fmt"
	"path"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The revert verb: flightdeck git revert, which discards the uncommitted
// changes of some files.

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
					return refusedf("%s has no uncommitted change (give paths relative to the repository root, as flightdeck git status %s lists them)", sanitize.Name(strconv.Quote(p)), t.alias)
				}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "revert %d file%s in %s:\n", len(paths), plural(len(paths)), sanitize.Name(r.Path))
			for _, p := range paths {
				f := dirty[p]
				fmt.Fprintf(w, "  %s %s  %s\n", sanitize.Name(string([]byte{f.X, f.Y})), sanitize.Name(p), revertEffect(f))
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
		return "renamed from " + sanitize.Name(f.Orig) + ": both back to HEAD"
	case f.Staged() && f.Unstaged():
		return "staged and unstaged changes discarded"
	case f.Staged():
		return "staged change discarded"
	}
	return "change discarded"
}
