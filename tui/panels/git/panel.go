// Package git is the git panel (g). In the log tail's place it shows the
// server's checkout: its path, branch and HEAD in the title, then the last
// action, the dirty files, the stashes and HEAD's reflog, with a cursor
// over those rows. Its keys act on the checkout: space marks files, r
// reverts, s stashes, a, P and D apply, pop and drop a stash, c checks
// out, u undoes the last action made here, S restores a snapshot. Each
// key opens one of its Dialogs first; the action then runs through the
// Control in a tea.Cmd, and the panel shows it in flight (Banners), its
// outcome (a flash, then the event.GitAction from the event stream), and
// a HEAD move made outside the cockpit until it is acknowledged.
//
// The latest event.GitStatus is kept as received: its paths and ids go
// back to the Control exactly (a sanitised path would name another file),
// and every text is sanitised where it is drawn.
package git

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// NoRepoText is g's answer when there is nothing to show: no Control and
// no event.GitStatus received.
const NoRepoText = "the git panel needs --repo PATH (or repo in the host's config)"

// Dialogs opens the panel's dialogs over the screen, each of which asks
// before its action starts (tui/dialogs/git.Dialogs); paths and ids are
// raw, but for AskUndo's (sanitised).
type Dialogs interface {
	// AskRevert asks to revert files to HEAD.
	AskRevert(files []event.GitFile)
	// AskStashOp asks to apply ("stash-apply"), pop ("stash-pop") or
	// drop ("stash-drop") the stash s.
	AskStashOp(op string, s event.Stash)
	// AskUndo asks to restore snapshot id, taken before reason.
	AskUndo(id, reason string)
	// OpenStash opens the stash form, OpenCheckout the checkout picker,
	// OpenSnapshots the snapshots list; each returns its first command.
	OpenStash() tea.Cmd
	OpenCheckout() tea.Cmd
	OpenSnapshots() tea.Cmd
}

// Panel is the git panel: the checkout's latest status as received, the
// cursor and the marks over its rows, the action in flight and the last
// one, the HEAD-moved banner, and its keys (a component.Panel). The root
// sets the func fields that tie it to the cockpit. Its keys ask it why
// they cannot act: use it by pointer (NewPanel).
type Panel struct {
	// Ctl acts on the checkout (the cockpit's Options.Git); nil: a
	// read-only panel (a replayed journal's status) or none.
	Ctl Control
	// Open is whether the panel is on screen, in the log tail's place.
	Open bool
	// QuitWhen is set when q was pressed while an action ran: the cockpit
	// quits when its ActionMsg arrives (Result reports it).
	QuitWhen bool

	// The panel's keys (Bindings, help group "git"); each asks, then
	// acts, but for space, which marks.
	MarkKey, RevertKey, StashKey, ApplyKey, PopKey, DropKey, CheckoutKey, UndoKey, SnapshotsKey component.Binding
	// BisectKey (I) opens the bisect start dialog from the reflog entry
	// under the cursor (good: where HEAD was, e.g. before a pull) to HEAD
	// (bad), through Bisect.
	BisectKey component.Binding
	// Bisect, when set, opens the bisect start dialog for the reflog
	// entry e (raw) and returns its first command; nil: I says a bisect
	// is not available here.
	Bisect func(e event.RefEntry) tea.Cmd

	// Dialogs opens the dialogs the keys ask with.
	Dialogs Dialogs
	// ReadOnly, when set, says why nothing may change the host from this
	// cockpit (a replay, another cockpit drives), what naming the action
	// ("a revert"); "" when it may.
	ReadOnly func(what string) string
	// Busy, when set, says why no git action may start for the rest of
	// the cockpit (a repeat runs, the host is not connected), what naming
	// it; "" when one may.
	Busy func(what string) string
	// Flash answers in the status line until the next key.
	Flash func(text string, tone style.Token)
	// Record, when set, returns what records the key that started an
	// action as its cause; it runs inside the action's tea.Cmd.
	Record func(action string) func()
	// Ctx is the context the Control's calls run under (it ends when the
	// program does); context.Background when nil.
	Ctx func() context.Context
	// Now is the cockpit's clock (model time), for ages; zero time when
	// nil.
	Now func() time.Time

	status  event.GitStatus // the latest status, raw
	hasSt   bool
	readErr string // why the last Refresh failed, sanitised; "" when it did not

	cursor  int             // index of the selected row: files, then stashes, then reflog entries
	touched bool            // the user has moved the cursor: until then it stays on the first row
	top     int             // first body line shown
	height  int             // body lines at the last render (the page size)
	w, h    int             // SetSize's
	marked  map[string]bool // raw paths marked with space for a revert

	doing string // the action in flight, "checking out 3207427"; "" when none
	brief string // doing for a narrow terminal

	last      event.GitAction // the latest event.GitAction event, sanitised; Err cut to its first line
	lastOut   []string        // the first lines of its Output, sanitised, but for the error's own line
	lastNotes []string        // its Notes, sanitised
	lastAt    time.Time
	hasAct    bool

	// The undo started from here: the snapshot it restores and the action
	// that snapshot preceded (sanitised), and the snapshot taken before the
	// undo once its answer came: the "restore" Action it publishes is
	// shown as the undo.
	undoFrom, undoWhy, undoSnap string

	moved  event.GitMoved // the latest HEAD move not acknowledged, sanitised
	movedN int            // moves since the last acknowledgement
}

