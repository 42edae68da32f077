package git

import (
	"path"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	rgit "github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// askCheckout asks, over the picker, to check out ref as p previews it:
// esc goes back to the picker, n cancels both.
func (ds *Dialogs) askCheckout(ref string, p rgit.Preview) {
	to := sanitize.String(p.To.Short)
	if to == "" {
		to = rgit.ShortID(sanitize.String(p.To.ID))
	}
	label := to
	if p.Branch != "" {
		label = sanitize.String(p.Branch) + " at " + to
	}
	q := &Question{
		name: PreviewID, title: "checkout", frame: style.Accent, verb: "checkout", over: CheckoutID, cancel: "checkout cancelled",
		paras: previewParas(p, sanitize.String(ref), to),
		yes:   func() tea.Cmd { return ds.Panel.Checkout(ref, label, to) },
	}
	if len(p.Blocking) > 0 {
		q.frame = style.Crit
	}
	ds.ask(q)
}

// previewParas is the checkout preview: where HEAD goes, the commits it
// brings in and leaves, the files it touches and the dirty files that
// block it.
func previewParas(p rgit.Preview, ref, to string) []component.Para {
	where := " (detached)"
	if p.Branch != "" {
		where = " (branch " + sanitize.String(p.Branch) + ")"
	}
	head := "checkout " + ref + arrow + to
	if rgit.IsCommitID(p.Target) || sanitize.String(p.Target) == to { // a commit picked from the list: no need to say it twice
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
			short = rgit.ShortID(sanitize.String(c.ID))
		}
		ps = append(ps, component.Para{Text: sign + short + " " + sanitize.String(c.Subject), Tone: tn, Indent: 2, Cut: true})
	}
	if more := total - min(n, len(cs)); more > 0 {
		ps = append(ps, component.Para{Text: "... and " + strconv.Itoa(more) + " more", Tone: style.Dim, Indent: 2})
	}
	return ps
}
