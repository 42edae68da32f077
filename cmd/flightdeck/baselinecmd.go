package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// journalBaselineFlags are the options of `flightdeck journal baseline`.
type journalBaselineFlags struct {
	dir   string
	clear bool
}

func newJournalBaselineCmd() *cobra.Command {
	var f journalBaselineFlags
	cmd := &cobra.Command{
		Use:   "baseline FILE EXP | baseline FILE --clear",
		Short: "Mark an experiment of a journal as its baseline (the cockpit's B), or clear the mark",
		Long: `baseline marks experiment EXP (an id, e2, or a name, as journal diff takes
them) as the baseline of the journal FILE, by appending an exp-baseline
event to it: journal show then marks it, its delta column counts from it,
and "baseline" in journal diff names it. EXP may be an earlier session's
experiment, JOURNAL:ID (last week's 2026-11-24-101500-demo:e1): the mark
names it so, and journal show and the cockpit look it up there. The latest mark wins; --clear
appends one that clears it.

A journal a cockpit is writing now is refused: mark the baseline there (B
in its x panel).

Exit statuses: 0 marked (or nothing to change); 1 an I/O error; 2 input
refused: no such journal, a live one, an unknown experiment, a usage
error.`,
		Example: `  flightdeck journal baseline 2026-11-29-101500-demo e1
  flightdeck journal baseline 2026-11-29-101500-demo "none @ a6d51c0 #1/5"
  flightdeck journal baseline 2026-11-29-101500-demo --clear`,
		Args: gitArgs(cobra.RangeArgs(1, 2)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error {
			return runJournalBaseline(cmd, args, f)
		}),
	}
	cmd.Flags().StringVar(&f.dir, "dir", "", "journals directory FILE is looked up in (default $XDG_STATE_HOME/flightdeck/journals)")
	cmd.Flags().BoolVar(&f.clear, "clear", false, "clear the baseline mark instead of setting one")
	return cmd
}

func runJournalBaseline(cmd *cobra.Command, args []string, f journalBaselineFlags) error {
	switch {
	case f.clear && len(args) == 2:
		return usageError(cmd, errors.New("--clear takes no EXP"))
	case !f.clear && len(args) == 1:
		return usageError(cmd, errors.New("give the experiment to mark (EXP: an id or a name), or --clear"))
	}
	path, err := resolveJournal(args[0], f.dir)
	if err != nil {
		return err
	}
	if journal.Live(path) {
		return liveRefusal(path, "mark the baseline there (B in its x panel)")
	}
	lj, err := loadJournal(path)
	if err != nil {
		return err
	}
	l := &lj.report.Ledger
	id, what := "", ""
	var earlier *event.History
	_, _, qualified := history.Split(args[len(args)-1])
	switch {
	case f.clear:
	case qualified:
		h, qid, w, err := earlierExperiment(args[1], f.dir)
		if err != nil {
			lj.Close()
			return err
		}
		earlier, id, what = &h, qid, w
	default:
		x := l.Find(args[1])
		if x == nil {
			lj.Close()
			return refusedf("no experiment %q in %s (have %s)", sanitize.OneLine(args[1]), path, lj.report.ExpList())
		}
		id, what = x.ID, sanitize.OneLine(x.ID)+" "+fmt.Sprintf("%q", sanitize.OneLine(x.Name))
	}
	cur := l.BaselineID() // the mark, whichever journal it names
	host := lj.report.Header.Host
	lj.Close()
	out := cmd.OutOrStdout()
	switch {
	case f.clear && cur == "":
		fmt.Fprintf(out, "no baseline is marked in %s: nothing to clear\n", sanitize.String(path))
		return nil
	case !f.clear && cur == id:
		fmt.Fprintf(out, "%s is the baseline of %s already\n", what, sanitize.String(path))
		return nil
	}
	if err := appendBaseline(cmd.Context(), path, host, id, earlier); err != nil {
		return err
	}
	if f.clear {
		fmt.Fprintf(out, "baseline %s cleared in %s\n", sanitize.OneLine(cur), sanitize.String(path))
		return nil
	}
	fmt.Fprintf(out, "baseline: %s in %s (flightdeck journal diff %s baseline B compares with it)\n", what, sanitize.String(path), shellQuote(path))
	return nil
}

// appendBaseline marks experiment id as the baseline of the journal at
// path ("" clears the mark) through a session appended to it, as the B
// key does (Session.Baseline: an exp-baseline, after a session record of
// this command). A cockpit that took the journal since it was checked
// gives a refusal (its *journal.LockedError); other errors are I/O
// errors.
//
// earlier, when set, holds the journal of an earlier session whose
// experiment id names (qualified): the session may then mark it.
func appendBaseline(ctx context.Context, path, host, id string, earlier *event.History) error {
	return amendJournal(ctx, path, host, "journal baseline", func(s *sessions.Session) error {
		if earlier != nil {
			s.SetHistory(*earlier)
		}
		return s.Baseline(ctx, id)
	})
}

// earlierExperiment resolves a qualified experiment name (JOURNAL:ID,
// JOURNAL a path, a journal's name or a unique prefix of one under dir):
// a history holding that journal, the experiment's qualified id and its
// words for the output. Errors name what was not found.
func earlierExperiment(arg, dir string) (event.History, string, string, error) {
	part, exp, _ := history.Split(arg)
	d, err := journalDir(dir)
	if err != nil {
		return event.History{}, "", "", err
	}
	var j history.Journal
	if fi, err := os.Stat(part); err == nil && fi.Mode().IsRegular() {
		h, err := journal.ReadHeader(part)
		if err != nil {
			return event.History{}, "", "", err
		}
		abs, _ := filepath.Abs(part)
		j = history.Journal{Path: abs, Header: h}
	} else {
		all, err := history.All(d)
		if err != nil {
			return event.History{}, "", "", err
		}
		if j, err = history.Match(all, part); err != nil {
			return event.History{}, "", "", refusedf("%v in %s (see flightdeck journal ls)", err, d)
		}
	}
	r, _, err := history.Load(j.Path)
	if err != nil {
		return event.History{}, "", "", err
	}
	x := r.Ledger.Find(exp)
	if x == nil {
		return event.History{}, "", "", refusedf("no experiment %q in %s (have %s)", sanitize.OneLine(exp), j.Path, r.ExpList())
	}
	id := history.Qualify(j.Name(), x.ID)
	h := event.History{Journals: []event.HistoryJournal{{Name: j.Name(), Path: j.Path, Header: j.Header, Events: history.Events(r, j.Name())}}}
	return h, id, sanitize.OneLine(id) + " " + fmt.Sprintf("%q", sanitize.OneLine(x.Name)), nil
}
