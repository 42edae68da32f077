package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

func newJournalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		RunE:  runGroup,
		Short: "List, show and export the session journals the cockpit records",
		Long: `Every cockpit session (connect, demo) is recorded in a journal: one JSON Lines
file under $XDG_STATE_HOME/flightdeck/journals/<host>/ (default
~/.local/state/flightdeck/journals), holding every event the screen saw and
the experiments (e), their fingerprints and results, and the notes (n).

FILE is a journal's path, a path relative to the journals directory, or
the start of a journal's file name there ("2026-11-29-1015" is enough when
only one journal starts so).

Exit statuses: 0 success; 1 failure (an I/O error); 2 input refused: no
such journal, an ambiguous name, a file that is not a journal or is of a
newer format, an unknown experiment (or no baseline marked), a usage
error.

The format: docs/journal-format.md. Replay a journal: flightdeck replay FILE.`,
		Example: `  flightdeck journal ls
  flightdeck journal show 2026-11-29-101500-demo
  flightdeck journal show 2026-11-29-101500-demo e2
  flightdeck journal diff 2026-11-29-101500-demo baseline e3
  flightdeck journal export 2026-11-29-101500-demo --format md -o report.md
  flightdeck journal export 2026-11-29-101500-demo --format csv -o tok.csv`,
	}
	cmd.SetFlagErrorFunc(usageError)
	cmd.AddCommand(newJournalLsCmd(), newJournalShowCmd(), newJournalDiffCmd(), newJournalExportCmd())
	cmd.AddCommand(newJournalBaselineCmd(), newJournalNoteCmd(), newJournalConcludeCmd())
	return cmd
}

// journalRunE wraps a journal subcommand (and replay): input refused (no
// such file, an ambiguous name, not a journal, a newer format, an unknown
// experiment, a bad flag value) prints its reason and exits 2; other errors
// are sanitised for main to print.
func journalRunE(run func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return refusingRunE(func(err error) bool {
		var ver *journal.VersionError
		return errors.As(err, &ver) || errors.Is(err, journal.ErrNotJournal) || errors.Is(err, fs.ErrNotExist)
	}, run)
}

// journalDir is --dir, or the default journals directory.
func journalDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return journal.DefaultDir()
}

