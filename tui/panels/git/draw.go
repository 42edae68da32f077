package git

import (
	"strconv"
	"strings"
	"time"

	rgit "github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// line is one line of the panel body: styled text and the selectable row
// it shows (-1 for section headers and notes).
type line struct {
	text string
	row  int
}

// drawing is one render of the panel: its styles and the cockpit's clock
// (ages).
type drawing struct {
	*Panel
	st  *style.Styles
	now time.Time
}

// SetSize gives the panel w cells by h lines: its title and h-1 body
// lines.
func (p *Panel) SetSize(w, h int) { p.w, p.h = w, h }

// View draws the panel after lines at SetSize's size, scrolled so that the
// cursor's row is visible; ages are from Now.
func (p *Panel) View(lines []string, st *style.Styles) []string {
	w, h := p.w, p.h
	if h <= 0 {
		return lines
	}
	var now time.Time
	if p.Now != nil {
		now = p.Now()
	}
	d := drawing{Panel: p, st: st, now: now}
	lines = append(lines, d.title(w))
	bh := h - 1
	p.height = bh
	body := d.body(w)
	top := p.scrollTop(body, bh)
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
func (p *Panel) scrollTop(body []line, bh int) int {
	ci := -1
	for i, l := range body {
		if l.row == p.cursor {
			ci = i
			break
		}
	}
	top := style.Clamp(p.top, 0, len(body)-bh)
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
	p.top = max(top, 0)
	return p.top
}

// title is "git <path>  <branch>  <op> in progress  <short> <subject>
// (<age>)  <upstream> ahead N behind M ----". When it does not fit, the
// subject gives way first (down to 12 cells), then the path (cut from the
// left, then dropped), then the upstream part (dropped whole).
func (d drawing) title(w int) string {
	st := d.st
	type part = component.TitlePart
	s := &d.status
	var tail []part
	subject, subjAt := "", -1
	if !d.hasSt {
		tail = append(tail, part{Text: "  reading status ...", Tone: st.Dim})
	} else {
		if s.Branch != "" {
			tail = append(tail, part{Text: "  " + sanitize.Name(s.Branch), Tone: st.Accent})
		} else {
			tail = append(tail, part{Text: "  detached", Tone: st.Warn})
		}
		if s.Operation != "" {
			tail = append(tail, part{Text: "  " + strings.ToUpper(sanitize.Name(s.Operation)) + " in progress", Tone: st.Crit})
		}
		tail = append(tail, part{Text: "  " + sanitize.Name(s.Head.Short), Tone: st.Text})
		subject = style.Truncate(sanitize.Name(s.Head.Subject), 50)
		subjAt = len(tail)
		tail = append(tail, part{Text: "", Tone: st.Text})
		if a := style.Age(d.now, s.Head.Time); a != "" {
			tail = append(tail, part{Text: " (" + a + ")", Tone: st.Dim})
		}
		if s.Upstream != "" {
			up := append([]part{{Text: "  " + sanitize.Name(s.Upstream), Tone: st.Dim}}, d.aheadBehind(s.Ahead, s.Behind)...)
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
	if sp := sanitize.Name(s.Path); sp != "" && style.Width(sp)+1+min(style.Width(subject)+1, 13) <= room {
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
func (d drawing) aheadBehind(ahead, behind int) []component.TitlePart {
	st := d.st
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

// body is the panel's lines: the last action, the changes, the stashes
// and the reflog.
func (d drawing) body(w int) []line {
	st := d.st
	if !d.hasSt {
		switch {
		case d.readErr != "":
			return []line{{st.Crit.Render(style.Truncate("git status failed: "+d.readErr, w)), -1}}
		case d.Ctl == nil:
			return []line{{st.Dim.Render(style.Truncate("no git status recorded", w)), -1}}
		}
		return []line{{st.Dim.Render(style.Truncate("reading git status ...", w)), -1}}
	}
	var out []line
	if d.readErr != "" {
		out = append(out, line{st.Crit.Render(style.Truncate("refresh failed: "+d.readErr+" (showing the last status)", w)), -1})
	}
	if d.hasAct {
		out = d.lastAction(out, w)
	}
	out = d.changes(out, w)
	out = append(out, line{"", -1})
	out = d.stashes(out, w)
	out = append(out, line{"", -1})
	return d.reflog(out, w)
}

// lastAction is the "last action" line, then its notes (after a success)
// or the first lines of git's output (after a failure).
func (d drawing) lastAction(out []line, w int) []line {
	st := d.st
	a := &d.last
	tn := st.Dim
	switch {
	case len(a.Conflict) > 0:
		tn = st.Warn
	case a.Err != "":
		tn = st.Crit
	}
	out = append(out, line{tn.Render(style.Truncate(d.lastActionText(), w)), -1})
	if a.Err == "" && len(a.Conflict) == 0 {
		for _, n := range d.lastNotes {
			out = append(out, line{style.TruncateStyled("  "+st.Warn.Render(style.Truncate("note: "+n, w-2)), w), -1})
		}
		return out
	}
	for _, l := range d.lastOut {
		out = append(out, line{style.TruncateStyled("  "+st.Dim.Render(style.Truncate(l, w-2)), w), -1})
	}
	return out
}

// lastActionText is "last action 5m ago: checkout 3207427 ok (snapshot
// ...)"; a stash apply, pop or drop names the stash by its message, and
// the undo started from here says so.
func (d drawing) lastActionText() string {
	a := &d.last
	s := "last action"
	if age := style.Age(d.now, d.lastAt); age != "" {
		s += " " + age + " ago"
	}
	args := make([]string, len(a.Args))
	for i, x := range a.Args {
		args[i] = x
		if rgit.IsCommitID(x) {
			args[i] = rgit.ShortID(x)
		}
	}
	what := strings.Join(args, " ")
	if len(args) > 2 { // a revert's paths
		what = style.BaseNames(args, 0, 2)
	}
	op := a.Op
	if name, ok := opNames[op]; ok {
		op = name
	}
	restored := ""
	switch {
	case d.isUndo(a):
		op, what, restored = "undo", d.undoWhy, strings.Join(args, " ")
	case isStashOp(a.Op):
		what = strings.TrimPrefix(stashName(a.Args), "stash ") // the op says "stash pop" already
	}
	s += ": " + component.JoinWords(op, what)
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

// sectionHead is a section title in accent with dim details.
func (d drawing) sectionHead(title, detail string, w int) string {
	st := d.st
	t := style.Truncate(title, w)
	if detail == "" || style.Width(t)+2 >= w {
		return st.Accent.Render(t)
	}
	return st.Accent.Render(t) + st.Dim.Render(style.Truncate("  "+detail, w-style.Width(t)))
}

// cursorMark is the first column of a row: ">" on the cursor's row.
func (d drawing) cursorMark(row int) string {
	if row == d.cursor && d.Open {
		return d.st.Accent.Render(">")
	}
	return " "
}

// rowText paints a row's main text: accent on the cursor's row.
func (d drawing) rowText(row int, s string) string {
	if row == d.cursor && d.Open {
		return d.st.Accent.Render(s)
	}
	return s
}

// changes is the "changes" section: counts, then one row per file.
func (d drawing) changes(out []line, w int) []line {
	st := d.st
	c := d.status.CountWords()
	if n := len(d.marked); n > 0 {
		c = append(c, strconv.Itoa(n)+" marked")
	}
	out = append(out, line{d.sectionHead("changes", strings.Join(c, "  "), w), -1})
	if len(d.status.Files) == 0 {
		return append(out, line{"  " + st.Dim.Render(style.Truncate("clean: nothing to stash or revert", w-2)), -1})
	}
	// The path column is as wide as the longest path, within the width.
	pw := 0
	names := make([]string, len(d.status.Files))
	for i, f := range d.status.Files {
		names[i] = FileName(f)
		pw = max(pw, style.Width(names[i]))
	}
	pw = min(pw, max(w-len(">* XY  ")-len("  +9999 -9999"), 8))
	for i, f := range d.status.Files {
		out = append(out, line{d.fileRow(f, names[i], i, pw, w), i})
	}
	return out
}

// FileName is a file's sanitised path, "orig -> path" for a rename (as
// the panel and the git dialogs list it).
func FileName(f event.GitFile) string {
	if f.Orig != "" {
		return sanitize.Name(f.Orig) + arrow + sanitize.Name(f.Path)
	}
	return sanitize.Name(f.Path)
}

// Porcelain is a file's XY status letters (git status --porcelain),
// printable: a byte outside ASCII's printable range is "?".
func Porcelain(f event.GitFile) (x, y string) {
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
func (d drawing) fileRow(f event.GitFile, name string, row, pw, w int) string {
	st := d.st
	mark := " "
	if d.marked[f.Path] {
		mark = st.Warn.Render("*")
	}
	x, y := Porcelain(f)
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
		s = st.Dim.Render(x+y) + "  " + d.rowText(row, name) + "  " + stat
	default:
		s = st.OK.Render(x) + st.Warn.Render(y) + "  " + d.rowText(row, name) + "  " + stat
	}
	return style.TruncateStyled(d.cursorMark(row)+mark+" "+s, w)
}

// stashes is the "stashes" section: "stash@{0}  2h  On main: ...".
func (d drawing) stashes(out []line, w int) []line {
	st := d.st
	detail := ""
	if n := len(d.status.Stashes); n > 0 {
		detail = strconv.Itoa(n)
	}
	out = append(out, line{d.sectionHead("stashes", detail, w), -1})
	if len(d.status.Stashes) == 0 {
		return append(out, line{"  " + st.Dim.Render(style.Truncate("no stashes", w-2)), -1})
	}
	base := len(d.status.Files)
	for i, s := range d.status.Stashes {
		row := base + i
		ref := style.PadRight(s.Ref(), len("stash@{10}"))
		l := d.cursorMark(row) + "  " + d.rowText(row, ref) + "  " + st.Dim.Render(style.PadRight(style.Age(d.now, s.Time), 4)) +
			"  " + d.rowText(row, sanitize.Name(s.Message))
		out = append(out, line{style.TruncateStyled(l, w), row})
	}
	return out
}

// reflog is the "reflog" section: "3207427  5m  pull: Fast-forward".
func (d drawing) reflog(out []line, w int) []line {
	st := d.st
	out = append(out, line{d.sectionHead("reflog", "", w), -1})
	if len(d.status.Reflog) == 0 {
		return append(out, line{"  " + st.Dim.Render(style.Truncate("no reflog entries", w-2)), -1})
	}
	base := len(d.status.Files) + len(d.status.Stashes)
	for i, e := range d.status.Reflog {
		row := base + i
		short := sanitize.Name(e.Short)
		if short == "" {
			short = rgit.ShortID(sanitize.Name(e.ID))
		}
		l := d.cursorMark(row) + "  " + d.rowText(row, short) + "  " + st.Dim.Render(style.PadRight(style.Age(d.now, e.Time), 4)) +
			"  " + d.rowText(row, sanitize.Name(e.Message))
		out = append(out, line{style.TruncateStyled(l, w), row})
	}
	return out
}
