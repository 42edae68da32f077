package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// The show verb: flightdeck journal show, a journal's session and its
// experiments table, or one experiment in full (result, fingerprint, dirty
// patch, launch, versions, GPUs and notes).

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
its experiments table (tok/s median with its within-launch 95 % interval,
change against the baseline and the across-launch verdict, as the report
and journal diff give it). With EXP (an id such
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
	withEarlier(lj, f.dir, cmd.ErrOrStderr())
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
			for _, o := range r.Ledger.Orphans() {
				if o.ID == exp {
					return refusedf("experiment %s: its exp-start line in %s is missing (garbled or lost): flightdeck journal show %s lists what its other records kept",
						sanitize.Name(exp), lj.path, lj.path)
				}
			}
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
	return showSession(out, lj, f.dir)
}

// showSession prints the session's summary; dir is the journals
// directory where an earlier journal that the baseline mark names is
// looked up.
func showSession(out io.Writer, lj *loadedJournal, dir string) error {
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
		earlier, earlierWhy := earlierBaseline(r, dir)
		if earlier != nil {
			base = earlier // the deltas are against an earlier journal's experiment
		}
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tCOMMIT\tPROFILE\tTOK/S MEDIAN [WITHIN-LAUNCH 95%]\tDELTA\tVERDICT (ACROSS LAUNCHES)\tSTART\tENDED")
		for i := range exps {
			x := &exps[i]
			delta, verdict := "-", "-"
			if base != nil && x.ID == base.ID {
				delta, verdict = "baseline", "baseline"
			} else if p, ok := compare.DeltaPct(x, base); ok {
				delta = compare.FormatDelta(p)
			}
			if row := r.VerdictVs(base, x); row != nil {
				verdict = row.VerdictText()
			}
			commit := orDash(s(git.ShortID(x.Commit())))
			if x.CommitUnknown() != "" {
				commit = "unknown"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s(x.ID), s(x.Name), commit, orDash(s(x.Profile())),
				report.FormatResult(x.Result), delta, verdict, report.FormatElapsed(x.Started.Sub(h.Created)), report.EndedWords(x))
		}
		tw.Flush()
		writeMeasureSummary(out, r, earlier, earlierWhy)
	}
	writeOrphans(out, r)
	for _, b := range r.Bisects {
		fmt.Fprintln(out)
		if err := report.WriteBisectText(out, b); err != nil {
			fmt.Fprintf(out, "  the bisect's records do not fold: %s\n", s(err.Error()))
		}
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
			fmt.Fprintf(out, "  %s%s %s\n", report.FormatElapsed(n.At.Sub(h.Created)), exp, sanitize.TypedLine(n.Text))
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
// An earlier journal's experiment marked as the baseline is earlier
// (nil when that journal is not at hand: earlierWhy says so).
func writeMeasureSummary(out io.Writer, r *report.Report, earlier *ledger.Experiment, earlierWhy string) {
	exps := r.Ledger.Experiments()
	if m := r.Ledger.Baseline(); m != nil {
		fmt.Fprintf(out, "\nbaseline  %s (marked: B in the x panel, or journal baseline)\n", sanitize.OneLine(m.ID))
	} else if id := r.Ledger.BaselineID(); id != "" {
		part, _, _ := history.Split(id)
		if earlier != nil {
			fmt.Fprintf(out, "\nbaseline  %s from journal %s: %s, tok/s %s (marked: B in the x panel)\n", sanitize.OneLine(id),
				sanitize.OneLine(part), sanitize.OneLine(earlier.Name), report.FormatResult(earlier.Result))
		} else {
			fmt.Fprintf(out, "\nbaseline  %s from journal %s, not at hand: %s\n", sanitize.OneLine(id), sanitize.OneLine(part), sanitize.OneLine(earlierWhy))
		}
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
				spread = fmt.Sprintf("medians %s-%s tok/s, spread %s", compare.FormatValue(slices.Min(meds), compare.UnitTokS),
					compare.FormatValue(slices.Max(meds), compare.UnitTokS), compare.FormatNoise(p))
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
			fmt.Fprintf(out, ", accept length %s", compare.FormatValue(res.AcceptLength, compare.UnitTokens))
		}
		if base != nil && base.ID != x.ID {
			if p, ok := compare.DeltaPct(x, base); ok {
				fmt.Fprintf(out, ", %s vs %s", compare.FormatDelta(p), s(base.ID))
			}
		}
	}
	fmt.Fprintln(out)
	if row := r.VerdictVs(base, x); row != nil {
		fmt.Fprintf(out, "  verdict     vs %s: %s\n", s(base.ID), row.VerdictText())
	}
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
					branch = "on " + sanitize.Name(g.Branch)
				}
				subject := ""
				if g.Subject != "" {
					subject = ": " + sanitize.Name(g.Subject)
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
	s := sanitize.Verbatim
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

// earlierBaseline is the experiment of another journal that r's baseline
// mark names ("2026-11-24-101500-demo:e1"), looked up in the journals
// directory (dir, else the default), with its qualified id; nil and why
// when the mark is none of that kind or the journal or the experiment is
// not at hand.
func earlierBaseline(r *report.Report, dir string) (*ledger.Experiment, string) {
	id := r.Ledger.BaselineID()
	part, exp, ok := history.Split(id)
	if !ok || r.Ledger.Baseline() != nil {
		return nil, ""
	}
	d, err := journalDir(dir)
	if err != nil {
		return nil, err.Error()
	}
	all, err := history.All(d)
	if err != nil {
		return nil, err.Error()
	}
	j, err := history.Match(all, part)
	if err != nil {
		return nil, err.Error() + " in " + d
	}
	er, _, err := history.Load(j.Path)
	if err != nil {
		return nil, err.Error()
	}
	x := er.Ledger.Find(exp)
	if x == nil || x.ID != exp {
		return nil, fmt.Sprintf("no experiment %q in %s", exp, j.Path)
	}
	q := history.QualifyAll(j.Name(), []ledger.Experiment{*x})[0]
	return &q, ""
}
