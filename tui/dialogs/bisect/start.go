// Package bisect is the cockpit's bisect start dialog, a
// component.Dialog pushed on the overlay stack by b in a compare view
// (good: the faster experiment's commit, bad: the slower's) or by I on a
// reflog entry of the git panel (good: that entry's commit, bad: HEAD).
// It lists the range's commits, read by the Ranger in a tea.Cmd (its
// answer, a RangeMsg, comes back through the root: Loaded), with an
// estimate of the launches and the time they take; enter starts the
// bisect (the root's Start), esc closes it.
package bisect

import (
	"context"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	sbisect "github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	bisectpanel "github.com/flightdeck-dev/flightdeck/tui/panels/bisect"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// ID is the start dialog's ID on the overlay stack.
const ID = "bisect-start"

// Ranger lists a bisect's range; *sessions.Session implements it.
// BisectRange does I/O (git on the host) and runs only inside a tea.Cmd.
type Ranger interface {
	// BisectRange lists the commits a bisect from good to bad would test,
	// oldest first, endpoints included.
	BisectRange(ctx context.Context, good, bad string) ([]event.BisectCommit, error)
}

// RangeMsg is the answer of a start dialog's range read.
type RangeMsg struct {
	Seq     int // the dialog it answers (Start.Seq): others are dropped
	Commits []event.BisectCommit
	Err     error
}

// Start is the start dialog: the two endpoints, where they came from,
// the range once read, and the estimate.
type Start struct {
	// Good and Bad are the endpoints as the bisect is given them (full
	// ids or refs, raw); GoodText and BadText say what they are, for the
	// screen ("bba2fc4 e1 82.3 tok/s"), sanitised by the dialog.
	Good, Bad         string
	GoodText, BadText string
	// From says where the bisect was asked from ("compare e1 vs e3",
	// "git panel: reflog pull").
	From string
	// Method is the settings the estimate uses (defaults filled in).
	Method sbisect.Config
	// Mean is the mean wall time of one launch from what was measured
	// (earlier bisect launches, else the experiments); 0 unknown.
	Mean time.Duration
	// Run starts the bisect (enter); the dialog closes with it.
	Run func() tea.Cmd
	// Cancelled, when set, is called on esc.
	Cancelled func()

	seq     int
	commits []event.BisectCommit
	reading bool
	readErr string
	top     int
	rows    int // list rows at the last render
	cancel  context.CancelFunc
}

// Read returns the tea.Cmd that reads the range under a context closing
// the dialog cancels, its answer numbered seq (the caller numbers its
// dialogs: answers to a closed one are dropped); nil without a Ranger
// (the list then says so).
func (d *Start) Read(parent context.Context, r Ranger, seq int) tea.Cmd {
	d.seq = seq
	if r == nil {
		d.readErr = "the range cannot be read here"
		return nil
	}
	ctx, cancel := context.WithCancel(parent)
	d.cancel, d.reading = cancel, true
	good, bad := d.Good, d.Bad
	return func() tea.Msg {
		defer cancel()
		cs, err := r.BisectRange(ctx, good, bad)
		return RangeMsg{Seq: seq, Commits: cs, Err: err}
	}
}

// Seq is the number of the dialog's range read.
func (d *Start) Seq() int { return d.seq }

// Loaded applies the answer of the dialog's read; others are dropped.
func (d *Start) Loaded(m RangeMsg) {
	if m.Seq != d.seq {
		return
	}
	d.reading = false
	d.release()
	if m.Err != nil {
		d.readErr = style.ErrText(m.Err)
		return
	}
	d.commits, d.readErr = m.Commits, ""
}

// Commits is the range as read; nil before the answer or after an error.
func (d *Start) Commits() []event.BisectCommit { return d.commits }

// Reading reports whether the range is being read.
func (d *Start) Reading() bool { return d.reading }

func (d *Start) release() {
	if d.cancel != nil {
		d.cancel()
		d.cancel = nil
	}
}

// ID implements component.Dialog.
func (d *Start) ID() string { return ID }

// Key implements component.Dialog: enter starts, esc (or q) closes, the
// arrows scroll the list.
func (d *Start) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch msg.String() {
	case "enter":
		d.release()
		if d.Run == nil {
			return nil, true
		}
		return d.Run(), true
	case "esc", "q", "ctrl+c":
		d.release()
		if d.Cancelled != nil {
			d.Cancelled()
		}
		return nil, true
	case "up", "k":
		d.top--
	case "down", "j":
		d.top++
	case "pgup":
		d.top -= max(d.rows-1, 1)
	case "pgdown", "space":
		d.top += max(d.rows-1, 1)
	}
	d.top = max(d.top, 0)
	return nil, false
}

