package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions"
	gitdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/git"
	gitpanel "github.com/flightdeck-dev/flightdeck/tui/panels/git"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The git panel (tui/panels/git) and its dialogs (tui/dialogs/git), tied
// to the cockpit: why its keys cannot act for the rest of the cockpit,
// the answers of its commands, and quitting while an action runs.

// GitControl acts on the server's git checkout behind the git panel (g);
// *sessions.Git implements it. See gitpanel.Control.
type GitControl = gitpanel.Control

var _ GitControl = (*sessions.Git)(nil)

// GitRefreshMsg is the answer of the Refresh made when the git panel
// opens: the fresh event.GitStatus itself arrives as an event, so only an
// error is reported here.
type GitRefreshMsg = gitpanel.RefreshMsg

// GitActionMsg is the answer of a git action started from the panel.
type GitActionMsg = gitpanel.ActionMsg

// GitLogMsg is the answer of the checkout picker's Log.
type GitLogMsg = gitdialog.LogMsg

// GitPreviewMsg is the answer of a Preview asked from the checkout picker.
type GitPreviewMsg = gitdialog.PreviewMsg

// GitSnapshotsMsg is the answer of the snapshots list's Snapshots.
type GitSnapshotsMsg = gitdialog.SnapshotsMsg

// wireGit ties the git panel and the dialogs it opens to the model.
func (m *Model) wireGit() {
	p := m.git
	p.Now = func() time.Time { return m.now }
	p.ReadOnly = func(what string) string { return m.refusal(what + " would change the host") }
	p.Busy = func(what string) string {
		if m.bench.RepeatRun.Running {
			return "a repeat is running: " + what + " would change the code its launches measure (R stops it)"
		}
		if m.bisRun.running {
			return "a bisect is running: it checks out the commits it measures itself; " + what + " would change them (X cancels it)"
		}
		return notConnected(m)
	}
	p.Flash = m.flash
	p.Record = m.recorder
	p.Ctx = func() context.Context { return m.ctx }
	p.Bisect = m.bisectFromGit
	h := &gitdialog.Dialogs{
		Panel:  p,
		Ctx:    p.Ctx,
		Now:    func() time.Time { return m.now },
		Flash:  m.flash,
		Push:   m.overlay.Push,
		Remove: m.overlay.Remove,
		Inputs: m.inputStyles,
		Ctl:    p.Ctl,
		// The tok/s measured at each commit: this session's experiments
		// and the host's earlier ones (the experiments panel's).
		Measured: func(commit string) string { return m.exp.Measured(commit) },
	}
	p.Dialogs = h
}

// toggleGit opens the panel (acknowledging a HEAD move, and refreshing
// the status unless this is a replay) or closes it.
func (m *Model) toggleGit() tea.Cmd {
	if m.git.Open {
		m.git.Close()
		return nil
	}
	m.exp.Open = false
	m.bis.Open = false
	m.showHelp = false
	return m.git.Show(!m.opts.ReadOnly)
}

// gitResult routes the answer of a git tea.Cmd to the panel or the dialog
// that asked; tea.Quit when q was pressed while the action ran.
func (m *Model) gitResult(msg tea.Msg) tea.Cmd {
	switch r := msg.(type) {
	case GitRefreshMsg, GitActionMsg:
		if m.git.Result(msg) {
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
	if m.bench.RepeatRun.Running {
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
	if m.git.QuitWhen {
		m.quitting = true
		return tea.Quit
	}
	m.git.QuitWhen = true
	m.flash(gitQuitText, style.Warn)
	return nil
}
