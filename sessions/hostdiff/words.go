package hostdiff

import (
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Arrow joins the two sides of a change. ASCII: the arrow characters are
// ambiguous-width (two cells in some CJK setups), which would misalign a
// terminal in tmux.
const Arrow = " -> "

// Headline is the changes' first line, naming the first change:
//
//	first session on this host
//	no earlier session found for this host; not read: journal a: …
//	nothing changed since your last session here (2026-12-01 10:15, 17 h ago)
//	since your last session here (yesterday 10:15): HEAD a6d51c0 -> e7b9c70 by git pull, 3 commits, touches pynccl.py, parallel_state.py
//
// files is how many file names the HEAD move names; now is the time to
// count the age from.
func Headline(c event.HostChanges, now time.Time, files int) string {
	switch {
	case !c.Seen && len(c.Errs) > 0:
		return "no earlier session found for this host" + unread(c)
	case !c.Seen:
		return "first session on this host"
	case len(c.Changes) == 0:
		return "nothing changed since your last session here (" + Stamp(c.Since, now) + ", " + Ago(c.Since, now) + ")" + unread(c)
	}
	return Since(c, now) + ": " + ChangeText(c.Changes[0], files)
}

// Since is the head of a headline with changes: "since your last session
// here (yesterday 10:15)".
func Since(c event.HostChanges, now time.Time) string {
	return "since your last session here (" + When(c.Since, now) + ")"
}

// unread says what could not be read, so that "nothing changed" is not
// taken for more than it is.
func unread(c event.HostChanges) string {
	if len(c.Errs) == 0 {
		return ""
	}
	return "; not read: " + strings.Join(c.Errs, "; ")
}

// ChangeText is one change in words, naming at most files paths:
//
//	HEAD a6d51c0 -> e7b9c70 by git pull, 3 commits, touches pynccl.py, parallel_state.py
//	branch main -> feature
//	patch clean -> 2 files, +12 -3
//	torch 2.5.1 -> 2.6.0
//	GPU 3 gone (NVIDIA H200)
//	GPU 3 PCIe Gen5 x16 -> Gen4 x8
//	env NCCL_ALGO Ring -> Tree
//	env NCCL_PROTO unset -> LL
//	kernel 6.8.0-49 -> 6.8.0-51
func ChangeText(ch event.HostChange, files int) string {
	switch {
	case ch.Group == GroupGit && ch.Name == "HEAD":
		s := "HEAD " + short(ch.Was, 7) + Arrow + short(ch.Now, 7)
		var parts []string
		if len(ch.How) > 0 {
			parts = append(parts, "by git "+strings.Join(ch.How, ", git "))
		}
		if r := ch.Range; r != nil {
			if c := commitCount(max(r.AheadTotal, len(r.Ahead)), max(r.BehindTotal, len(r.Behind))); c != "" {
				parts = append(parts, c)
			}
			if n := max(r.FilesTotal, len(r.Files)); n > 0 && files > 0 {
				parts = append(parts, "touches "+baseNames(CodeFirst(r.Files), r.FilesTotal, files))
			}
		}
		if len(parts) > 0 {
			s += " " + strings.Join(parts, ", ")
		}
		return s
	case ch.Group == GroupGPUs && ch.Now == "" && len(ch.Detail) > 0 && strings.HasPrefix(ch.Detail[0], "gone"):
		return ch.Name + " gone" + paren(ch.Was)
	case ch.Group == GroupGPUs && ch.Was == "" && len(ch.Detail) > 0 && strings.HasPrefix(ch.Detail[0], "new"):
		return ch.Name + " new" + paren(ch.Now)
	case ch.Group == GroupLaunch && ch.Name == "command":
		return "launch command changed: " + ch.Now
	case ch.Group == GroupLaunch:
		return ch.Name + " " + orUnset(ch.Was) + Arrow + orUnset(ch.Now)
	}
	return ch.Name + " " + ch.Was + Arrow + ch.Now
}

// Lines are the changes in full: the headline's head, then one line per
// change (indented two spaces) and its details (four), for `flightdeck
// server status` and the cockpit's list of them all.
func Lines(c event.HostChanges, now time.Time) []string {
	if !c.Seen || len(c.Changes) == 0 {
		return []string{Headline(c, now, 3)}
	}
	from := c.Journal
	if c.Mirror {
		from = "the host's mirror " + from
	}
	if c.Exp != "" {
		from += " (" + c.Exp + "'s fingerprint)"
	}
	out := []string{Since(c, now) + ", " + Ago(c.Since, now) + ": " + plural(len(c.Changes), "change"),
		"  recorded in " + from}
	for _, ch := range c.Changes {
		out = append(out, "  "+ChangeText(ch, 5))
		for _, d := range ch.Detail {
			out = append(out, "    "+d)
		}
	}
	for _, e := range c.Errs {
		out = append(out, "  not read: "+e)
	}
	return out
}

// When is a time as a banner names it: "10:15" today, "yesterday 10:15",
// "2026-11-28 10:15" before.
func When(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	y, m, d := t.Date()
	ny, nm, nd := now.Date()
	switch {
	case y == ny && m == nm && d == nd:
		return "today " + t.Format("15:04")
	case now.AddDate(0, 0, -1).Format(time.DateOnly) == t.Format(time.DateOnly):
		return "yesterday " + t.Format("15:04")
	}
	return Stamp(t, now)
}

// Stamp is a time as "2026-12-01 10:15" (local).
func Stamp(t, _ time.Time) string { return t.Local().Format("2006-01-02 15:04") }

// Ago is how long before now t was: "40 s ago", "5 min ago", "17 h ago",
// "3 d ago".
func Ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return strconv.Itoa(max(0, int(d.Seconds()))) + " s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + " min ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + " h ago"
	}
	return strconv.Itoa(int(d.Hours()/24)) + " d ago"
}

// commitCount is "3 commits" (forward), "2 commits back", or "2 commits
// ahead, 3 back"; "" when neither.
func commitCount(fwd, back int) string {
	switch {
	case fwd > 0 && back > 0:
		return plural(fwd, "commit") + " ahead, " + strconv.Itoa(back) + " back"
	case back > 0:
		return plural(back, "commit") + " back"
	case fwd > 0:
		return plural(fwd, "commit")
	}
	return ""
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}
