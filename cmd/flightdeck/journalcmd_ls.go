package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// The ls verb: flightdeck journal ls, the recorded sessions newest first
// with their experiments' tok/s, and its JSON.

type journalLsFlags struct {
	dir  string
	json bool
	host string // --host: only the journals whose header names this host
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
what was skipped. --host lists only the journals recorded for that host,
as their header names it (the HOST column: "gpu-box", "root@10.1.2.3:22",
"simulated host"): the host's history, which the cockpit's x panel shows
and whose experiments journal diff compares across journals.`,
		Args: gitArgs(cobra.NoArgs),
		RunE: journalRunE(func(cmd *cobra.Command, _ []string) error { return runJournalLs(cmd, f) }),
	}
	cmd.Flags().StringVar(&f.dir, "dir", "", "journals directory (default $XDG_STATE_HOME/flightdeck/journals)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	cmd.Flags().StringVar(&f.host, "host", "", "only the journals of this host (as their header names it)")
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
		if err != nil && f.host != "" {
			continue // its host is not known
		}
		if err != nil {
			e.err = err
			e.ls.Error = err.Error()
			entries = append(entries, e)
			continue
		}
		h := lj.report.Header
		if f.host != "" && h.Host != f.host {
			lj.Close()
			continue
		}
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
	of := ""
	if f.host != "" {
		of = " of host " + sanitize.String(f.host)
	}
	if len(entries) == 0 {
		fmt.Fprintf(out, "no journals%s in %s\n", of, dir)
		return nil
	}
	fmt.Fprintf(out, "journals%s in %s, newest first:\n", of, dir)
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