// NewPanel returns a closed panel acting through ctl (nil: read-only).
func NewPanel(ctl Control) *Panel {
	bind := func(help, desc, key string) component.Binding { return component.New("git", help, desc, key) }
	p := &Panel{
		Ctl:          ctl,
		MarkKey:      bind("spc", "mark", "space"), // "spc": the help's git column fits 80 columns
		RevertKey:    bind("r", "revert", "r"),
		StashKey:     bind("s", "stash", "s"),
		ApplyKey:     bind("a", "apply", "a"),
		PopKey:       bind("P", "pop", "P"),
		DropKey:      bind("D", "drop", "D"),
		CheckoutKey:  bind("c", "checkout", "c"),
		UndoKey:      bind("u", "undo", "u"),
		SnapshotsKey: bind("S", "snapshots", "S"),
		BisectKey:    bind("I", "bisect", "I"),
	}
	// What is hard to take back asks first.
	for _, b := range []*component.Binding{&p.RevertKey, &p.ApplyKey, &p.PopKey, &p.DropKey, &p.CheckoutKey, &p.UndoKey} {
		b.Dangerous = true
	}
	p.MarkKey.Disabled = p.markUnavailable
	p.RevertKey.Disabled = p.revertUnavailable
	p.StashKey.Disabled = p.stashUnavailable
	p.ApplyKey.Disabled = p.stashOpUnavailable("a stash apply")
	p.PopKey.Disabled = p.stashOpUnavailable("a stash pop")
	p.DropKey.Disabled = p.stashOpUnavailable("a stash drop")
	p.CheckoutKey.Disabled = func() string { return p.needsStatus("a checkout") }
	p.UndoKey.Disabled = p.undoUnavailable
	p.SnapshotsKey.Disabled = func() string { return p.can("a restore") }
	p.BisectKey.Disabled = p.bisectUnavailable
	return p
}

// Bindings implements component.Panel, in the footer's order.
func (p *Panel) Bindings() []*component.Binding {
	return []*component.Binding{&p.MarkKey, &p.RevertKey, &p.StashKey, &p.ApplyKey, &p.PopKey, &p.DropKey,
		&p.CheckoutKey, &p.UndoKey, &p.SnapshotsKey, &p.BisectKey}
}

// Act implements component.Panel: space marks or unmarks the cursor's
// file; every other key opens its dialog.
func (p *Panel) Act(b *component.Binding) tea.Cmd {
	switch b {
	case &p.MarkKey:
		f, _ := p.cursorFile()
		if p.marked == nil {
			p.marked = map[string]bool{}
		}
		if p.marked[f.Path] {
			delete(p.marked, f.Path)
		} else {
			p.marked[f.Path] = true
		}
	case &p.RevertKey:
		p.Dialogs.AskRevert(p.revertFiles())
	case &p.StashKey:
		return p.Dialogs.OpenStash()
	case &p.ApplyKey, &p.PopKey, &p.DropKey:
		// The call names the stash by its commit id: indexes shift when
		// stashes are added or dropped.
		s, _ := p.targetStash()
		op := map[*component.Binding]string{&p.ApplyKey: "stash-apply", &p.PopKey: "stash-pop", &p.DropKey: "stash-drop"}[b]
		p.Dialogs.AskStashOp(op, s)
	case &p.CheckoutKey:
		return p.Dialogs.OpenCheckout()
	case &p.UndoKey:
		id, reason := p.Ctl.LastSnapshot()
		p.Dialogs.AskUndo(sanitize.Name(id), sanitize.Name(reason))
	case &p.SnapshotsKey:
		return p.Dialogs.OpenSnapshots()
	case &p.BisectKey:
		if e, ok := p.cursorReflog(); ok {
			return p.Bisect(e)
		}
	}
	return nil
}

// Unavailable is why g cannot open the panel: no Control and no
// event.GitStatus received (a replayed journal without one); "" when it
// can.
func (p *Panel) Unavailable() string {
	if p.Open || p.Ctl != nil || p.hasSt {
		return ""
	}
	return NoRepoText
}

