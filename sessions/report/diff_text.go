package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// DiffOptions configure the Diff writers.
type DiffOptions struct {
	// All lists the unchanged fingerprint rows too; else they are folded
	// into a count.
	All bool
}

// WriteDiffText writes d for a terminal, in aligned columns: the two
// experiments; the results (each side's median, 95 % interval and
// n, the delta, the verdict across launches with p and n, the A/A noise);
// the changed fingerprint rows, then those known on one side only; the
// commit range (git log --oneline lines, the files it touches); the A/A
// noise of each configuration; the unchanged rows (folded into a count
// unless opts.All). Recorded text is sanitised. It returns w's error.
func WriteDiffText(w io.Writer, d *compare.Diff, opts DiffOptions) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "A: %s\nB: %s\n\n", expTitle(d.A), expTitle(d.B))

	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "RESULTS\tA %s\tB %s\tdelta\tverdict (across launches)\n", sanitize.OneLine(d.A.ID), sanitize.OneLine(d.B.ID))
	for i := range d.Results {
		r := &d.Results[i]
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", FormatMetric(r), compare.FormatSummary(r.A, r.Unit), compare.FormatSummary(r.B, r.Unit), FormatRowDelta(r), r.VerdictText())
	}
	tw.Flush()
	fmt.Fprintf(bw, "  launches: A %s; B %s\n", launchList(d.LaunchesA), launchList(d.LaunchesB))

	changed, unknown, same := splitFields(d.Fields)
	fmt.Fprintf(bw, "\nCHANGED (%d of %d fingerprint rows)\n", len(changed), len(d.Fields))
	writeFieldTable(bw, changed, "  nothing: the same configuration")
	if len(unknown) > 0 {
		fmt.Fprintf(bw, "\nNOT COMPARED: known on one side only (%d)\n", len(unknown))
		writeFieldTable(bw, unknown, "")
	}

	fmt.Fprintf(bw, "\nCOMMITS %s\n", rangeTitle(d))
	if c, ok := d.Culprit(); ok {
		fmt.Fprintf(bw, "  %s\n", c.Text())
	}
	if d.Range != nil {
		writeRange(bw, d.Range)
	}

	fmt.Fprintf(bw, "\nA/A NOISE (launch to launch, same configuration)\n")
	if len(d.Noise) == 0 {
		fmt.Fprintf(bw, "  not measured: no configuration has 2 launches with a result (R relaunches one)\n")
	} else {
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, n := range d.Noise {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", sanitize.OneLine(n.Config), compare.FormatLaunches(n.Launches), sanitize.OneLine(n.Metric),
				fmtNum(n.Lo)+"–"+fmtNum(n.Hi), compare.FormatNoise(n.Spread))
		}
		tw.Flush()
	}

	if opts.All {
		fmt.Fprintf(bw, "\nUNCHANGED (%d)\n", len(same))
		writeSameTable(bw, same)
	} else if len(same) > 0 {
		fmt.Fprintf(bw, "\n%s unchanged (--all lists them)\n", plural(len(same), "row"))
	}
	return bw.Flush()
}

// expTitle is `e2 "baseline @ a6d51c0" (repeat 2/5 of e1)`; an
// experiment still open (in a journal being written) says its result is
// the one so far.
func expTitle(x *ledger.Experiment) string {
	s := sanitize.OneLine(x.ID) + " " + strconv.Quote(sanitize.OneLine(x.Name))
	if x.Open() {
		s += " (open: result so far)"
	}
	if x.Repeat != nil {
		s += fmt.Sprintf(" (repeat %d/%d of %s)", x.Repeat.I, x.Repeat.N, sanitize.OneLine(x.Repeat.Series))
	}
	return s
}