// resolveJournal finds the journal an argument names: a path to a file; a
// path relative to dir; or the unique journal under dir whose file name
// (or path relative to dir) starts with arg.
func resolveJournal(arg, dir string) (string, error) {
	if arg == "" {
		return "", refusedf("no journal named: give a FILE (see flightdeck journal ls)")
	}
	if fi, err := os.Stat(arg); err == nil {
		if fi.IsDir() {
			return "", refusedf("%s is a directory, not a journal (see flightdeck journal ls --dir %s)", arg, arg)
		}
		return arg, nil
	}
	if dir == "" {
		d, err := journal.DefaultDir()
		if err != nil {
			return "", refusedf("journal %s: no such file (and no journals directory: %v)", arg, err)
		}
		dir = d
	}
	if !filepath.IsAbs(arg) {
		p := filepath.Join(dir, arg)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	files, _ := listJournalFiles(dir)
	var hits []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		if strings.HasPrefix(filepath.Base(f), arg) || strings.HasPrefix(rel, arg) {
			hits = append(hits, f)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return "", refusedf("journal %s: no such file, and no journal in %s starts with it (see flightdeck journal ls)", arg, dir)
	}
	var names []string
	for _, h := range hits[:min(len(hits), 5)] {
		rel, _ := filepath.Rel(dir, h)
		names = append(names, rel)
	}
	more := ""
	if len(hits) > 5 {
		more = fmt.Sprintf(", and %d more", len(hits)-5)
	}
	return "", refusedf("journal %s is ambiguous: %d journals start with it (%s%s)", arg, len(hits), strings.Join(names, ", "), more)
}

// listJournalFiles returns the *.jsonl files under dir, in lexical order.
// A missing dir has none.
func listJournalFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return nil // an unreadable sub-directory: skip it
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// loadedJournal is a journal read whole.
type loadedJournal struct {
	path     string
	j        *journal.Journal
	report   *report.Report
	live     bool
	problems journal.Problems
}

// loadJournal opens the journal at path and folds it into a report. An
// experiment still open at the end is "ended by crash" unless the journal
// is live (being written now).
func loadJournal(path string) (*loadedJournal, error) {
	j, err := journal.Open(path)
	if err != nil {
		return nil, err
	}
	live := journal.Live(path)
	r, err := report.ReadReport(j.Header(), j.Scan, live)
	if err != nil {
		j.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &loadedJournal{path: path, j: j, report: r, live: live, problems: j.Problems()}, nil
}

func (l *loadedJournal) Close() error { return l.j.Close() }

// openJournal resolves arg (see resolveJournal) and loads the journal it
// names (see loadJournal).
func openJournal(arg, dir string) (*loadedJournal, error) {
	path, err := resolveJournal(arg, dir)
	if err != nil {
		return nil, err
	}
	return loadJournal(path)
}

// --- journal ls ---

type journalLsFlags struct {
	dir  string
	json bool
}

func newJournalLsCmd() *cobra.Command {
	var f journalLsFlags
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the recorded sessions, newest first, with their experiments' tok/s",
		Long: `ls lists the journals under the journals directory (or --dir), newest first:
the file, host, start time and duration, whether a cockpit is still
writing it ("live"), and each experiment with its median tok/s. Damaged
journals (a torn last line after a crash, garbled lines) are listed with
what was skipped.`,
		Args: gitArgs(cobra.NoArgs),
		RunE: journalRunE(func(cmd *cobra.Command, _ []string) error { return runJournalLs(cmd, f) }),
	}
	cmd.Flags().StringVar(&f.dir, "dir", "", "journals directory (default $XDG_STATE_HOME/flightdeck/journals)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	return cmd
}

// journalLsJSON is one journal of ls --json.
type journalLsJSON struct {
	Path        string               `json:"path"`
	Error       string               `json:"error,omitempty"` // why it could not be read; the rest is then empty
	Host        string               `json:"host,omitempty"`
	Label       string               `json:"label,omitempty"`
	Name        string               `json:"name,omitempty"`
	Created     *time.Time           `json:"created,omitempty"`
	DurationS   float64              `json:"duration_s"`
	Live        bool                 `json:"live"`
	Problems    *journalProblemsJSON `json:"problems,omitempty"`
	Experiments []journalExpSummary  `json:"experiments"`
}

// journalProblemsJSON is what a reader skipped (journal.Problems).
type journalProblemsJSON struct {
	Summary      string   `json:"summary"` // in words
	Torn         bool     `json:"torn"`
	TornBytes    int      `json:"torn_bytes,omitempty"`
	Garbled      int      `json:"garbled"`
	FirstGarbled int      `json:"first_garbled_line,omitempty"`
	Unknown      int      `json:"unknown"`
	UnknownKinds []string `json:"unknown_kinds,omitempty"`
	Undecodable  int      `json:"undecodable"`
}

// journalExpSummary is one experiment in ls --json.
type journalExpSummary struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Commit   string   `json:"commit,omitempty"`
	Profile  string   `json:"profile,omitempty"`
	N        int      `json:"n"`
	Median   *float64 `json:"median_tok_s"` // null without samples
	Lo       *float64 `json:"lo,omitempty"`
	Hi       *float64 `json:"hi,omitempty"`
	EndedHow string   `json:"ended_how"`
}

func runJournalLs(cmd *cobra.Command, f journalLsFlags) error {
	dir, err := journalDir(f.dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return refusedf("--dir %s: not a directory", dir)
	}
	files, err := listJournalFiles(dir)
	if err != nil {
		return err
	}
	type entry struct {
		ls  journalLsJSON
		rel string
		err error
	}
	var entries []entry
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		e := entry{rel: rel, ls: journalLsJSON{Path: p, Experiments: []journalExpSummary{}}}
		lj, err := loadJournal(p)
		if err != nil {
			e.err = err
			e.ls.Error = err.Error()
			entries = append(entries, e)
			continue
		}
		h := lj.report.Header
		created := h.Created
		e.ls.Host, e.ls.Label, e.ls.Name, e.ls.Created = h.Host, h.Label, h.Name, &created
		e.ls.DurationS, e.ls.Live = lj.report.Duration().Seconds(), lj.live
		if pr := lj.problems; pr.Any() {
			e.ls.Problems = &journalProblemsJSON{Summary: pr.String(), Torn: pr.Torn, TornBytes: pr.TornBytes, Garbled: pr.Garbled,
				FirstGarbled: pr.FirstGarbled, Unknown: pr.Unknown, UnknownKinds: pr.UnknownKinds, Undecodable: pr.Undecodable}
		}
		for _, x := range lj.report.Ledger.Experiments() {
			s := journalExpSummary{ID: x.ID, Name: x.Name, Commit: x.Commit(), Profile: x.Profile(), N: x.Result.N,
				Lo: x.Result.Lo, Hi: x.Result.Hi, EndedHow: report.EndedHow(&x)}
			if x.Result.N > 0 {
				m := x.Result.Median
				s.Median = &m
			}
			e.ls.Experiments = append(e.ls.Experiments, s)
		}
		lj.Close()
		entries = append(entries, e)
	}
	// Newest first; unreadable files last, by name.
	slices.SortStableFunc(entries, func(a, b entry) int {
		switch {
		case a.ls.Created == nil && b.ls.Created == nil:
			return strings.Compare(a.rel, b.rel)
		case a.ls.Created == nil:
			return 1
		case b.ls.Created == nil:
			return -1
		}
		return b.ls.Created.Compare(*a.ls.Created)
	})
	out := cmd.OutOrStdout()
	if f.json {
		docs := make([]journalLsJSON, len(entries))
		for i, e := range entries {
			docs[i] = e.ls
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(docs)
	}
	if len(entries) == 0 {
		fmt.Fprintf(out, "no journals in %s\n", dir)
		return nil
	}
	fmt.Fprintf(out, "journals in %s, newest first:\n", dir)
	for _, e := range entries {
		fmt.Fprintln(out)
		if e.err != nil {
			fmt.Fprintf(out, "%s  unreadable: %s\n", sanitize.String(e.rel), sanitize.String(e.err.Error()))
			continue
		}
		ls := e.ls
		state := ""
		if ls.Live {
			state = "  live"
		}
		fmt.Fprintf(out, "%s  %s  %s  %s%s\n", sanitize.String(e.rel), ls.Created.Local().Format("2006-01-02 15:04"),
			report.FormatElapsed(time.Duration(ls.DurationS*float64(time.Second))), sanitize.String(ls.Host), state)
		if ls.Problems != nil {
			fmt.Fprintf(out, "  skipped: %s\n", sanitize.String(ls.Problems.Summary))
		}
		if len(ls.Experiments) == 0 {
			fmt.Fprintln(out, "  no experiments")
			continue
		}
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		for _, x := range ls.Experiments {
			res := event.ExperimentResult{N: x.N, Lo: x.Lo, Hi: x.Hi}
			if x.Median != nil {
				res.Median = *x.Median
			}
			how := x.EndedHow
			if how == string(event.TriggerKey) {
				how = "by hand"
			}
			fmt.Fprintf(tw, "  %s\t%s\ttok/s %s\t%s\n", sanitize.String(x.ID), sanitize.String(x.Name), report.FormatResult(res), how)
		}
		tw.Flush()
	}
	return nil
}

// --- journal show ---

type journalShowFlags struct {
	dir   string
	json  bool
	patch bool
}

func newJournalShowCmd() *cobra.Command {
	var f journalShowFlags
	cmd := &cobra.Command{
		Use:   "show FILE [EXP]",
		Short: "Show a journal's session and experiments, or one experiment's fingerprint and result",
		Long: `show prints a journal's header (host, start, duration, who recorded it) and
its experiments table (tok/s median with its 95 % confidence interval,
change against the first experiment with a result). With EXP (an id such
as e2, or a name) it prints that experiment in full: its result, its
fingerprint — commit, branch, dirty patch (hash, size, files changed),
untracked files and stashes, launch command line and env (secrets
redacted), versions, host and kernel, every GPU's state at start and end —
and its notes. A value that could not be captured (a git command that
failed or timed out, a version probe) is shown as unknown, with why.

--patch prints the dirty patch itself (git diff HEAD, as captured at the
experiment's start). It is stored in the journal as is: it may hold
whatever the uncommitted code held, secrets included (journal files are
mode 0600).`,
		Args: gitArgs(cobra.RangeArgs(1, 2)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error {
			exp := ""
			if len(args) == 2 {
				exp = args[1]
			}
			return runJournalShow(cmd, args[0], exp, f)
		}),
	}
	cmd.Flags().StringVar(&f.dir, "dir", "", "journals directory FILE is looked up in (default $XDG_STATE_HOME/flightdeck/journals)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON (the export's document, or one experiment)")
	cmd.Flags().BoolVar(&f.patch, "patch", false, "with EXP: also print the dirty patch itself (stored as captured: it may hold secrets)")
	return cmd
}

func runJournalShow(cmd *cobra.Command, arg, exp string, f journalShowFlags) error {
	lj, err := openJournal(arg, f.dir)
	if err != nil {
		return err
	}
	defer lj.Close()
	r := lj.report
	out := cmd.OutOrStdout()
	if f.patch && exp == "" {
		return refusedf("--patch goes with an experiment: flightdeck journal show FILE EXP --patch")
	}
	if f.patch && f.json {
		return refusedf("--patch and --json: the JSON has the patch already (fingerprint.git.patch)")
	}
	var x *ledger.Experiment
	if exp != "" {
		if x = r.Ledger.Find(exp); x == nil {
			return refusedf("experiment %s: not in %s (have %s)", exp, lj.path, r.ExpList())
		}
	}
	if f.json {
		doc, err := report.BuildJSON(r, report.ReportOptions{})
		if err != nil {
			return err
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if x != nil {
			for _, je := range doc.Experiments {
				if je.ID == x.ID {
					return enc.Encode(je)
				}
			}
		}
		return enc.Encode(doc)
	}
	if x != nil {
		return showExperiment(out, r, x, f.patch)
	}
	return showSession(out, lj)
}

func showSession(out io.Writer, lj *loadedJournal) error {
	r := lj.report
	h := r.Header
	s := sanitize.String
	fmt.Fprintf(out, "journal   %s\n", s(lj.path))
	fmt.Fprintf(out, "host      %s", s(h.Host))
	if h.Label != "" {
		fmt.Fprintf(out, " (%s)", s(h.Label))
	}
	fmt.Fprintln(out)
	if h.Name != "" {
		fmt.Fprintf(out, "session   %s\n", s(h.Name))
	}
	state := ""
	if lj.live {
		state = " (live: a cockpit is writing it)"
	}
	fmt.Fprintf(out, "started   %s, duration %s%s\n", h.Created.Local().Format("2006-01-02 15:04:05 MST"), report.FormatElapsed(r.Duration()), state)
	fmt.Fprintf(out, "recorded  flightdeck %s", s(h.Flightdeck))
	if h.User != "" || h.Hostname != "" {
		fmt.Fprintf(out, " by %s@%s pid %d", s(h.User), s(h.Hostname), h.PID)
	}
	fmt.Fprintln(out)
	if h.LogPath != "" {
		fmt.Fprintf(out, "log       %s\n", s(h.LogPath))
	}
	fmt.Fprintf(out, "events    %d\n", lj.j.Len())
	if lj.problems.Any() {
		fmt.Fprintf(out, "skipped   %s\n", s(lj.problems.String()))
	}
	exps := r.Ledger.Experiments()
	fmt.Fprintln(out)
	if len(exps) == 0 {
		fmt.Fprintln(out, "no experiments")
	} else {
		base, _ := r.Baseline("")
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tCOMMIT\tPROFILE\tTOK/S MEDIAN [95% CI]\tDELTA\tSTART\tENDED")
		for i := range exps {
			x := &exps[i]
			delta := "-"
			if base != nil && x.ID == base.ID {
				delta = "baseline"
			} else if p, ok := compare.DeltaPct(x, base); ok {
				delta = fmt.Sprintf("%+.1f%%", p)
			}
			commit := orDash(s(git.ShortID(x.Commit())))
			if x.CommitUnknown() != "" {
				commit = "unknown"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s(x.ID), s(x.Name), commit, orDash(s(x.Profile())),
				report.FormatResult(x.Result), delta, report.FormatElapsed(x.Started.Sub(h.Created)), report.EndedWords(x))
		}
		tw.Flush()
		writeMeasureSummary(out, r)
	}
	if len(r.Sessions) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "sessions (--journal appended to this file)")
		fmt.Fprintf(out, "  0:00:00 %s (created it)\n", journal.DescribeSession(h))
		for _, ss := range r.Sessions {
			fmt.Fprintf(out, "  %s %s", report.FormatElapsed(ss.At.Sub(h.Created)), journal.DescribeSession(ss.Session.SessionHeader))
			if x := r.Ledger.Find(ss.Crashed); ss.Crashed != "" && x != nil {
				fmt.Fprintf(out, "; %s, left open by the previous session, ended at its last event (%s)", s(x.ID), report.FormatElapsed(x.Ended.Sub(h.Created)))
			}
			fmt.Fprintln(out)
		}
	}
	writeGPUEvents(out, r)
	if notes := r.Ledger.Notes(); len(notes) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "notes")
		for _, n := range notes {
			exp := ""
			if n.Exp != "" {
				exp = " [" + s(n.Exp) + "]"
			}
			fmt.Fprintf(out, "  %s%s %s\n", report.FormatElapsed(n.At.Sub(h.Created)), exp, sanitize.OneLine(n.Text))
		}
	}
	return nil
}

