package git

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	rgit "github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	gitpanel "github.com/flightdeck-dev/flightdeck/tui/panels/git"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Question is a git action's confirmation: what the action does, in
// paragraphs, then its keys. y or enter starts it; n cancels; esc goes back
// to the dialog it was asked over (the checkout picker, the snapshots
// list), else cancels; other keys do nothing. A cancel, or the start,
// closes the dialog under it too.
type Question struct {
	ds     *Dialogs
	name   string // ConfirmID or PreviewID
	title  string
	frame  style.Token
	paras  []component.Para
	verb   string         // "y/enter <verb>"
	over   string         // the ID of the dialog it was asked over; "" when none
	yes    func() tea.Cmd // starts the action (its arguments bound, raw)
	cancel string         // the flash when cancelled
}

// ask opens q.
func (ds *Dialogs) ask(q *Question) {
	q.ds = ds
	ds.Push(q)
}

// ID implements component.Dialog.
func (q *Question) ID() string { return q.name }

// Key implements component.Dialog.
func (q *Question) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch msg.String() {
	case "y", "enter":
		q.closeUnder()
		return q.yes(), true
	case "esc":
		if q.over != "" {
			return nil, true // back to the dialog under it
		}
		fallthrough
	case "n", "ctrl+c":
		q.closeUnder()
		q.ds.Flash(q.cancel, style.Dim)
		return nil, true
	}
	return nil, false
}

// closeUnder closes the dialog q was asked over.
func (q *Question) closeUnder() {
	if q.over != "" {
		q.ds.Remove(q.over)
	}
}

// View implements component.Dialog: the paragraphs, then the keys; a
// question taller than the screen loses its middle lines.
func (q *Question) View(st *style.Styles, w, h int) component.Box {
	if component.TooSmall(w, h) {
		return component.Box{}
	}
	iw := min(w-4, 76)
	kv := []string{"y/enter", q.verb, "n/esc", "cancel"}
	if q.over != "" {
		kv = []string{"y/enter", q.verb, "esc", "back", "n", "cancel"}
	}
	body := append(component.Paras(st, q.paras, iw), "", component.Prompt(st, iw, kv...))
	return component.Box{Title: q.title, Frame: q.frame, Body: component.FitLines(st, body, component.BodyRows(h), 2, iw), Width: iw}
}

// Help implements component.Dialog.
func (q *Question) Help() []component.Hint {
	if q.over != "" {
		return []component.Hint{{Key: "y/enter", Desc: q.verb}, {Key: "esc", Desc: "back"}, {Key: "n", Desc: "cancel"}}
	}
	return []component.Hint{{Key: "y/enter", Desc: q.verb}, {Key: "n/esc", Desc: "cancel"}}
}

// AskRevert asks to revert files (the marked ones, or the cursor's) to
// HEAD, saying which of them leave the disk.
func (ds *Dialogs) AskRevert(files []event.GitFile) {
	var untracked, added []string
	for _, f := range files {
		switch {
		case f.Untracked():
			untracked = append(untracked, sanitize.String(f.Path))
		case stagedNew(f):
			added = append(added, sanitize.String(f.Path))
		}
	}
	ps := []component.Para{{Text: "Revert " + style.Plural(len(files), "file") + " to HEAD (staged and unstaged changes):"}}
	for i, f := range files {
		x, y := gitpanel.Porcelain(f)
		tn := style.Text
		switch {
		case f.Conflicted():
			tn = style.Crit
		case f.Untracked(), stagedNew(f):
			tn = style.Warn
		}
		if i == maxListed && len(files) > maxListed+1 {
			ps = append(ps, component.Para{Text: "... and " + strconv.Itoa(len(files)-i) + " more", Tone: style.Dim, Indent: 2})
			break
		}
		ps = append(ps, component.Para{Text: x + y + "  " + gitpanel.FileName(f), Tone: tn, Indent: 2, Cut: true})
	}
	if len(untracked) > 0 {
		ps = append(ps, component.Para{Text: "Untracked files will be deleted: " + style.BaseNames(untracked, 0, 5) + ".", Tone: style.Warn})
	}
	if len(added) > 0 {
		ps = append(ps, component.Para{Text: "New in the index (staged, not in HEAD): deleted from disk too, like untracked files: " +
			style.BaseNames(added, 0, 5) + ".", Tone: style.Warn})
	}
	ps = append(ps, component.Para{Text: snapshotNote, Tone: style.Dim})
	ds.ask(&Question{
		name: ConfirmID, title: "revert to HEAD", frame: style.Warn, paras: ps, verb: "revert", cancel: "revert cancelled",
		yes: func() tea.Cmd { return ds.Panel.Revert(files) },
	})
}

// AskStashOp asks to apply ("stash-apply"), pop ("stash-pop") or drop
// ("stash-drop") the stash s.
func (ds *Dialogs) AskStashOp(op string, s event.Stash) {
	desc := s.Ref() + " (" + sanitize.String(s.Message) + ")"
	q := &Question{name: ConfirmID, frame: style.Warn, cancel: strings.ReplaceAll(op, "-", " ") + " cancelled",
		yes: func() tea.Cmd { return ds.Panel.StashOp(op, s) }}
	switch op {
	case "stash-apply":
		q.title, q.verb = "apply stash", "apply"
		q.paras = []component.Para{{Text: "Apply " + desc + " to the worktree? The stash is kept."}}
	case "stash-pop":
		q.title, q.verb = "pop stash", "pop"
		q.paras = []component.Para{{Text: "Pop " + desc + ": apply it to the worktree, then drop it (kept if it conflicts)."}}
	default:
		q.title, q.verb, q.frame = "drop stash", "drop", style.Crit
		q.paras = []component.Para{{Text: "Drop " + desc + "?"},
			{Text: "Its commit " + sanitize.String(s.ID) + " stays recoverable from the snapshot.", Tone: style.Warn}}
	}
	q.paras = append(q.paras, component.Para{Text: snapshotNote, Tone: style.Dim})
	ds.ask(q)
}

// AskUndo asks to restore snapshot id, taken before reason (both
// sanitised): the one taken before the last action made here.
func (ds *Dialogs) AskUndo(id, reason string) {
	q := "Restore snapshot " + id
	if reason != "" {
		q += " taken before " + reason
	}
	ds.ask(&Question{
		name: ConfirmID, title: "undo", frame: style.Warn, verb: "restore", cancel: "undo cancelled",
		paras: []component.Para{{Text: q + "?"}, {Text: restoreNote, Tone: style.Dim}},
		yes:   func() tea.Cmd { return ds.Panel.Undo(id, reason) },
	})
}

// askRestore asks, over the snapshots list, to restore snapshot s.
func (ds *Dialogs) askRestore(s rgit.Snapshot) {
	id := s.ID
	q := "Restore snapshot " + sanitize.String(id)
	if r := sanitize.String(s.Reason); r != "" {
		q += " taken before " + r
	}
	if a := ds.age(s.Time); a != "" {
		q += " (" + a + " ago)"
	}
	ds.ask(&Question{
		name: ConfirmID, title: "restore snapshot", frame: style.Warn, verb: "restore", over: SnapshotsID, cancel: "restore cancelled",
		paras: []component.Para{{Text: q + "?"}, {Text: ds.snapLine(s), Tone: style.Dim, Indent: 2, Cut: true}, {Text: restoreNote, Tone: style.Dim}},
		yes:   func() tea.Cmd { return ds.Panel.Restore(id) },
	})
}