// can is why no acting key can act now, what naming the action for a
// read-only cockpit; "" when they can.
func (p *Panel) can(what string) string {
	if !p.Open {
		if why := p.Unavailable(); why != "" {
			return why
		}
		return "open the git panel first (g)"
	}
	if p.ReadOnly != nil {
		if why := p.ReadOnly(what); why != "" {
			return why
		}
	}
	switch {
	case p.Ctl == nil:
		return "git control not available here"
	case p.doing != "":
		return "git is busy: " + p.doing
	case p.Busy != nil:
		return p.Busy(what)
	}
	return ""
}

// needsStatus is can plus a status to act on.
func (p *Panel) needsStatus(what string) string {
	if why := p.can(what); why != "" {
		return why
	}
	if !p.hasSt {
		return "no git status yet"
	}
	return ""
}

func (p *Panel) markUnavailable() string {
	if why := p.needsStatus("a revert"); why != "" {
		return why
	}
	if _, ok := p.cursorFile(); !ok {
		return "the cursor is not on a changed file"
	}
	return ""
}

func (p *Panel) revertUnavailable() string {
	if why := p.needsStatus("a revert"); why != "" {
		return why
	}
	if len(p.marked) == 0 {
		if _, ok := p.cursorFile(); !ok {
			return "nothing selected: move to a changed file or mark files with space"
		}
	}
	return ""
}

func (p *Panel) stashUnavailable() string {
	if why := p.needsStatus("a stash"); why != "" {
		return why
	}
	if len(p.status.Files) == 0 {
		return "nothing to stash: the tree is clean"
	}
	return ""
}

// stashOpUnavailable is the Disabled func of a, P and D.
func (p *Panel) stashOpUnavailable(what string) func() string {
	return func() string {
		if why := p.needsStatus(what); why != "" {
			return why
		}
		if len(p.status.Stashes) == 0 {
			return "no stashes"
		}
		return ""
	}
}

// bisectUnavailable is why I cannot act: the panel closed or busy, no
// Bisect, or the cursor off the reflog.
func (p *Panel) bisectUnavailable() string {
	if why := p.needsStatus("a bisect"); why != "" {
		return why
	}
	if p.Bisect == nil {
		return "bisect not available here"
	}
	if _, ok := p.cursorReflog(); !ok {
		return "move the cursor to a reflog entry: the bisect runs from its commit (good, e.g. before a pull) to HEAD (bad)"
	}
	return ""
}

func (p *Panel) undoUnavailable() string {
	if why := p.can("an undo"); why != "" {
		return why
	}
	if id, _ := p.Ctl.LastSnapshot(); id == "" {
		return "nothing to undo: no action was made from here"
	}
	return ""
}

// Show opens the panel, acknowledging a HEAD move; with refresh (not in
// a replay) it returns the Refresh of the status (its answer: RefreshMsg;
// the status itself arrives as an event).
func (p *Panel) Show(refresh bool) tea.Cmd {
	p.Open, p.movedN = true, 0
	if !refresh || p.Ctl == nil {
		return nil
	}
	ctl, ctx := p.Ctl, p.ctx()
	return func() tea.Msg { return RefreshMsg{Err: ctl.Refresh(ctx)} }
}

// Close returns to the log; marks are forgotten (they are not shown while
// the panel is closed, so they must not linger into a later revert).
func (p *Panel) Close() {
	p.Open = false
	clear(p.marked)
}

// Doing is the action in flight, "checking out 3207427"; "" when none.
func (p *Panel) Doing() string { return p.doing }

// Moved reports a HEAD move made outside the cockpit that is not
// acknowledged: its banner shows.
func (p *Panel) Moved() bool { return p.movedN > 0 }

// Acknowledge dismisses the HEAD-moved banner.
func (p *Panel) Acknowledge() { p.movedN = 0 }

// Move moves the cursor by d rows, clamped.
func (p *Panel) Move(d int) {
	p.cursor = style.Clamp(p.cursor+d, 0, p.rows()-1)
	p.touched = true
}

// Home moves the cursor to the first row.
func (p *Panel) Home() {
	p.cursor = 0
	p.touched = true
}

// End moves the cursor to the last row.
func (p *Panel) End() { p.Move(p.rows()) }

// Page is how far pgup/pgdn move the cursor: the rows shown at the last
// render, less one.
func (p *Panel) Page() int { return max(p.height-1, 1) }

func (p *Panel) flash(text string, tone style.Token) {
	if p.Flash != nil {
		p.Flash(text, tone)
	}
}

func (p *Panel) ctx() context.Context {
	if p.Ctx == nil {
		return context.Background()
	}
	return p.Ctx()
}

var _ component.Component = (*Panel)(nil)
