package tui

import (
	"context"
	"path"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The git panel's overlays: a confirmation (revert, stash apply/pop/drop,
// undo, restore, and the checkout preview), the stash form, the checkout
// picker and the snapshot picker. Each action is confirmed, runs in a
// tea.Cmd, and names the snapshot taken before it.

// Git overlays, after the server's (control.go).
const (
	modalGitConfirm   modal = 100 + iota // a y/N question; the checkout preview too
	modalGitStash                        // the stash form: name, include untracked
	modalGitCheckout                     // the checkout picker: a typed ref, the log or the reflog
	modalGitSnapshots                    // the snapshot picker
)

// isGitModal reports whether md is one of the git overlays.
func isGitModal(md modal) bool { return md >= modalGitConfirm && md <= modalGitSnapshots }

// gitConfirm is a confirmation: its question, what y starts, where esc
// goes.
type gitConfirm struct {
	title  string
	frame  style.Token
	paras  []component.Para
	verb   string         // "y/enter <verb>"
	start  func() tea.Cmd // starts the action (its arguments bound, raw)
	back   modal          // esc returns to this overlay; modalNone closes
	cancel string         // the flash when cancelled
}

// gitStashForm is the s overlay.
type gitStashForm struct {
	input     textinput.Model
	untracked bool // include untracked files (git stash -u)
}

// gitCheckout is the c overlay: a typed ref on top, below it the log (or,
// after tab, the status's reflog) filtered by the typed text.
type gitCheckout struct {
	input   textinput.Model
	reflog  bool // the list shows the reflog
	commits []event.Commit
	loading bool
	err     string // why Log failed, sanitised
	seq     int    // the Log request
	cursor  int    // -1: the typed text; else an index into items()
	waiting string // the ref being previewed, sanitised; "" when none
	wseq    int    // the Preview request
}

// gitSnapPicker is the S overlay.
type gitSnapPicker struct {
	snaps   []git.Snapshot
	loading bool
	err     string
	seq     int
	cursor  int
}

// coItem is a row of the checkout picker: the ref a checkout of it gets
// (raw) and the row (sanitised).
type coItem struct {
	ref  string
	line string
}

// closeGitModal closes every git overlay.
func (m *Model) closeGitModal() {
	g := &m.git
	m.modal = modalNone
	g.confirm, g.stash, g.co, g.snaps = nil, nil, nil, nil
}

// ask opens a confirmation.
func (m *Model) ask(c *gitConfirm) {
	m.git.confirm, m.modal = c, modalGitConfirm
}

const snapshotNote = "A snapshot of the tree is taken first (u undoes)."

// confirmRevert asks to revert the marked files, or the cursor's file when
// none is marked.
func (m *Model) confirmRevert() {
	g := &m.git
	var files []event.GitFile
	for _, f := range g.st.Files {
		if g.marked[f.Path] {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		f, _ := g.cursorFile()
		files = []event.GitFile{f}
	}
	paths := make([]string, len(files))
	var untracked, added []string
	for i, f := range files {
		paths[i] = f.Path
		switch {
		case f.Untracked():
			untracked = append(untracked, sanitize.String(f.Path))
		case stagedNew(f):
			added = append(added, sanitize.String(f.Path))
		}
	}
	ps := []component.Para{{Text: "Revert " + style.Plural(len(files), "file") + " to HEAD (staged and unstaged changes):"}}
	for i, f := range files {
		x, y := porcelain(f)
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
		ps = append(ps, component.Para{Text: x + y + "  " + fileName(f), Tone: tn, Indent: 2, Cut: true})
	}
	if len(untracked) > 0 {
		ps = append(ps, component.Para{Text: "Untracked files will be deleted: " + style.BaseNames(untracked, 0, 5) + ".", Tone: style.Warn})
	}
	if len(added) > 0 {
		ps = append(ps, component.Para{Text: "New in the index (staged, not in HEAD): deleted from disk too, like untracked files: " +
			style.BaseNames(added, 0, 5) + ".", Tone: style.Warn})
	}
	ps = append(ps, component.Para{Text: snapshotNote, Tone: style.Dim})
	target := fileName(files[0])
	if len(files) > 1 {
		target = style.Plural(len(files), "file")
	}
	m.ask(&gitConfirm{
		title: "revert to HEAD", frame: style.Warn, paras: ps, verb: "revert", cancel: "revert cancelled",
		start: func() tea.Cmd {
			return m.startGit("revert", "revert "+target, "reverted "+target, "reverting "+target, "reverting "+style.Plural(len(files), "file"),
				func(ctx context.Context, c GitControl) (event.GitAction, error) { return c.Revert(ctx, paths) })
		},
	})
}

// stagedNew reports a file added in the index that HEAD does not have
// ("A " or "AM"): a revert deletes it from disk.
func stagedNew(f event.GitFile) bool { return f.X == 'A' && !f.Conflicted() }

// maxListed is how many items an overlay's list shows before "... and K
// more".
const maxListed = 8

// confirmStashOp asks to apply, pop or drop the stash under the cursor
// (stash@{0} when the cursor is not on one). The call names the stash by
// its commit id: indexes shift when stashes are added or dropped.
func (m *Model) confirmStashOp(op string) {
	s, _ := m.git.targetStash()
	id, ref := s.ID, s.Ref()
	desc := ref + " (" + sanitize.String(s.Message) + ")"
	c := &gitConfirm{frame: style.Warn, cancel: gitOpNames[op] + " cancelled"}
	var done, doing string
	var call func(context.Context, GitControl) (event.GitAction, error)
	switch op {
	case "stash-apply":
		c.title, c.verb = "apply stash", "apply"
		c.paras = []component.Para{{Text: "Apply " + desc + " to the worktree? The stash is kept."}}
		done, doing = "applied "+ref, "applying "+ref
		call = func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.StashApply(ctx, id, false) }
	case "stash-pop":
		c.title, c.verb = "pop stash", "pop"
		c.paras = []component.Para{{Text: "Pop " + desc + ": apply it to the worktree, then drop it (kept if it conflicts)."}}
		done, doing = "popped "+ref, "popping "+ref
		call = func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.StashApply(ctx, id, true) }
	default:
		c.title, c.verb, c.frame = "drop stash", "drop", style.Crit
		c.paras = []component.Para{{Text: "Drop " + desc + "?"},
			{Text: "Its commit " + sanitize.String(id) + " stays recoverable from the snapshot.", Tone: style.Warn}}
		done, doing = "dropped "+ref+" (commit "+git.ShortID(sanitize.String(id))+")", "dropping "+ref
	}
	if call == nil {
		call = func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.StashDrop(ctx, id) }
	}
	c.paras = append(c.paras, component.Para{Text: snapshotNote, Tone: style.Dim})
	c.start = func() tea.Cmd { return m.startGit(op, gitOpNames[op]+" "+ref, done, doing, doing, call) }
	m.ask(c)
}

