package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
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
		Use:   "diff FILE A B | diff JOURNAL1:A JOURNAL2:B",
		Short: "Compare two experiments: results with verdicts, what changed, the commits between them",
		Long: `diff compares experiment B (new) with A (old), each an id (e2) or a name;
"baseline" is the experiment marked as the baseline in the cockpit (when
none is marked, an experiment named "baseline"). A and B must differ.

Results: tok/s from the server log and, when a benchmark ran (b), its
output tok/s, TTFT, ITL (each request's median gap), TPOT and E2E
latency, and the EAGLE accept length when the server reports one — each
side's median with its within-launch 95 % interval [lo, hi] and n (the
launch's own spread: it never decides), the delta, and the verdict
across launches: one server launch of a configuration is one sample
(samples inside a run are correlated, and experiments started by hand on
one running server are one launch). With at least 4 launches a side it
is the Mann–Whitney U test at α = 0.05 as benchstat does; with fewer,
Student's t against the A/A noise of the configuration class (same host,
preset, env profile, env and command line, any commit) when launches of
it were repeated, the assumption stated ("vs A/A noise sd 0.3%, noise from
5 launches 2 h ago"); else no verdict, and R in the cockpit relaunches
one. Benchmark runs with other settings (endpoint,
lengths, concurrency, rate, prompts) give no benchmark verdict. The
launch-to-launch (A/A) noise of each configuration launched twice or
more is shown next to it: a significant change no larger than the noise
is not much of one. An experiment still open in a journal being written
shows its result so far.

Then every fingerprint variable, changed rows first: commit (with the
commits and files between A's and B's HEAD, when the cockpit recorded
them, and the culprit line: where the measurements inside the range put
the change), dirty patch, env, launch flags, versions, the GPUs under load
(clocks, P-state, PCIe link, throttle reasons) and the host. A value
captured on one side only (a failed probe) is listed apart, never as a
change. Unchanged rows are counted, or listed with --all.

Across journals (last week's session against today's): A or B may be
qualified, JOURNAL:ID, JOURNAL a journal's path, its name
("2026-12-01-101500-demo") or a unique prefix of one under the journals
directory; with two arguments both are. The comparison then pools both
journals' launches, the experiments named by qualified ids.`,
		Example: `  flightdeck journal diff 2026-11-29-101500-demo e1 e2
  flightdeck journal diff 2026-11-29-101500-demo baseline e3 --all
  flightdeck journal diff 2026-11-29-101500-demo e1 e3 --format md > compare.md
  flightdeck journal diff 2026-11-29-1015:e1 2026-12-01-0930:e2
  flightdeck journal diff 2026-12-01-093000-demo 2026-11-29-101500-demo:e1 e2`,
		Args: gitArgs(cobra.RangeArgs(2, 3)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error {
			return runJournalDiff(cmd, args, f)
		}),
	}
	cmd.Flags().StringVar(&f.dir, "dir", "", "journals directory FILE is looked up in (default $XDG_STATE_HOME/flightdeck/journals)")
	cmd.Flags().StringVar(&f.format, "format", "text", "output format: text, md or json")
	cmd.Flags().BoolVar(&f.all, "all", false, "list the unchanged fingerprint rows too")
	return cmd
}

func runJournalDiff(cmd *cobra.Command, args []string, f journalDiffFlags) error {
	switch f.format {
	case "text", "md", "json":
	default:
		return refusedf("--format %q: want text, md or json", f.format)
	}
	file, aArg, bArg := "", args[0], args[1]
	if len(args) == 3 {
		file, aArg, bArg = args[0], args[1], args[2]
	}
	js := &diffJournals{dir: f.dir, open: map[string]*loadedJournal{}}
	defer js.close()
	a, err := js.side(cmd, file, aArg)
	if err != nil {
		return err
	}
	b, err := js.side(cmd, file, bArg)
	if err != nil {
		return err
	}
	if a.lj == b.lj {
		return diffOne(cmd, a.lj, a.arg, b.arg, f)
	}
	return diffAcross(cmd, a, b, f)
}

// diffOne compares two experiments of one journal (ids as recorded).
func diffOne(cmd *cobra.Command, lj *loadedJournal, a, b string, f journalDiffFlags) error {
	l := &lj.report.Ledger
	var err error
	if a, err = resolveBaseline(cmd, l, a, lj); err != nil {
		return err
	}
	if b, err = resolveBaseline(cmd, l, b, lj); err != nil {
		return err
	}
	// The host's earlier journals pool their launches and A/A noise in,
	// as journal show and the x panel do.
	exps := slices.Concat(earlierOf(lj, f.dir, cmd.ErrOrStderr()), l.Experiments())
	d, err := compare.Compare(exps, a, b)
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
	writeXids(cmd, lj, d.A.ID, d.A.ID)
	writeXids(cmd, lj, d.B.ID, d.B.ID)
	return nil
}

