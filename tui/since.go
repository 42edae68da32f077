package tui

import (
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/hostdiff"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// SinceQuiet is how long the one-line "nothing changed" and "first
// session" notices stay (in the model's clock: the events' time).
const SinceQuiet = 20 * time.Second

// sinceBanner is the "since your last session here" notice: what changed
// on the host since the last session recorded for it (event.HostChanges,
// published once, soon after connect). Changes stay until esc; a notice
// without any goes by itself after SinceQuiet.
type sinceBanner struct {
	c         *event.HostChanges // sanitised; nil before it came
	at        time.Time          // its event time
	dismissed bool
}

// Set takes the host's changes, sanitised (remote text: commit subjects,
// paths, versions), as at at.
func (b *sinceBanner) Set(c event.HostChanges, at time.Time) {
	s := sanitize.String
	c.Host, c.Repo, c.Journal, c.Exp = s(c.Host), s(c.Repo), s(c.Journal), s(c.Exp)
	c.Errs = sanitize.All(c.Errs)
	chs := make([]event.HostChange, len(c.Changes))
	for i, ch := range c.Changes {
		ch.Group, ch.Name, ch.Was, ch.Now = s(ch.Group), s(ch.Name), s(ch.Was), s(ch.Now)
		ch.How, ch.Detail = sanitize.All(ch.How), sanitize.All(ch.Detail)
		if r := ch.Range; r != nil {
			rc := *r
			rc.Ahead, rc.Behind, rc.Files = sanitize.All(r.Ahead), sanitize.All(r.Behind), sanitize.All(r.Files)
			ch.Range = &rc
		}
		chs[i] = ch
	}
	c.Changes = chs
	b.c, b.at, b.dismissed = &c, at, false
}

// Showing reports whether the notice is on screen at now.
func (b *sinceBanner) Showing(now time.Time) bool {
	if b.c == nil || b.dismissed {
		return false
	}
	return len(b.c.Changes) > 0 || now.Sub(b.at) < SinceQuiet
}

// Quiet reports whether the notice on screen is the one-line kind
// (nothing changed, first session), which yields esc to a live alert.
func (b *sinceBanner) Quiet() bool { return b.c != nil && len(b.c.Changes) == 0 }

// carryDismissed keeps from's dismissal when b holds the same notice (a
// replay's seek rebuilds the model from the journal, which holds it).
func (b *sinceBanner) carryDismissed(from sinceBanner) {
	if from.dismissed && b.c != nil && from.c != nil && b.at.Equal(from.at) {
		b.dismissed = true
	}
}

// Dismiss takes the notice off the screen (esc).
func (b *sinceBanner) Dismiss() { b.dismissed = true }

// Unavailable is why H cannot list the changes now, "" when it can.
func (b *sinceBanner) Unavailable() string {
	switch {
	case b.c == nil:
		return "the host is still being compared with its last session here"
	case !b.c.Seen:
		return "first session on this host: nothing recorded to compare with"
	case len(b.c.Changes) == 0:
		return "nothing changed since your last session here"
	}
	return ""
}

// The keys the notice names, in full and brief.
const sinceKeys, sinceKeysBrief = "  (H: all, esc: dismiss)", "  H/esc"

// Banners is the notice at w cells and time now, in at most room lines:
// the headline naming the first change (HEAD's move and its files,
// wrapped over two lines when one is too narrow), then the other changes
// on one line, cut with a count ("+3 more") when they do not fit; one
// line without changes. With less room the headline takes one line (cut
// at the screen's edge), and with one line the other changes are a count.
func (b *sinceBanner) Banners(w int, now time.Time, room int) []component.Banner {
	if !b.Showing(now) {
		return nil
	}
	c := *b.c
	if len(c.Changes) == 0 {
		text := hostdiff.Headline(c, now, 0)
		return []component.Banner{{Text: text + "  (esc)", Short: text, Tone: style.Dim}}
	}
	var lines []string
	for files := 3; files >= 0; files-- {
		text := hostdiff.Headline(c, now, files)
		if style.Width(text+sinceKeys) <= w {
			lines = []string{text + sinceKeys}
			break
		}
		if files == 0 || len(style.Wrap(text+sinceKeysBrief, w)) <= 2 {
			lines = style.Wrap(text+sinceKeysBrief, w)
			if len(lines) > 2 {
				lines = lines[:2] // cut by the banner's truncation
			}
			break
		}
	}
	rest := c.Changes[1:]
	if len(lines)+min(len(rest), 1) > room {
		// Short of room: the headline alone, wrapped over two lines when
		// there are two (one, cut, else), the other changes a count.
		text := hostdiff.Headline(c, now, 1)
		if len(rest) > 0 {
			text += " (+" + strconv.Itoa(len(rest)) + " more)"
		}
		lines = style.Wrap(text+sinceKeysBrief, w)
		if len(lines) > max(room, 1) {
			lines = lines[:max(room, 1)] // cut by the banner's truncation
		}
		rest = nil
	}
	if len(rest) > 0 {
		lines = append(lines, alsoLine(rest, w))
	}
	out := make([]component.Banner, len(lines))
	for i, l := range lines {
		out[i] = component.Banner{Text: l, Tone: style.Warn}
	}
	return out
}

// alsoLine lists the changes after the first in w cells: as many as fit,
// then "+N more (H)".
func alsoLine(rest []event.HostChange, w int) string {
	line := "also: "
	for i, ch := range rest {
		sep := ""
		if i > 0 {
			sep = "; "
		}
		next := line + sep + hostdiff.ChangeText(ch, 1)
		more := ""
		if left := len(rest) - i - 1; left > 0 {
			more = "; +" + style.Plural(left, "more change") + " (H)"
		}
		if style.Width(next+more) > w && i > 0 {
			return line + "; +" + style.Plural(len(rest)-i, "more change") + " (H)"
		}
		line = next
	}
	return line
}

// sinceDialog lists every change since the last session here (H): the
// lines of hostdiff.Lines, scrolled with up and down.
type sinceDialog struct {
	lines []string
	top   int
}

func newSinceDialog(c event.HostChanges, now time.Time) *sinceDialog {
	return &sinceDialog{lines: hostdiff.Lines(c, now)}
}

// ID implements component.Dialog.
func (d *sinceDialog) ID() string { return "since" }

// Key implements component.Dialog: up and down scroll, any other key
// closes it.
func (d *sinceDialog) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch msg.String() {
	case "up", "k":
		d.top = max(0, d.top-1)
		return nil, false
	case "down", "j":
		d.top = min(max(0, len(d.lines)-1), d.top+1)
		return nil, false
	}
	return nil, true
}

// View implements component.Dialog.
func (d *sinceDialog) View(st *style.Styles, w, h int) component.Box {
	iw := max(10, min(w-4, 100))
	var body []string
	for _, l := range d.lines {
		// Wrapped under its own indent (a change's details under it).
		rest := strings.TrimLeft(l, " ")
		pad := strings.Repeat(" ", min(len(l)-len(rest), iw/2))
		for _, w := range style.Wrap(rest, iw-len(pad)) {
			body = append(body, pad+w)
		}
	}
	room := max(1, h-4)
	top := min(d.top, max(0, len(body)-room))
	body = body[top:min(len(body), top+room)]
	return component.Box{Title: "since your last session here", Frame: style.Warn, Body: body, Width: iw}
}

// Help implements component.Dialog.
func (d *sinceDialog) Help() []component.Hint {
	return []component.Hint{{Key: "up/down", Desc: "scroll"}, {Key: "esc", Desc: "close"}}
}
