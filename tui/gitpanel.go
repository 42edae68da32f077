package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	gitdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/git"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The git panel (g) takes the place of the log tail: the checkout's path,
// branch and HEAD in its title, then the dirty files, the stashes and
// HEAD's reflog, with a cursor over those rows. The log keeps ingesting
// underneath; g or esc returns to it.
//
// The latest event.GitStatus is kept as received: its paths and ids go back to
// GitControl exactly (a sanitised path would name another file), and every
// text is sanitised where it is drawn.

// gitState is the git panel's side of the model.
type gitState struct {
	ctl GitControl // Options.Git; nil: a read-only panel (journal replay) or none

	st      event.GitStatus // the latest status, raw
	hasSt   bool
	readErr string // why the last Refresh failed, sanitised; "" when it did not

	open    bool
	cursor  int             // index of the selected row: files, then stashes, then reflog entries
	touched bool            // the user has moved the cursor: until then it stays on the first row
	top     int             // first body line shown
	height  int             // body lines at the last render (the page size)
	marked  map[string]bool // raw paths marked with space for a revert

	doing    string // the action in flight, "checking out 3207427"; "" when none
	brief    string // doing for a narrow terminal
	quitWhen bool   // q was pressed while doing: quit when its GitActionMsg arrives

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

	dialogs *gitdialog.Host // opens the panel's dialogs on the overlay stack
}

// gitRowKind is what a selectable row of the panel shows.
type gitRowKind uint8

const (
	rowFile gitRowKind = iota
	rowStash
	rowReflog
)

// rows is the number of selectable rows.
func (g *gitState) rows() int {
	return len(g.st.Files) + len(g.st.Stashes) + len(g.st.Reflog)
}

// rowAt maps a row index to its kind and the index in its list.
func (g *gitState) rowAt(r int) (gitRowKind, int, bool) {
	nf, ns := len(g.st.Files), len(g.st.Stashes)
	switch {
	case r < 0 || r >= g.rows():
		return 0, 0, false
	case r < nf:
		return rowFile, r, true
	case r < nf+ns:
		return rowStash, r - nf, true
	}
	return rowReflog, r - nf - ns, true
}

// cursorFile is the dirty file under the cursor.
func (g *gitState) cursorFile() (event.GitFile, bool) {
	if k, i, ok := g.rowAt(g.cursor); ok && k == rowFile {
		return g.st.Files[i], true
	}
	return event.GitFile{}, false
}

// targetStash is the stash under the cursor, else stash@{0}.
func (g *gitState) targetStash() (event.Stash, bool) {
	if k, i, ok := g.rowAt(g.cursor); ok && k == rowStash {
		return g.st.Stashes[i], true
	}
	if len(g.st.Stashes) > 0 {
		return g.st.Stashes[0], true
	}
	return event.Stash{}, false
}

// rowKey identifies row r across statuses: a file by path, a stash by
// commit id, a reflog entry by id and message.
func (g *gitState) rowKey(r int) string {
	k, i, ok := g.rowAt(r)
	switch {
	case !ok:
		return ""
	case k == rowFile:
		return "f" + g.st.Files[i].Path
	case k == rowStash:
		return "s" + g.st.Stashes[i].ID
	}
	e := g.st.Reflog[i]
	return "r" + e.ID + "\x00" + e.Message
}

// setStatus stores a fresh status; the cursor stays on the same file,
// stash or reflog entry when it is still listed, and marks of paths that
// are no longer dirty go. Until the user moves it, the cursor stays on
// the first row: the first file, else the first stash, else the first
// reflog entry.
func (g *gitState) setStatus(s event.GitStatus) {
	key := g.rowKey(g.cursor)
	g.st, g.hasSt, g.readErr = s, true, ""
	for p := range g.marked {
		if !g.dirty(p) {
			delete(g.marked, p)
		}
	}
	n := g.rows()
	if !g.touched {
		g.cursor = 0
		return
	}
	for r := range n {
		if key != "" && g.rowKey(r) == key {
			g.cursor = r
			return
		}
	}
	g.cursor = style.Clamp(g.cursor, 0, n-1)
}

// dirty reports whether the raw path p is among the dirty files.
func (g *gitState) dirty(p string) bool {
	for _, f := range g.st.Files {
		if f.Path == p {
			return true
		}
	}
	return false
}

