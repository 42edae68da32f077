package git

import (
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	rgit "github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Checkout is the checkout picker (c): a typed ref on top, below it the
// log (or, after tab, the status's reflog) filtered by the typed text,
// each commit with the tok/s measured at it (Dialogs.Measured; the column
// shows once one of them was measured).
// enter asks for the preview of the typed ref or the chosen row, then the
// preview asks, over the picker, to check it out.
type Checkout struct {
	ds      *Dialogs
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

// coItem is a row of the checkout picker: the ref a checkout of it gets
// (raw) and the row (sanitised).
type coItem struct {
	ref  string
	line string
}

// checkoutLogN is how many commits the checkout picker lists.
const checkoutLogN = 40

// OpenCheckout opens the checkout picker and asks for the log.
func (ds *Dialogs) OpenCheckout() tea.Cmd {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = "branch, tag, commit, HEAD~2"
	in.SetStyles(ds.Inputs())
	co := &Checkout{ds: ds, input: in, loading: true, seq: ds.next()}
	ds.Push(co)
	ctl, ctx, seq := ds.Ctl, ds.Ctx(), co.seq
	return tea.Batch(co.input.Focus(), func() tea.Msg {
		cs, err := ctl.Log(ctx, checkoutLogN)
		return LogMsg{Seq: seq, Commits: cs, Err: err}
	})
}

// ID implements component.Dialog.
func (co *Checkout) ID() string { return CheckoutID }

// Typed is the ref as typed so far.
func (co *Checkout) Typed() string { return co.input.Value() }

// Loaded fills the picker with Log's answer; an answer to another request
// is dropped.
func (co *Checkout) Loaded(r LogMsg) {
	if co.seq != r.Seq {
		return
	}
	co.loading, co.commits = false, r.Commits
	if r.Err != nil {
		co.err = style.ErrText(r.Err)
	}
	co.cursor = style.Clamp(co.cursor, co.minCursor(), len(co.items())-1)
}

// remoteNames are the names taken for remotes when telling a local branch
// from a remote-tracking one in a commit's decorations: the upstream's
// remote, "origin" and "upstream".
func (co *Checkout) remoteNames() []string {
	out := []string{"origin", "upstream"}
	if r, _, ok := strings.Cut(co.ds.Panel.Status().Upstream, "/"); ok {
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

// items are the picker's rows, filtered by the typed text: the log's
// commits (each checked out by its local branch when it is one's tip, else
// by id) or the reflog's entries (by id).
func (co *Checkout) items() []coItem {
	q := strings.ToLower(sanitize.String(strings.TrimSpace(co.input.Value())))
	var out []coItem
	add := func(ref, line string) {
		if q == "" || strings.Contains(strings.ToLower(line), q) {
			out = append(out, coItem{ref: ref, line: line})
		}
	}
	if co.reflog {
		for _, e := range co.ds.Panel.Status().Reflog {
			short := sanitize.String(e.Short)
			if short == "" {
				short = rgit.ShortID(sanitize.String(e.ID))
			}
			add(e.ID, short+"  "+style.PadRight(co.ds.age(e.Time), 4)+"  "+sanitize.String(e.Message))
		}
		return out
	}
	remotes := co.remoteNames()
	// The tok/s measured at each commit, in a column of its own.
	rates := make([]string, len(co.commits))
	wrate := 0
	if co.ds.Measured != nil {
		any := false
		for i, c := range co.commits {
			rates[i] = sanitize.String(co.ds.Measured(c.ID))
			wrate = max(wrate, style.Width(rates[i]))
			any = any || rates[i] != "-"
		}
		if !any {
			wrate = 0 // nothing measured at these commits: no column
		}
	}
	for i, c := range co.commits {
		line := sanitize.String(c.Short) + "  " + style.PadRight(co.ds.age(c.Time), 4) + "  "
		if wrate > 0 {
			line += style.PadRight(rates[i], wrate) + "  "
		}
		line += sanitize.String(c.Subject)
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
func (co *Checkout) minCursor() int {
	if strings.TrimSpace(co.input.Value()) != "" {
		return -1
	}
	return 0
}

// Key implements component.Dialog: esc cancels; while a preview is on its
// way nothing else acts; tab switches between the log and the reflog,
// up/down choose, enter previews, other keys are the typed ref.
func (co *Checkout) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	k := msg.String()
	if k == "esc" || k == "ctrl+c" {
		co.ds.Flash("checkout cancelled", style.Dim)
		return nil, true
	}
	if co.waiting != "" {
		return nil, false // a preview is on its way
	}
	items := co.items()
	switch k {
	case "tab":
		co.reflog = !co.reflog
		co.cursor = co.minCursor()
		return nil, false
	case "up", "ctrl+p":
		co.cursor = style.Clamp(co.cursor-1, co.minCursor(), len(items)-1)
		return nil, false
	case "down", "ctrl+n":
		co.cursor = style.Clamp(co.cursor+1, co.minCursor(), len(items)-1)
		return nil, false
	case "enter":
		return co.preview(items), false
	}
	before := co.input.Value()
	var cmd tea.Cmd
	co.input, cmd = co.input.Update(msg)
	if co.input.Value() != before {
		co.cursor = co.minCursor()
	}
	return cmd, false
}

// Paste implements component.Paster: pasted text is typed, unless a
// preview is on its way.
func (co *Checkout) Paste(msg tea.PasteMsg) tea.Cmd {
	if co.waiting != "" {
		return nil
	}
	var cmd tea.Cmd
	co.input, cmd = co.input.Update(msg)
	co.cursor = co.minCursor()
	return cmd
}

// preview asks for the preview of the typed ref or the chosen row.
func (co *Checkout) preview(items []coItem) tea.Cmd {
	ref := strings.TrimSpace(co.input.Value())
	if co.cursor >= 0 && co.cursor < len(items) {
		ref = items[co.cursor].ref
	}
	if ref == "" {
		co.ds.Flash("type a ref or choose a commit", style.Warn)
		return nil
	}
	co.waiting, co.wseq = sanitize.String(ref), co.ds.next()
	ctl, ctx, seq := co.ds.Ctl, co.ds.Ctx(), co.wseq
	return func() tea.Msg {
		p, err := ctl.Preview(ctx, ref)
		return PreviewMsg{Seq: seq, Ref: ref, Preview: p, Err: err}
	}
}

// Previewed shows a preview's answer: the question, over the picker, or
// why there is none. The root gives it only to the picker on top; an
// answer to another request is dropped.
func (co *Checkout) Previewed(r PreviewMsg) {
	if co.wseq != r.Seq {
		return
	}
	co.waiting = ""
	if r.Err != nil {
		co.ds.Flash("preview "+sanitize.String(r.Ref)+": "+style.ErrText(r.Err), style.Crit)
		return
	}
	co.ds.askCheckout(r.Ref, r.Preview)
}

// View implements component.Dialog.
func (co *Checkout) View(st *style.Styles, w, h int) component.Box {
	if component.TooSmall(w, h) {
		return component.Box{}
	}
	iw := min(w-4, 88)
	return component.Box{Title: "checkout", Frame: style.Accent, Body: co.body(st, iw, component.BodyRows(h)), Width: iw}
}

// body is the picker's lines at iw cells, at most maxH of them.
func (co *Checkout) body(st *style.Styles, iw, maxH int) []string {
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
		out = append(out, co.rows(st, iw, rows)...)
	}
	return out
}

// rows is the picker's list: the typed text first (when there is one),
// then the rows, a window of at most n lines around the cursor.
func (co *Checkout) rows(st *style.Styles, iw, rows int) []string {
	type row struct {
		text string
		i    int
	}
	var all []row
	if typed := sanitize.String(strings.TrimSpace(co.input.Value())); typed != "" {
		all = append(all, row{"checkout " + typed, -1})
	}
	for i, it := range co.items() {
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

// Help implements component.Dialog.
func (co *Checkout) Help() []component.Hint {
	return []component.Hint{{Key: "enter", Desc: "preview"}, {Key: "up/down", Desc: "choose"}, {Key: "tab", Desc: "log/reflog"}, {Key: "esc", Desc: "cancel"}}
}
