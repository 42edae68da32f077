package git

import (
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// rowKind is what a selectable row of the panel shows.
type rowKind uint8

const (
	rowFile rowKind = iota
	rowStash
	rowReflog
)

// Status is the latest event.GitStatus, raw.
func (p *Panel) Status() event.GitStatus { return p.status }

// rows is the number of selectable rows.
func (p *Panel) rows() int {
	return len(p.status.Files) + len(p.status.Stashes) + len(p.status.Reflog)
}

// rowAt maps a row index to its kind and the index in its list.
func (p *Panel) rowAt(r int) (rowKind, int, bool) {
	nf, ns := len(p.status.Files), len(p.status.Stashes)
	switch {
	case r < 0 || r >= p.rows():
		return 0, 0, false
	case r < nf:
		return rowFile, r, true
	case r < nf+ns:
		return rowStash, r - nf, true
	}
	return rowReflog, r - nf - ns, true
}

// cursorFile is the dirty file under the cursor.
func (p *Panel) cursorFile() (event.GitFile, bool) {
	if k, i, ok := p.rowAt(p.cursor); ok && k == rowFile {
		return p.status.Files[i], true
	}
	return event.GitFile{}, false
}

// cursorReflog is the reflog entry under the cursor, raw.
func (p *Panel) cursorReflog() (event.RefEntry, bool) {
	if k, i, ok := p.rowAt(p.cursor); ok && k == rowReflog {
		return p.status.Reflog[i], true
	}
	return event.RefEntry{}, false
}

// targetStash is the stash under the cursor, else stash@{0}.
func (p *Panel) targetStash() (event.Stash, bool) {
	if k, i, ok := p.rowAt(p.cursor); ok && k == rowStash {
		return p.status.Stashes[i], true
	}
	if len(p.status.Stashes) > 0 {
		return p.status.Stashes[0], true
	}
	return event.Stash{}, false
}

// revertFiles are the marked files, or the cursor's file when none is
// marked.
func (p *Panel) revertFiles() []event.GitFile {
	var files []event.GitFile
	for _, f := range p.status.Files {
		if p.marked[f.Path] {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		f, _ := p.cursorFile()
		files = []event.GitFile{f}
	}
	return files
}

// rowKey identifies row r across statuses: a file by path, a stash by
// commit id, a reflog entry by id and message.
func (p *Panel) rowKey(r int) string {
	k, i, ok := p.rowAt(r)
	switch {
	case !ok:
		return ""
	case k == rowFile:
		return "f" + p.status.Files[i].Path
	case k == rowStash:
		return "s" + p.status.Stashes[i].ID
	}
	e := p.status.Reflog[i]
	return "r" + e.ID + "\x00" + e.Message
}

// SetStatus stores a fresh status (an event.GitStatus); the cursor stays
// on the same file, stash or reflog entry when it is still listed, and
// marks of paths that are no longer dirty go. Until the user moves it,
// the cursor stays on the first row: the first file, else the first
// stash, else the first reflog entry.
func (p *Panel) SetStatus(s event.GitStatus) {
	key := p.rowKey(p.cursor)
	p.status, p.hasSt, p.readErr = s, true, ""
	for path := range p.marked {
		if !p.dirty(path) {
			delete(p.marked, path)
		}
	}
	n := p.rows()
	if !p.touched {
		p.cursor = 0
		return
	}
	for r := range n {
		if key != "" && p.rowKey(r) == key {
			p.cursor = r
			return
		}
	}
	p.cursor = style.Clamp(p.cursor, 0, n-1)
}

// dirty reports whether the raw path is among the dirty files.
func (p *Panel) dirty(path string) bool {
	for _, f := range p.status.Files {
		if f.Path == path {
			return true
		}
	}
	return false
}

// maxOutputLines is how many lines of git's output the panel shows under
// a failed action.
const maxOutputLines = 3

// SetAction records the latest event.GitAction event, sanitised: its
// error cut to its first line, the first lines of git's output (else of
// the error) but for that line, and its notes.
func (p *Panel) SetAction(a event.GitAction, at time.Time) {
	for _, f := range []*string{&a.Op, &a.Snapshot, &a.From, &a.To, &a.Branch} {
		*f = sanitize.Name(*f)
	}
	out := a.Output
	if strings.TrimSpace(out) == "" { // git's words are in the error
		out = a.Err
	}
	a.Err = sanitize.FirstLine(a.Err)
	p.lastOut = nil
	for _, l := range sanitize.Lines(out, 0) {
		if l != a.Err && len(p.lastOut) < maxOutputLines { // the error's line is shown already
			p.lastOut = append(p.lastOut, l)
		}
	}
	a.Output = ""
	a.Args = sanitize.Names(a.Args)
	a.Conflict = sanitize.Names(a.Conflict)
	p.lastNotes = nil
	for _, n := range a.Notes {
		p.lastNotes = append(p.lastNotes, sanitize.Lines(n, 0)...)
	}
	a.Notes = nil
	p.last, p.lastAt, p.hasAct = a, at, true
}

// isUndo reports whether the recorded action a (a restore) is the undo
// started from here.
func (p *Panel) isUndo(a *event.GitAction) bool {
	return a.Op == "restore" && p.undoFrom != "" && len(a.Args) > 0 && a.Args[0] == p.undoFrom &&
		(p.undoSnap == "" || a.Snapshot == p.undoSnap)
}

// SetMoved records a HEAD move made outside the cockpit (an
// event.GitMoved), sanitised, for the banner; it stays until
// acknowledged.
func (p *Panel) SetMoved(mv event.GitMoved) {
	for _, f := range []*string{&mv.From, &mv.To, &mv.FromShort, &mv.ToShort, &mv.FromBranch, &mv.ToBranch, &mv.Action} {
		*f = sanitize.Name(*f)
	}
	mv.Files = sanitize.Names(mv.Files)
	mv.DirtyChanged = sanitize.Names(mv.DirtyChanged)
	p.moved = mv
	p.movedN++
}
