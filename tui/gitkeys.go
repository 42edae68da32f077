package tui

import (
	"context"
	"errors"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	gitdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/git"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// GitRefreshMsg is the answer of the Refresh made when the git panel
// opens: the fresh event.GitStatus itself arrives as an event, so only an
// error is reported here.
type GitRefreshMsg struct{ Err error }

// GitLogMsg is the answer of the checkout picker's Log.
type GitLogMsg = gitdialog.LogMsg

// GitPreviewMsg is the answer of a Preview asked from the checkout picker.
type GitPreviewMsg = gitdialog.PreviewMsg

// GitSnapshotsMsg is the answer of the snapshots list's Snapshots.
type GitSnapshotsMsg = gitdialog.SnapshotsMsg

// GitActionMsg is the answer of a git action started from the panel.
// What and Done are sanitised texts prepared when it started.
type GitActionMsg struct {
	Op     string          // "checkout", "stash", "stash-apply", "stash-pop", "stash-drop", "revert", "undo", "restore"
	What   string          // the action and its target, for a failure: "checkout 3207427"
	Done   string          // the success text: "checked out 3207427" (a stash apply, pop or drop names the stash from Action.Args when they have it)
	Action event.GitAction // the outcome; Err set when git failed
	Err    error           // why the action could not be attempted at all
}

// gitOpNames are the actions' names in messages.
var gitOpNames = map[string]string{
	"checkout": "checkout", "stash": "stash", "stash-apply": "stash apply", "stash-pop": "stash pop",
	"stash-drop": "stash drop", "revert": "revert", "undo": "undo", "restore": "restore",
}

// noRepoText is g's answer when there is nothing to show.
const noRepoText = "the git panel needs --repo PATH (or repo in the host's config)"

// gitUnavailable is why g cannot open the panel: no git control and no
// event.GitStatus received (a replayed journal without one).
func gitUnavailable(m *Model) string {
	if m.git.open || m.git.ctl != nil || m.git.hasSt {
		return ""
	}
	return noRepoText
}

// gitCan is why no acting git key can act now, what naming the action
// for a read-only replay; "" when they can.
func gitCan(m *Model, what string) string {
	g := &m.git
	switch {
	case !g.open:
		if why := gitUnavailable(m); why != "" {
			return why
		}
		return "open the git panel first (g)"
	case m.opts.ReadOnly:
		return m.roPrefix() + ": " + what + " would change the host"
	case m.watching():
		return m.watchingWhy()
	case g.ctl == nil:
		return "git control not available here"
	case g.doing != "":
		return "git is busy: " + g.doing
	case m.rep.running:
		return "a repeat is running: " + what + " would change the code its launches measure (R stops it)"
	}
	return notConnected(m)
}

// gitNeedsStatus is gitCan plus a status to act on.
func gitNeedsStatus(m *Model, what string) string {
	if why := gitCan(m, what); why != "" {
		return why
	}
	if !m.git.hasSt {
		return "no git status yet"
	}
	return ""
}

func gitMarkUnavailable(m *Model) string {
	if why := gitNeedsStatus(m, "a revert"); why != "" {
		return why
	}
	if _, ok := m.git.cursorFile(); !ok {
		return "the cursor is not on a changed file"
	}
	return ""
}

func gitRevertUnavailable(m *Model) string {
	if why := gitNeedsStatus(m, "a revert"); why != "" {
		return why
	}
	if len(m.git.marked) == 0 {
		if _, ok := m.git.cursorFile(); !ok {
			return "nothing selected: move to a changed file or mark files with space"
		}
	}
	return ""
}

func gitStashUnavailable(m *Model) string {
	if why := gitNeedsStatus(m, "a stash"); why != "" {
		return why
	}
	if len(m.git.st.Files) == 0 {
		return "nothing to stash: the tree is clean"
	}
	return ""
}

// gitStashOpUnavailable is the Unavailable func of a, P and D.
func gitStashOpUnavailable(what string) func(*Model) string {
	return func(m *Model) string {
		if why := gitNeedsStatus(m, what); why != "" {
			return why
		}
		if len(m.git.st.Stashes) == 0 {
			return "no stashes"
		}
		return ""
	}
}

func gitCheckoutUnavailable(m *Model) string { return gitNeedsStatus(m, "a checkout") }

func gitUndoUnavailable(m *Model) string {
	if why := gitCan(m, "an undo"); why != "" {
		return why
	}
	if id, _ := m.git.ctl.LastSnapshot(); id == "" {
		return "nothing to undo: no action was made from here"
	}
	return ""
}

func gitSnapshotsUnavailable(m *Model) string { return gitCan(m, "a restore") }

// gitKeys lists the panel's acting keys in footer order.
func (k *KeyMap) gitKeys() []*component.Binding {
	return []*component.Binding{&k.GitMark, &k.GitRevert, &k.GitStash, &k.GitApply, &k.GitPop, &k.GitDrop,
		&k.GitCheckout, &k.GitUndo, &k.GitSnapshots}
}

// logCovered is why the log is not on screen: a panel shown in its place
// (the log's own keys say so).
func logCovered(m *Model) string {
	if m.git.open {
		return "the git panel is open (g or esc returns to the log)"
	}
	if m.exp.open {
		return "the experiments panel is open (x or esc returns to the log)"
	}
	return ""
}

// toggleGit opens the panel (acknowledging a HEAD move, and refreshing
// the status unless this is a replay) or closes it.
func (m *Model) toggleGit() tea.Cmd {
	g := &m.git
	if g.open {
		m.closeGit()
		return nil
	}
	g.open, g.movedN = true, 0
	m.exp.open = false
	m.showHelp = false
	if m.opts.ReadOnly || g.ctl == nil {
		return nil
	}
	ctl, ctx := g.ctl, m.ctx
	return func() tea.Msg { return GitRefreshMsg{Err: ctl.Refresh(ctx)} }
}

// closeGit returns to the log; marks are forgotten (they are not shown
// while the panel is closed, so they must not linger into a later revert).
func (m *Model) closeGit() {
	m.git.open = false
	clear(m.git.marked)
}

// gitAct performs an available git panel key.
func (m *Model) gitAct(b *component.Binding) tea.Cmd {
	k := &m.keys
	g := &m.git
	switch b {
	case &k.GitMark:
		f, _ := g.cursorFile()
		if g.marked == nil {
			g.marked = map[string]bool{}
		}
		if g.marked[f.Path] {
			delete(g.marked, f.Path)
		} else {
			g.marked[f.Path] = true
		}
	case &k.GitRevert:
		g.dialogs.AskRevert(g.revertFiles())
	case &k.GitStash:
		return g.dialogs.OpenStash()
	case &k.GitApply, &k.GitPop, &k.GitDrop:
		// The call names the stash by its commit id: indexes shift when
		// stashes are added or dropped.
		s, _ := g.targetStash()
		g.dialogs.AskStashOp(map[*component.Binding]string{&k.GitApply: "stash-apply", &k.GitPop: "stash-pop", &k.GitDrop: "stash-drop"}[b], s)
	case &k.GitCheckout:
		return g.dialogs.OpenCheckout()
	case &k.GitUndo:
		id, reason := g.ctl.LastSnapshot()
		g.dialogs.AskUndo(sanitize.String(id), sanitize.String(reason))
	case &k.GitSnapshots:
		return g.dialogs.OpenSnapshots()
	}
	return nil
}

// isGitKey reports whether b is one of the panel's acting keys.
func (k *KeyMap) isGitKey(b *component.Binding) bool {
	for _, g := range k.gitKeys() {
		if g == b {
			return true
		}
	}
	return false
}

// startGit marks an action in flight (its banner says doing; brief on a
// narrow terminal) and returns the tea.Cmd that calls it.
func (m *Model) startGit(op, what, done, doing, brief string, call func(context.Context, GitControl) (event.GitAction, error)) tea.Cmd {
	g := &m.git
	ctl, ctx := g.ctl, m.ctx
	g.doing, g.brief = doing, brief
	rec := m.recorder("git " + what)
	return func() tea.Msg {
		rec()
		a, err := call(ctx, ctl)
		return GitActionMsg{Op: op, What: what, Done: done, Action: a, Err: err}
	}
}

// gitResult applies the answer of a git tea.Cmd; tea.Quit when q was
// pressed while the action ran.
func (m *Model) gitResult(msg tea.Msg) tea.Cmd {
	g := &m.git
	switch r := msg.(type) {
	case GitRefreshMsg:
		if r.Err != nil {
			g.readErr = errText(r.Err)
			m.flash("git status: "+g.readErr, style.Crit)
		}
	case GitActionMsg:
		g.doing, g.brief = "", ""
		m.gitActionDone(r)
		if g.quitWhen {
			g.quitWhen = false
			return m.quitAfterGit()
		}
	case GitLogMsg:
		if co, ok := m.overlay.Find(gitdialog.CheckoutID).(*gitdialog.Checkout); ok {
			co.Loaded(r)
		}
	case GitPreviewMsg:
		// Only to the picker on top: one closed, or under its preview,
		// asked no more.
		if co, ok := m.overlay.Top().(*gitdialog.Checkout); ok {
			co.Previewed(r)
		}
	case GitSnapshotsMsg:
		if p, ok := m.overlay.Find(gitdialog.SnapshotsID).(*gitdialog.Snapshots); ok {
			p.Loaded(r)
		}
	}
	return nil
}

// quitAfterGit quits once the git action that held the quit back has
// ended, unless a repeat runs (it is stopped first, repeatQuit) or a
// server action does: quitting would cancel that one, so it asks as q
// does then.
func (m *Model) quitAfterGit() tea.Cmd {
	if m.rep.running {
		return m.repeatQuit() // it quits when the repeat has stopped
	}
	if m.srv.busy != actionNone {
		m.quitArmed = true
		m.flash("the git action ended; "+controlUnavailable(m, "")+"; quitting cancels it - q again to quit", style.Warn)
		return nil
	}
	m.quitting = true
	return tea.Quit
}

// gitQuitText is the answer to q while a git action runs.
const gitQuitText = "a git action is running: quitting when it ends (q again to quit now; the host finishes it)"

// gitQuit answers q or ctrl+c while a git action runs: the first press
// waits for the action (quitting cancels its context, which could leave
// the checkout half-changed), the second quits at once.
func (m *Model) gitQuit() tea.Cmd {
	g := &m.git
	if g.quitWhen {
		m.quitting = true
		return tea.Quit
	}
	g.quitWhen = true
	m.flash(gitQuitText, style.Warn)
	return nil
}

// gitActionDone flashes an action's outcome: success (with its snapshot,
// how to undo it, and its notes), a conflict, or a failure (the snapshot
// that holds the tree before it first, then the first line of git's
// error). The fresh status follows on the event stream.
func (m *Model) gitActionDone(r GitActionMsg) {
	g := &m.git
	a := r.Action
	name := gitOpNames[r.Op]
	snap := sanitize.String(a.Snapshot)
	if r.Op == "undo" {
		g.undoSnap = snap
		if snap == "" { // not made: no restore to show as the undo
			g.undoFrom = ""
		}
	}
	switch {
	case r.Err != nil:
		why := errText(r.Err)
		if !errors.Is(r.Err, context.Canceled) {
			why = sanitize.FirstLine(r.Err.Error())
		}
		m.flash(r.What+" failed: "+why, style.Crit)
	case len(a.Conflict) > 0:
		kept := ""
		if r.Op == "stash-pop" || r.Op == "stash-apply" {
			kept = ": the stash is kept"
		}
		m.flash(name+" conflicted in "+style.BaseNames(sanitize.All(a.Conflict), 0, 3)+kept+" (u restores the tree as it was)", style.Warn)
	case a.Err != "":
		why := sanitize.FirstLine(a.Err)
		if why == "" {
			why = sanitize.FirstLine(a.Output)
		}
		if snap != "" {
			m.flash(name+" failed (tree before it: snapshot "+snap+", S restores): "+why, style.Crit)
		} else {
			m.flash(r.What+" failed (nothing was changed): "+why, style.Crit)
		}
	default:
		done := r.Done
		if isStashOp(r.Op) && len(a.Args) > 0 {
			done = stashDone(r.Op, sanitize.All(a.Args))
		}
		if snap != "" {
			done += " (snapshot " + snap + "; u undoes)"
		}
		var notes []string
		for _, n := range a.Notes {
			notes = append(notes, sanitize.Lines(n, 0)...)
		}
		if len(notes) > 0 {
			m.flash(done+"; "+strings.Join(notes, "; "), style.Warn)
			return
		}
		m.flash(done, style.OK)
	}
}

// stashDone is the success text of a stash apply, pop or drop, naming the
// stash by the Action's Args (sanitised): `popped stash "On main: x"`;
// a drop adds the commit id that brings it back.
func stashDone(op string, args []string) string {
	verb := map[string]string{"stash-apply": "applied", "stash-pop": "popped", "stash-drop": "dropped"}[op]
	s := verb + " " + stashName(args)
	if op == "stash-drop" && len(args) > 1 && args[1] != "" {
		s += " (commit " + git.ShortID(args[0]) + ")"
	}
	return s
}

// gitBanners are the lines under the header about git, for a w-cell
// terminal: the action in flight and a HEAD move made outside the cockpit
// (the longest of its forms that fits).
func (m *Model) gitBanners(w int) []banner {
	g := &m.git
	var out []banner
	if g.doing != "" {
		quit := ""
		if g.quitWhen {
			quit = " (quitting when it ends)"
		}
		out = append(out, banner{text: "git: " + g.doing + " ..." + quit, short: "git: " + g.brief + " ..." + quit, tone: style.Warn})
	}
	if g.movedN > 0 {
		forms := movedForms(g.moved, g.movedN)
		text := forms[len(forms)-1]
		for _, f := range forms {
			if style.Width(f) <= w {
				text = f
				break
			}
		}
		out = append(out, banner{text: text, tone: style.Warn})
	}
	return out
}

// arrow joins the two sides of a change in banners. ASCII: the arrow
// characters are ambiguous-width (two cells in some CJK setups), which
// would misalign the screen in tmux.
const arrow = " -> "

// movedForms is the HEAD-moved banner for n moves since the last
// acknowledgement (mv the latest), longest form first: the full text with
// its keys, the full text with the keys brief, and a short form:
//
//	HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits, touches pynccl.py, parallel_state.py)  (g: git panel, esc: dismiss)
//	HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits, touches pynccl.py, parallel_state.py)  g/esc
//	HEAD moved bba2fc4 -> 3207427 (git pull, 2 commits)  g/esc
//
// and likewise "branch changed outside flightdeck: main -> feature (HEAD
// 3207427 as before) (git checkout)" when
// only the branch changed, and "worktree changed outside flightdeck:
// pynccl.py, foo.py (3 dirty files now)" when only the dirty set did, or
// "worktree clean again (changed outside flightdeck: nccl.md)" when that
// left the tree clean.
func movedForms(mv event.GitMoved, n int) []string {
	text, short := movedText(mv, n, 3)
	one, _ := movedText(mv, n, 1)
	return []string{text + movedKeys, text + movedKeysBrief, one + movedKeysBrief, short + movedKeysBrief}
}

// The keys a HEAD-moved banner mentions, in full and brief.
const movedKeys, movedKeysBrief = "  (g: git panel, esc: dismiss)", "  g/esc"

// movedText is a HEAD-moved banner's text, naming at most files paths,
// and its short form, without keys.
func movedText(mv event.GitMoved, n, files int) (text, short string) {
	more := ""
	if n > 1 {
		more = " (" + strconv.Itoa(n) + " changes since dismissed)"
	}
	branch := ""
	if mv.FromBranch != mv.ToBranch {
		branch = "branch " + orDetached(mv.FromBranch) + arrow + orDetached(mv.ToBranch)
	}
	var how string
	if mv.Action != "" {
		how = "git " + mv.Action
	}
	switch {
	case mv.From == mv.To && branch == "" && mv.DirtyAfter == 0:
		head := "worktree clean again"
		text = head + " (changed outside flightdeck)"
		if len(mv.DirtyChanged) > 0 {
			text = head + " (changed outside flightdeck: " + style.BaseNames(mv.DirtyChanged, 0, files) + ")"
		}
		return text + more, head + more
	case mv.From == mv.To && branch == "":
		head := "worktree changed outside flightdeck"
		now := " (" + style.Plural(mv.DirtyAfter, "dirty file") + " now)"
		text = head + now
		if len(mv.DirtyChanged) > 0 {
			text = head + ": " + style.BaseNames(mv.DirtyChanged, 0, files) + now
		}
		return text + more, head + now + more
	case mv.From == mv.To:
		head := "branch changed outside flightdeck: " + orDetached(mv.FromBranch) + arrow + orDetached(mv.ToBranch) + " (HEAD " + mv.ToShort + " as before)"
		return head + paren(how) + more, head + more
	}
	head := "HEAD moved " + mv.FromShort + arrow + mv.ToShort
	details := []string{how, branch, commitCount(mv.Forward, mv.Back)}
	if total := max(mv.FilesTotal, len(mv.Files)); total > 0 {
		details = append(details, "touches "+style.BaseNames(mv.Files, mv.FilesTotal, files))
	}
	return head + paren(details...) + more, head + paren(how, commitCount(mv.Forward, mv.Back)) + more
}

// orDetached is a branch name, "detached" for none.
func orDetached(b string) string {
	if b == "" {
		return "detached"
	}
	return b
}

// commitCount is "2 commits" (forward), "3 commits back", or "2 commits
// ahead, 3 back"; "" when HEAD moved by neither.
func commitCount(fwd, back int) string {
	switch {
	case fwd > 0 && back > 0:
		return style.Plural(fwd, "commit") + " ahead, " + strconv.Itoa(back) + " back"
	case back > 0:
		return style.Plural(back, "commit") + " back"
	case fwd > 0:
		return style.Plural(fwd, "commit")
	}
	return ""
}

// paren is " (a, b)" of the non-empty parts, "" when all are empty.
func paren(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return ""
	}
	return " (" + strings.Join(keep, ", ") + ")"
}