// Help implements component.Dialog.
func (d *Start) Help() []component.Hint {
	return []component.Hint{{Key: "enter", Desc: "start bisect"}, {Key: "up/down", Desc: "scroll"}, {Key: "esc", Desc: "cancel"}}
}

// View implements component.Dialog: the endpoints, the estimate, then
// the range's commits, newest first as git log lists them.
func (d *Start) View(st *style.Styles, w, h int) component.Box {
	iw := max(min(w-4, 96), 10)
	var body []string
	add := func(t style.Tone, s string) {
		for _, l := range style.Wrap(s, iw) {
			body = append(body, t.Render(l))
		}
	}
	add(st.OK, "good "+sanitize.String(d.GoodText))
	add(st.Crit, "bad  "+sanitize.String(d.BadText))
	if d.From != "" {
		add(st.Dim, "from "+sanitize.String(d.From))
	}
	switch {
	case d.reading:
		add(st.Dim, "reading the range from git on the host ...")
	case d.readErr != "":
		add(st.Crit, "range: "+d.readErr)
		add(st.Dim, "enter still starts it: the bisect reads the range itself")
	default:
		n := len(d.commits)
		add(st.Text, style.Plural(n, "commit")+" (endpoints included), "+style.Plural(max(n-2, 0), "candidate")+" between them")
		steps, launches := sbisect.Estimate(n, d.Method)
		add(st.Text, bisectpanel.EstimateText(steps, launches, d.Mean))
	}
	add(st.Dim, "every commit is checked out, launched with the current preset, profile and flags, and measured; the checkout and dirty work are restored at the end")
	// The list takes the room left: the box has a border and a hint line
	// around it.
	room := max(h-4-len(body)-3, 1)
	if len(d.commits) > 0 {
		list := make([]string, 0, len(d.commits))
		for i := len(d.commits) - 1; i >= 0; i-- {
			c := d.commits[i]
			tag := "  "
			switch i {
			case 0:
				tag = st.OK.Render("g ")
			case len(d.commits) - 1:
				tag = st.Crit.Render("b ")
			}
			short := sanitize.String(c.Short)
			if short == "" {
				short = git.ShortID(sanitize.String(c.ID))
			}
			list = append(list, tag+st.Accent.Render(short)+" "+style.Truncate(sanitize.String(c.Subject), max(iw-3-style.Width(short), 0)))
		}
		d.rows = room
		d.top = style.Clamp(d.top, 0, max(len(list)-room, 0))
		end := min(d.top+room, len(list))
		body = append(body, list[d.top:end]...)
		if end < len(list) {
			body = append(body, st.Dim.Render("+"+strconv.Itoa(len(list)-end)+" more (down scrolls)"))
		}
	}
	body = append(body, "", st.Key.Render("enter")+" starts the bisect  "+st.Key.Render("esc")+" cancels")
	return component.Box{Title: "bisect " + sanitize.String(git.ShortID(d.Good)) + ".." + sanitize.String(git.ShortID(d.Bad)), Frame: style.Warn, Body: body, Width: iw}
}