// writeGPUEvents lists the driver's Xids and the changes of GPU sampling
// path, with their times and experiments; nothing when there are none.
func writeGPUEvents(out io.Writer, r *report.Report) {
	if len(r.GPUEvents) == 0 {
		return
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "GPU events (Xids, sampling path)")
	for _, g := range r.GPUEvents {
		exp := ""
		if g.Exp != "" {
			exp = " [" + sanitize.OneLine(g.Exp) + "]"
		}
		fmt.Fprintf(out, "  %s%s %s\n", report.FormatElapsed(g.At.Sub(r.Header.Created)), exp, g.Describe(r.Header.Created))
	}
}

// writeMeasureSummary follows the experiments table: the baseline mark,
// the repeat series with their launch-to-launch spread, and the benchmark
// runs; nothing when the session has none of them.
func writeMeasureSummary(out io.Writer, r *report.Report) {
	exps := r.Ledger.Experiments()
	if m := r.Ledger.Baseline(); m != nil {
		fmt.Fprintf(out, "\nbaseline  %s (marked: B in the x panel, or journal baseline)\n", sanitize.OneLine(m.ID))
	}
	series, launches := ledger.RepeatSeries(exps)
	if len(series) > 0 {
		fmt.Fprintln(out, "\nrepeats (launch-to-launch noise of one configuration)")
		for _, sr := range series {
			var ids []string
			var meds []float64
			for _, x := range launches[sr] {
				ids = append(ids, sanitize.OneLine(x.ID))
				if x.Result.N > 0 {
					meds = append(meds, x.Result.Median)
				}
			}
			spread := "spread not measured (fewer than 2 results)"
			if p, ok := compare.Spread(meds); ok {
				spread = fmt.Sprintf("medians %.1f-%.1f tok/s, spread ±%.1f%%", slices.Min(meds), slices.Max(meds), p)
			}
			fmt.Fprintf(out, "  %s: %s; %s\n", sanitize.OneLine(sr), strings.Join(ids, ", "), spread)
		}
	}
	var runs []string
	for i := range exps {
		for _, d := range exps[i].Bench {
			runs = append(runs, "  ["+sanitize.OneLine(exps[i].ID)+"] "+report.BenchRunText(d))
		}
	}
	if len(runs) > 0 {
		fmt.Fprintln(out, "\nbenchmark runs")
		for _, l := range runs {
			fmt.Fprintln(out, l)
		}
	}
}

