package tui

// Update: the messages the cockpit takes (window size, keys, the answers
// of its commands, ticks) and apply, the one switch that routes each
// event.Event kind to the panels that show it.

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/panels/logtail"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Update applies one message. It never blocks and does no I/O.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	return m.update(msg)
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case EventsMsg:
		for _, ev := range msg {
			m.apply(ev)
		}
	case event.Event:
		m.apply(msg)
	case ClockMsg:
		m.observe(msg.Now)
		if !m.opts.ReadOnly {
			return m, tick()
		}
	case HeadMsg:
		m.head = sanitize.String(msg.Head)
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 1), max(msg.Height, 1)
		m.log.SetInputWidth(max(m.width-20, 10))
	case tea.BackgroundColorMsg:
		if m.opts.Theme == ThemeAuto && !m.opts.plain() {
			m.setStyles(style.Default(msg.IsDark()))
		}
	case KillResultMsg, LaunchResultMsg:
		m.actionResult(msg)
	case TakeOverResultMsg:
		if msg.Err != nil {
			m.flash("take-over failed: "+style.ErrText(msg.Err), style.Crit)
		} else if m.status == "taking over ..." {
			m.status = "" // the lock's note says whose it was
		}
	case RetryResultMsg:
		m.redialResult(msg)
	case GitRefreshMsg, GitActionMsg, GitLogMsg, GitPreviewMsg, GitSnapshotsMsg:
		return m, m.gitResult(msg)
	case ExperimentStartedMsg, ExperimentEndedMsg, ExperimentUpdatedMsg, NoteSavedMsg, BaselineMsg:
		m.exp.Result(msg)
	case BenchResultMsg:
		m.benchResult(msg)
	case RepeatResultMsg:
		return m, m.repeatResult(msg)
	case BisectRangeMsg:
		m.bisectRangeResult(msg)
	case BisectResultMsg:
		m.bisectResult(msg)
	case CompareRangeMsg:
		m.rangeResult(msg)
	case tea.PasteMsg:
		if cmd, ok := m.overlay.Paste(msg); ok {
			return m, cmd
		}
		if m.log.Typing() {
			return m, m.log.Paste(msg)
		}
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// observe advances the model's clock; it never goes backwards.
func (m *Model) observe(t time.Time) {
	if t.After(m.now) {
		m.now = t
	}
	m.exp.Expire()
	m.gpus.SetNow(m.now)
}

