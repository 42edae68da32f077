package git

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Stash is the stash form (s): an optional name, and whether the
// untracked files go too (tab). It reads the panel's status as it is
// drawn: what it would stash follows the tree.
type Stash struct {
	ds        *Dialogs
	input     textinput.Model
	untracked bool // include untracked files (git stash -u)
}

// OpenStash opens the stash form; untracked files are included when they
// are all there is to stash.
func (ds *Dialogs) OpenStash() tea.Cmd {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = "name (optional)"
	in.SetStyles(ds.Inputs())
	st := ds.Panel.Status()
	_, _, untracked, _ := st.Counts()
	f := &Stash{ds: ds, input: in, untracked: untracked == len(st.Files)}
	ds.Push(f)
	return f.input.Focus()
}

// ID implements component.Dialog.
func (f *Stash) ID() string { return StashID }

// files are the files a stash would take, sanitised.
func (f *Stash) files() []string {
	var out []string
	for _, gf := range f.ds.Panel.Status().Files {
		if !gf.Untracked() || f.untracked {
			out = append(out, sanitize.String(gf.Path))
		}
	}
	return out
}

// Key implements component.Dialog: enter stashes, tab (or ctrl+u) takes
// the untracked files in or out, esc cancels; other keys are the name.
func (f *Stash) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch msg.String() {
	case "esc", "ctrl+c":
		f.ds.Flash("stash cancelled", style.Dim)
		return nil, true
	case "tab", "ctrl+u":
		f.untracked = !f.untracked
		return nil, false
	case "enter":
		files := f.files()
		if len(files) == 0 {
			f.ds.Flash("nothing to stash without the untracked files (tab includes them)", style.Warn)
			return nil, false
		}
		return f.ds.Panel.Stash(strings.TrimSpace(f.input.Value()), f.untracked, len(files)), true
	}
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	return cmd, false
}

// Paste implements component.Paster: pasted text is the name.
func (f *Stash) Paste(msg tea.PasteMsg) tea.Cmd {
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	return cmd
}

// View implements component.Dialog.
func (f *Stash) View(st *style.Styles, w, h int) component.Box {
	if component.TooSmall(w, h) {
		return component.Box{}
	}
	iw := min(w-4, 64)
	return component.Box{Title: "stash the changes", Frame: style.Accent, Body: component.FitLines(st, f.body(st, iw), component.BodyRows(h), 2, iw), Width: iw}
}

// body is the form's lines at iw cells.
func (f *Stash) body(st *style.Styles, iw int) []string {
	f.input.SetWidth(max(iw-len("name  ")-1, 1))
	box := "[ ]"
	if f.untracked {
		box = "[x]"
	}
	status := f.ds.Panel.Status()
	_, _, untracked, _ := status.Counts()
	files := f.files()
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
	out = append(out, component.Paras(st, ps, iw)...)
	return append(out, "", component.Prompt(st, iw, "enter", "stash", "esc", "cancel"))
}

// Help implements component.Dialog.
func (f *Stash) Help() []component.Hint {
	return []component.Hint{{Key: "enter", Desc: "stash"}, {Key: "tab", Desc: "untracked on/off"}, {Key: "esc", Desc: "cancel"}}
}