// setAction records the latest event.GitAction event, sanitised: its error
// cut to its first line, the first lines of git's output (else of the
// error) but for that line, and its notes.
func (g *gitState) setAction(a event.GitAction, at time.Time) {
	for _, f := range []*string{&a.Op, &a.Snapshot, &a.From, &a.To, &a.Branch} {
		*f = sanitize.String(*f)
	}
	out := a.Output
	if strings.TrimSpace(out) == "" { // git's words are in the error
		out = a.Err
	}
	a.Err = sanitize.FirstLine(a.Err)
	g.lastOut = nil
	for _, l := range sanitize.Lines(out, 0) {
		if l != a.Err && len(g.lastOut) < maxOutputLines { // the error's line is shown already
			g.lastOut = append(g.lastOut, l)
		}
	}
	a.Output = ""
	a.Args = sanitize.All(a.Args)
	a.Conflict = sanitize.All(a.Conflict)
	g.lastNotes = nil
	for _, n := range a.Notes {
		g.lastNotes = append(g.lastNotes, sanitize.Lines(n, 0)...)
	}
	a.Notes = nil
	g.last, g.lastAt, g.hasAct = a, at, true
}

// maxOutputLines is how many lines of git's output the panel shows under
// a failed action.
const maxOutputLines = 3

// isUndo reports whether the recorded action a (a restore) is the undo
// started from here.
func (g *gitState) isUndo(a *event.GitAction) bool {
	return a.Op == "restore" && g.undoFrom != "" && len(a.Args) > 0 && a.Args[0] == g.undoFrom &&
		(g.undoSnap == "" || a.Snapshot == g.undoSnap)
}

// setMoved records a HEAD move made outside the cockpit, sanitised, for
// the banner; it stays until acknowledged.
func (g *gitState) setMoved(mv event.GitMoved) {
	for _, f := range []*string{&mv.From, &mv.To, &mv.FromShort, &mv.ToShort, &mv.FromBranch, &mv.ToBranch, &mv.Action} {
		*f = sanitize.String(*f)
	}
	mv.Files = sanitize.All(mv.Files)
	mv.DirtyChanged = sanitize.All(mv.DirtyChanged)
	g.moved = mv
	g.movedN++
}

// move moves the cursor by d rows, clamped.
func (g *gitState) move(d int) {
	g.cursor = style.Clamp(g.cursor+d, 0, g.rows()-1)
	g.touched = true
}

// home moves the cursor to the first row.
func (g *gitState) home() {
	g.cursor = 0
	g.touched = true
}

// page is how far pgup/pgdn move the cursor.
func (g *gitState) page() int { return max(g.height-1, 1) }

// gitLine is one line of the panel body: styled text and the selectable
// row it shows (-1 for section headers and notes).
type gitLine struct {
	text string
	row  int
}

// renderGit draws the panel in h lines (its title and h-1 body lines),
// scrolled so that the cursor's row is visible.
func (m *Model) renderGit(lines []string, w, h int) []string {
	if h <= 0 {
		return lines
	}
	lines = append(lines, m.gitTitle(w))
	g := &m.git
	bh := h - 1
	g.height = bh
	body := m.gitBody(w)
	top := g.scrollTop(body, bh)
	for i := top; i < top+bh; i++ {
		if i < len(body) {
			lines = append(lines, body[i].text)
		} else {
			lines = append(lines, "")
		}
	}
	return lines
}

// scrollTop keeps the cursor's line in the bh visible lines, with the
// headers just above it when they fit, the header of the cursor's section
// too whenever it fits, and no blank space below content that is taller
// than the area.
func (g *gitState) scrollTop(body []gitLine, bh int) int {
	ci := -1
	for i, l := range body {
		if l.row == g.cursor {
			ci = i
			break
		}
	}
	top := style.Clamp(g.top, 0, len(body)-bh)
	if ci >= 0 {
		if ci < top {
			top = ci
			for top > 0 && body[top-1].row < 0 && ci-(top-1) < bh {
				top--
			}
		}
		if ci >= top+bh {
			top = ci - bh + 1
		}
		// The section's rows follow its header: the header is the first
		// line above them that is not a row.
		hi := ci
		for hi > 0 && body[hi].row >= 0 {
			hi--
		}
		if body[hi].row < 0 && ci-hi < bh {
			top = min(top, hi)
		}
	}
	g.top = max(top, 0)
	return g.top
}