// confirmUndo asks to restore the snapshot taken before the last action
// made here (GitControl.LastSnapshot).
func (m *Model) confirmUndo() {
	id, reason := m.git.ctl.LastSnapshot()
	id, reason = sanitize.String(id), sanitize.String(reason)
	q := "Restore snapshot " + id
	undid := "undid the last action"
	if reason != "" {
		q += " taken before " + reason
		undid = "undid " + reason
	}
	m.ask(&gitConfirm{
		title: "undo", frame: style.Warn, verb: "restore", cancel: "undo cancelled",
		paras: []component.Para{{Text: q + "?"}, {Text: restoreNote, Tone: style.Dim}},
		start: func() tea.Cmd {
			g := &m.git
			g.undoFrom, g.undoWhy, g.undoSnap = id, reason, ""
			return m.startGit("undo", "undo", undid+": restored snapshot "+id, "restoring snapshot "+id, "undoing",
				func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.Undo(ctx) })
		},
	})
}

const restoreNote = "HEAD, the branch, the index, the worktree and the untracked files come back as they were; the present tree is snapshotted first (u undoes)."

// confirmKey answers a confirmation: y or enter starts the action, n
// cancels, esc goes back (or cancels).
func (m *Model) confirmKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	c := m.git.confirm
	switch msg.String() {
	case "y", "enter":
		m.closeGitModal()
		if why := gitCan(m, c.verb); why != "" { // never two actions at once
			m.flash(why, style.Warn)
			return m, nil
		}
		return m, c.start()
	case "esc":
		if c.back != modalNone {
			m.git.confirm, m.modal = nil, c.back
			return m, nil
		}
		fallthrough
	case "n", "ctrl+c":
		m.closeGitModal()
		m.flash(c.cancel, style.Dim)
	}
	return m, nil
}

