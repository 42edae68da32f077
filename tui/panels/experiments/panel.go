// Package experiments is the experiments panel (x) and the experiments'
// side of the cockpit. In the log tail's place, like the git panel, the
// panel lists the session's experiments, one row each (id, name, commit,
// profile, tok/s median with its 95 % interval, samples, delta against the
// baseline, and how it ended), then the host's earlier sessions
// (SetHistory: one row each, newest first, expanded to their experiments
// with o), with a cursor over them and, below the rows, the selected
// experiment's hypothesis, conclusion, result, fingerprint and notes. Its
// keys: w writes or replaces the selected experiment's conclusion (a form
// the cockpit opens, Edit), space marks up to two experiments, c compares
// the pair they choose (Compare), B marks the baseline (BaselineControl),
// o folds or expands an earlier session. An earlier session's experiment
// is named by its qualified id ("2026-12-01-101500-demo:e3") in marks,
// the baseline and compare.
//
// It folds the event stream into a ledger.Ledger (Apply), which the rest
// of the cockpit reads as well (the header, the experiment forms, the
// benchmark and repeat titles), caches the open experiment's provisional
// result per ledger change, keeps the conclusion banner of an experiment
// that ended by a kill, a relaunch or the server's exit, and the
// experiment call in flight. It draws only what the ledger folded from
// events, so a replay shows it as it was. The calls the forms confirm
// (StartExperiment, EndExperiment, Conclude, WriteNote) and B run through
// Control and BaselineControl in tea.Cmds; their answers come back as
// StartedMsg, EndedMsg, UpdatedMsg, NoteSavedMsg and BaselineMsg for
// Result.
package experiments

