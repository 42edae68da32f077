package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
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
"baseline" is the experiment marked as the baseline in the cockpit (when
none is marked, an experiment named "baseline"). A and B must differ.

Results: tok/s from the server log and, when a benchmark ran (b), its
output tok/s, TTFT, ITL (each request's median gap), TPOT and E2E
latency — each side's median with its 95 % confidence interval [lo, hi]
and n, the delta, and the verdict across launches: one server launch of
a configuration is one sample (samples inside a run are correlated, and
experiments started by hand on one running server are one launch),
compared with the Mann–Whitney U test at α = 0.05 as benchstat does. A
verdict needs at least 4 launches of each configuration: R in the
cockpit relaunches one. Benchmark runs with other settings (endpoint,
lengths, concurrency, rate, prompts) give no benchmark verdict. The
launch-to-launch (A/A) noise of each configuration launched twice or
more is shown next to it: a significant change no larger than the noise
is not much of one. An experiment still open in a journal being written
shows its result so far.

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
	if pr := lj.problems; pr.Any() {
		// What was skipped is not in the comparison: say so, as show does.
		fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: %s: skipped %s\n", lj.path, sanitize.String(pr.String()))
	}
	l := &lj.report.Ledger
	if a, err = resolveBaseline(cmd, l, a, lj); err != nil {
		return err
	}
	if b, err = resolveBaseline(cmd, l, b, lj); err != nil {
		return err
	}
	d, err := compare.Compare(l.Experiments(), a, b)
	if errors.Is(err, compare.ErrNoExperiment) {
		return refusedf("%v in %s", err, lj.path)
	}
	if err != nil {
		return err
	}
	if d.A == d.B {
		return refusedf("A and B are the same experiment (%s): nothing to compare (have %s)", sanitize.OneLine(d.A.ID), lj.report.ExpList())
	}
	if err := report.WriteDiff(cmd.OutOrStdout(), d, f.format, report.DiffOptions{All: f.all}); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	// An Xid during either run is said beside the comparison, as a skip
	// is: a GPU fault can explain a difference the fingerprints cannot.
	for _, x := range []*ledger.Experiment{d.A, d.B} {
		for _, g := range lj.report.ExpXids(x.ID) {
			how := "ran with an Xid"
			if g.Before(x.ID) {
				how = "ran after a critical Xid"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: %s %s at %s: %s\n", sanitize.OneLine(x.ID), how,
				report.FormatElapsed(g.At.Sub(lj.report.Header.Created)), g.Describe(lj.report.Header.Created))
		}
	}
	return nil
}

// resolveBaseline returns the experiment id that arg names: "baseline" is
// the marked baseline when one is marked (with a note on stderr when an
// experiment is also named "baseline"), else the experiment named so;
// any other arg is returned as is. It refuses "baseline" when neither
// exists.
func resolveBaseline(cmd *cobra.Command, l *ledger.Ledger, arg string, lj *loadedJournal) (string, error) {
	if arg != "baseline" {
		return arg, nil
	}
	marked, named := l.Baseline(), l.Find(arg)
	switch {
	case marked != nil:
		if named != nil && named != marked {
			fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: \"baseline\" is the marked baseline %s; %s is named \"baseline\" too: give its id to compare it\n",
				sanitize.OneLine(marked.ID), sanitize.OneLine(named.ID))
		}
		return marked.ID, nil
	case named != nil:
		return named.ID, nil
	}
	return "", refusedf("no baseline marked in %s (mark one in the cockpit, or name an experiment: have %s)", lj.path, lj.report.ExpList())
}
