package tui

// The running server's code against HEAD: the header's "server a6d51c0
// != HEAD e7b9c70" from the moment HEAD moves away from the commit the
// server was launched from (a git pull outside, a checkout without a
// relaunch) until the next launch. What the server runs is known only
// for a launch this cockpit saw (event.ServerLaunched, live or in the
// journal it replays): HEAD at that moment, then the launch experiment's
// fingerprint (event.ExperimentFingerprint's Git.Head, captured at the
// launch), which is the journal's record of it. A server the cockpit
// adopted (found running) has a known commit only when the experiments
// ledger or the host's history holds the launch-started experiment of
// its log (adoptedCode); else it shows nothing more.

import (
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// serverCode is the commit the running server was launched from, as far
// as this cockpit knows.
type serverCode struct {
	commit  string // full commit id (or as much as known); "" unknown
	short   string // abbreviated, as the header shows it
	pending bool   // launched while HEAD was unknown: the next HEAD read is the launch's
	expWait bool   // the launch's exp-start has not come yet
	exp     string // the experiment the launch started: its fingerprint names the commit
	logPath string // the launch's log file: a server status naming another is another launch's server
}

// launched records a launch at HEAD commit (short), "" when HEAD is not
// known yet.
func (c *serverCode) launched(l event.ServerLaunched, commit, short string) {
	*c = serverCode{commit: commit, short: short, pending: commit == "", expWait: true,
		logPath: sanitize.String(l.Record.Launch.LogPath)}
}

// started notes the experiment a launch started (the first launch-started
// one after it).
func (c *serverCode) started(s event.ExperimentStart) {
	if c.expWait && s.Trigger == event.TriggerLaunch {
		c.exp, c.expWait = s.ID, false
	}
}

// fingerprinted takes the commit of the launch experiment's fingerprint;
// short is how long HEAD's abbreviation is.
func (c *serverCode) fingerprinted(f event.ExperimentFingerprint, short int) {
	if c.exp == "" || f.Exp != c.exp || f.Fingerprint.Git == nil || f.Fingerprint.Git.Head == "" {
		return
	}
	c.commit = sanitize.String(f.Fingerprint.Git.Head)
	c.short = c.commit[:min(len(c.commit), max(short, 7))]
	c.pending = false
}

// head takes HEAD as read (commit, short) when the launch came before
// any HEAD was known.
func (c *serverCode) head(commit, short string) {
	if c.pending && commit != "" {
		c.commit, c.short, c.pending = commit, short, false
	}
}

// adoptedCode gives a server this cockpit did not see launched (st, a
// status naming its log) the commit of the newest launch-started
// experiment with the same log, this session's or an earlier session's
// of the host (the history event): its fingerprint's HEAD. Nothing
// changes when no experiment matches.
func (m *Model) adoptedCode(st event.ServerStatus) {
	c := &m.code
	if c.commit != "" || c.pending || !st.Phase.Up() || st.LogPath == "" {
		return
	}
	log := sanitize.String(st.LogPath)
	exps := m.exp.Known() // this session's and the host's earlier ones
	for i := len(exps) - 1; i >= 0; i-- {
		e := &exps[i]
		if e.StartedBy != event.TriggerLaunch || e.Fingerprint == nil || e.Fingerprint.Git == nil || e.Fingerprint.Git.Head == "" {
			continue
		}
		l := e.Launch
		if l == nil {
			l = e.Fingerprint.Launch
		}
		if l != nil && sanitize.String(l.LogPath) == log {
			head := sanitize.String(e.Fingerprint.Git.Head)
			*c = serverCode{commit: head, short: head[:min(len(head), max(len(m.headShort), 7))], logPath: log}
			return
		}
	}
}

// setHead records HEAD's full commit id as an event read it ("" when
// unknown), and gives it to a launch waiting for it.
func (m *Model) setHead(commit, short string) {
	m.headCommit = sanitize.String(commit)
	if short == "" {
		short = m.headCommit[:min(len(m.headCommit), 7)]
	}
	m.code.head(m.headCommit, sanitize.String(short))
}

// serverCodeDiffers is the abbreviated commit the running server was
// launched from when it differs from HEAD; ok is false when they are the
// same, either is unknown, or no server of that launch runs (none, exited,
// killed, or the status names another launch's log: another cockpit
// relaunched it).
func (m *Model) serverCodeDiffers() (short string, ok bool) {
	c := &m.code
	if c.commit == "" || m.headCommit == "" || sameCommit(c.commit, m.headCommit) {
		return "", false
	}
	if m.srv.hasSt {
		switch st := &m.srv.st; {
		case st.Phase == event.PhaseNone, st.Phase == event.PhaseExited, st.Phase == event.PhaseKilled:
			return "", false
		case c.logPath != "" && st.LogPath != "" && st.LogPath != c.logPath:
			return "", false
		}
	}
	return c.short, true
}

// sameCommit reports whether a and b name the same commit, either being
// an abbreviation of the other.
func sameCommit(a, b string) bool {
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// headSeg is the header's HEAD field: "HEAD e7b9c70 <subject> (+2
// dirty)", or, while the server runs other code, "server a6d51c0 != HEAD
// e7b9c70 ..." in the warning tone; both shortened to the commits when
// narrow. HEAD outranks the host's address at narrow widths (headOverHost);
// the mismatch outranks a healthy "connected" and the env profile too.
// ASCII "!=": the not-equal sign is ambiguous-width.
func (m *Model) headSeg() seg {
	h := "HEAD " + m.head
	short, _, _ := strings.Cut(m.head, " ")
	if code, ok := m.serverCodeDiffers(); ok {
		pre := "server " + code + " != "
		return seg{text: pre + h, short: pre + "HEAD " + short, tone: style.Warn, prio: prioServerCode}
	}
	return seg{text: h, short: "HEAD " + short, tone: style.Text, prio: prioHead}
}