import (
	"context"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Control starts and ends experiments and writes notes; *sessions.Lab
// implements it. StartExperiment, EndExperiment, UpdateExperiment and
// Note do I/O (they write the journal, StartExperiment captures the
// fingerprint in the background) and run only inside a tea.Cmd; they
// publish their events on the stream (which is what the screen shows) and
// also return them for the key's answer.
type Control interface {
	// StartExperiment opens an experiment named name ("" lets it choose
	// "<profile> @ <short commit>") with an optional hypothesis, ending the
	// open one first.
	StartExperiment(ctx context.Context, name, hypothesis string) (event.ExperimentStart, error)
	// EndExperiment closes the open experiment with an optional conclusion
	// and returns it with its result; it fails when none is open.
	EndExperiment(ctx context.Context, conclusion string) (event.ExperimentEnd, error)
	// UpdateExperiment changes an experiment's name, hypothesis or
	// conclusion after the fact (the conclusion of one that ended by
	// itself).
	UpdateExperiment(ctx context.Context, u event.ExperimentUpdate) error
	// Note writes a timestamped note, tied to the open experiment if any.
	Note(ctx context.Context, text string) (event.Note, error)
	// Key records a key that caused an action ("y", "kill sglang pid
	// 4123"). It must not block for long: it is called from tea.Cmds.
	Key(key, action string)
}

// BaselineControl marks the baseline behind B; *sessions.Lab implements
// it. Baseline does I/O and runs only inside a tea.Cmd; the mark comes
// back as an event.Baseline the ledger folds.
type BaselineControl interface {
	// Baseline marks experiment id as the baseline ("" clears it).
	Baseline(ctx context.Context, id string) error
}

// ServerState is what the panel knows of the server for the open
// experiment's warm-up (WarmingUp).
type ServerState struct {
	// Loading says the latest server status is launching or loading, since
	// Since.
	Loading bool
	Since   time.Time
	// Ready is when the running server became ready; zero when it is not.
	Ready time.Time
}

// NoJournalText is the answer of the keys that write the journal without
// a Control.
const NoJournalText = "no journal: experiments and notes need one (drop --no-journal)"

// Text limits of the experiment forms' fields, in characters (runes):
// what is typed or pasted past them is cut, and the status line says so.
const (
	NameLimit = 200  // an experiment's name
	TextLimit = 4000 // a note, a hypothesis, a conclusion
)

// ConcludeWindow is how long after an experiment ended by a kill,
// relaunch or exit its conclusion banner shows (and e writes its
// conclusion instead of starting the next experiment). Later, w in the
// panel writes it.
const ConcludeWindow = 30 * time.Second

// Panel is the experiments panel and the experiments' state: the ledger
// folded from events, the call in flight, the conclusion banner, the
// cursor and the marks over the rows, and its keys (a component.Panel).
// The root sets the func fields that tie it to the cockpit; its keys ask
// it why they cannot act: use it by pointer (NewPanel).
type Panel struct {
	// Ctl starts and ends experiments and writes notes (the cockpit's
	// Options.Experiments); nil: no journal (or a replay).
	Ctl Control
	// Measure marks the baseline (B); nil: B says why it cannot.
	Measure BaselineControl
	// Open is whether the panel is on screen, in the log tail's place.
	Open bool

	// The panel's keys (Bindings, help group "view"): w, space and c act
	// only while it is open (Exclusive); B says to open it.
	ConcludeKey, MarkKey, CompareKey, BaselineKey component.Binding
	// FoldKey (o, enter) expands or collapses an earlier session's row.
	FoldKey component.Binding

	// Replay is set for a replayed journal: the panel shows what was
	// recorded by then, and no banner asks for a conclusion.
	Replay bool
	// Watching, when set, reports that another cockpit drives the host:
	// its journal records the experiments, not this one's.
	Watching func() bool
	// ReadOnly, when set, says why nothing may change the journal from
	// this cockpit (a replay, another cockpit drives), what naming the
	// change ("a conclusion"); "" when it may.
	ReadOnly func(what string) string
	// Now is the cockpit's clock (model time); zero time when nil.
	Now func() time.Time
	// Server, when set, is what the cockpit knows of the server.
	Server func() ServerState
	// Flash answers in the status line until the next key.
	Flash func(text string, tone style.Token)
	// Record, when set, returns what records the key that started a call
	// as its cause; it runs inside the call's tea.Cmd.
	Record func(action string) func()
	// Ctx is the context the calls run under (it ends when the program
	// does); context.Background when nil.
	Ctx func() context.Context
	// Edit opens the conclusion form of e, an experiment that ended (w),
	// and returns its first command.
	Edit func(e *ledger.Experiment) tea.Cmd
	// Compare opens the compare view of experiments a (the older side) and
	// b of exps (the earlier sessions' and this session's, older first, the
	// open one with its result so far), aWhy
	// and bWhy saying how each was chosen (c); it returns the view's first
	// command.
	Compare func(exps []ledger.Experiment, a, b, aWhy, bWhy string) tea.Cmd

	ledger  ledger.Ledger
	gen     int // counts ledger changes; the provisional result is cached per gen
	provGen int
	prov    event.ExperimentResult
	// verdicts are the verdicts computed at ledger generation verdictGen
	// (VerdictVs).
	verdicts   map[verdictKey]*compare.ResultRow
	verdictGen int
	// measured caches Measured per commit for measuredGen (the picker
	// asks for every commit it lists, each frame).
	measured    map[string]string
	measuredGen int

	doing string // the call in flight: "starting an experiment"; "" when none

	// pending is an experiment that ended by a kill, relaunch or exit with
	// no conclusion, at pendingAt: its conclusion banner shows, and e opens
	// its conclusion prompt, until ConcludeWindow has passed (model time),
	// the next experiment ends, or esc dismisses it.
	pending   string
	pendingAt time.Time

	cursor  int  // index into the rows (items)
	touched bool // the user moved the cursor: until then it follows the newest
	// selKey is the selected row's identity (itemKey) once the user
	// moved: rows inserted above it (a new experiment, the history
	// arriving, a fold) leave the selection on it, not on its index.
	selKey string
	// carriedOpen are the earlier sessions' folds a seek carried over
	// (CarryView), by journal name, for a history that comes after.
	carriedOpen map[string]bool
	top         int // first row shown
	height      int // rows at the last render (the page size)
	w, h        int // SetSize's
	// marked are the experiments marked with space (ids, at most two, in
	// the order marked): c compares them.
	marked []string

	// The host's earlier sessions (SetHistory), newest first; histMore
	// counts the journals left out, histErrors those that could not be
	// read.
	hist       []histGroup
	histMore   int
	histErrors []string
	// sawBaseline says an exp-baseline of this session was folded: its
	// mark replaces the one the own journal held before.
	sawBaseline bool
}

// NewPanel returns a closed panel writing through ctl (nil: no journal).
func NewPanel(ctl Control) *Panel {
	bind := func(help, desc, key string) component.Binding { return component.New("view", help, desc, key) }
	p := &Panel{
		Ctl:         ctl,
		ConcludeKey: bind("w", "conclusion", "w"),
		MarkKey:     bind("spc", "mark", "space"),
		CompareKey:  bind("c", "compare", "c"),
		BaselineKey: bind("B", "baseline", "B"),
		FoldKey:     component.New("view", "o", "fold", "o", "enter"),
	}
	p.ConcludeKey.Long = "x panel: write the conclusion"
	p.MarkKey.Long = "x panel: mark (c compares two)"
	p.CompareKey.Long = "x panel: cursor vs marked/base"
	p.BaselineKey.Long = "x panel: (un)mark the baseline"
	p.FoldKey.Long = "x panel: (un)fold a session"
	p.FoldKey.Disabled = p.foldUnavailable
	p.ConcludeKey.Disabled = p.concludeUnavailable
	p.MarkKey.Disabled = p.rowsUnavailable
	p.CompareKey.Disabled = p.rowsUnavailable
	p.BaselineKey.Disabled = p.baselineUnavailable
	return p
}

// Bindings implements component.Panel, in the full help's order (the
// panel's footer lists them its own way).
func (p *Panel) Bindings() []*component.Binding {
	return []*component.Binding{&p.ConcludeKey, &p.MarkKey, &p.CompareKey, &p.BaselineKey, &p.FoldKey}
}

// Exclusive are the panel's keys that act only while it is open: they are
// matched before the cockpit's, and elsewhere their keys are the log's and
// the git panel's (w, space, c).
func (p *Panel) Exclusive() []*component.Binding {
	return []*component.Binding{&p.ConcludeKey, &p.MarkKey, &p.CompareKey, &p.FoldKey}
}

// Act implements component.Panel: w opens the selected experiment's
// conclusion form, space marks or unmarks it, c opens the compare view,
// B marks the baseline (or clears it).
func (p *Panel) Act(b *component.Binding) tea.Cmd {
	switch b {
	case &p.ConcludeKey:
		return p.Edit(p.selExp())
	case &p.MarkKey:
		p.toggleMark()
	case &p.CompareKey:
		return p.openCompare()
	case &p.BaselineKey:
		return p.toggleBaseline()
	case &p.FoldKey:
		p.toggleFold()
	}
	return nil
}

// readOnly is why nothing may change the journal, what naming the change;
// "" when it may.
func (p *Panel) readOnly(what string) string {
	if p.ReadOnly == nil {
		return ""
	}
	return p.ReadOnly(what)
}

// watching reports that another cockpit drives the host.
func (p *Panel) watching() bool { return p.Watching != nil && p.Watching() }

// Writable reports whether the experiment calls may run: a Control, and
// neither a replay nor another cockpit driving.
func (p *Panel) Writable() bool { return p.Ctl != nil && !p.Replay && !p.watching() }

// rowsUnavailable is why space or c cannot act: outside the panel,
// without experiments, or on an earlier session's row.
func (p *Panel) rowsUnavailable() string {
	switch {
	case !p.Open:
		return "open the experiments panel first (x)"
	case p.count() == 0:
		return "no experiments yet: e starts one"
	case p.selExp() == nil:
		return sessionRowText
	}
	return ""
}

// sessionRowText is why a key for one experiment cannot act on an
// earlier session's row.
const sessionRowText = "an earlier session's row: o expands it, then select one of its experiments"

// baselineUnavailable is why B cannot mark the baseline.
func (p *Panel) baselineUnavailable() string {
	if !p.Open {
		return "open the experiments panel first (x)"
	}
	if why := p.readOnly("a baseline"); why != "" {
		return why
	}
	switch {
	case p.Measure == nil:
		return "no journal: a baseline needs one (drop --no-journal)"
	case p.doing != "":
		return p.doing + " ..."
	case p.count() == 0:
		return "no experiments yet: e starts one"
	case p.selExp() == nil:
		return sessionRowText
	}
	return ""
}

// concludeUnavailable is why w cannot write the conclusion of the
// selected experiment.
func (p *Panel) concludeUnavailable() string {
	if !p.Open {
		return "open the experiments panel first (x)"
	}
	if why := p.readOnly("a conclusion"); why != "" {
		return why
	}
	switch {
	case p.Ctl == nil:
		return NoJournalText
	case p.doing != "":
		return p.doing + " ..."
	}
	if p.sel() < 0 {
		return "no experiments yet: e starts one"
	}
	e := p.selExp()
	switch {
	case e == nil:
		return sessionRowText
	case p.earlier(e):
		return sanitize.String(e.ID) + " is an earlier session's: flightdeck journal conclude writes its conclusion"
	case e.Open():
		return sanitize.String(e.ID) + " is still open: e ends it with a conclusion"
	}
	return ""
}

// Apply folds one event into the ledger.
func (p *Panel) Apply(ev event.Event) {
	if _, ok := ev.Data.(event.Baseline); ok {
		p.sawBaseline = true
	}
	if p.ledger.Apply(ev) {
		p.gen++
	}
}

// Ledger is the experiments folded from the events so far; read it, do
// not Apply to it (Apply does, keeping the cache current).
func (p *Panel) Ledger() *ledger.Ledger { return &p.ledger }

// Provisional is the open experiment's result so far, recomputed only
// when the ledger changed since the last call.
func (p *Panel) Provisional() event.ExperimentResult {
	if p.provGen != p.gen {
		p.prov, p.provGen = p.ledger.Provisional(), p.gen
	}
	return p.prov
}

// resultOf is an experiment's result: the provisional one while it is
// open (cached per ledger change), else the final one.
func (p *Panel) resultOf(e *ledger.Experiment) event.ExperimentResult {
	if e.Open() && p.ledger.Current() == e {
		return p.Provisional()
	}
	return e.Result
}

// Doing is the experiment call in flight, "starting an experiment"; ""
// when none.
func (p *Panel) Doing() string { return p.doing }

// count is the number of rows: experiments, and earlier sessions'
// rows and experiments (items).
func (p *Panel) count() int { return len(p.items()) }

// sel is the selected row's index (items): this session's newest
// experiment until the user moves the cursor (the first row when this
// session has none); -1 when there are no rows.
func (p *Panel) sel() int {
	n := p.count()
	if !p.touched {
		if own := len(p.ledger.Experiments()); own > 0 || n == 0 {
			return own - 1
		}
		return 0
	}
	if p.selKey != "" {
		for i, it := range p.items() {
			if p.itemKey(it) == p.selKey {
				return i
			}
		}
	}
	return style.Clamp(p.cursor, 0, n-1)
}

// Move moves the cursor by d rows, clamped.
func (p *Panel) Move(d int) {
	p.selectRow(style.Clamp(p.sel()+d, 0, p.count()-1))
}

// selectRow puts the cursor on row i (items), kept by its identity.
func (p *Panel) selectRow(i int) {
	p.cursor, p.touched, p.selKey = i, true, ""
	if its := p.items(); i >= 0 && i < len(its) {
		p.selKey = p.itemKey(its[i])
	}
}

// itemKey is a row's identity: "x:" and the experiment's id (qualified
// for an earlier journal's), or "s:" and the earlier session's journal
// name.
func (p *Panel) itemKey(it item) string {
	if it.session() {
		return "s:" + p.hist[it.group].name
	}
	return "x:" + p.expAt(it).ID
}

// Home moves the cursor to the first experiment.
func (p *Panel) Home() { p.Move(-p.count()) }

// End moves the cursor to the newest experiment: this session's last,
// else the last row (the history's, when this session has none).
func (p *Panel) End() {
	if own := len(p.ledger.Experiments()); own > 0 {
		p.Move(own - 1 - p.sel())
		return
	}
	p.Move(p.count())
}

// Page is how far pgup/pgdn move the cursor: the rows shown at the last
// render, less one.
func (p *Panel) Page() int { return max(p.height-1, 1) }

// Marked are the ids of the experiments marked with space, in the order
// marked (at most two).
func (p *Panel) Marked() []string { return p.marked }

// CarryView keeps what the user looks at from another panel (a replay's
// seek rebuilds the cockpit): open or not, the cursor and the marks.
func (p *Panel) CarryView(from *Panel) {
	p.Open, p.cursor, p.touched, p.selKey = from.Open, from.cursor, from.touched, from.selKey
	p.marked = from.marked
	// The folds, by journal name: now, and for a history that comes later.
	p.carriedOpen = map[string]bool{}
	for _, g := range from.hist {
		p.carriedOpen[g.name] = g.open
	}
	for i := range p.hist {
		if open, ok := p.carriedOpen[p.hist[i].name]; ok {
			p.hist[i].open = open
		}
	}
}

// toggleMark marks or unmarks the selected experiment (space).
func (p *Panel) toggleMark() {
	e := p.selExp()
	id := sanitize.String(e.ID)
	if i := slices.Index(p.marked, e.ID); i >= 0 {
		p.marked = slices.Delete(p.marked, i, i+1)
		p.flash("unmarked "+id, style.Dim)
		return
	}
	if len(p.marked) == 2 {
		p.flash("two are marked already ("+sanitize.String(p.marked[0])+", "+sanitize.String(p.marked[1])+"): space on one unmarks it", style.Warn)
		return
	}
	p.marked = append(p.marked, e.ID)
	if len(p.marked) == 2 {
		p.flash("marked "+sanitize.String(p.marked[0])+" and "+id+": c compares them", style.OK)
		return
	}
	p.flash("marked "+id+": c on another experiment compares the two; c on "+id+" compares it with the baseline", style.OK)
}

// baselineID is the marked baseline's id, "" when none is marked (or it
// is not at hand).
func (p *Panel) baselineID() string {
	if b := p.baseline(); b != nil {
		return b.ID
	}
	return ""
}

// implicitBase is the first experiment with a result: its median and id
// (0 and "" when none has one).
func (p *Panel) implicitBase() (float64, string) {
	exps := p.ledger.Experiments()
	for i := range exps {
		if r := p.resultOf(&exps[i]); r.N > 0 && r.Median > 0 {
			return r.Median, exps[i].ID
		}
	}
	return 0, ""
}

// comparePair picks what c compares: the two marked experiments (A the
// older); else, when one is marked and the cursor is on another, those
// two (A the older); else the cursor's experiment (B) against the
// baseline (A: the one marked with B, else the first experiment with a
// result). aWhy and bWhy say how each was chosen ("marked", "selected",
// "baseline", "first with a result"); why is "" when it found a pair,
// else why there is none.
func (p *Panel) comparePair() (a, b, aWhy, bWhy, why string) {
	exps := p.allExperiments()
	index := func(id string) int {
		return slices.IndexFunc(exps, func(e ledger.Experiment) bool { return e.ID == id })
	}
	older := func(a, b, aWhy, bWhy string) (string, string, string, string, string) {
		if index(a) > index(b) {
			a, b, aWhy, bWhy = b, a, bWhy, aWhy
		}
		return a, b, aWhy, bWhy, ""
	}
	cur := p.selExp().ID
	switch {
	case len(p.marked) == 2:
		return older(p.marked[0], p.marked[1], "marked", "marked")
	case len(p.marked) == 1 && p.marked[0] != cur:
		return older(p.marked[0], cur, "marked", "selected")
	}
	base, baseWhy := p.baselineID(), "baseline"
	if base == "" {
		_, base = p.implicitBase()
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

// openCompare opens the compare view (c) on comparePair's pair, or says
// why there is nothing to compare.
func (p *Panel) openCompare() tea.Cmd {
	a, b, aWhy, bWhy, why := p.comparePair()
	if why != "" {
		p.flash(why, style.Warn)
		return nil
	}
	// The open experiment is compared on its result so far, with the
	// earlier sessions' experiments (their launches count too).
	return p.Compare(p.compareExps(), a, b, aWhy, bWhy)
}

func (p *Panel) flash(text string, tone style.Token) {
	if p.Flash != nil {
		p.Flash(text, tone)
	}
}

func (p *Panel) now() time.Time {
	if p.Now == nil {
		return time.Time{}
	}
	return p.Now()
}

func (p *Panel) ctx() context.Context {
	if p.Ctx == nil {
		return context.Background()
	}
	return p.Ctx()
}

// record is what records the key of the call being started, run inside
// its tea.Cmd.
func (p *Panel) record(action string) func() {
	if p.Record == nil {
		return func() {}
	}
	return p.Record(action)
}

var _ component.Component = (*Panel)(nil)