// gitTitle is "git <path>  <branch>  <op> in progress  <short> <subject>
// (<age>)  <upstream> ahead N behind M ----". When it does not fit, the
// subject gives way first (down to 12 cells), then the path (cut from the
// left, then dropped), then the upstream part (dropped whole).
func (m *Model) gitTitle(w int) string {
	st := &m.styles
	g := &m.git
	type part = component.TitlePart
	s := &g.st
	var tail []part
	subject, subjAt := "", -1
	if !g.hasSt {
		tail = append(tail, part{Text: "  reading status ...", Tone: st.Dim})
	} else {
		if s.Branch != "" {
			tail = append(tail, part{Text: "  " + sanitize.String(s.Branch), Tone: st.Accent})
		} else {
			tail = append(tail, part{Text: "  detached", Tone: st.Warn})
		}
		if s.Operation != "" {
			tail = append(tail, part{Text: "  " + strings.ToUpper(sanitize.String(s.Operation)) + " in progress", Tone: st.Crit})
		}
		tail = append(tail, part{Text: "  " + sanitize.String(s.Head.Short), Tone: st.Text})
		subject = style.Truncate(sanitize.String(s.Head.Subject), 50)
		subjAt = len(tail)
		tail = append(tail, part{Text: "", Tone: st.Text})
		if a := style.Age(m.now, s.Head.Time); a != "" {
			tail = append(tail, part{Text: " (" + a + ")", Tone: st.Dim})
		}
		if s.Upstream != "" {
			up := append([]part{{Text: "  " + sanitize.String(s.Upstream), Tone: st.Dim}}, m.aheadBehind(s.Ahead, s.Behind)...)
			upW := 0
			for _, p := range up {
				upW += style.Width(p.Text)
			}
			if partsWidth(tail)+upW+len("git")+2+min(style.Width(subject)+1, 13) <= w {
				tail = append(tail, up...)
			}
		}
	}
	fixed := len("git") + 2 + partsWidth(tail) // keep a little rule
	// The subject gives way first, down to 12 cells, then the path goes
	// (a path cut short names nothing), and the subject has its room.
	room := w - fixed
	p := ""
	if sp := sanitize.String(s.Path); sp != "" && style.Width(sp)+1+min(style.Width(subject)+1, 13) <= room {
		p = " " + sp
		room -= style.Width(p)
	}
	if subjAt >= 0 && subject != "" {
		subject = strings.TrimRight(style.Truncate(subject, max(room-1, 0)), " ")
		tail[subjAt].Text = " " + subject
	}
	return component.TitleRule(st, w, "git", p, tail)
}

// partsWidth is the width of the parts' text in cells.
func partsWidth(ps []component.TitlePart) int {
	n := 0
	for _, p := range ps {
		n += style.Width(p.Text)
	}
	return n
}

// aheadBehind is " ahead N behind M" ("up to date" when both are 0), the
// behind count in warning tone.
func (m *Model) aheadBehind(ahead, behind int) []component.TitlePart {
	st := &m.styles
	type part = component.TitlePart
	if ahead == 0 && behind == 0 {
		return []part{{Text: " up to date", Tone: st.Dim}}
	}
	var out []part
	if ahead > 0 {
		out = append(out, part{Text: " ahead " + strconv.Itoa(ahead), Tone: st.Text})
	}
	if behind > 0 {
		out = append(out, part{Text: " behind " + strconv.Itoa(behind), Tone: st.Warn})
	}
	return out
}

// gitBody is the panel's lines: the last action, the changes, the stashes
// and the reflog.
func (m *Model) gitBody(w int) []gitLine {
	st := &m.styles
	g := &m.git
	if !g.hasSt {
		switch {
		case g.readErr != "":
			return []gitLine{{st.Crit.Render(style.Truncate("git status failed: "+g.readErr, w)), -1}}
		case g.ctl == nil:
			return []gitLine{{st.Dim.Render(style.Truncate("no git status recorded", w)), -1}}
		}
		return []gitLine{{st.Dim.Render(style.Truncate("reading git status ...", w)), -1}}
	}
	var out []gitLine
	if g.readErr != "" {
		out = append(out, gitLine{st.Crit.Render(style.Truncate("refresh failed: "+g.readErr+" (showing the last status)", w)), -1})
	}
	if g.hasAct {
		out = m.gitLastAction(out, w)
	}
	out = m.gitChanges(out, w)
	out = append(out, gitLine{"", -1})
	out = m.gitStashes(out, w)
	out = append(out, gitLine{"", -1})
	return m.gitReflog(out, w)
}

