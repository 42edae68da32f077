// Package compare is the compare view (c in the experiments panel), a
// component.Dialog pushed on the cockpit's overlay stack: a box over the
// whole area between the header and the footer, scrollable, of
// sessions/compare's Diff of two experiments — the two sides, the results
// with their CI, delta and verdict (A/A noise next to it), the fingerprint
// table with the changed rows first, the commit range, and the A/A noise
// measured in the session. A range the journal did not record is read
// live with the Ranger, under a context that closing the view cancels;
// its answer comes back as a RangeMsg for the root to hand to the open
// view (Ranged).
//
// It is a dialog, not a panel: it opens over the screen and takes every
// key until esc, c or q closes it, where a panel takes the log tail's
// place and leaves the cockpit's keys working.
//
// It imports tui/panels/experiments for how the panel writes when an
// experiment started and how it ended (experiments.Clock,
// experiments.EndedHow), so the view names them as the panel's rows and
// details do; the panel opens the view through a func field the root
// sets, and does not import this package.
package compare

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	scompare "github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// ID is the compare view's ID on the overlay stack.
const ID = "compare"

// Ranger reads a commit range for a view whose range the journal did not
// record; *sessions.Lab implements it. Range does I/O (git on the host)
// and runs only inside a tea.Cmd.
type Ranger interface {
	// Range reads what lies between two commits in the server's checkout.
	Range(ctx context.Context, from, to string) (*event.CommitRange, error)
}

// RangeMsg is the answer of the commit range a view asked for.
type RangeMsg struct {
	Seq   int // the request it answers: answers to a closed view are dropped
	Range *event.CommitRange
	Err   error
}

// compareExperiments builds a Diff: scompare.Compare (a variable so the
// view can be tested on a constructed Diff).
var compareExperiments = scompare.Compare

// Views opens compare views and numbers their range reads, and holds
// what they need of the cockpit. The root sets every field once; use it
// by pointer.
type Views struct {
	// Ctl reads the ranges the journal did not record; nil: none is read.
	Ctl Ranger
	// ReadOnly is set for a replay: what was recorded is all it shows.
	ReadOnly bool
	// Ctx is the context the reads run under (it ends when the program
	// does); context.Background when nil.
	Ctx func() context.Context
	// Flash answers in the status line until the next key.
	Flash func(text string, tone style.Token)
	// Push opens a dialog on top.
	Push func(component.Dialog)
	// Bisect, when set, opens the bisect start dialog for the view's Diff
	// (b), whose sides are a and b; it returns the dialog's first
	// command. nil: b says a bisect cannot start here.
	Bisect func(d *scompare.Diff, a, b string) tea.Cmd

	seq  int   // the last range request's number
	last *View // the view opened last, open or closed since
}

// View is one compare view: the Diff it shows, how its two sides were
// chosen, where it is scrolled to, and its range read.
type View struct {
	// A and B are the experiments' ids, A the old side, B the new; AWhy
	// and BWhy say how each was chosen ("baseline", "marked", "selected",
	// "first with a result").
	A, B, AWhy, BWhy string

	diff     *scompare.Diff
	all      bool // a: the unchanged fingerprint rows are listed too
	top      int  // first content line shown
	height   int  // content lines at the last render (the page size)
	seq      int  // the range request in flight, or the last one
	reading  bool // the range is being read
	rangeErr string
	// cancel ends the context the range is read under: closing or
	// replacing the view calls it, so Ranger.Range returns.
	cancel context.CancelFunc
	// bisect is b's action (Views.Bisect on this view); nil: none.
	bisect func() tea.Cmd
}

// Open opens the view of experiments a and b of exps (aWhy and bWhy say
// how each was chosen), or says why it cannot (a flash); it returns the
// command reading a commit range the journal did not record.
func (vs *Views) Open(exps []ledger.Experiment, a, b, aWhy, bWhy string) tea.Cmd {
	d, err := compareExperiments(exps, a, b)
	if err != nil {
		vs.Flash("compare: "+style.ErrText(err), style.Crit)
		return nil
	}
	v := vs.Show(d, a, b, aWhy, bWhy)
	vs.Flash("comparing "+pairText(a, b, aWhy, bWhy), style.OK)
	return vs.readRange(v)
}

