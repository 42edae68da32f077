package tui

import (
	"context"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/launch"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/profile"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// driverState is who drives the host as the last event.DriverState said
// (driver lock: one cockpit acts, the others watch).
type driverState struct {
	st  event.DriverState
	has bool
	// note is the last change's words ("bob@desk took over at 10:15:02"),
	// shown as a banner until the next key; at is when it arrived; last
	// is the last note shown, cleared or not.
	note, last string
	at         time.Time
}

// applyDriver takes a event.DriverState: the role, the holder and, when it is
// new, the note. Losing the lock (to a take-over, or unsure of it) closes
// an open action form, whose action would now be refused, and stops a
// benchmark or repeat started here: another cockpit drives the server now.
func (m *Model) applyDriver(p event.DriverState, at time.Time) {
	d := &m.drv
	was := d.has && d.st.Role == event.RoleDriving
	if d.has && d.st.Role != p.Role && strings.HasPrefix(m.status, "read-only") {
		m.status = "" // a refusal of the old role's
	}
	if p.Role == event.RoleDriving && strings.Contains(m.srv.failed, "read-only: ") {
		// A kill or launch refused while another cockpit drove: no
		// longer true once this one drives again.
		m.srv.failed = ""
	}
	if d.has && d.st.Role != p.Role && p.Note == "" {
		d.note = "" // the old role's words
	}
	d.st, d.has = p, true
	if n := sanitize.String(p.Note); n != "" && n != d.last {
		// A note carried over into a later state (an error, its
		// recovery) is not news: it shows once.
		d.note, d.last, d.at = n, n, at
	}
	if was && p.Role != event.RoleDriving && !m.opts.ReadOnly {
		for _, id := range []string{dialogKill, launch.ID, profile.ID} {
			m.overlay.Remove(id)
		}
		m.bench.StopRuns()
	}
}

// watching reports a live cockpit that another cockpit's lock makes
// read-only: its keys that act say who drives instead.
func (m *Model) watching() bool {
	return !m.opts.ReadOnly && m.drv.has && (m.drv.st.Role == event.RoleWatching || m.drv.st.Role == event.RoleUnsure)
}

// watchingWhy is the answer to a key that would act while another cockpit
// drives: "read-only: alice@laptop drives (since 10:02:03); flightdeck
// connect --take-over takes over".
func (m *Model) watchingWhy() string {
	if m.drv.st.Role == event.RoleUnsure {
		return "read-only until the host answers: the driver lock could not be refreshed, and another cockpit may take it"
	}
	return "read-only: " + m.holderText(true) + "; " + m.takeOverHint() + " takes over"
}

// takeOverHint is how this cockpit's user takes over: "T" with a
// DriverControl, else the command line that starts a driving cockpit.
func (m *Model) takeOverHint() string {
	if m.opts.Driver != nil {
		return "T"
	}
	return "flightdeck connect HOST --take-over"
}

// holderText is "alice@laptop pid 4123 drives (since 10:02:03)",
// "alice@laptop" with since false; "another cockpit" when the lock names
// nobody.
func (m *Model) holderText(since bool) string {
	h := m.drv.st.Holder
	who := sanitize.String(h.User)
	if mc := sanitize.String(h.Machine); mc != "" {
		if who == "" {
			who = "?"
		}
		who += "@" + mc
	}
	if who == "" {
		who = "another cockpit"
	}
	if !since {
		return who
	}
	if h.PID > 0 {
		who += " pid " + strconv.Itoa(h.PID)
	}
	who += " drives"
	if !h.Since.IsZero() {
		who += " (since " + h.Since.Local().Format("15:04:05") + ")"
	}
	return who
}

// driverSeg is the header's role field: "read-only" while watching,
// "follows alice@laptop" style text in a replay; none while driving.
func (m *Model) driverSeg() (seg, bool) {
	if !m.drv.has {
		return seg{}, false
	}
	switch {
	case m.watching() && m.drv.st.Role == event.RoleUnsure:
		return seg{text: "read-only: lock unsure", short: "read-only", tone: style.Warn, cut: true}, true
	case m.watching():
		return seg{text: "read-only: " + m.holderText(false) + " drives", short: "read-only", tone: style.Warn, cut: true}, true
	case m.opts.ReadOnly && m.drv.st.Role == event.RoleDriving:
		// A replay or follower of the driving cockpit's journal.
		return seg{text: "driver " + m.holderText(false) + m.sinceText(), short: "driver " + m.holderText(false), tone: style.Text, prio: prioConn}, true
	case m.opts.ReadOnly && m.drv.st.Role == event.RoleUnsure:
		return seg{text: "driver lock unsure", short: "unsure", tone: style.Warn, prio: prioConn}, true
	case m.opts.ReadOnly && m.drv.st.Role == event.RoleWatching:
		// The journal's cockpit was watching: another one drove.
		return seg{text: "watching; " + m.holderText(false) + " drives" + m.sinceText(), short: "watching; " + m.holderText(false) + " drives", tone: style.Warn, prio: prioConn}, true
	}
	return seg{}, false
}

// driverBanners are the lines under the header about the lock: while
// watching, who drives and how to take over; after a change, its note
// (until the next key clears it); a lock that cannot be read.
func (m *Model) driverBanners() []component.Banner {
	d := &m.drv
	if !d.has {
		return nil
	}
	var out []component.Banner
	switch {
	case m.watching() && m.drv.st.Role == event.RoleUnsure:
		out = append(out, component.Banner{Text: m.watchingWhy(), Short: "read-only until the host answers", Tone: style.Warn})
	case m.watching():
		out = append(out, component.Banner{Text: m.watchingWhy(), Short: "read-only: " + m.holderText(true), Tone: style.Warn})
	}
	if d.note != "" && !m.opts.ReadOnly {
		out = append(out, component.Banner{Text: d.note, Tone: style.Accent})
	}
	if e := sanitize.String(d.st.Err); e != "" && !m.opts.ReadOnly {
		out = append(out, component.Banner{Text: "driver lock: " + e, Short: "driver lock: " + strings.SplitN(e, ":", 2)[0], Tone: style.Warn})
	}
	return out
}

// sinceText is " since 10:02:03", the holder's start; "" when unknown.
func (m *Model) sinceText() string {
	if t := m.drv.st.Holder.Since; !t.IsZero() {
		return " since " + t.Local().Format("15:04:05")
	}
	return ""
}

// modeWord is a read-only cockpit's mode in the header and the window
// title: Options.Mode's word ("follow" for a follower of a journal being
// written), else "replay".
func (m *Model) modeWord() string {
	if w := m.opts.Mode.Word; w != "" {
		return w
	}
	return "replay"
}

// roPrefix starts the answer to a key that would act in a read-only
// cockpit: Options.Mode's refusal ("follow: read-only"), else "read-only
// replay".
// refusal is why nothing may change the host or the journal from this
// cockpit, "" when it may: a read-only mode ("read-only replay: does"),
// or another cockpit drives (watchingWhy).
func (m *Model) refusal(does string) string {
	switch {
	case m.opts.ReadOnly:
		return m.roPrefix() + ": " + does
	case m.watching():
		return m.watchingWhy()
	}
	return ""
}

// busyText is why no other action may start while the cockpit kills or
// launches the server, "" when it does neither.
func (m *Model) busyText() string {
	switch m.srv.busy {
	case actionKill:
		return "a kill is in progress"
	case actionLaunch:
		return "a launch is in progress"
	}
	return ""
}

func (m *Model) roPrefix() string {
	if r := m.opts.Mode.Refusal; r != "" {
		return r
	}
	return "read-only replay"
}

// DriverControl takes the host's driver lock over (T). The cockpit calls
// it in a tea.Cmd; the lock's event.DriverState event then tells the outcome.
type DriverControl interface {
	// TakeOver takes the lock whoever holds it; the cockpit that held it
	// turns read-only at its next heartbeat. It errors when the host
	// cannot be reached.
	TakeOver(ctx context.Context) error
}

// TakeOverResultMsg is the answer of a take-over (T): nil Err when the
// lock was written.
type TakeOverResultMsg struct{ Err error }

// takeOverUnavailable is why T cannot act: a replay, no lock, or this
// cockpit drives already.
func takeOverUnavailable(m *Model) string {
	switch {
	case m.opts.ReadOnly:
		return m.roPrefix() + ": a take-over would change who drives the host"
	case !m.drv.has:
		return "no driver lock here: this cockpit acts alone"
	case m.opts.Driver == nil:
		return "this cockpit cannot take over: flightdeck connect HOST --take-over starts one that does"
	case m.drv.st.Role == event.RoleDriving:
		return "this cockpit drives the host already"
	}
	return ""
}

// takeOverQuestion is T's question.
func (m *Model) takeOverQuestion() string {
	if m.drv.st.Role == event.RoleUnsure {
		return "Take the driver lock back? Another cockpit may have taken it while the host did not answer; it would turn read-only."
	}
	return "Take over from " + m.holderText(false) + "? Its keys stop acting, and a benchmark or repeat it runs stops (a relaunch in flight finishes)."
}

// confirmTakeOver asks before T takes the driver lock over.
func (m *Model) confirmTakeOver() {
	m.overlay.Push(&component.Confirm{Name: dialogTakeOver, Title: "take over", Frame: style.Warn, Question: m.takeOverQuestion,
		YesHelp: "take over", Yes: m.takeOver, No: func() tea.Cmd { m.flash("take-over cancelled", style.Dim); return nil }})
}

// takeOver takes the driver lock over, confirmed with y, in a tea.Cmd.
func (m *Model) takeOver() tea.Cmd {
	ctl, ctx := m.opts.Driver, m.ctx
	m.flash("taking over ...", style.Dim)
	rec := m.recorder("take over")
	return func() tea.Msg {
		rec()
		return TakeOverResultMsg{Err: ctl.TakeOver(ctx)}
	}
}