// openStashForm opens the stash form; untracked files are included when
// they are all there is to stash.
func (m *Model) openStashForm() tea.Cmd {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = "name (optional)"
	in.SetStyles(m.inputStyles())
	_, _, untracked, _ := m.git.st.Counts()
	m.git.stash = &gitStashForm{input: in, untracked: untracked == len(m.git.st.Files)}
	m.modal = modalGitStash
	return m.git.stash.input.Focus()
}

// stashFiles are the files a stash would take, sanitised.
func (m *Model) stashFiles() []string {
	var out []string
	for _, f := range m.git.st.Files {
		if !f.Untracked() || m.git.stash.untracked {
			out = append(out, sanitize.String(f.Path))
		}
	}
	return out
}

// stashKey handles a key in the stash form.
func (m *Model) stashKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	f := m.git.stash
	switch msg.String() {
	case "esc", "ctrl+c":
		m.closeGitModal()
		m.flash("stash cancelled", style.Dim)
		return m, nil
	case "tab", "ctrl+u":
		f.untracked = !f.untracked
		return m, nil
	case "enter":
		files := m.stashFiles()
		if len(files) == 0 {
			m.flash("nothing to stash without the untracked files (tab includes them)", style.Warn)
			return m, nil
		}
		raw, untracked := strings.TrimSpace(f.input.Value()), f.untracked
		m.closeGitModal()
		if why := gitCan(m, "a stash"); why != "" {
			m.flash(why, style.Warn)
			return m, nil
		}
		done := "stashed " + style.Plural(len(files), "file")
		if raw != "" {
			done += " as " + strconv.Quote(sanitize.String(raw))
		}
		return m, m.startGit("stash", "stash", done, "stashing "+style.Plural(len(files), "file"), "stashing",
			func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.Stash(ctx, raw, untracked) })
	}
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	return m, cmd
}

// renderStash is the stash form's box content.
func (m *Model) renderStash(iw int) []string {
	st := &m.styles
	f := m.git.stash
	f.input.SetWidth(max(iw-len("name  ")-1, 1))
	box := "[ ]"
	if f.untracked {
		box = "[x]"
	}
	_, _, untracked, _ := m.git.st.Counts()
	files := m.stashFiles()
	out := []string{
		st.Accent.Render("name  ") + style.TruncateStyled(f.input.View(), iw-len("name  ")),
		st.Key.Render(box) + " include untracked files " + st.Dim.Render("("+strconv.Itoa(untracked)+"; tab)"),
		"",
	}
	var ps []component.Para
	if len(files) == 0 {
		ps = append(ps, component.Para{Text: "Nothing to stash: only untracked files are dirty (tab includes them).", Tone: style.Warn})
	} else {
		ps = append(ps, component.Para{Text: "Stashes " + style.Plural(len(files), "file") + ": " + style.BaseNames(files, 0, 5) + "."})
	}
	if !f.untracked && untracked > 0 && len(files) > 0 {
		ps = append(ps, component.Para{Text: "Untracked files stay in the worktree.", Tone: style.Dim})
	}
	ps = append(ps, component.Para{Text: snapshotNote, Tone: style.Dim})
	out = append(out, component.Paras(&m.styles, ps, iw)...)
	return append(out, "", component.Prompt(&m.styles, iw, "enter", "stash", "esc", "cancel"))
}