func showExperiment(out io.Writer, r *report.Report, x *ledger.Experiment, patch bool) error {
	s := sanitize.OneLine
	start := r.Header.Created
	base, _ := r.Baseline("")
	fmt.Fprintf(out, "%s  %s\n", s(x.ID), s(x.Name))
	fmt.Fprintf(out, "  started     %s by %s\n", report.FormatElapsed(x.Started.Sub(start)), orDash(triggerWords(x.StartedBy)))
	switch how := report.EndedWords(x); how {
	case "open":
		fmt.Fprintln(out, "  ended       still open")
	case "crash":
		fmt.Fprintf(out, "  ended       no end recorded: the journal stops at %s\n", report.FormatElapsed(x.Ended.Sub(start)))
	default:
		fmt.Fprintf(out, "  ended       %s %s (%s long)\n", report.FormatElapsed(x.Ended.Sub(start)), triggerWords(x.EndedBy), report.FormatElapsed(x.Ended.Sub(x.Started)))
	}
	fmt.Fprintf(out, "  hypothesis  %s\n", orDash(s(x.Hypothesis)))
	fmt.Fprintf(out, "  conclusion  %s\n", orDash(s(x.Conclusion)))
	res := x.Result
	fmt.Fprintf(out, "  result      tok/s %s", report.FormatResult(res))
	if res.N > 0 {
		fmt.Fprintf(out, ", %d warm-up or idle samples left out", res.Dropped)
		if res.AcceptLength > 0 {
			fmt.Fprintf(out, ", accept length %.2f", res.AcceptLength)
		}
		if base != nil && base.ID != x.ID {
			if p, ok := compare.DeltaPct(x, base); ok {
				fmt.Fprintf(out, ", %+.1f%% vs %s", p, s(base.ID))
			}
		}
	}
	fmt.Fprintln(out)
	for _, w := range res.Warnings {
		fmt.Fprintf(out, "  warning     %s\n", s(w))
	}
	for _, g := range r.ExpXids(x.ID) {
		before := ""
		if g.Before(x.ID) {
			before = " (earlier in this cockpit session; a critical Xid needs a GPU reset)"
		}
		fmt.Fprintf(out, "  Xid         %s%s %s\n", report.FormatElapsed(g.At.Sub(start)), before, g.Describe(start))
	}
	if m := r.Ledger.Baseline(); m != nil && m.ID == x.ID {
		fmt.Fprintln(out, "  baseline    marked: deltas and comparisons are relative to it")
	}
	if rt := report.RepeatText(x); rt != "" {
		fmt.Fprintf(out, "  repeat      %s\n", rt)
	}
	for _, d := range x.Bench {
		fmt.Fprintf(out, "  bench       %s\n", report.BenchRunText(d))
	}
	fp := x.Fingerprint
	launch := x.Launch
	if fp != nil && fp.Launch != nil {
		launch = fp.Launch
	}
	if fp == nil {
		fmt.Fprintln(out, "  fingerprint not captured")
	} else {
		fmt.Fprintf(out, "  captured    %s\n", report.FormatElapsed(fp.At.Sub(start)))
		if fp.Hostname != "" || fp.Kernel != "" {
			fmt.Fprintf(out, "  host        %s, kernel %s\n", orDash(s(fp.Hostname)), orDash(s(fp.Kernel)))
		}
		if why := x.CommitUnknown(); why != "" {
			if g := fp.Git; g != nil && g.Repo != "" {
				fmt.Fprintf(out, "  repository  %s\n", s(g.Repo))
			}
			fmt.Fprintf(out, "  commit      unknown (%s)\n", s(why))
		}
		if g := fp.Git; g != nil {
			if x.CommitUnknown() == "" {
				fmt.Fprintf(out, "  repository  %s\n", s(g.Repo))
				branch := "detached"
				if g.Branch != "" {
					branch = "on " + s(g.Branch)
				}
				subject := ""
				if g.Subject != "" {
					subject = ": " + s(g.Subject)
				}
				fmt.Fprintf(out, "  commit      %s %s%s\n", s(g.Head), branch, subject)
			}
			switch why := x.PatchUnknown(); {
			case why != "":
				fmt.Fprintf(out, "  dirty       unknown (%s)\n", s(why))
			case g.PatchBytes == 0 && g.PatchSHA256 == "":
				fmt.Fprintln(out, "  dirty       no (clean tree)")
			default:
				writePatchSummary(out, g, patch)
			}
			for _, u := range g.Untracked {
				fmt.Fprintf(out, "  untracked   %s\n", s(u))
			}
			for _, st := range g.Stashes {
				fmt.Fprintf(out, "  stash       %s\n", s(st))
			}
		}
	}
	if launch != nil {
		fmt.Fprintf(out, "  launch      preset %s, profile %s, server %s, port %d\n", orDash(s(launch.Preset)), orDash(s(x.Profile())), orDash(s(launch.Server)), launch.Port)
		cl := ""
		if fp != nil {
			cl = fp.CommandLine
		}
		if cl == "" {
			cl = redactedCommandLine(launch)
		}
		fmt.Fprintf(out, "  command     %s\n", s(cl))
		if launch.Workdir != "" {
			fmt.Fprintf(out, "  workdir     %s\n", s(launch.Workdir))
		}
		if launch.LogPath != "" {
			fmt.Fprintf(out, "  log         %s\n", s(launch.LogPath))
		}
		env := server.Redact(launch.Env)
		for _, k := range slices.Sorted(maps.Keys(env)) {
			fmt.Fprintf(out, "  env         %s=%s\n", s(k), s(env[k]))
		}
	}
	if fp != nil {
		for _, v := range fp.Versions {
			if v.Err != "" {
				fmt.Fprintf(out, "  version     %-8s unknown: the probe failed: %s (%s)\n", s(v.Name), s(v.Err), s(v.Command))
			} else {
				fmt.Fprintf(out, "  version     %-8s %s\n", s(v.Name), s(v.Value))
			}
		}
		for _, e := range fp.Errors {
			fmt.Fprintf(out, "  error       %s\n", s(e))
		}
		if len(fp.GPUs) > 0 {
			fmt.Fprintf(out, "  %s:\n", report.StartGPUsLabel(x))
			writeGPUTable(out, fp.GPUs)
		}
	}
	if len(x.EndGPUs) > 0 {
		fmt.Fprintln(out, "  GPUs at end:")
		writeGPUTable(out, x.EndGPUs)
	}
	if len(x.Notes) > 0 {
		fmt.Fprintln(out, "  notes:")
		for _, n := range x.Notes {
			fmt.Fprintf(out, "    %s %s\n", report.FormatElapsed(n.At.Sub(start)), s(n.Text))
		}
	}
	return nil
}

