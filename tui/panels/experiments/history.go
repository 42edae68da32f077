package experiments

// The host's history in the panel: the experiments of earlier sessions
// (event.History: the host's other journals, and this session's own
// journal before it appended), listed below this session's, folded by
// session, newest first. A session row expands and collapses with o (or enter);
// the newest session is expanded at first. Their experiments can be
// marked, compared (c) and made the baseline (B): the mark is an
// exp-baseline naming the qualified id ("2026-12-01-101500-demo:e3"), or
// the plain id for the own journal's.

import (
	"slices"
	"strconv"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// histGroup is one earlier journal in the panel: its header and its
// experiments folded into a ledger of their own.
type histGroup struct {
	name   string
	own    bool
	header event.SessionHeader
	ledger ledger.Ledger
	open   bool // expanded: its experiments are rows
}

// item is one row of the panel: an experiment of this session (group
// -1, exp its index), an earlier session's row (exp -1) or one of its
// experiments (exp its index in the group's ledger).
type item struct{ group, exp int }

// session reports a session row.
func (it item) session() bool { return it.group >= 0 && it.exp < 0 }

// SetHistory folds the host's earlier sessions (event.History), replacing
// any folded before. The newest session is expanded, the others folded.
func (p *Panel) SetHistory(h event.History) {
	p.hist = p.hist[:0]
	for i, j := range h.Journals {
		g := histGroup{name: sanitize.String(j.Name), own: j.Own, header: j.Header, open: i == 0}
		if open, ok := p.carriedOpen[g.name]; ok {
			g.open = open // as the model before a seek had it
		}
		for _, e := range j.Events {
			g.ledger.Apply(e)
		}
		p.hist = append(p.hist, g)
	}
	p.histMore = h.More
	p.histErrors = sanitize.All(h.Errors)
	p.gen++
}

// HistoryCount is how many experiments the earlier sessions hold, and in
// how many sessions.
func (p *Panel) HistoryCount() (exps, sessions int) {
	for i := range p.hist {
		exps += len(p.hist[i].ledger.Experiments())
	}
	return exps, len(p.hist)
}

// items are the panel's rows in order: this session's experiments, then
// each earlier session's row, newest first, followed by its experiments
// when expanded.
func (p *Panel) items() []item {
	own := len(p.ledger.Experiments())
	out := make([]item, 0, own+len(p.hist))
	for i := range own {
		out = append(out, item{-1, i})
	}
	for g := range p.hist {
		out = append(out, item{g, -1})
		if p.hist[g].open {
			for i := range p.hist[g].ledger.Experiments() {
				out = append(out, item{g, i})
			}
		}
	}
	return out
}

// expAt is the experiment of row it, nil for a session row.
func (p *Panel) expAt(it item) *ledger.Experiment {
	switch {
	case it.group < 0:
		return &p.ledger.Experiments()[it.exp]
	case it.exp < 0:
		return nil
	}
	return &p.hist[it.group].ledger.Experiments()[it.exp]
}

// selItem is the selected row; ok is false when there are none.
func (p *Panel) selItem() (item, bool) {
	its := p.items()
	i := p.sel()
	if i < 0 || i >= len(its) {
		return item{}, false
	}
	return its[i], true
}

// selExp is the selected experiment, nil on a session row or when there
// are none.
func (p *Panel) selExp() *ledger.Experiment {
	it, ok := p.selItem()
	if !ok {
		return nil
	}
	return p.expAt(it)
}

// earlier reports whether x is an earlier session's experiment (not one
// of this session's ledger).
func (p *Panel) earlier(x *ledger.Experiment) bool {
	exps := p.ledger.Experiments()
	return !slices.ContainsFunc(exps, func(y ledger.Experiment) bool { return y.ID == x.ID })
}

// findExp is the experiment with id, this session's or an earlier one's;
// nil when none.
func (p *Panel) findExp(id string) *ledger.Experiment {
	if id == "" {
		return nil
	}
	exps := p.ledger.Experiments()
	if i := slices.IndexFunc(exps, func(x ledger.Experiment) bool { return x.ID == id }); i >= 0 {
		return &exps[i]
	}
	for g := range p.hist {
		exps := p.hist[g].ledger.Experiments()
		if i := slices.IndexFunc(exps, func(x ledger.Experiment) bool { return x.ID == id }); i >= 0 {
			return &exps[i]
		}
	}
	return nil
}

// markedBaseline is the baseline mark in force: this session's latest
// exp-baseline, else the one the own journal held before it; "" when
// none.
func (p *Panel) markedBaseline() string {
	if p.sawBaseline {
		return p.ledger.BaselineID()
	}
	for g := range p.hist {
		if p.hist[g].own {
			return p.hist[g].ledger.BaselineID()
		}
	}
	return ""
}

// baseline is the marked baseline's experiment, nil when none is marked
// or it is not at hand.
func (p *Panel) baseline() *ledger.Experiment { return p.findExp(p.markedBaseline()) }

// Known returns every experiment the panel knows, the older first: the
// host's earlier sessions' (qualified ids) and this session's. The slice
// is the caller's; its elements' fields must not be modified.
func (p *Panel) Known() []ledger.Experiment { return p.allExperiments() }

// allExperiments are every experiment the panel knows, the older first:
// the earlier sessions' (oldest session first), then this session's (the
// open one with its result so far). What c compares from.
func (p *Panel) allExperiments() []ledger.Experiment {
	var out []ledger.Experiment
	for g := len(p.hist) - 1; g >= 0; g-- {
		out = append(out, p.hist[g].ledger.Experiments()...)
	}
	own := slices.Clone(p.ledger.Experiments())
	if n := len(own); n > 0 && own[n-1].Open() {
		own[n-1].Result = p.Provisional()
	}
	return append(out, own...)
}

// toggleFold expands or collapses the session of the selected row
// (o, enter); the cursor stays on the session's row.
func (p *Panel) toggleFold() {
	it, ok := p.selItem()
	if !ok || it.group < 0 {
		return
	}
	g := &p.hist[it.group]
	g.open = !g.open
	for i, x := range p.items() {
		if x.group == it.group && x.session() {
			p.selectRow(i)
		}
	}
}

// foldUnavailable is why o cannot expand or collapse a session.
func (p *Panel) foldUnavailable() string {
	if !p.Open {
		return "open the experiments panel first (x)"
	}
	if it, ok := p.selItem(); !ok || it.group < 0 {
		return "select an earlier session's row (below this session's experiments)"
	}
	return ""
}

// sessionTitle is an earlier session's row: "2026-12-01 10:15 demo  3
// experiments  89.4 tok/s best" ("earlier in this journal" for the own
// journal's).
func (g *histGroup) sessionTitle() string {
	var t string
	if g.own {
		t = "earlier in this journal"
	} else {
		t = g.header.Created.Local().Format("2006-01-02 15:04")
		if name := sanitize.String(g.header.Label + prefixed(" ", g.header.Name)); name != "" {
			t += " " + name
		}
	}
	exps := g.ledger.Experiments()
	t += "  " + style.Plural(len(exps), "experiment")
	best := 0.0
	for i := range exps {
		if r := exps[i].Result; r.N > 0 {
			best = max(best, r.Median)
		}
	}
	if best > 0 {
		t += "  " + strconv.FormatFloat(best, 'f', 1, 64) + " tok/s best"
	}
	return t
}

// sessionDetail is the detail lines of an earlier session's row.
func (p *Panel) sessionDetail(st *style.Styles, g *histGroup, w int) []string {
	h := g.header
	out := []string{st.Accent.Render(style.Truncate(g.sessionTitle(), w))}
	line := func(label, text string) {
		if text != "" {
			out = append(out, style.TruncateStyled(st.Dim.Render(style.PadRight(label, detailLabel))+st.Text.Render(style.Truncate(text, w-detailLabel)), w))
		}
	}
	line("journal", g.name)
	line("host", sanitize.String(h.Host))
	who := sanitize.String(h.User)
	if h.Hostname != "" {
		who += "@" + sanitize.String(h.Hostname)
	}
	line("by", who)
	line("started", h.Created.Local().Format("2006-01-02 15:04:05"))
	fold := "o expands it"
	if g.open {
		fold = "o folds it"
	}
	line("", fold+"; its experiments can be the baseline (B) and compared (c)")
	return out
}

// Measured is the tok/s measured at commit (a full or short id) by this
// session's experiments and the earlier sessions' (history.MeasuredText:
// the median of the launches at that commit with a clean tree, with n):
// "89.4 tok/s n=2", "-" when none was measured there. For the checkout
// picker; cached until the ledger or the history changes.
func (p *Panel) Measured(commit string) string {
	if p.measuredGen != p.gen || p.measured == nil {
		p.measured, p.measuredGen = map[string]string{}, p.gen
	}
	t, ok := p.measured[commit]
	if !ok {
		t = history.MeasuredText(p.allExperiments(), commit)
		p.measured[commit] = t
	}
	return t
}
