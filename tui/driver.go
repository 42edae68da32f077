package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/driver"
)

// driverState is who drives the host as the last driver.State said
// (driver lock: one cockpit acts, the others watch).
type driverState struct {
	st  driver.State
	has bool
	// note is the last change's words ("bob@desk took over at 10:15:02"),
	// shown as a banner until the next key; at is when it arrived.
	note string
	at   time.Time
}

// applyDriver takes a driver.State: the role, the holder and, when the
// role changed, the note. Losing the lock closes an open action form:
// its action would now be refused.
func (m *Model) applyDriver(p driver.State, at time.Time) {
	d := &m.drv
	was := d.has && d.st.Role == driver.RoleDriving
	if d.has && d.st.Role != p.Role && strings.HasPrefix(m.status, "read-only: ") {
		m.status = "" // a refusal of the old role's
	}
	d.st, d.has = p, true
	if p.Note != "" {
		d.note, d.at = sanitizeString(p.Note), at
	}
	if was && p.Role == driver.RoleWatching && !m.opts.ReadOnly {
		switch m.modal {
		case modalKill, modalLaunch, modalProfile:
			m.modal = modalNone
			m.form, m.picker = nil, nil
		}
	}
}

// watching reports a live cockpit that another cockpit's lock makes
// read-only: its keys that act say who drives instead.
func (m *Model) watching() bool {
	return !m.opts.ReadOnly && m.drv.has && m.drv.st.Role == driver.RoleWatching
}

// readOnly reports that keys that act are refused: a replay or follower,
// or a cockpit watching another one drive.
func (m *Model) readOnly() bool { return m.opts.ReadOnly || m.watching() }

// watchingWhy is the answer to a key that would act while another cockpit
// drives: "read-only: alice@laptop drives (since 10:02:03); flightdeck
// connect --take-over takes over".
func (m *Model) watchingWhy() string {
	cmd := sanitizeString(m.opts.TakeOver)
	if cmd == "" {
		cmd = "flightdeck connect --take-over"
	}
	return "read-only: " + m.holderText(true) + "; " + cmd + " takes over"
}

// holderText is "alice@laptop pid 4123 drives (since 10:02:03)",
// "alice@laptop" with since false; "another cockpit" when the lock names
// nobody.
func (m *Model) holderText(since bool) string {
	h := m.drv.st.Holder
	who := sanitizeString(h.User)
	if mc := sanitizeString(h.Machine); mc != "" {
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
	case m.watching():
		return seg{text: "read-only: " + m.holderText(false) + " drives", short: "read-only", tone: toneWarn, cut: true}, true
	case m.opts.ReadOnly && m.drv.st.Role == driver.RoleDriving:
		// A replay or follower of the driving cockpit's journal.
		return seg{text: "driver " + m.holderText(false) + m.sinceText(), short: "driver", tone: toneText, prio: prioConn}, true
	case m.opts.ReadOnly && m.drv.st.Role == driver.RoleWatching:
		// The journal's cockpit was watching: another one drove.
		return seg{text: "watching; " + m.holderText(false) + " drives" + m.sinceText(), short: "watching", tone: toneWarn, prio: prioConn}, true
	}
	return seg{}, false
}

// driverBanners are the lines under the header about the lock: while
// watching, who drives and how to take over; after a change, its note
// (until the next key clears it); a lock that cannot be read.
func (m *Model) driverBanners() []banner {
	d := &m.drv
	if !d.has {
		return nil
	}
	var out []banner
	if m.watching() {
		out = append(out, banner{text: m.watchingWhy(), short: "read-only: " + m.holderText(true), tone: toneWarn})
	}
	if d.note != "" && !m.opts.ReadOnly {
		out = append(out, banner{text: d.note, tone: toneAccent})
	}
	if e := sanitizeString(d.st.Err); e != "" && !m.opts.ReadOnly {
		out = append(out, banner{text: "driver lock: " + e, short: "driver lock: " + strings.SplitN(e, ":", 2)[0], tone: toneWarn})
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
// title: "follow" for a follower of a journal being written, else "replay".
func (m *Model) modeWord() string {
	if m.opts.Replay.Follow {
		return "follow"
	}
	return "replay"
}

// roPrefix starts the answer to a key that would act in a read-only
// cockpit: "read-only replay", or "follow: read-only".
func (m *Model) roPrefix() string {
	if m.opts.Replay.Follow {
		return "follow: read-only"
	}
	return "read-only replay"
}