// gitFooter is the footer while the panel has the screen: help, the git
// keys, close and quit; keys that cannot act are dimmed and, when the line
// is too narrow, the less used keys go first.
func (m *Model) gitFooter(width int) string {
	k := &m.keys
	type item struct {
		key, desc string
		b         *component.Binding
		prio      int // lower stays longer
	}
	items := []item{{k.Help.Help().Key, k.Help.Help().Desc, &k.Help, 0}}
	prio := map[*component.Binding]int{&k.GitCheckout: 1, &k.GitStash: 2, &k.GitUndo: 3, &k.GitRevert: 4, &k.GitMark: 5,
		&k.GitPop: 6, &k.GitApply: 7, &k.GitDrop: 8, &k.GitSnapshots: 9}
	for _, b := range k.gitKeys() {
		items = append(items, item{b.Help().Key, b.Help().Desc, b, prio[b]})
	}
	items = append(items, item{k.Git.Help().Key + "/esc", "close", nil, 0}, item{k.Quit.Help().Key, k.Quit.Help().Desc, &k.Quit, 0})
	show := make([]bool, len(items))
	used := -2
	for p := 0; p <= 9; p++ {
		for i, it := range items {
			if it.prio != p {
				continue
			}
			if pw := component.HintWidth(it.key, it.desc); used+pw <= width {
				show[i], used = true, used+pw
			}
		}
	}
	var b strings.Builder
	for i, it := range items {
		if !show[i] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString(m.keyHint(it.key, it.desc, it.b))
	}
	return b.String()
}