// redactedCommandLine is the launch's argv as a shell line with secret
// flag values redacted (journals from before the fingerprint had one).
func redactedCommandLine(l *event.LaunchInfo) string {
	c := *l
	c.Argv = server.RedactArgv(l.Argv)
	return server.CommandLine(c)
}

// writeGPUTable prints one row per GPU: clocks, P-state, PCIe link,
// throttle reasons, persistence and ECC; non-values as nvidia-smi gave
// them.
func writeGPUTable(out io.Writer, gpus []event.GPU) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "    GPU\tNAME\tUTIL\tMEM MiB\tPOWER W\tTEMP C\tSM MHz\tMEM MHz\tPSTATE\tPCIE\tTHROTTLE\tPERSIST\tECC")
	for _, st := range report.GPUStates(gpus) {
		num := func(v *float64) string {
			if v == nil {
				return "n/a"
			}
			return strconv.FormatFloat(*v, 'f', -1, 64)
		}
		pcie := "n/a"
		if st.PCIeGen != nil && st.PCIeWidth != nil {
			pcie = "Gen" + num(st.PCIeGen) + " x" + num(st.PCIeWidth)
		}
		thr := "n/a"
		if st.Throttle != nil {
			thr = "none"
			if len(st.Throttle) > 0 {
				thr = strings.Join(st.Throttle, "+")
			}
		}
		name := orDash(sanitize.String(st.Name))
		if st.Lost {
			name += " (LOST)"
		}
		fmt.Fprintf(tw, "    %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", st.Index, name, num(st.UtilPct), num(st.MemUsedMiB),
			num(st.PowerW), num(st.TempC), num(st.SMMHz), num(st.MemMHz), orDash(sanitize.String(st.PState)), pcie, thr,
			orDash(sanitize.String(st.Persistence)), orDash(sanitize.String(st.ECC)))
	}
	tw.Flush()
}

