package tui

// The bisect (issue 18) tied to the cockpit: the panel (i,
// tui/panels/bisect) that the stream's bisect events drive, the start
// dialog (tui/dialogs/bisect) opened from a compare view (b) or from a
// reflog entry of the git panel (I), the run started from here (its
// cancelable context, X to cancel it), and what the rest of the cockpit
// refuses while it runs.

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	sbisect "github.com/flightdeck-dev/flightdeck/sessions/bisect"
	scompare "github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	bisectdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/bisect"
	cmpdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/compare"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// BisectControl runs the cockpit's bisects; *sessions.Session implements
// it. Both methods do I/O and run only inside tea.Cmds. Bisect publishes
// event.BisectStart, event.BisectLaunch, event.BisectEnd and
// event.BisectProgress on the stream (the panel draws those) and returns
// when the bisect ends or ctx does (then after restoring the checkout).
type BisectControl interface {
	// BisectRange lists the commits a bisect from good to bad would
	// test, oldest first, endpoints included.
	BisectRange(ctx context.Context, good, bad string) ([]event.BisectCommit, error)
	// Bisect runs one bisect to its end.
	Bisect(ctx context.Context, cfg sessions.BisectConfig) (sbisect.Outcome, error)
}

var _ BisectControl = (*sessions.Session)(nil)

// BisectRangeMsg is the answer of the start dialog's range read.
type BisectRangeMsg = bisectdialog.RangeMsg

// BisectResultMsg is the answer of a bisect started here: its outcome,
// or why it stopped (ctx's error when it was cancelled).
type BisectResultMsg struct {
	Outcome sbisect.Outcome
	Err     error
}

// bisectRun is the bisect started from this cockpit.
type bisectRun struct {
	cancel  context.CancelFunc // ends its context; nil when none runs from here
	running bool               // its command has not answered yet
	stopped bool               // X was confirmed: its context is cancelled
	seq     int                // the start dialogs' range reads
}

// dialogBisectCancel is the cancel question's ID.
const dialogBisectCancel = "bisect-cancel"

// bisectBusyText is the answer to a key that would launch, kill or check
// out while a bisect runs from here.
const bisectBusyText = "a bisect is running: it checks out and relaunches the server itself (X cancels it)"

// wireBisect ties the bisect panel to the model.
func (m *Model) wireBisect() {
	p := m.bis
	p.Now = func() time.Time { return m.now }
	p.Opened = func() {
		m.showHelp = false
		m.git.Close()
		m.exp.Open = false
	}
	p.Cancel = m.confirmBisectCancel
	p.CancelWhy = func() string {
		if why := m.refusal("a cancel would change the host"); why != "" {
			return why
		}
		switch {
		case m.bisRun.stopped:
			return "the bisect is being cancelled: the checkout is being restored"
		case m.bisRun.running:
			return ""
		case p.Running() && m.opts.ReadOnly:
			return "read-only: the bisect ran elsewhere"
		}
		return "no bisect is running from here"
	}
}

// bisectBusy is bisectBusyText while a bisect runs from here, else "".
func (m *Model) bisectBusy() string {
	if m.bisRun.running {
		return bisectBusyText
	}
	return ""
}

// bisectStartWhy is why no bisect can start now; "" when one can.
func (m *Model) bisectStartWhy() string {
	if why := m.refusal("a bisect would check out and relaunch"); why != "" {
		return why
	}
	switch {
	case m.opts.Bisect == nil:
		return "bisect not available here: it needs server control, a checkout (--repo) and a journal"
	case m.bisRun.running:
		return "a bisect is running already (i shows it, X cancels it)"
	case m.bench.RepeatRun.Running:
		return "a repeat is running: wait for it, or R stops it"
	case m.bench.BenchRun.Running:
		return "a benchmark is running: wait for it, or b stops it"
	case m.git.Doing() != "":
		return "git is busy (" + m.git.Doing() + ")"
	}
	if why := m.busyText(); why != "" {
		return why
	}
	return notConnected(m)
}