// gitLastAction is the "last action" line, then its notes (after a
// success) or the first lines of git's output (after a failure).
func (m *Model) gitLastAction(out []gitLine, w int) []gitLine {
	st := &m.styles
	g := &m.git
	a := &g.last
	tn := st.Dim
	switch {
	case len(a.Conflict) > 0:
		tn = st.Warn
	case a.Err != "":
		tn = st.Crit
	}
	out = append(out, gitLine{tn.Render(style.Truncate(m.lastActionText(), w)), -1})
	if a.Err == "" && len(a.Conflict) == 0 {
		for _, n := range g.lastNotes {
			out = append(out, gitLine{style.TruncateStyled("  "+st.Warn.Render(style.Truncate("note: "+n, w-2)), w), -1})
		}
		return out
	}
	for _, l := range g.lastOut {
		out = append(out, gitLine{style.TruncateStyled("  "+st.Dim.Render(style.Truncate(l, w-2)), w), -1})
	}
	return out
}

// lastActionText is "last action 5m ago: checkout 3207427 ok (snapshot
// ...)"; a stash apply, pop or drop names the stash by its message, and
// the undo started from here says so.
func (m *Model) lastActionText() string {
	g := &m.git
	a := &g.last
	s := "last action"
	if age := style.Age(m.now, g.lastAt); age != "" {
		s += " " + age + " ago"
	}
	args := make([]string, len(a.Args))
	for i, x := range a.Args {
		args[i] = x
		if git.IsCommitID(x) {
			args[i] = git.ShortID(x)
		}
	}
	what := strings.Join(args, " ")
	if len(args) > 2 { // a revert's paths
		what = style.BaseNames(args, 0, 2)
	}
	op := a.Op
	if name, ok := gitOpNames[op]; ok {
		op = name
	}
	restored := ""
	switch {
	case g.isUndo(a):
		op, what, restored = "undo", g.undoWhy, strings.Join(args, " ")
	case isStashOp(a.Op):
		what = strings.TrimPrefix(stashName(a.Args), "stash ") // the op says "stash pop" already
	}
	s += ": " + join(op, what)
	snap := ""
	if restored != "" {
		verb := "restored"
		if a.Err != "" || len(a.Conflict) > 0 {
			verb = "restoring"
		}
		restored = verb + " snapshot " + restored
	}
	switch {
	case restored != "" && a.Snapshot != "":
		snap = " (" + restored + "; snapshot " + a.Snapshot + " before it)"
	case restored != "":
		snap = " (" + restored + ")"
	case a.Snapshot != "":
		snap = " (snapshot " + a.Snapshot + ")"
	}
	// The snapshot before git's words: a long error is cut at the width.
	switch {
	case len(a.Conflict) > 0:
		return s + " conflicted in " + style.BaseNames(a.Conflict, 0, 3) + snap
	case a.Err != "":
		return s + " failed" + snap + ": " + a.Err
	}
	return s + " ok" + snap
}

// isStashOp reports a stash apply, pop or drop.
func isStashOp(op string) bool {
	return op == "stash-apply" || op == "stash-pop" || op == "stash-drop"
}

// stashName names the stash of a stash apply, pop or drop from its
// Action.Args (sanitised): [commit id, message] gives `stash "message"`,
// [commit id] `stash 5555555`.
func stashName(args []string) string {
	switch {
	case len(args) > 1 && args[1] != "":
		return `stash "` + args[1] + `"`
	case len(args) > 0:
		return "stash " + git.ShortID(args[0])
	}
	return "stash"
}

// sectionHead is a section title in accent with dim details.
func (m *Model) sectionHead(title, detail string, w int) string {
	st := &m.styles
	t := style.Truncate(title, w)
	if detail == "" || style.Width(t)+2 >= w {
		return st.Accent.Render(t)
	}
	return st.Accent.Render(t) + st.Dim.Render(style.Truncate("  "+detail, w-style.Width(t)))
}

// cursorMark is the first column of a row: ">" on the cursor's row.
func (m *Model) cursorMark(row int) string {
	if row == m.git.cursor && m.git.open {
		return m.styles.Accent.Render(">")
	}
	return " "
}

// gitChanges is the "changes" section: counts, then one row per file.
func (m *Model) gitChanges(out []gitLine, w int) []gitLine {
	st := &m.styles
	g := &m.git
	d := g.st.CountWords()
	if n := len(g.marked); n > 0 {
		d = append(d, strconv.Itoa(n)+" marked")
	}
	out = append(out, gitLine{m.sectionHead("changes", strings.Join(d, "  "), w), -1})
	if len(g.st.Files) == 0 {
		return append(out, gitLine{"  " + st.Dim.Render(style.Truncate("clean: nothing to stash or revert", w-2)), -1})
	}
	// The path column is as wide as the longest path, within the width.
	pw := 0
	names := make([]string, len(g.st.Files))
	for i, f := range g.st.Files {
		names[i] = fileName(f)
		pw = max(pw, style.Width(names[i]))
	}
	pw = min(pw, max(w-len(">* XY  ")-len("  +9999 -9999"), 8))
	for i, f := range g.st.Files {
		out = append(out, gitLine{m.fileRow(f, names[i], i, pw, w), i})
	}
	return out
}