// openCheckout opens the checkout picker and asks for the log.
func (m *Model) openCheckout() tea.Cmd {
	g := &m.git
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = "branch, tag, commit, HEAD~2"
	in.SetStyles(m.inputStyles())
	g.seq++
	g.co = &gitCheckout{input: in, loading: true, seq: g.seq}
	m.modal = modalGitCheckout
	ctl, ctx, seq := g.ctl, m.ctx, g.seq
	return tea.Batch(g.co.input.Focus(), func() tea.Msg {
		cs, err := ctl.Log(ctx, checkoutLogN)
		return GitLogMsg{Seq: seq, Commits: cs, Err: err}
	})
}

// checkoutLogN is how many commits the checkout picker lists.
const checkoutLogN = 40

// checkoutLog fills the picker with Log's answer.
func (m *Model) checkoutLog(r GitLogMsg) {
	co := m.git.co
	if co == nil || co.seq != r.Seq {
		return
	}
	co.loading, co.commits = false, r.Commits
	if r.Err != nil {
		co.err = errText(r.Err)
	}
	co.cursor = style.Clamp(co.cursor, co.minCursor(), len(m.coItems())-1)
}

// remoteNames are the names taken for remotes when telling a local branch
// from a remote-tracking one in a commit's decorations: the upstream's
// remote, "origin" and "upstream".
func (m *Model) remoteNames() []string {
	out := []string{"origin", "upstream"}
	if r, _, ok := strings.Cut(m.git.st.Upstream, "/"); ok {
		out = append(out, r)
	}
	return out
}

// localBranch is the local branch among a commit's decorations ("HEAD ->
// main" first, then a plain name that is neither a tag, HEAD, nor under a
// remote's name), "" when none: choosing such a commit checks out the
// branch rather than detaching HEAD at it.
func localBranch(refs, remotes []string) string {
	for _, r := range refs {
		if b, ok := strings.CutPrefix(r, "HEAD -> "); ok {
			return b
		}
	}
next:
	for _, r := range refs {
		if r == "HEAD" || strings.HasPrefix(r, "tag: ") || r == "" {
			continue
		}
		for _, rem := range remotes {
			if strings.HasPrefix(r, rem+"/") {
				continue next
			}
		}
		return r
	}
	return ""
}

// coItems are the picker's rows, filtered by the typed text: the log's
// commits (each checked out by its local branch when it is one's tip, else
// by id) or the reflog's entries (by id).
func (m *Model) coItems() []coItem {
	co := m.git.co
	q := strings.ToLower(sanitize.String(strings.TrimSpace(co.input.Value())))
	var out []coItem
	add := func(ref, line string) {
		if q == "" || strings.Contains(strings.ToLower(line), q) {
			out = append(out, coItem{ref: ref, line: line})
		}
	}
	if co.reflog {
		for _, e := range m.git.st.Reflog {
			short := sanitize.String(e.Short)
			if short == "" {
				short = git.ShortID(sanitize.String(e.ID))
			}
			add(e.ID, short+"  "+style.PadRight(style.Age(m.now, e.Time), 4)+"  "+sanitize.String(e.Message))
		}
		return out
	}
	remotes := m.remoteNames()
	for _, c := range co.commits {
		line := sanitize.String(c.Short) + "  " + style.PadRight(style.Age(m.now, c.Time), 4) + "  " + sanitize.String(c.Subject)
		if len(c.Refs) > 0 {
			line += "  (" + sanitize.String(strings.Join(c.Refs, ", ")) + ")"
		}
		ref := c.ID
		if b := localBranch(c.Refs, remotes); b != "" {
			ref = b
		}
		add(ref, line)
	}
	return out
}

// minCursor is -1 (the typed text) when something is typed, else 0.
func (co *gitCheckout) minCursor() int {
	if strings.TrimSpace(co.input.Value()) != "" {
		return -1
	}
	return 0
}