// bisectFromCompare opens the start dialog for the compare view of d
// (sides a, b): good is the faster side's commit by the server log's
// tok/s (higher is better), bad the slower's.
func (m *Model) bisectFromCompare(d *scompare.Diff, a, b string) tea.Cmd {
	if why := m.bisectStartWhy(); why != "" {
		m.flash(why, style.Warn)
		return nil
	}
	ca, cb := d.A.Commit(), d.B.Commit()
	switch {
	case ca == "" || cb == "":
		m.flash("bisect: the commit of "+sanitize.Name(map[bool]string{true: a, false: b}[ca == ""])+" is not known (no fingerprint)", style.Warn)
		return nil
	case ca == cb:
		m.flash("bisect: both experiments are at "+git.ShortID(sanitize.Name(ca))+": nothing to bisect", style.Warn)
		return nil
	}
	row := d.Row(scompare.MetricLogTokS)
	if row == nil || row.A.N == 0 || row.B.N == 0 {
		m.flash("bisect: both sides need a tok/s from the server log to say which commit is good", style.Warn)
		return nil
	}
	good, bad := side{a, ca, row.A.Median}, side{b, cb, row.B.Median}
	if row.B.Median > row.A.Median {
		good, bad = bad, good
	}
	return m.openBisectStart(good.commit, bad.commit, good.text(), bad.text(), "compare "+sanitize.Name(a)+" vs "+sanitize.Name(b))
}

// side is one experiment of a compare, for the start dialog.
type side struct {
	exp, commit string
	tokS        float64
}

func (s side) text() string {
	return git.ShortID(sanitize.Name(s.commit)) + "  " + sanitize.Name(s.exp) + "  " + report.FormatNum(s.tokS) + " tok/s"
}

// bisectFromGit opens the start dialog for a reflog entry of the git
// panel: from its commit (good: where HEAD was, e.g. before a pull) to
// HEAD (bad: what runs slower now).
func (m *Model) bisectFromGit(e event.RefEntry) tea.Cmd {
	if why := m.bisectStartWhy(); why != "" {
		m.flash(why, style.Warn)
		return nil
	}
	st := m.git.Status()
	head := st.Head.ID
	if head == "" || e.ID == head {
		m.flash("bisect: that entry is HEAD itself; choose where HEAD was before (an older entry)", style.Warn)
		return nil
	}
	short := sanitize.Name(e.Short)
	if short == "" {
		short = git.ShortID(sanitize.Name(e.ID))
	}
	headText := git.ShortID(sanitize.Name(head)) + "  HEAD " + style.Truncate(sanitize.Name(st.Head.Subject), 50)
	return m.openBisectStart(e.ID, head, short+"  "+style.Truncate(sanitize.Name(e.Message), 50), headText, "git panel: reflog entry to HEAD")
}

// openBisectStart pushes the start dialog and returns its range read.
func (m *Model) openBisectStart(good, bad, goodText, badText, from string) tea.Cmd {
	method, _ := sbisect.Config{}.WithDefaults()
	d := &bisectdialog.Start{Good: good, Bad: bad, GoodText: goodText, BadText: badText, From: from, Method: method, Mean: m.meanLaunch(),
		Cancelled: func() { m.flash("bisect not started", style.Dim) }}
	d.Run = func() tea.Cmd { return m.startBisect(sessions.BisectConfig{Good: good, Bad: bad}) }
	m.showHelp = false
	m.overlay.Push(d)
	m.bisRun.seq++
	var r bisectdialog.Ranger
	if m.opts.Bisect != nil {
		r = m.opts.Bisect
	}
	return d.Read(m.ctx, r, m.bisRun.seq)
}