// FormatMetric is a result row's metric with its unit when the name
// lacks it: "TTFT median (ms)", "tok/s (server log)".
func FormatMetric(r *compare.ResultRow) string {
	if strings.Contains(r.Metric, r.Unit) {
		return sanitize.OneLine(r.Metric)
	}
	return sanitize.OneLine(r.Metric) + " (" + sanitize.OneLine(r.Unit) + ")"
}

// FormatRowDelta is the change of B's own median over A's: "-8.0%", "-" when
// there is none.
func FormatRowDelta(r *compare.ResultRow) string {
	if p, ok := r.DeltaPct(); ok {
		return fmtDelta(p)
	}
	return "-"
}

// launchList names the launches of a side: "e1, e4, e5 (3)".
func launchList(xs []*ledger.Experiment) string {
	ids := make([]string, len(xs))
	for i, x := range xs {
		ids[i] = sanitize.OneLine(x.ID)
	}
	return strings.Join(ids, ", ") + " (" + strconv.Itoa(len(xs)) + ")"
}

// splitFields returns the changed rows, the rows known on one side only,
// and the rest.
func splitFields(rows []compare.FieldRow) (changed, unknown, same []compare.FieldRow) {
	for _, r := range rows {
		switch {
		case r.Changed:
			changed = append(changed, r)
		case r.Unknown:
			unknown = append(unknown, r)
		default:
			same = append(same, r)
		}
	}
	return changed, unknown, same
}

// FieldValue is a fingerprint row's value as text: an absent value is
// "(unset)"; a value is cut to its first line.
func FieldValue(s string) string {
	if s == "" {
		return "(unset)"
	}
	return sanitize.OneLine(s)
}

func writeFieldTable(w io.Writer, rows []compare.FieldRow, empty string) {
	if len(rows) == 0 {
		if empty != "" {
			fmt.Fprintln(w, empty)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t->\t%s\n", sanitize.OneLine(r.Group), sanitize.OneLine(r.Name), FieldValue(r.A), FieldValue(r.B))
	}
	tw.Flush()
}

// writeSameTable lists unchanged rows with their one value.
func writeSameTable(w io.Writer, rows []compare.FieldRow) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		v := FieldValue(r.A)
		if r.A != r.B {
			v += " / " + FieldValue(r.B) // unknown on both sides, differently
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", sanitize.OneLine(r.Group), sanitize.OneLine(r.Name), v)
	}
	tw.Flush()
}

// rangeTitle is "a6d51c0..3207427 (recorded at e3's start)", or why there
// is no range.
func rangeTitle(d *compare.Diff) string {
	if d.Range == nil {
		if d.RangeNote == "same commit" {
			if g := d.A.Git(); g != nil {
				return "same commit (" + git.ShortID(sanitize.OneLine(g.Head)) + ")"
			}
		}
		return sanitize.OneLine(d.RangeNote)
	}
	return git.ShortID(sanitize.OneLine(d.Range.From)) + ".." + git.ShortID(sanitize.OneLine(d.Range.To)) + " (" + sanitize.OneLine(d.RangeNote) + ")"
}

// writeRange lists the range's commits (B's new ones, then A's that B
// lacks) and files, each list with its total when cut.
func writeRange(w io.Writer, r *event.CommitRange) {
	list := func(title string, items []string, total int) {
		total = max(total, len(items))
		if total == 0 {
			return
		}
		fmt.Fprintf(w, "  %s (%d):\n", title, total)
		for _, s := range items {
			fmt.Fprintf(w, "    %s\n", sanitize.OneLine(s))
		}
		if total > len(items) {
			fmt.Fprintf(w, "    ... and %d more\n", total-len(items))
		}
	}
	list("in B, not in A (git log --oneline A..B)", r.Ahead, r.AheadTotal)
	list("in A, not in B (B is behind)", r.Behind, r.BehindTotal)
	list("files touched (git diff --name-only A B)", r.Files, r.FilesTotal)
	if r.Err != "" {
		fmt.Fprintf(w, "  incomplete: %s\n", sanitize.OneLine(r.Err))
	}
}