// fileName is a file's sanitised path, "orig -> path" for a rename.
func fileName(f event.GitFile) string {
	if f.Orig != "" {
		return sanitize.String(f.Orig) + " -> " + sanitize.String(f.Path)
	}
	return sanitize.String(f.Path)
}

// porcelain is a file's XY status letters, printable.
func porcelain(f event.GitFile) (x, y string) {
	show := func(c byte) string {
		if c < 0x20 || c > 0x7e {
			return "?"
		}
		return string(c)
	}
	return show(f.X), show(f.Y)
}

// fileRow is "> * XY  path  +12 -3": the cursor, the mark, the porcelain
// status, the path (cut from the left) and the diffstat ("bin" for a binary
// file, "new" for an untracked one). A conflicted file is all critical.
func (m *Model) fileRow(f event.GitFile, name string, row, pw, w int) string {
	st := &m.styles
	mark := " "
	if m.git.marked[f.Path] {
		mark = st.Warn.Render("*")
	}
	x, y := porcelain(f)
	if style.Width(name) > pw {
		name = "..." + style.TruncateLeft(name, max(pw-3, 1))
	}
	name = style.PadRight(name, pw)
	var stat string
	switch {
	case f.Untracked():
		stat = st.Dim.Render("new")
	case f.Binary || f.Added < 0 || f.Deleted < 0:
		stat = st.Dim.Render("bin")
	default:
		stat = st.OK.Render("+"+strconv.Itoa(f.Added)) + " " + st.Crit.Render("-"+strconv.Itoa(f.Deleted))
	}
	var s string
	switch {
	case f.Conflicted():
		s = st.Crit.Render(x+y+"  "+name) + "  " + st.Crit.Render("conflict")
	case f.Untracked():
		s = st.Dim.Render(x+y) + "  " + m.rowText(row, name) + "  " + stat
	default:
		s = st.OK.Render(x) + st.Warn.Render(y) + "  " + m.rowText(row, name) + "  " + stat
	}
	return style.TruncateStyled(m.cursorMark(row)+mark+" "+s, w)
}

// rowText paints a row's main text: accent on the cursor's row.
func (m *Model) rowText(row int, s string) string {
	if row == m.git.cursor && m.git.open {
		return m.styles.Accent.Render(s)
	}
	return s
}

// gitStashes is the "stashes" section: "stash@{0}  2h  On main: ...".
func (m *Model) gitStashes(out []gitLine, w int) []gitLine {
	st := &m.styles
	g := &m.git
	detail := ""
	if n := len(g.st.Stashes); n > 0 {
		detail = strconv.Itoa(n)
	}
	out = append(out, gitLine{m.sectionHead("stashes", detail, w), -1})
	if len(g.st.Stashes) == 0 {
		return append(out, gitLine{"  " + st.Dim.Render(style.Truncate("no stashes", w-2)), -1})
	}
	base := len(g.st.Files)
	for i, s := range g.st.Stashes {
		row := base + i
		ref := style.PadRight(s.Ref(), len("stash@{10}"))
		line := m.cursorMark(row) + "  " + m.rowText(row, ref) + "  " + st.Dim.Render(style.PadRight(style.Age(m.now, s.Time), 4)) +
			"  " + m.rowText(row, sanitize.String(s.Message))
		out = append(out, gitLine{style.TruncateStyled(line, w), row})
	}
	return out
}

// gitReflog is the "reflog" section: "3207427  5m  pull: Fast-forward".
func (m *Model) gitReflog(out []gitLine, w int) []gitLine {
	st := &m.styles
	g := &m.git
	out = append(out, gitLine{m.sectionHead("reflog", "", w), -1})
	if len(g.st.Reflog) == 0 {
		return append(out, gitLine{"  " + st.Dim.Render(style.Truncate("no reflog entries", w-2)), -1})
	}
	base := len(g.st.Files) + len(g.st.Stashes)
	for i, e := range g.st.Reflog {
		row := base + i
		short := sanitize.String(e.Short)
		if short == "" {
			short = git.ShortID(sanitize.String(e.ID))
		}
		line := m.cursorMark(row) + "  " + m.rowText(row, short) + "  " + st.Dim.Render(style.PadRight(style.Age(m.now, e.Time), 4)) +
			"  " + m.rowText(row, sanitize.String(e.Message))
		out = append(out, gitLine{style.TruncateStyled(line, w), row})
	}
	return out
}