// meanLaunch is the mean wall time of one launch: the latest bisect's,
// else the ended experiments' that a launch started (from the launch to
// their end); 0 when nothing was measured.
func (m *Model) meanLaunch() time.Duration {
	if d := m.bis.MeanLaunch(); d > 0 {
		return d
	}
	var sum time.Duration
	n := 0
	for _, e := range m.exp.Ledger().Experiments() {
		if e.Open() || e.Result.N == 0 || (e.StartedBy != event.TriggerLaunch && e.StartedBy != event.TriggerRelaunch) {
			continue
		}
		if d := e.Ended.Sub(e.Started); d > 0 {
			sum += d
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// bisectRangeResult hands a range read's answer to the open start dialog.
func (m *Model) bisectRangeResult(r BisectRangeMsg) {
	if d, ok := m.overlay.Find(bisectdialog.ID).(*bisectdialog.Start); ok {
		d.Loaded(r)
	}
}

// startBisect runs cfg in a tea.Cmd under a context that X cancels
// (after asking); the panel opens to show it.
func (m *Model) startBisect(cfg sessions.BisectConfig) tea.Cmd {
	if why := m.bisectStartWhy(); why != "" {
		m.flash(why, style.Warn)
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.bisRun = bisectRun{cancel: cancel, running: true, seq: m.bisRun.seq}
	m.bis.CancelKey.Short = true
	m.bis.Failed("")
	// The compare view it was started from gives way to the panel.
	m.overlay.Remove(cmpdialog.ID)
	m.bis.Open = true
	m.bis.Opened()
	m.flash("bisect "+git.ShortID(sanitize.Name(cfg.Good))+".."+git.ShortID(sanitize.Name(cfg.Bad))+" started (X cancels)", style.OK)
	ctl := m.opts.Bisect
	rec := m.recorder("bisect " + git.ShortID(cfg.Good) + ".." + git.ShortID(cfg.Bad))
	return func() tea.Msg {
		defer cancel()
		rec()
		o, err := ctl.Bisect(ctx, cfg)
		return BisectResultMsg{Outcome: o, Err: err}
	}
}

// bisectResult applies the answer of the bisect started here.
func (m *Model) bisectResult(r BisectResultMsg) {
	stopped := m.bisRun.stopped
	m.bisRun = bisectRun{seq: m.bisRun.seq}
	m.bis.CancelKey.Short = false
	m.overlay.Remove(dialogBisectCancel)
	switch {
	case r.Err != nil && stopped && errors.Is(r.Err, context.Canceled):
		m.flash("bisect cancelled: the checkout and dirty work were restored (flightdeck bisect --resume continues it)", style.Warn)
	case r.Err != nil:
		m.bis.Failed(style.ErrText(r.Err))
		m.flash("bisect failed: "+style.ErrText(r.Err), style.Crit)
	default:
		tn := style.OK
		if r.Outcome.Kind != event.BisectCulprit {
			tn = style.Warn
		}
		what := sanitize.Name(r.Outcome.Kind)
		if w := sanitize.FirstLine(r.Outcome.Why); w != "" {
			what += ": " + w
		}
		m.flash("bisect done: "+what, tn)
	}
}

// confirmBisectCancel asks before X cancels the bisect started here.
func (m *Model) confirmBisectCancel() {
	m.showHelp = false
	m.overlay.Push(&component.Confirm{Name: dialogBisectCancel, Title: "cancel the bisect", Frame: style.Warn, Question: m.bisectCancelQuestion,
		YesHelp: "cancel it", Yes: m.cancelBisect, No: func() tea.Cmd { m.flash("the bisect goes on", style.Dim); return nil }})
}

// bisectCancelQuestion names the bisect and how far it got.
func (m *Model) bisectCancelQuestion() string {
	q := "Cancel the bisect"
	if id := m.bis.ID(); id != "" {
		q += " " + sanitize.Name(id)
	}
	if st := m.bis.State(); st != nil {
		q += " (" + style.Plural(st.Left(), "candidate") + " left)"
	}
	return q + "? The launch in progress finishes first, then the original checkout and dirty work are restored; flightdeck bisect --resume continues it later."
}

// cancelBisect cancels the bisect's context (X confirmed); its answer
// comes when the driver has restored the checkout.
func (m *Model) cancelBisect() tea.Cmd {
	if m.bisRun.cancel == nil || !m.bisRun.running {
		m.flash("the bisect had already ended", style.Dim)
		return nil
	}
	m.bisRun.cancel()
	m.bisRun.stopped = true
	m.flash("cancelling the bisect: restoring the checkout ...", style.Warn)
	return m.recordCmd("cancel bisect")
}