// apply routes one event by payload type (and GPU index inside the
// table), whatever has focus.
func (m *Model) apply(ev event.Event) {
	m.observe(ev.At)
	m.exp.Apply(ev)
	switch p := ev.Data.(type) {
	case event.ConnState:
		m.conn, m.hasConn = p, true
		if p.Host != "" {
			m.host = sanitize.String(p.Host)
		}
	case event.GPUSample:
		m.gpus.ApplySample(p, ev.At)
	case event.GPUFailure:
		m.gpus.ApplyFailure(p, ev.At)
	case event.GPUStale:
		m.gpus.ApplyStale(p, ev.At)
	case event.Xid:
		// On its GPU's row, and a line of the log at its place among the
		// server's lines (gpus.Panel.ApplyXid).
		m.gpus.ApplyXid(p, ev.At, &m.log.Tail)
	case event.GPUSource:
		// The header's field, the help and the table's words follow it;
		// a change of sampler is a line of the log.
		m.gpus.SetSource(p, ev.At, &m.log.Tail)
	case event.LogLines:
		m.log.Ingest(p)
	case event.LogNotice:
		m.log.SetNotice(p)
	case event.LogReset:
		m.log.Reset(p)
		m.rate.EndRun()
		m.server = serverState{phase: serverStarting, since: ev.At}
	case event.TokRate:
		m.rate.Apply(p)
		if !p.Dropped && m.server.phase != serverReady && m.server.phase != serverRunning {
			m.server.phase, m.server.since = serverRunning, ev.At
		}
	case event.ServerReady:
		// A run's failures stay counted until a reset, as in the parser.
		m.server.phase, m.server.name, m.server.since = serverReady, sanitize.String(p.Server), ev.At
		m.log.Mark(p.Text, logtail.LineReady)
	case event.RepoHead:
		m.head = formatHead(p)
		m.headShort = sanitize.String(p.Short)
		m.headChanged = trackedChanges(p)
		m.setHead(p.Commit, p.Short)
	case event.RepoUnreadable:
		m.head = "? (repository unreadable)"
		m.setHead("", "")
	case event.ServerLaunched:
		// The server runs HEAD as it is now (its fingerprint says for
		// sure a moment later).
		m.code.launched(p, m.headCommit, m.headShort)
		// The non-critical Xids were about the processes before it
		// (force-killing a TP server logs Xid 45 on every GPU).
		m.gpus.ClearAppXids()
	case event.ServerStatus:
		switch p.Phase {
		case event.PhaseLaunching, event.PhaseKilled, event.PhaseExited:
			m.rate.EndRun() // the next figures are another run's
		}
		m.srv.setStatus(p)
		m.adoptedCode(p)
	case event.ServerFailure:
		class := event.ServerFailureClass(sanitize.String(string(p.Class)))
		// The primary class by serverlog's own rule (FailureClass.Tier, as
		// Classifier.Primary and `flightdeck parse log` use): root causes
		// first, the first seen within a tier.
		if tier := class.Tier(); !m.server.hasFail || tier < m.server.failTier {
			m.server.fail, m.server.failTier, m.server.hasFail = class, tier, true
		}
		m.server.phase, m.server.since = serverFailed, ev.At
		m.log.Mark(p.Text, logtail.LineFailure)
	case event.GitStatus:
		m.git.SetStatus(p)
		if p.Head.Short != "" {
			m.headShort = sanitize.String(p.Head.Short)
		}
		if p.Head.ID != "" {
			m.setHead(p.Head.ID, p.Head.Short)
		}
	case event.GitAction:
		m.git.SetAction(p, ev.At)
	case event.GitMoved:
		m.git.SetMoved(p)
	case event.ExperimentEnd:
		m.exp.Ended(p, ev.At)
	case event.ExperimentUpdate:
		m.expUpdated(p)
	case event.JournalStatus:
		m.setJournal(p)
	case event.BenchStarted, event.BenchProgress, event.BenchDone:
		m.applyBench(p)
	case event.RepeatProgress:
		m.bench.Repeated(p)
	case event.History:
		m.exp.SetHistory(p)
		// An adopted server's launch may be in an earlier session's
		// journal: its commit is known now.
		m.adoptedCode(m.srv.st)
	case event.DriverState:
		m.applyDriver(p, ev.At)
	case event.ExperimentStart:
		m.code.started(p)
	case event.ExperimentFingerprint:
		m.code.fingerprinted(p, len(m.headShort))
	case event.HostChanges:
		m.since.Set(p, ev.At)
	case event.HostState:
		// what the next session compares with; the banner is host-changes'
	case event.BisectStart, event.BisectLaunch, event.BisectEnd, event.BisectProgress:
		m.bis.Apply(p, ev.At)
	case event.Baseline, event.Key,
		event.KillStep, event.LogBench, event.LogFollowError, event.Note, event.Prefill,
		event.Repeat, event.ServerHealthy, event.ServerObserved, event.Session, event.SpecDecode,
		event.Throughput, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// experiment and note kinds are the ledger's (exp.Apply above); the rest are not shown
	}
}

// trackedChanges counts h's dirty paths that are tracked (what a dirty
// patch holds), -1 when h lists fewer entries than it counts.
func trackedChanges(h event.RepoHead) int {
	if len(h.Entries) < h.Dirty {
		return -1
	}
	n := 0
	for _, e := range h.Entries {
		if !strings.HasPrefix(e, "??") {
			n++
		}
	}
	return n
}

// formatHead is the header's HEAD field: "3207427 Fix PCG MoE Error (+2
// dirty)". Remote text is sanitised; a long subject is cut.
func formatHead(h event.RepoHead) string {
	var b strings.Builder
	b.WriteString(sanitize.String(h.Short))
	if subj := sanitize.String(h.Subject); subj != "" {
		b.WriteByte(' ')
		b.WriteString(style.Truncate(subj, 40))
	}
	if h.Dirty > 0 {
		fmt.Fprintf(&b, " (+%d dirty)", h.Dirty)
	}
	return b.String()
}
