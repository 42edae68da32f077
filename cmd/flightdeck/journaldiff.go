package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/journal"
)

// --- journal diff ---

type journalDiffFlags struct {
	dir    string
	format string
	all    bool
}

func newJournalDiffCmd() *cobra.Command {
	var f journalDiffFlags
	cmd := &cobra.Command{
		Use:   "diff FILE A B",
		Short: "Compare two experiments: results with verdicts, what changed, the commits between them",
		Long: `diff compares experiment B (new) with A (old), each an id (e2) or a name;
"baseline" as A is the experiment marked as the baseline in the cockpit.

Results: tok/s from the server log and, when a benchmark ran (b), its
output tok/s, TTFT, ITL, TPOT and E2E latency — each side's median with
its 95 % confidence interval (±) and n, the delta, and the verdict across
launches: one launch of a configuration is one sample (samples inside a
run are correlated), compared with the Mann–Whitney U test at α = 0.05 as
benchstat does. A verdict needs at least 4 launches of each
configuration: R in the cockpit relaunches one. The launch-to-launch
(A/A) noise of each configuration launched twice or more is shown next
to it: a significant change no larger than the noise is not much of one.

Then every fingerprint variable, changed rows first: commit (with the
commits and files between A's and B's HEAD, when the cockpit recorded
them), dirty patch, env, launch flags, versions, the GPUs under load
(clocks, P-state, PCIe link, throttle reasons) and the host. A value
captured on one side only (a failed probe) is listed apart, never as a
change. Unchanged rows are counted, or listed with --all.`,
		Example: `  flightdeck journal diff 2026-11-29-101500-demo e1 e2
  flightdeck journal diff 2026-11-29-101500-demo baseline e3 --all
  flightdeck journal diff 2026-11-29-101500-demo e1 e3 --format md > compare.md`,
		Args: gitArgs(cobra.ExactArgs(3)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error {
			return runJournalDiff(cmd, args[0], args[1], args[2], f)
		}),
	}
	cmd.Flags().StringVar(&f.dir, "dir", "", "journals directory FILE is looked up in (default $XDG_STATE_HOME/flightdeck/journals)")
	cmd.Flags().StringVar(&f.format, "format", "text", "output format: text, md or json")
	cmd.Flags().BoolVar(&f.all, "all", false, "list the unchanged fingerprint rows too")
	return cmd
}

func runJournalDiff(cmd *cobra.Command, arg, a, b string, f journalDiffFlags) error {
	switch f.format {
	case "text", "md", "json":
	default:
		return refusedf("--format %q: want text, md or json", f.format)
	}
	lj, err := openJournal(arg, f.dir)
	if err != nil {
		return err
	}
	defer lj.Close()
	l := lj.report.Ledger
	if a == "baseline" && l.Find("baseline") == nil {
		x := l.Baseline()
		if x == nil {
			return refusedf("no baseline marked in %s (mark one in the cockpit, or name an experiment: have %s)", lj.path, lj.report.ExpList())
		}
		a = x.ID
	}
	d, err := journal.Compare(l.Experiments(), a, b)
	if errors.Is(err, journal.ErrNoExperiment) {
		return refusedf("%v in %s", err, lj.path)
	}
	if err != nil {
		return err
	}
	if err := journal.WriteDiff(cmd.OutOrStdout(), d, f.format, journal.DiffOptions{All: f.all}); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
