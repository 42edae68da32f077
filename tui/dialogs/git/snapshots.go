package git

import (
	tea "charm.land/bubbletea/v2"

	rgit "github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Snapshots is the snapshots list (S), newest first: enter asks, over it,
// to restore the chosen one.
type Snapshots struct {
	ds      *Dialogs
	snaps   []rgit.Snapshot
	loading bool
	err     string // why Snapshots failed, sanitised
	seq     int    // the Snapshots request
	cursor  int
}

// OpenSnapshots opens the snapshots list and asks for it.
func (ds *Dialogs) OpenSnapshots() tea.Cmd {
	p := &Snapshots{ds: ds, loading: true, seq: ds.next()}
	ds.Push(p)
	ctl, ctx, seq := ds.Ctl, ds.Ctx(), p.seq
	return func() tea.Msg {
		ss, err := ctl.Snapshots(ctx)
		return SnapshotsMsg{Seq: seq, Snapshots: ss, Err: err}
	}
}

// ID implements component.Dialog.
func (p *Snapshots) ID() string { return SnapshotsID }

// Loaded fills the list with Snapshots' answer; an answer to another
// request is dropped.
func (p *Snapshots) Loaded(r SnapshotsMsg) {
	if p.seq != r.Seq {
		return
	}
	p.loading, p.snaps = false, r.Snapshots
	if r.Err != nil {
		p.err = style.ErrText(r.Err)
	}
}

// snapLine is a snapshot's row: "20261129-215807-3f9a  2h  checkout
// 3207427  HEAD bba2fc4 main  4 files".
func (ds *Dialogs) snapLine(s rgit.Snapshot) string {
	head := "HEAD " + rgit.ShortID(sanitize.String(s.Head))
	if s.Branch != "" {
		head += " " + sanitize.String(s.Branch)
	}
	return sanitize.String(s.ID) + "  " + style.PadRight(ds.age(s.Time), 4) + "  " + sanitize.String(s.Reason) + "  " + head + "  " + style.Plural(s.Files, "file")
}

// Key implements component.Dialog: esc (or q) cancels, up/down (k/j),
// home and end move, enter asks to restore the chosen snapshot.
func (p *Snapshots) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch msg.String() {
	case "esc", "ctrl+c", "q":
		p.ds.Flash("restore cancelled", style.Dim)
		return nil, true
	case "up", "k":
		p.cursor = style.Clamp(p.cursor-1, 0, len(p.snaps)-1)
	case "down", "j":
		p.cursor = style.Clamp(p.cursor+1, 0, len(p.snaps)-1)
	case "home":
		p.cursor = 0
	case "end":
		p.cursor = max(len(p.snaps)-1, 0)
	case "enter":
		if p.cursor < len(p.snaps) {
			p.ds.askRestore(p.snaps[p.cursor])
		}
	}
	return nil, false
}

// View implements component.Dialog.
func (p *Snapshots) View(st *style.Styles, w, h int) component.Box {
	if component.TooSmall(w, h) {
		return component.Box{}
	}
	iw := min(w-4, 88)
	return component.Box{Title: "snapshots (restore one)", Frame: style.Accent, Body: p.body(st, iw, component.BodyRows(h)), Width: iw}
}

// body is the list's lines at iw cells: a window of at most maxH rows
// around the cursor.
func (p *Snapshots) body(st *style.Styles, iw, maxH int) []string {
	switch {
	case p.loading:
		return []string{st.Dim.Render("loading snapshots ...")}
	case p.err != "":
		return []string{st.Crit.Render(style.Truncate("snapshots failed: "+p.err, iw))}
	case len(p.snaps) == 0:
		return []string{st.Dim.Render("no snapshots yet: every action made here takes one")}
	}
	n := max(min(maxH, len(p.snaps)), 1)
	top := style.Clamp(p.cursor-n/2, 0, len(p.snaps)-n)
	var out []string
	for i := top; i < top+n && i < len(p.snaps); i++ {
		if i == p.cursor {
			out = append(out, st.Accent.Render(style.Truncate("> "+p.ds.snapLine(p.snaps[i]), iw)))
		} else {
			out = append(out, style.Truncate("  "+p.ds.snapLine(p.snaps[i]), iw))
		}
	}
	return out
}

// Help implements component.Dialog.
func (p *Snapshots) Help() []component.Hint {
	return []component.Hint{{Key: "enter", Desc: "restore"}, {Key: "up/down", Desc: "move"}, {Key: "esc", Desc: "cancel"}}
}