// Show opens the view of d, whose sides are a and b (aWhy and bWhy say
// how each was chosen), reading nothing; the view it replaces ends its
// read.
func (vs *Views) Show(d *scompare.Diff, a, b, aWhy, bWhy string) *View {
	if vs.last != nil {
		vs.last.close() // a range read for the view it replaces ends
	}
	vs.seq++
	v := &View{A: a, B: b, AWhy: aWhy, BWhy: bWhy, diff: d, seq: vs.seq}
	v.bisect = func() tea.Cmd {
		if vs.Bisect == nil {
			vs.Flash("bisect not available here: it needs server control, a checkout and a journal", style.Warn)
			return nil
		}
		return vs.Bisect(v.diff, v.A, v.B)
	}
	vs.last = v
	vs.Push(v)
	return v
}

// Last is the view opened last, open or closed since; nil before the
// first.
func (vs *Views) Last() *View { return vs.last }

// pairText says what c compares: "e1 (baseline) vs e3 (selected)".
func pairText(a, b, aWhy, bWhy string) string {
	return sanitize.String(a) + " (" + aWhy + ") vs " + sanitize.String(b) + " (" + bWhy + ")"
}

// headOf is an experiment's recorded HEAD (full id), "" when unknown.
func headOf(e *ledger.Experiment) string {
	if e == nil || e.Fingerprint == nil || e.Fingerprint.Git == nil {
		return ""
	}
	return e.Fingerprint.Git.Head
}

// readRange asks the Ranger for the commits between v's A and B when the
// journal has none recorded, both commits are known and differ, and the
// cockpit is live.
func (vs *Views) readRange(v *View) tea.Cmd {
	d := v.diff
	from, to := headOf(d.A), headOf(d.B)
	if d.Range != nil || from == "" || to == "" || from == to || vs.Ctl == nil || vs.ReadOnly {
		return nil
	}
	parent := context.Background()
	if vs.Ctx != nil {
		parent = vs.Ctx()
	}
	ctx, cancel := context.WithCancel(parent)
	ctl, seq := vs.Ctl, v.seq
	v.reading, v.cancel = true, cancel
	return func() tea.Msg {
		defer cancel()
		r, err := ctl.Range(ctx, from, to)
		return RangeMsg{Seq: seq, Range: r, Err: err}
	}
}

// ID implements component.Dialog.
func (v *View) ID() string { return ID }

// Diff is the Diff the view shows (its range filled in once read).
func (v *View) Diff() *scompare.Diff { return v.diff }

// Seq is the number of the view's range request (the last one made).
func (v *View) Seq() int { return v.seq }

// Reading reports whether the view's range is being read.
func (v *View) Reading() bool { return v.reading }

// RangeErr is why reading the range failed, sanitised; "" when it did not.
func (v *View) RangeErr() string { return v.rangeErr }

// Holding reports whether the view still holds the context of its range
// read: until the answer lands or the view closes.
func (v *View) Holding() bool { return v.cancel != nil }

// Top is the first content line shown (0: the top).
func (v *View) Top() int { return v.top }

// close ends the view's range read; an answer that still arrives is
// dropped (Ranged).
func (v *View) close() {
	if v.cancel != nil {
		v.cancel()
		v.cancel = nil
	}
	v.reading = false
}

// Ranged fills the range in from r, the answer of the view's last range
// request; other answers are dropped.
func (v *View) Ranged(r RangeMsg) {
	if r.Seq != v.seq {
		return
	}
	v.reading = false
	if v.cancel != nil {
		v.cancel() // the read is over: release its context
		v.cancel = nil
	}
	switch {
	case r.Err != nil:
		v.rangeErr = style.ErrText(r.Err)
	case r.Range != nil:
		v.diff.Range = r.Range
		v.diff.RangeNote = "read from git on the host now"
	}
}

// Key implements component.Dialog: esc, c, q (or ctrl+c) close the view,
// cancelling its range read; a shows or folds the unchanged fingerprint
// rows; b opens the bisect start dialog over it (good: the faster
// side's commit, bad: the slower's); the rest scroll.
func (v *View) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	page := max(v.height-1, 1)
	switch msg.String() {
	case "esc", "c", "q", "ctrl+c":
		v.close()
		return nil, true
	case "a":
		v.all = !v.all
	case "b":
		if v.bisect != nil {
			return v.bisect(), false
		}
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
	return nil, false
}

// Help implements component.Dialog.
func (v *View) Help() []component.Hint {
	all := "show unchanged"
	if v.all {
		all = "fold unchanged"
	}
	return []component.Hint{{Key: "up/down/pgup/pgdn", Desc: "scroll"}, {Key: "a", Desc: all}, {Key: "b", Desc: "bisect"}, {Key: "esc", Desc: "close"}}
}
