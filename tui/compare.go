package tui

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Comparing experiments in the experiments panel (x): space marks up to
// two, B marks the baseline (MeasureControl.Baseline; the mark comes back
// as an exp-baseline event the ledger folds), and c opens the compare
// view on the two marked, the marked one and the cursor's, or the
// cursor's and the baseline (comparePair): a full-screen, scrollable
// overlay of compare.Compare's Diff — results with CI, delta and verdict
// (A/A noise next to it), the fingerprint table with changed rows first,
// the commit range. A range the journal did not record is read live with
// MeasureControl.Range, under a context that closing the view cancels.

// CompareRangeMsg is the answer of the commit range the compare view
// asked for (MeasureControl.Range).
type CompareRangeMsg struct {
	Seq   int // the request it answers: answers to a closed view are dropped
	Range *event.CommitRange
	Err   error
}

// compareExperiments builds a Diff: compare.Compare (a variable so the
// view can be tested on a constructed Diff).
var compareExperiments = compare.Compare

// compareView is the compare overlay's state.
type compareView struct {
	a, b       string // the experiments' ids: A the old side, B the new
	aWhy, bWhy string // how each was chosen: "baseline", "marked", "selected"
	diff       *compare.Diff
	all        bool // a: the unchanged fingerprint rows are listed too
	top        int  // first content line shown
	height     int  // content lines at the last render (the page size)
	seq        int  // the range request in flight, or the last one
	reading    bool // the range is being read
	rangeErr   string
	// cancel ends the context the range is read under: closing or
	// replacing the view calls it, so MeasureControl.Range returns.
	cancel context.CancelFunc
}

// closeCompare closes the compare view, cancelling its range read; an
// answer that still arrives is dropped (rangeResult).
func (m *Model) closeCompare() {
	if v := m.cmp; v != nil {
		if v.cancel != nil {
			v.cancel()
			v.cancel = nil
		}
		v.reading = false
	}
	if m.modal == modalCompare {
		m.modal = modalNone
	}
}

// openCompare opens the compare view of experiments a (the older side)
// and b of exps (the panel's c: aWhy and bWhy say how each was chosen), or
// says why it cannot; it returns the command reading a missing commit
// range.
func (m *Model) openCompare(exps []ledger.Experiment, a, b, aWhy, bWhy string) tea.Cmd {
	d, err := compareExperiments(exps, a, b)
	if err != nil {
		m.flash("compare: "+errText(err), style.Crit)
		return nil
	}
	m.showHelp = false
	seq := 1
	if m.cmp != nil {
		m.closeCompare() // a range read for the view it replaces ends
		seq = m.cmp.seq + 1
	}
	m.cmp = &compareView{a: a, b: b, aWhy: aWhy, bWhy: bWhy, diff: d, seq: seq}
	m.modal = modalCompare
	m.flash("comparing "+compareText(a, b, aWhy, bWhy), style.OK)
	return m.readRange()
}

// compareText says what c compares: "e1 (baseline) vs e3 (selected)".
func compareText(a, b, aWhy, bWhy string) string {
	return sanitize.String(a) + " (" + aWhy + ") vs " + sanitize.String(b) + " (" + bWhy + ")"
}

// headOf is an experiment's recorded HEAD (full id), "" when unknown.
func headOf(e *ledger.Experiment) string {
	if e == nil || e.Fingerprint == nil || e.Fingerprint.Git == nil {
		return ""
	}
	return e.Fingerprint.Git.Head
}

// readRange asks MeasureControl.Range for the commits between A and B
// when the journal has none recorded, both commits are known and differ,
// and the cockpit is live.
func (m *Model) readRange() tea.Cmd {
	v := m.cmp
	d := v.diff
	from, to := headOf(d.A), headOf(d.B)
	if d.Range != nil || from == "" || to == "" || from == to || m.measure == nil || m.opts.ReadOnly {
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx)
	ctl, seq := m.measure, v.seq
	v.reading, v.cancel = true, cancel
	return func() tea.Msg {
		defer cancel()
		r, err := ctl.Range(ctx, from, to)
		return CompareRangeMsg{Seq: seq, Range: r, Err: err}
	}
}

// rangeResult fills the open view's range in.
func (m *Model) rangeResult(r CompareRangeMsg) {
	v := m.cmp
	if v == nil || m.modal != modalCompare || r.Seq != v.seq {
		return
	}
	v.reading = false
	if v.cancel != nil {
		v.cancel() // the read is over: release its context
		v.cancel = nil
	}
	switch {
	case r.Err != nil:
		v.rangeErr = errText(r.Err)
	case r.Range != nil:
		v.diff.Range = r.Range
		v.diff.RangeNote = "read from git on the host now"
	}
}

// compareKey handles a key while the compare view is open.
func (m *Model) compareKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	v := m.cmp
	page := max(v.height-1, 1)
	switch msg.String() {
	case "esc", "c", "q", "ctrl+c":
		m.closeCompare()
		return m, nil
	case "a":
		v.all = !v.all
	case "up", "k":
		v.top--
	case "down", "j":
		v.top++
	case "pgup":
		v.top -= page
	case "pgdown", "space":
		v.top += page
	case "home", "g":
		v.top = 0
	case "end", "G":
		v.top = 1 << 30
	}
	v.top = max(v.top, 0) // the render clamps the bottom
	return m, nil
}

// compareModalHelp is the footer while the compare view is open.
func (m *Model) compareModalHelp() [][2]string {
	all := "show unchanged"
	if m.cmp != nil && m.cmp.all {
		all = "fold unchanged"
	}
	return [][2]string{{"up/down/pgup/pgdn", "scroll"}, {"a", all}, {"esc", "close"}}
}