// diffAcross compares experiments of two journals: both journals'
// experiments pooled under qualified ids ("2026-12-01-101500-demo:e3"),
// so that each side's launches of its configuration count, in whichever
// journal they were recorded.
func diffAcross(cmd *cobra.Command, a, b diffSide, f journalDiffFlags) error {
	ids := [2]string{}
	for i, s := range []diffSide{a, b} {
		l := &s.lj.report.Ledger
		id, err := resolveBaseline(cmd, l, s.arg, s.lj)
		if err != nil {
			return err
		}
		x := l.Find(id)
		if x == nil {
			return refusedf("no experiment %q in %s (have %s)", sanitize.OneLine(id), s.lj.path, s.lj.report.ExpList())
		}
		ids[i] = x.ID
	}
	na, nb := history.Name(a.lj.path), history.Name(b.lj.path)
	// And the host's journals before the newer of the two, as journal
	// show and the x panel pool them.
	newer := a.lj
	if b.lj.report.Header.Created.After(newer.report.Header.Created) {
		newer = b.lj
	}
	exps := slices.Concat(earlierOf(newer, f.dir, cmd.ErrOrStderr(), na, nb),
		history.QualifyAll(na, a.lj.report.Ledger.Experiments()), history.QualifyAll(nb, b.lj.report.Ledger.Experiments()))
	d, err := compare.Compare(exps, history.Qualify(na, ids[0]), history.Qualify(nb, ids[1]))
	if err != nil {
		return err
	}
	if err := report.WriteDiff(cmd.OutOrStdout(), d, f.format, report.DiffOptions{All: f.all}); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	writeXids(cmd, a.lj, ids[0], d.A.ID)
	writeXids(cmd, b.lj, ids[1], d.B.ID)
	return nil
}

// writeXids says beside the comparison an Xid during experiment id of lj
// (named as shown), as a skip is: a GPU fault can explain a difference the
// fingerprints cannot.
func writeXids(cmd *cobra.Command, lj *loadedJournal, id, shown string) {
	for _, g := range lj.report.ExpXids(id) {
		how := "ran with an Xid"
		if g.Before(id) {
			how = "ran after a critical Xid"
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: %s %s at %s: %s\n", sanitize.OneLine(shown), how,
			report.FormatElapsed(g.At.Sub(lj.report.Header.Created)), g.Describe(lj.report.Header.Created))
	}
}

// diffSide is one side of a diff: its journal and the experiment as
// given there (an id, a name, "baseline").
type diffSide struct {
	lj  *loadedJournal
	arg string
}

// diffJournals are the journals a diff opened, each once.
type diffJournals struct {
	dir  string
	open map[string]*loadedJournal
	all  []history.Journal // the journals under dir, once listed
}

// side resolves one experiment argument: "JOURNAL:ID" (JOURNAL a path, a
// journal's name or a unique prefix of one under the journals directory:
// history.Match) is ID of that journal; a plain ID is one of file (the
// three-argument form's FILE); "baseline" is file's mark, which may name
// an earlier journal's experiment.
func (js *diffJournals) side(cmd *cobra.Command, file, arg string) (diffSide, error) {
	part, id, ok := history.Split(arg)
	if !ok {
		if file == "" {
			return diffSide{}, refusedf("%q names no journal: give JOURNAL:ID (e.g. 2026-12-01-101500-demo:e3), or FILE A B", sanitize.OneLine(arg))
		}
		lj, err := js.load(cmd, file, true)
		if err != nil {
			return diffSide{}, err
		}
		if mark := lj.report.Ledger.BaselineID(); arg == "baseline" && lj.report.Ledger.Baseline() == nil && lj.report.Ledger.Find(arg) == nil {
			if _, _, ok := history.Split(mark); ok {
				return js.side(cmd, "", mark) // the baseline is an earlier journal's experiment
			}
		}
		return diffSide{lj, arg}, nil
	}
	lj, err := js.load(cmd, part, false)
	return diffSide{lj, id}, err
}

// load opens the journal arg names, once. file says arg is the
// three-argument form's FILE (resolveJournal's rules), else a journal
// part of a qualified name (a path, or history.Match under the journals
// directory).
func (js *diffJournals) load(cmd *cobra.Command, arg string, file bool) (*loadedJournal, error) {
	var path string
	if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() {
		path = arg
	} else if file {
		p, err := resolveJournal(arg, js.dir)
		if err != nil {
			return nil, err
		}
		path = p
	} else {
		dir, err := journalDir(js.dir)
		if err != nil {
			return nil, refusedf("journal %s: no such file (and no journals directory: %v)", arg, err)
		}
		if js.all == nil {
			js.all, err = history.All(dir)
			if err != nil {
				return nil, err
			}
		}
		j, err := history.Match(js.all, arg)
		if err != nil {
			return nil, refusedf("%v in %s (see flightdeck journal ls)", err, dir)
		}
		path = j.Path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	if lj := js.open[abs]; lj != nil {
		return lj, nil
	}
	lj, err := loadJournal(path)
	if err != nil {
		return nil, err
	}
	if pr := lj.problems; pr.Any() {
		// What was skipped is not in the comparison: say so, as show does.
		fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: %s: skipped %s\n", lj.path, sanitize.String(pr.String()))
	}
	js.open[abs] = lj
	return lj, nil
}

func (js *diffJournals) close() {
	for _, lj := range js.open {
		lj.Close()
	}
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
