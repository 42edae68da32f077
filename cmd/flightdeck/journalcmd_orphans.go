package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// writeOrphans lists the experiments whose exp-start the journal lacks (a
// garbled or lost line) with what their other records kept: the kinds,
// the commit and profile of the fingerprint, how and when it ended and
// the result its exp-end recorded. Nothing when there are none.
func writeOrphans(out io.Writer, r *report.Report) {
	orphans := r.Ledger.Orphans()
	if len(orphans) == 0 {
		return
	}
	s := sanitize.String
	fmt.Fprintln(out)
	fmt.Fprintln(out, "warning: records of experiments whose exp-start is missing (a garbled or lost line); not in the table above")
	for i := range orphans {
		o := &orphans[i]
		fmt.Fprintf(out, "  %s  %s, first at %s", s(o.ID), strings.Join(o.Records, ", "), report.FormatElapsed(o.First.Sub(r.Header.Created)))
		if o.Name != "" {
			fmt.Fprintf(out, "; name %s", sanitize.OneLine(o.Name))
		}
		if o.Fingerprint != nil {
			commit := git.ShortID(o.Commit())
			if commit == "" {
				commit = "unknown (" + o.CommitUnknown() + ")"
			}
			fmt.Fprintf(out, "; commit %s, profile %s", s(commit), orDash(s(o.Profile())))
		}
		if !o.Open() {
			fmt.Fprintf(out, "; ended at %s (%s): %s", report.FormatElapsed(o.Ended.Sub(r.Header.Created)), report.EndedWords(&o.Experiment), report.FormatResult(o.Result))
		}
		fmt.Fprintln(out)
	}
}