// checkoutKey handles a key in the checkout picker.
func (m *Model) checkoutKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	co := m.git.co
	k := msg.String()
	if k == "esc" || k == "ctrl+c" {
		m.closeGitModal()
		m.flash("checkout cancelled", style.Dim)
		return m, nil
	}
	if co.waiting != "" {
		return m, nil // a preview is on its way
	}
	items := m.coItems()
	switch k {
	case "tab":
		co.reflog = !co.reflog
		co.cursor = co.minCursor()
		return m, nil
	case "up", "ctrl+p":
		co.cursor = style.Clamp(co.cursor-1, co.minCursor(), len(items)-1)
		return m, nil
	case "down", "ctrl+n":
		co.cursor = style.Clamp(co.cursor+1, co.minCursor(), len(items)-1)
		return m, nil
	case "enter":
		return m, m.previewChoice(items)
	}
	before := co.input.Value()
	var cmd tea.Cmd
	co.input, cmd = co.input.Update(msg)
	if co.input.Value() != before {
		co.cursor = co.minCursor()
	}
	return m, cmd
}

// previewChoice asks for the preview of the typed ref or the chosen row.
func (m *Model) previewChoice(items []coItem) tea.Cmd {
	g := &m.git
	co := g.co
	ref := strings.TrimSpace(co.input.Value())
	if co.cursor >= 0 && co.cursor < len(items) {
		ref = items[co.cursor].ref
	}
	if ref == "" {
		m.flash("type a ref or choose a commit", style.Warn)
		return nil
	}
	g.seq++
	co.waiting, co.wseq = sanitize.String(ref), g.seq
	ctl, ctx, seq := g.ctl, m.ctx, g.seq
	return func() tea.Msg {
		p, err := ctl.Preview(ctx, ref)
		return GitPreviewMsg{Seq: seq, Ref: ref, Preview: p, Err: err}
	}
}

// checkoutPreview shows a preview's answer: the confirmation, or why there
// is none.
func (m *Model) checkoutPreview(r GitPreviewMsg) {
	co := m.git.co
	if co == nil || co.wseq != r.Seq || m.modal != modalGitCheckout {
		return
	}
	co.waiting = ""
	if r.Err != nil {
		m.flash("preview "+sanitize.String(r.Ref)+": "+errText(r.Err), style.Crit)
		return
	}
	p := r.Preview
	to := sanitize.String(p.To.Short)
	if to == "" {
		to = git.ShortID(sanitize.String(p.To.ID))
	}
	label := to
	if p.Branch != "" {
		label = sanitize.String(p.Branch) + " at " + to
	}
	ref := r.Ref
	c := &gitConfirm{
		title: "checkout", frame: style.Accent, verb: "checkout", back: modalGitCheckout, cancel: "checkout cancelled",
		paras: previewParas(p, sanitize.String(ref), to),
		start: func() tea.Cmd {
			return m.startGit("checkout", "checkout "+label, "checked out "+label, "checking out "+label, "checking out "+to,
				func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.Checkout(ctx, ref) })
		},
	}
	if len(p.Blocking) > 0 {
		c.frame = style.Crit
	}
	m.ask(c)
}

