package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Bisect is one bisect of a journal: its start, launches and end (nil
// when it has none: running, or its process was killed).
type Bisect struct {
	Start    event.BisectStart
	Launches []event.BisectLaunch
	End      *event.BisectEnd // the last one (a resumed bisect may have several)
}

// addBisect files one bisect record into bs (by the bisect's id).
func addBisect(bs []Bisect, p event.Payload) []Bisect {
	find := func(id string) *Bisect {
		for i := len(bs) - 1; i >= 0; i-- {
			if bs[i].Start.ID == id {
				return &bs[i]
			}
		}
		return nil
	}
	if s, ok := p.(event.BisectStart); ok && find(s.ID) == nil { // a resume copied into another journal starts it once
		bs = append(bs, Bisect{Start: s})
	} else if l, ok := p.(event.BisectLaunch); ok {
		if b := find(l.ID); b != nil {
			b.Launches = append(b.Launches, l)
		}
	} else if e, ok := p.(event.BisectEnd); ok {
		if b := find(e.ID); b != nil {
			b.End = &e
		}
	}
	return bs
}

// Evidence folds b's launches (bisect.Fold) and returns the evidence
// table: the commits that were launched, oldest first, as the decision
// procedure judged them (bisect.State.Rows). Errors: the records do not
// fold (a launch at a commit outside the range).
func (b Bisect) Evidence() ([]bisect.Row, error) {
	st, err := bisect.Fold(b.Start, b.Launches)
	if err != nil {
		return nil, err
	}
	return st.Rows(), nil
}

// Unit is the bisect metric's unit: tok/s or ms.
func (b Bisect) Unit() string {
	if b.Start.Lower {
		return compare.UnitMs
	}
	return compare.UnitTokS
}

// Commit is the range's commit with id (full), zero when not in it.
func (b Bisect) Commit(id string) event.BisectCommit {
	for _, c := range b.Start.Commits {
		if c.ID == id {
			return c
		}
	}
	return event.BisectCommit{}
}

// rowCells are a row's cells: commit, launches, median [CI], verdict, p.
func (b Bisect) rowCells(r bisect.Row) [5]string {
	id := r.Short
	if id == "" {
		id = shortID(r.ID)
	}
	if r.Role != "" {
		id += " (" + r.Role + ")"
	}
	n := strconv.Itoa(r.Launches)
	if len(r.Failures) > 0 {
		n += " + " + strconv.Itoa(len(r.Failures)) + " failed (" + strings.Join(r.Failures, ", ") + ")"
	}
	v := string(r.Verdict)
	if v == "" {
		v = "-"
	}
	p := formatP(r.P)
	switch {
	case r.P > 0:
	case r.Verdict == bisect.Good && r.PBad > 0:
		p = formatP(r.PBad) + " vs bad"
	case r.Verdict == bisect.Bad && r.PGood > 0:
		p = formatP(r.PGood) + " vs good"
	}
	return [5]string{sanitize.OneLine(id), n, compare.FormatSummary(r.Summary, b.Unit()), v, p}
}

// formatP is a p-value for the table: "<0.001", "0.012"; "-" for none.
func formatP(p float64) string {
	switch {
	case !(p > 0):
		return "-"
	case p < 0.001:
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

func shortID(id string) string {
	if len(id) > 7 {
		return id[:7]
	}
	return id
}

// OutcomeText is the bisect's end in words: "culprit 65b09bf Fix PCG MoE
// Error (2026-11-30), 3 files: a.py b.py c.py", or the outcome and why;
// "running or interrupted (no end recorded): flightdeck bisect --resume
// continues it" without an end.
func (b Bisect) OutcomeText() string {
	if b.End == nil {
		return "running or interrupted (no end recorded): flightdeck bisect --resume continues it"
	}
	e := b.End
	if e.Outcome == event.BisectCulprit {
		c := b.Commit(e.Culprit)
		s := "first bad commit " + shortID(e.Culprit) + " " + c.Subject
		if !c.Date.IsZero() {
			s += " (" + c.Date.Format("2006-01-02") + ")"
		}
		if c.FilesTotal > 0 {
			s += fmt.Sprintf(", %d files: %s", c.FilesTotal, strings.Join(c.Files, " "))
			if c.FilesTotal > len(c.Files) {
				s += " …"
			}
		}
		return sanitize.OneLine(s) + "; " + sanitize.OneLine(e.Why)
	}
	s := e.Outcome + ": " + e.Why
	if len(e.Suspects) > 0 {
		var ids []string
		for _, id := range e.Suspects {
			ids = append(ids, shortID(id))
		}
		s += " (suspects " + strings.Join(ids, " ") + ")"
	}
	return sanitize.OneLine(s)
}

// WriteBisectText writes b as text: its range and metric, the outcome,
// the evidence table and what the checkout was left at.
func WriteBisectText(w io.Writer, b Bisect) error {
	s := b.Start
	fmt.Fprintf(w, "bisect %s: %s..%s, %d commits, metric %s\n", sanitize.OneLine(s.ID), sanitize.OneLine(s.Good), sanitize.OneLine(s.Bad), len(s.Commits), sanitize.OneLine(s.Metric))
	fmt.Fprintf(w, "  %s\n", b.OutcomeText())
	rows, err := b.Evidence()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  COMMIT\tLAUNCHES\tMEDIAN [95%]\tVERDICT\tP")
	for _, r := range rows {
		c := b.rowCells(r)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c[0], c[1], c[2], c[3], c[4])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if b.End != nil && b.End.Restored != "" {
		fmt.Fprintf(w, "  checkout: %s\n", sanitize.OneLine(b.End.Restored))
	}
	return nil
}

// writeBisectMarkdown writes b as a Markdown section: the outcome and
// the evidence table.
func writeBisectMarkdown(w io.Writer, b Bisect) error {
	s := b.Start
	fmt.Fprintf(w, "### Bisect %s: %s..%s (%d commits, %s)\n\n", mdCell(s.ID), mdCell(s.Good), mdCell(s.Bad), len(s.Commits), mdCell(s.Metric))
	fmt.Fprintf(w, "%s\n\n", mdCell(b.OutcomeText()))
	rows, err := b.Evidence()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "| Commit | Launches | Median [95%] | Verdict | p |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		c := b.rowCells(r)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", mdCell(c[0]), mdCell(c[1]), mdCell(c[2]), mdCell(c[3]), mdCell(c[4]))
	}
	fmt.Fprintln(w)
	if b.End != nil && b.End.Restored != "" {
		fmt.Fprintf(w, "Checkout: %s\n\n", mdCell(b.End.Restored))
	}
	return nil
}
