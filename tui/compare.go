package tui

import (
	"context"
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
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

// BaselineMsg is the answer of a baseline mark made with B.
type BaselineMsg struct {
	Exp string // the experiment marked; "" when the mark was cleared
	Err error
}

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

// panelUnavailable is why space or c cannot act outside the panel or
// without experiments.
func panelUnavailable(m *Model) string {
	switch {
	case !m.exp.open:
		return "open the experiments panel first (x)"
	case m.exp.count() == 0:
		return "no experiments yet: e starts one"
	}
	return ""
}

// baselineUnavailable is why B cannot mark the baseline.
func baselineUnavailable(m *Model) string {
	switch {
	case !m.exp.open:
		return "open the experiments panel first (x)"
	case m.opts.ReadOnly:
		return m.roPrefix() + ": a baseline would change the journal"
	case m.watching():
		return m.watchingWhy()
	case m.measure == nil:
		return "no journal: a baseline needs one (drop --no-journal)"
	case m.exp.doing != "":
		return m.exp.doing + " ..."
	case m.exp.count() == 0:
		return "no experiments yet: e starts one"
	}
	return ""
}

// baselineID is the marked baseline's id, "" when none is marked.
func (m *Model) baselineID() string {
	if b := m.exp.ledger.Baseline(); b != nil {
		return b.ID
	}
	return ""
}

// toggleMark marks or unmarks the selected experiment (space).
func (m *Model) toggleMark() {
	x := &m.exp
	e := &x.ledger.Experiments()[x.sel()]
	id := sanitize.String(e.ID)
	if i := slices.Index(x.marked, e.ID); i >= 0 {
		x.marked = slices.Delete(x.marked, i, i+1)
		m.flash("unmarked "+id, style.Dim)
		return
	}
	if len(x.marked) == 2 {
		m.flash("two are marked already ("+sanitize.String(x.marked[0])+", "+sanitize.String(x.marked[1])+"): space on one unmarks it", style.Warn)
		return
	}
	x.marked = append(x.marked, e.ID)
	if len(x.marked) == 2 {
		m.flash("marked "+sanitize.String(x.marked[0])+" and "+id+": c compares them", style.OK)
		return
	}
	m.flash("marked "+id+": c on another experiment compares the two; c on "+id+" compares it with the baseline", style.OK)
}

// toggleBaseline marks the selected experiment as the baseline, or clears
// the mark when it is the baseline already (B), in a tea.Cmd.
func (m *Model) toggleBaseline() tea.Cmd {
	e := &m.exp.ledger.Experiments()[m.exp.sel()]
	id := e.ID
	if id == m.baselineID() {
		id = ""
	}
	ctl, ctx := m.measure, m.ctx
	what := "baseline " + e.ID
	if id == "" {
		what = "clear baseline"
	}
	rec := m.recorder(what)
	m.exp.doing = "marking the baseline"
	return func() tea.Msg {
		rec()
		return BaselineMsg{Exp: id, Err: ctl.Baseline(ctx, id)}
	}
}

// baselineResult applies the answer of B.
func (m *Model) baselineResult(r BaselineMsg) {
	m.exp.doing = ""
	switch {
	case r.Err != nil:
		m.flash("baseline not marked: "+errText(r.Err), style.Crit)
	case r.Exp == "":
		m.flash("baseline cleared: deltas are against the first experiment with a result", style.OK)
	default:
		m.flash(sanitize.String(r.Exp)+" is the baseline: the header shows the open experiment's delta against it", style.OK)
	}
}

// comparePair picks what c compares: the two marked experiments (A the
// older); else, when one is marked and the cursor is on another, those
// two (A the older); else the cursor's experiment (B) against the
// baseline (A: the one marked with B, else the first experiment with a
// result). aWhy and bWhy say how each was chosen ("marked", "selected",
// "baseline", "first with a result"); why is "" when it found a pair,
// else why there is none.
func (m *Model) comparePair() (a, b, aWhy, bWhy, why string) {
	x := &m.exp
	exps := x.ledger.Experiments()
	index := func(id string) int {
		return slices.IndexFunc(exps, func(e ledger.Experiment) bool { return e.ID == id })
	}
	older := func(a, b, aWhy, bWhy string) (string, string, string, string, string) {
		if index(a) > index(b) {
			a, b, aWhy, bWhy = b, a, bWhy, aWhy
		}
		return a, b, aWhy, bWhy, ""
	}
	cur := exps[x.sel()].ID
	switch {
	case len(x.marked) == 2:
		return older(x.marked[0], x.marked[1], "marked", "marked")
	case len(x.marked) == 1 && x.marked[0] != cur:
		return older(x.marked[0], cur, "marked", "selected")
	}
	base, baseWhy := m.baselineID(), "baseline"
	if base == "" {
		_, base = m.implicitBase()
		baseWhy = "first with a result"
	}
	switch {
	case base == "":
		return "", "", "", "", "nothing to compare: mark two experiments (space), or a baseline (B)"
	case cur == base:
		return "", "", "", "", sanitize.String(base) + " is the baseline: select another experiment, or mark two (space)"
	}
	return base, cur, baseWhy, "selected", "" // the reference is A, as in the panel's delta column
}

// compareText says what c compares: "e1 (baseline) vs e3 (selected)".
func compareText(a, b, aWhy, bWhy string) string {
	return sanitize.String(a) + " (" + aWhy + ") vs " + sanitize.String(b) + " (" + bWhy + ")"
}

// implicitBase is the first experiment with a result: its median and id
// (0 and "" when none has one).
func (m *Model) implicitBase() (float64, string) {
	exps := m.exp.ledger.Experiments()
	for i := range exps {
		if r := m.expResultOf(&exps[i]); r.N > 0 && r.Median > 0 {
			return r.Median, exps[i].ID
		}
	}
	return 0, ""
}

// openCompare opens the compare view (c), or says why there is nothing
// to compare; it returns the command reading a missing commit range.
func (m *Model) openCompare() tea.Cmd {
	a, b, aWhy, bWhy, why := m.comparePair()
	if why != "" {
		m.flash(why, style.Warn)
		return nil
	}
	// The open experiment is compared on its result so far.
	exps := slices.Clone(m.exp.ledger.Experiments())
	if n := len(exps); n > 0 && exps[n-1].Open() {
		exps[n-1].Result = m.exp.provisional()
	}
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

// baselineDelta is the header's live delta of the open experiment cur
// against the marked baseline: "vs e1 +42.1%" (its tok/s so far against
// the baseline's result); "" when no baseline is marked, cur is it, or
// either has no result yet.
func (m *Model) baselineDelta(cur *ledger.Experiment) string {
	base := m.exp.ledger.Baseline()
	if base == nil || base == cur {
		return ""
	}
	br := m.expResultOf(base)
	r := m.exp.provisional()
	if br.N == 0 || br.Median <= 0 || r.N == 0 {
		return ""
	}
	return "vs " + sanitize.String(base.ID) + " " + deltaText(r.Median, br.Median)
}

// deltaText is v against base in percent, signed, one decimal: "+42.1%"
// ("-" when base is not positive), as the compare view's delta column
// and journal diff write it (report.FormatRowDelta).
func deltaText(v, base float64) string {
	if !(base > 0) {
		return "-"
	}
	return report.FormatRowDelta(&compare.ResultRow{A: ledger.Summary{N: 1, Median: base}, B: ledger.Summary{N: 1, Median: v}})
}