// previewParas is the checkout preview: where HEAD goes, the commits it
// brings in and leaves, the files it touches and the dirty files that
// block it.
func previewParas(p git.Preview, ref, to string) []component.Para {
	where := " (detached)"
	if p.Branch != "" {
		where = " (branch " + sanitize.String(p.Branch) + ")"
	}
	head := "checkout " + ref + arrow + to
	if git.IsCommitID(p.Target) || sanitize.String(p.Target) == to { // a commit picked from the list: no need to say it twice
		head = "checkout " + to
	}
	ps := []component.Para{{Text: head + " " + sanitize.String(p.To.Subject) + where, Tone: style.Title}}
	if p.ForwardCount == 0 && p.BackCount == 0 {
		ps = append(ps, component.Para{Text: "same commit as HEAD", Tone: style.Dim})
	}
	ps = commitList(ps, "brings in ", "+ ", style.OK, p.Forward, p.ForwardCount)
	ps = commitList(ps, "leaves ", "- ", style.Warn, p.Back, p.BackCount)
	if n := len(p.Files); n > 0 {
		names := make([]string, 0, min(n, 5))
		for _, c := range p.Files[:min(n, 5)] {
			names = append(names, path.Base(sanitize.String(c.Path)))
		}
		t := "touches " + style.Plural(n, "file") + ": " + strings.Join(names, ", ")
		if n > 5 {
			t += ", ..."
		}
		ps = append(ps, component.Para{Text: t})
	}
	if len(p.Blocking) > 0 {
		ps = append(ps, component.Para{Text: "dirty files the checkout would overwrite: " + strings.Join(sanitize.All(p.Blocking), ", ") +
			"; git will refuse: stash them first", Tone: style.Crit})
	}
	if len(p.Overwrites) > 0 {
		ps = append(ps, component.Para{Text: "ignored files the target tracks, which git replaces without asking: " + strings.Join(sanitize.All(p.Overwrites), ", ") +
			" (saved in the snapshot first)", Tone: style.Warn})
	}
	return append(ps, component.Para{Text: snapshotNote, Tone: style.Dim})
}

// commitList is "brings in 2 commits:" and "+ 3207427 subject" lines, cut
// with "... and K more" (K counted from total).
func commitList(ps []component.Para, head, sign string, tn style.Token, cs []event.Commit, total int) []component.Para {
	total = max(total, len(cs))
	if total == 0 {
		return ps
	}
	ps = append(ps, component.Para{Text: head + style.Plural(total, "commit") + ":"})
	const n = 5
	for i, c := range cs {
		if i == n {
			break
		}
		short := sanitize.String(c.Short)
		if short == "" {
			short = git.ShortID(sanitize.String(c.ID))
		}
		ps = append(ps, component.Para{Text: sign + short + " " + sanitize.String(c.Subject), Tone: tn, Indent: 2, Cut: true})
	}
	if more := total - min(n, len(cs)); more > 0 {
		ps = append(ps, component.Para{Text: "... and " + strconv.Itoa(more) + " more", Tone: style.Dim, Indent: 2})
	}
	return ps
}

// renderCheckout is the checkout picker's box content in at most maxH
// lines.
func (m *Model) renderCheckout(iw, maxH int) []string {
	st := &m.styles
	co := m.git.co
	co.input.SetWidth(max(iw-len("ref  ")-1, 1))
	out := []string{st.Accent.Render("ref  ") + style.TruncateStyled(co.input.View(), iw-len("ref  "))}
	logTab, reflogTab := st.Accent.Render("[log]"), st.Dim.Render(" reflog ")
	if co.reflog {
		logTab, reflogTab = st.Dim.Render(" log "), st.Accent.Render("[reflog]")
	}
	out = append(out, logTab+" "+reflogTab+st.Dim.Render("  (tab switches; type to filter)"), "")
	rows := max(maxH-len(out)-2, 1)
	switch {
	case co.waiting != "":
		out = append(out, st.Warn.Render(style.Truncate("previewing "+co.waiting+" ...", iw)))
	case !co.reflog && co.loading:
		out = append(out, st.Dim.Render("loading commits ..."))
	case !co.reflog && co.err != "":
		out = append(out, st.Crit.Render(style.Truncate("log failed: "+co.err, iw)))
	}
	if co.waiting == "" {
		out = append(out, m.coRows(iw, rows)...)
	}
	return out
}