// --- journal export ---

type journalExportFlags struct {
	dir      string
	format   string
	baseline string
	samples  string
	out      string
}

func newJournalExportCmd() *cobra.Command {
	var f journalExportFlags
	cmd := &cobra.Command{
		Use:   "export FILE --format md|csv|json",
		Short: "Export a journal: a Markdown report, the tok/s or GPU samples as CSV, or JSON",
		Long: `export writes a journal as:

  md    a report that tells the session's story: the experiment table (commit,
        profile, tok/s median with its 95 % confidence interval, change against
        the baseline), what changed from one experiment to the next, each
        experiment's hypothesis, conclusion and fingerprint, and the notes;
  csv   the tok/s samples, one row per sample (--samples tok, the default:
        t_s,time,exp,name,tok_s,accept_length,steady), or the GPU samples, one
        row per GPU per sample (--samples gpu); pandas reads either with
        pd.read_csv(path) and no options; values nvidia-smi could not give are
        empty cells, never 0;
  json  the header, experiments (fingerprint, result, delta) and notes.

--baseline EXP (an id or a name) is the experiment deltas are relative to;
default the first one with a result. -o writes to a file (replaced whole,
never left half-written) instead of stdout.`,
		Example: `  flightdeck journal export 2026-11-29-101500-demo --format md -o report.md
  flightdeck journal export 2026-11-29-101500-demo --format csv --samples gpu -o gpus.csv
  flightdeck journal export 2026-11-29-101500-demo --format json --baseline e2`,
		Args: gitArgs(cobra.ExactArgs(1)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error { return runJournalExport(cmd, args[0], f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "journals directory FILE is looked up in (default $XDG_STATE_HOME/flightdeck/journals)")
	fl.StringVar(&f.format, "format", "", "md, csv or json (required)")
	fl.StringVar(&f.baseline, "baseline", "", "experiment (id or name) the deltas are relative to (default: the first with a result)")
	fl.StringVar(&f.samples, "samples", "tok", "with --format csv: tok (tok/s samples) or gpu (GPU samples)")
	fl.StringVarP(&f.out, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

func runJournalExport(cmd *cobra.Command, arg string, f journalExportFlags) error {
	switch f.format {
	case "md", "csv", "json":
	case "":
		return refusedf("--format is required: md, csv or json")
	default:
		return refusedf("--format %q: want md, csv or json", f.format)
	}
	switch f.samples {
	case "tok", "gpu":
	default:
		return refusedf("--samples %q: want tok or gpu", f.samples)
	}
	if cmd.Flags().Changed("samples") && f.format != "csv" {
		return refusedf("--samples goes with --format csv")
	}
	if f.baseline != "" && f.format == "csv" {
		return refusedf("--baseline goes with --format md or json (the CSV has no deltas)")
	}
	lj, err := openJournal(arg, f.dir)
	if err != nil {
		return err
	}
	defer lj.Close()
	if _, err := lj.report.Baseline(f.baseline); err != nil {
		return refusedf("--baseline: %v", err)
	}
	if pr := lj.problems; pr.Any() {
		// What was skipped is not in the export: say so, as show and ls do.
		fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: %s: skipped %s\n", lj.path, sanitize.String(pr.String()))
	}
	write := func(w io.Writer) error {
		abs, err := filepath.Abs(lj.path)
		if err != nil {
			abs = lj.path
		}
		opts := report.ReportOptions{Baseline: f.baseline, Path: abs}
		switch f.format {
		case "md":
			return report.WriteMarkdown(w, lj.report, opts)
		case "json":
			return report.WriteJSON(w, lj.report, opts)
		}
		if f.samples == "gpu" {
			return report.WriteGPUCSV(w, lj.report.Header, lj.j.Scan)
		}
		return report.WriteCSV(w, lj.report)
	}
	if f.out == "" || f.out == "-" {
		return write(cmd.OutOrStdout())
	}
	if err := writeFileAtomic(f.out, write); err != nil {
		return outputError{f.out, err}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: wrote %s\n", f.out)
	return nil
}

// outputError is a failure to write -o FILE: an I/O error (exit 1, never
// "input refused", even when the directory does not exist), named by the
// path the user gave rather than the temporary file written first.
type outputError struct {
	path string
	err  error
}

func (e outputError) Error() string {
	err := e.err
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	msg := err.Error()
	if errors.Is(err, fs.ErrNotExist) {
		msg = "no such directory: " + filepath.Dir(e.path)
		if fi, serr := os.Stat(filepath.Dir(e.path)); serr == nil && fi.IsDir() {
			msg = "cannot create a file in " + filepath.Dir(e.path) // /proc, say
		}
	}
	return "write " + e.path + ": " + msg
}

// writeFileAtomic writes a file through a temporary file in the same
// directory renamed over it, so that a failed export never leaves half a
// file (or destroys the previous one).
func writeFileAtomic(path string, write func(io.Writer) error) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("is a directory")
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// The temporary file's 0600 stays: an export holds what the journal
	// holds (a dirty patch may contain secrets), and journals are 0600.
	return os.Rename(tmp.Name(), path)
}

// triggerWords says what started or ended an experiment: "hand (e)" for
// the key, else the trigger's own word ("launch", "relaunch", "kill").
func triggerWords(t event.Trigger) string {
	if t == event.TriggerKey {
		return "hand (e)"
	}
	return sanitize.String(string(t))
}

// writePatchSummary prints a dirty checkout's patch as show gives it: its
// size and SHA-256, a diffstat (files, lines added and deleted, per file),
// and with full the patch itself, each line sanitised (it is the host's
// text), framed so that it can be cut out and applied.
func writePatchSummary(out io.Writer, g *event.GitState, full bool) {
	s := sanitize.String
	cut := ""
	if g.PatchTruncated {
		cut = fmt.Sprintf(", stored cut at %s", compare.FormatBytes(ledger.MaxPatch))
	}
	fmt.Fprintf(out, "  dirty       patch %s, sha256 %s%s\n", compare.FormatBytes(int64(g.PatchBytes)), s(g.PatchSHA256), cut)
	if st := compare.DiffStatSummary(g.Patch); st != "" {
		fmt.Fprintf(out, "  diffstat    %s\n", st)
	}
	for _, fc := range compare.DiffStat(g.Patch) {
		if fc.Binary {
			fmt.Fprintf(out, "                %s (binary)\n", fc.Path)
		} else {
			fmt.Fprintf(out, "                %s +%d -%d\n", fc.Path, fc.Added, fc.Deleted)
		}
	}
	if !full {
		if g.Patch != "" {
			fmt.Fprintln(out, "              (the patch itself: --patch)")
		}
		return
	}
	if g.Patch == "" {
		fmt.Fprintln(out, "  patch       not stored")
		return
	}
	fmt.Fprintln(out, "  patch:")
	for line := range strings.Lines(g.Patch) {
		fmt.Fprintln(out, s(strings.TrimSuffix(line, "\n")))
	}
	if g.PatchTruncated {
		fmt.Fprintf(out, "  (patch cut: %s of %s stored)\n", compare.FormatBytes(int64(len(g.Patch))), compare.FormatBytes(int64(g.PatchBytes)))
	}
}
