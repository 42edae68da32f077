package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// The snapshot verbs: flightdeck git snapshots, which lists the snapshots
// taken before each action, and git restore, which brings one back.

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
				fmt.Fprintln(w, "no snapshots in", sanitize.Name(t.repo.SnapshotDir))
				return nil
			}
			now := time.Now()
			fmt.Fprintf(w, "%-24s  %-8s  %-7s  %-12s  %5s  %9s  %s\n", "ID", "AGE", "HEAD", "BRANCH", "FILES", "SIZE", "REASON")
			for _, s := range snaps {
				fmt.Fprintf(w, "%-24s  %-8s  %-7s  %-12s  %5d  %9s  %s\n", s.ID, ago(s.Time, now), git.ShortID(s.Head),
					orDash(sanitize.Name(s.Branch)), s.Files, sizeText(s.Bytes), sanitize.Name(s.Reason))
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
			fmt.Fprintf(w, "snapshot %s, taken %s before %s\n", s.ID, ago(s.Time, now), sanitize.Name(strconv.Quote(s.Reason)))
			fmt.Fprintf(w, "  HEAD %s, %d dirty file%s (%d untracked), %s\n", headText(s.Head, s.Branch), s.Files, plural(s.Files), s.Untracked, sizeText(s.Bytes))
			fmt.Fprintf(w, "now: HEAD %s, %d dirty file%s: saved in a new snapshot, then discarded\n", headText(st.Head.ID, st.Branch), len(st.Files), plural(len(st.Files)))
			if !f.yes {
				if err := confirm(ctx, fmt.Sprintf("Restore snapshot %s in %s on %s?", s.ID, sanitize.Name(r.Path), r.Host.Name())); err != nil {
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