// coRows is the picker's list: the typed text first (when there is one),
// then the rows, a window of at most rows lines around the cursor.
func (m *Model) coRows(iw, rows int) []string {
	st := &m.styles
	co := m.git.co
	type row struct {
		text string
		i    int
	}
	var all []row
	if typed := sanitize.String(strings.TrimSpace(co.input.Value())); typed != "" {
		all = append(all, row{"checkout " + typed, -1})
	}
	for i, it := range m.coItems() {
		all = append(all, row{it.line, i})
	}
	if len(all) == 0 {
		if co.reflog || !co.loading {
			return []string{st.Dim.Render("nothing matches")}
		}
		return nil
	}
	cur := 0
	for i, r := range all {
		if r.i == co.cursor {
			cur = i
		}
	}
	n := min(rows, len(all))
	top := style.Clamp(cur-n/2, 0, len(all)-n)
	var out []string
	for _, r := range all[top : top+n] {
		if r.i == co.cursor {
			out = append(out, st.Accent.Render(style.Truncate("> "+r.text, iw)))
		} else {
			out = append(out, style.Truncate("  "+r.text, iw))
		}
	}
	return out
}

// openSnapshots opens the snapshot picker and asks for the list.
func (m *Model) openSnapshots() tea.Cmd {
	g := &m.git
	g.seq++
	g.snaps = &gitSnapPicker{loading: true, seq: g.seq}
	m.modal = modalGitSnapshots
	ctl, ctx, seq := g.ctl, m.ctx, g.seq
	return func() tea.Msg {
		ss, err := ctl.Snapshots(ctx)
		return GitSnapshotsMsg{Seq: seq, Snapshots: ss, Err: err}
	}
}

// snapshotsLoaded fills the snapshot picker.
func (m *Model) snapshotsLoaded(r GitSnapshotsMsg) {
	p := m.git.snaps
	if p == nil || p.seq != r.Seq {
		return
	}
	p.loading, p.snaps = false, r.Snapshots
	if r.Err != nil {
		p.err = errText(r.Err)
	}
}

// snapLine is a snapshot's row: "20261129-215807-3f9a  2h  checkout
// 3207427  HEAD bba2fc4 main  4 files".
func (m *Model) snapLine(s git.Snapshot) string {
	head := "HEAD " + git.ShortID(sanitize.String(s.Head))
	if s.Branch != "" {
		head += " " + sanitize.String(s.Branch)
	}
	return sanitize.String(s.ID) + "  " + style.PadRight(style.Age(m.now, s.Time), 4) + "  " + sanitize.String(s.Reason) + "  " + head + "  " + style.Plural(s.Files, "file")
}

// snapsKey handles a key in the snapshot picker: enter asks to restore the
// chosen snapshot.
func (m *Model) snapsKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	p := m.git.snaps
	switch msg.String() {
	case "esc", "ctrl+c", "q":
		m.closeGitModal()
		m.flash("restore cancelled", style.Dim)
	case "up", "k":
		p.cursor = style.Clamp(p.cursor-1, 0, len(p.snaps)-1)
	case "down", "j":
		p.cursor = style.Clamp(p.cursor+1, 0, len(p.snaps)-1)
	case "home":
		p.cursor = 0
	case "end":
		p.cursor = max(len(p.snaps)-1, 0)
	case "enter":
		if p.cursor >= len(p.snaps) {
			return m, nil
		}
		m.confirmRestore(p.snaps[p.cursor])
	}
	return m, nil
}

// confirmRestore asks to restore snapshot s.
func (m *Model) confirmRestore(s git.Snapshot) {
	id := s.ID
	idText := sanitize.String(id)
	q := "Restore snapshot " + idText
	if r := sanitize.String(s.Reason); r != "" {
		q += " taken before " + r
	}
	if a := style.Age(m.now, s.Time); a != "" {
		q += " (" + a + " ago)"
	}
	m.ask(&gitConfirm{
		title: "restore snapshot", frame: style.Warn, verb: "restore", back: modalGitSnapshots, cancel: "restore cancelled",
		paras: []component.Para{{Text: q + "?"}, {Text: m.snapLine(s), Tone: style.Dim, Indent: 2, Cut: true}, {Text: restoreNote, Tone: style.Dim}},
		start: func() tea.Cmd {
			return m.startGit("restore", "restore "+idText, "restored snapshot "+idText, "restoring snapshot "+idText, "restoring",
				func(ctx context.Context, g GitControl) (event.GitAction, error) { return g.Restore(ctx, id) })
		},
	})
}

// renderSnaps is the snapshot picker's box content.
func (m *Model) renderSnaps(iw, maxH int) []string {
	st := &m.styles
	p := m.git.snaps
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
			out = append(out, st.Accent.Render(style.Truncate("> "+m.snapLine(p.snaps[i]), iw)))
		} else {
			out = append(out, style.Truncate("  "+m.snapLine(p.snaps[i]), iw))
		}
	}
	return out
}

// confirmPrompt is the last line of a confirmation.
func (m *Model) confirmPrompt(c *gitConfirm, iw int) string {
	if c.back != modalNone {
		return component.Prompt(&m.styles, iw, "y/enter", c.verb, "esc", "back", "n", "cancel")
	}
	return component.Prompt(&m.styles, iw, "y/enter", c.verb, "n/esc", "cancel")
}

// gitModalBox is a git overlay's title, frame tone, content and inner
// width for a w-cell screen with avail rows between header and footer.
func (m *Model) gitModalBox(w, avail int) (title string, frame style.Tone, body []string, iw int, ok bool) {
	st := &m.styles
	g := &m.git
	maxH := avail - 2
	switch m.modal {
	case modalGitConfirm:
		c := g.confirm
		iw = min(w-4, 76)
		body = append(component.Paras(&m.styles, c.paras, iw), "", m.confirmPrompt(c, iw))
		return c.title, st.Tone(c.frame), component.FitLines(&m.styles, body, maxH, 2, iw), iw, true
	case modalGitStash:
		iw = min(w-4, 64)
		return "stash the changes", st.Accent, component.FitLines(&m.styles, m.renderStash(iw), maxH, 2, iw), iw, true
	case modalGitCheckout:
		iw = min(w-4, 88)
		return "checkout", st.Accent, m.renderCheckout(iw, maxH), iw, true
	case modalGitSnapshots:
		iw = min(w-4, 88)
		return "snapshots (restore one)", st.Accent, m.renderSnaps(iw, maxH), iw, true
	}
	return "", st.Accent, nil, 0, false
}

// gitModalKey routes a key to the open git overlay.
func (m *Model) gitModalKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch m.modal {
	case modalGitConfirm:
		return m.confirmKey(msg)
	case modalGitStash:
		return m.stashKey(msg)
	case modalGitCheckout:
		return m.checkoutKey(msg)
	case modalGitSnapshots:
		return m.snapsKey(msg)
	}
	return m, nil
}

// gitPaste sends a paste to the open overlay's text input, if it has one.
func (m *Model) gitPaste(msg tea.PasteMsg) tea.Cmd {
	var cmd tea.Cmd
	switch {
	case m.modal == modalGitStash:
		m.git.stash.input, cmd = m.git.stash.input.Update(msg)
	case m.modal == modalGitCheckout && m.git.co.waiting == "":
		m.git.co.input, cmd = m.git.co.input.Update(msg)
		m.git.co.cursor = m.git.co.minCursor()
	}
	return cmd
}

// gitModalHelp is the footer while a git overlay has the keys.
func (m *Model) gitModalHelp() [][2]string {
	switch m.modal {
	case modalGitConfirm:
		if m.git.confirm.back != modalNone {
			return [][2]string{{"y/enter", m.git.confirm.verb}, {"esc", "back"}, {"n", "cancel"}}
		}
		return [][2]string{{"y/enter", m.git.confirm.verb}, {"n/esc", "cancel"}}
	case modalGitStash:
		return [][2]string{{"enter", "stash"}, {"tab", "untracked on/off"}, {"esc", "cancel"}}
	case modalGitCheckout:
		return [][2]string{{"enter", "preview"}, {"up/down", "choose"}, {"tab", "log/reflog"}, {"esc", "cancel"}}
	case modalGitSnapshots:
		return [][2]string{{"enter", "restore"}, {"up/down", "move"}, {"esc", "cancel"}}
	}
	return nil
}
