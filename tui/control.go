package tui

import (
	"context"
	"errors"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/launch"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/profile"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// ServerControl drives the inference server behind the K, L and p keys;
// *sessions.Control implements it. Request, Presets, Profiles, Plan and
// SetProfile do no I/O and are called from Update; Launch and Kill do I/O
// and run only inside a tea.Cmd.
type ServerControl interface {
	// Request is the launch form's starting point.
	Request() sessions.LaunchRequest
	// Presets and Profiles list the names the form offers.
	Presets() []string
	Profiles() []string
	// Plan resolves a request: the exact command line and the env diff
	// against the last launch, or why it cannot launch.
	Plan(sessions.LaunchRequest) (sessions.Plan, error)
	// Launch kills a running server first (waiting for its GPU memory),
	// then launches the plan.
	Launch(context.Context, sessions.Plan) (event.LaunchRecord, error)
	// Kill stops the running server and waits for its GPU memory; it
	// returns server.ErrNoServer when none runs.
	Kill(context.Context) error
	// SetProfile chooses the env profile of the next launch.
	SetProfile(name string) error
}

// action is a server action in flight (its tea.Cmd has not answered yet).
type action uint8

const (
	actionNone action = iota
	actionKill
	actionLaunch
)

// serverControl is the TUI's side of server control: the latest
// event.ServerStatus (sanitised), the action in flight, its last error, and the
// profile picked with p for the next launch.
type serverControl struct {
	st     event.ServerStatus
	hasSt  bool
	busy   action
	doing  string // what the action in flight does, for its banner
	brief  string // doing for a narrow terminal
	failed string // the last action's error, sanitised; "" when none
	next   string // profile picked with p, until a launch from here succeeds
}

// setStatus stores a event.ServerStatus with every remote text sanitised.
func (c *serverControl) setStatus(s event.ServerStatus) {
	for _, f := range []*string{&s.Server, &s.How, &s.Preset, &s.Profile, &s.LogPath, &s.Stage, &s.Class, &s.Text, &s.Health, &s.Note} {
		*f = sanitize.String(*f)
	}
	s.Phase = event.ServerPhase(sanitize.String(string(s.Phase)))
	c.st, c.hasSt = s, true
}

// running reports whether a server process runs, by the latest status.
func (c *serverControl) running() bool {
	if !c.hasSt {
		return false
	}
	switch c.st.Phase {
	case event.PhaseLaunching, event.PhaseLoading:
		// Just launched: its pid is known a moment later, but a bad
		// launch must be killable at once.
		return true
	case event.PhaseReady, event.PhaseRunning, event.PhaseFailed:
		return c.st.PID > 0
	}
	return false
}

// who names the running server: "sglang pid 4123", "server pid 4123".
func (c *serverControl) who() string {
	name := c.st.Server
	if name == "" {
		name = "server"
	}
	if c.st.PID > 0 {
		return name + " pid " + strconv.Itoa(c.st.PID)
	}
	return name
}

// KillResultMsg is the answer of a kill started with K: Err is nil when
// the server is gone and its GPU memory free, server.ErrNoServer when none
// was running, else why the kill failed (survivors, GPU memory still held,
// the connection).
type KillResultMsg struct {
	Target string // "sglang pid 4123", as confirmed
	Err    error
}

// LaunchResultMsg is the answer of a launch started with L: the pidfile
// record of the new server, or why it could not be launched.
type LaunchResultMsg struct {
	Plan   sessions.Plan
	Record event.LaunchRecord
	Err    error
	// HypothesisErr is why the hypothesis typed in the form could not be
	// given to the experiment the launch started; nil when it was, or
	// when none was typed.
	HypothesisErr error
}

// controlUnavailable is why no server key can act: a replay, no control,
// or an action in flight; "" when they can.
func controlUnavailable(m *Model, what string) string {
	if why := m.refusal(what + " would change the host"); why != "" {
		return why
	}
	if m.ctl == nil {
		return "server control not available here"
	}
	return m.busyText()
}

// notConnected is "not connected" while the host's connection is down; a
// session that never reported a connection state (local) counts as up.
func notConnected(m *Model) string {
	if m.hasConn && m.conn.Conn == event.NotAnswering {
		return "the host is not answering"
	}
	if m.hasConn && m.conn.Conn != event.Connected {
		return "not connected"
	}
	return ""
}

func killUnavailable(m *Model) string {
	if why := controlUnavailable(m, "kill"); why != "" {
		return why
	}
	if why := m.bisectBusy(); why != "" {
		return why
	}
	if why := notConnected(m); why != "" {
		return why
	}
	if m.srv.hasSt && m.srv.st.Phase == event.PhaseStopping {
		return "the server is already stopping"
	}
	if !m.srv.running() {
		return "no server running"
	}
	return ""
}

func launchUnavailable(m *Model) string {
	if why := controlUnavailable(m, "launch"); why != "" {
		return why
	}
	if why := m.bisectBusy(); why != "" {
		return why
	}
	if m.bench.RepeatRun.Running {
		return "a repeat is running: it relaunches the server itself (R stops it)"
	}
	if m.git.Doing() != "" {
		return "git is busy (" + m.git.Doing() + "): a server launched now would load a half-changed checkout"
	}
	return notConnected(m)
}

func profileUnavailable(m *Model) string {
	if why := controlUnavailable(m, "a profile change"); why != "" {
		return why
	}
	if m.bisRun.running {
		return "a bisect is running: its launches keep the profile it started with (X cancels it)"
	}
	if m.bench.RepeatRun.Running {
		return "a repeat is running: its relaunches keep the profile it started with (R stops it)"
	}
	return ""
}

// The dialogs' names (component.Dialog.ID).
const (
	dialogKill     = "kill"
	dialogTakeOver = "take-over"
)

// confirmKill asks before K kills the server.
func (m *Model) confirmKill() {
	m.killTarget = m.srv.who()
	m.overlay.Push(&component.Confirm{Name: dialogKill, Title: "kill the server", Frame: style.Crit, Question: m.killQuestion,
		YesHelp: "kill", Yes: m.kill, No: func() tea.Cmd { m.flash("kill cancelled", style.Dim); return nil }})
}

// killQuestion is the confirmation's text; it names a benchmark or a
// repeat that is running, since the kill makes them fail.
func (m *Model) killQuestion() string {
	return "Kill " + m.killTarget + "? SIGTERM, SIGKILL after the grace period, then wait for GPU memory." + m.bench.BenchNote() + m.bench.RepeatNote()
}

// openLaunch opens the launch form (tui/dialogs/launch) from
// Control.Request, and returns its first command.
func (m *Model) openLaunch() tea.Cmd {
	f, cmd := launch.Open(launch.Host{
		Ctl:         m.ctl,
		Server:      func() (string, bool, bool) { return m.srv.who(), m.srv.running(), m.srv.hasSt },
		Unavailable: func() string { return launchUnavailable(m) },
		Note:        m.bench.BenchNote,
		Commit:      m.headVsLastLaunch,
		Launch:      m.startLaunch,
		Relaunch: func(plan sessions.Plan, hypothesis string) tea.Cmd {
			stop := m.bench.StopFirst()
			start := m.startLaunch(plan, hypothesis)
			return func() tea.Msg { stop(); return start() }
		},
		Flash:  m.flash,
		Inputs: m.inputStyles,
	})
	m.overlay.Push(f)
	return cmd
}

// openPicker opens the env profile picker (tui/dialogs/profile) on
// Control.Profiles; the pick shows in the header until a launch from here
// succeeds.
func (m *Model) openPicker() {
	p := profile.Open(profile.Host{
		Ctl:     m.ctl,
		Running: m.srv.running,
		Picked:  func(name string) { m.srv.next = name },
		Record:  m.recordCmd,
		Flash:   m.flash,
	})
	if p != nil {
		m.overlay.Push(p)
	}
}

// headVsLastLaunch compares the checkout now with what the last launched
// experiment's fingerprint recorded: HEAD ("a6d51c0 -> 65b09bf (HEAD
// moved since the last launch)") and whether tracked files had
// uncommitted changes ("same commit (a6d51c0), but 1 file has uncommitted
// changes now (it was clean)"); moved is set for any difference. "" when
// either side is unknown. An env diff alone would hide the change this
// tool exists to catch.
func (m *Model) headVsLastLaunch() (line string, moved bool) {
	now := m.headShort
	if now == "" {
		return "", false
	}
	exps := m.exp.Ledger().Experiments()
	for i := len(exps) - 1; i >= 0; i-- {
		e := &exps[i]
		if e.StartedBy != event.TriggerLaunch {
			continue
		}
		if e.Fingerprint == nil || e.Fingerprint.Git == nil || e.Fingerprint.Git.Head == "" {
			return "", false
		}
		g := e.Fingerprint.Git
		then := sanitize.String(g.Head)
		if !strings.HasPrefix(then, now) {
			return git.ShortID(then) + arrow + now + " (HEAD moved since the last launch)", true
		}
		wasDirty, changed := g.PatchBytes > 0, m.headChanged
		switch {
		case changed > 0 && !wasDirty:
			return "same commit (" + now + "), but " + style.Plural(changed, "file") + " with uncommitted changes now (it was clean)", true
		case changed == 0 && wasDirty:
			return "same commit (" + now + "), but no uncommitted changes now (it had some)", true
		case changed > 0:
			return "same commit (" + now + "); uncommitted changes then and now (journal show compares the patches)", false
		}
		return "same commit as the last launch (" + now + ")", false
	}
	return "", false
}

// kill kills the server confirmed with y, in a tea.Cmd.
func (m *Model) kill() tea.Cmd {
	stop := m.bench.StopFirst()
	ctl, ctx, target := m.ctl, m.ctx, m.killTarget
	m.srv.busy, m.srv.failed = actionKill, ""
	m.srv.doing = "killing " + target + ": SIGTERM, SIGKILL after the grace period, then waiting for GPU memory"
	m.srv.brief = "killing " + target + ", then waiting for GPU memory"
	rec := m.recorder("kill " + target)
	return func() tea.Msg {
		stop()
		rec()
		return KillResultMsg{Target: target, Err: ctl.Kill(ctx)}
	}
}

// startLaunch runs plan in a tea.Cmd; a hypothesis typed in the form goes
// to the experiment the launch starts (the Lab starts it as the launch is
// published, before Launch returns).
func (m *Model) startLaunch(plan sessions.Plan, hypothesis string) tea.Cmd {
	ctl, ctx, x := m.ctl, m.ctx, m.exp.Ctl
	if m.opts.ReadOnly {
		x = nil
	}
	doing := "launching " + sanitize.String(plan.Request.Preset)
	if p := sanitize.String(plan.Spec.Profile); p != "" {
		doing += " (profile " + p + ")"
	}
	brief := doing
	if m.srv.running() {
		doing = "relaunching: killing " + m.srv.who() + ", waiting for GPU memory, then " + doing
		brief = "relaunching: " + brief
	}
	m.srv.busy, m.srv.doing, m.srv.brief, m.srv.failed = actionLaunch, doing, brief, ""
	what := "launch " + plan.Request.Preset
	profile := plan.Spec.Profile
	if profile == "" {
		profile = plan.Request.Profile
	}
	if profile != "" {
		what += " profile " + profile
	}
	if m.srv.running() {
		what = "re" + what
	}
	record := m.recorder(what)
	return func() tea.Msg {
		record()
		rec, err := ctl.Launch(ctx, plan)
		r := LaunchResultMsg{Plan: plan, Record: rec, Err: err}
		if err == nil && hypothesis != "" {
			if x == nil {
				r.HypothesisErr = errors.New("no journal to record it in")
			} else {
				r.HypothesisErr = x.UpdateExperiment(ctx, event.ExperimentUpdate{Hypothesis: hypothesis})
			}
		}
		return r
	}
}

// actionResult applies the answer of a kill or launch.
func (m *Model) actionResult(msg tea.Msg) {
	m.srv.busy, m.srv.doing, m.srv.brief = actionNone, "", ""
	switch r := msg.(type) {
	case KillResultMsg:
		switch {
		case r.Err == nil:
			m.flash("killed "+sanitize.String(r.Target)+"; its GPU memory is free", style.OK)
		case errors.Is(r.Err, server.ErrNoServer):
			m.flash("no server running (it had already gone)", style.Warn)
		default:
			m.srv.failed = "kill failed: " + style.ErrText(r.Err)
		}
	case LaunchResultMsg:
		if r.Err != nil {
			m.srv.failed = "launch failed: " + style.ErrText(r.Err)
			return
		}
		m.srv.next = ""
		if r.HypothesisErr != nil {
			m.flash("launched; hypothesis not recorded: "+style.ErrText(r.HypothesisErr), style.Warn)
			return
		}
		if len(r.Record.Warnings) > 0 { // a world-writable log directory
			m.flash("launched; "+sanitize.String(r.Record.Warnings[0]), style.Warn)
			return
		}
		m.flash("launched: "+sanitize.String(r.Record.Launch.LogPath), style.OK)
	}
}

// flash shows a one-line answer in the footer until the next key.
func (m *Model) flash(s string, t style.Token) {
	m.status, m.statusTone = s, t
}

// serverBanners are the lines under the header about the server: the
// action in flight or the last one's error, and a failure's offending line.
func (m *Model) serverBanners() []component.Banner {
	var out []component.Banner
	c := &m.srv
	switch {
	case c.busy != actionNone:
		out = append(out, component.Banner{Text: c.doing, Short: c.brief, Tone: style.Warn})
	case c.failed != "":
		out = append(out, component.Banner{Text: c.failed + "  (esc hides)", Short: c.failed, Tone: style.Crit})
	}
	if c.hasSt && c.st.Phase == event.PhaseFailed && c.st.Text != "" {
		class := c.st.Class
		if class == "" {
			class = "failure"
		}
		out = append(out, component.Banner{Text: "failed " + class + ": " + c.st.Text, Short: c.st.Text, Tone: style.Crit})
	}
	return out
}

// statusSegs are the header fields for the latest event.ServerStatus: the
// server and its phase, the profile (and the one picked for the next
// launch), and the time it took to become ready.
func (m *Model) statusSegs() []seg {
	c := &m.srv
	s := &c.st
	var out []seg
	if c.hasSt {
		age := style.Ago(m.now, s.Since)
		state, detail, tn := "", "", style.Warn
		switch s.Phase {
		case event.PhaseReady:
			state, tn = component.JoinWords("ready", age), style.OK
		case event.PhaseLoading:
			state, detail = component.JoinWords("loading", age), s.Stage
		case event.PhaseLaunching:
			state = component.JoinWords("launching", age)
		case event.PhaseRunning:
			state, tn = "running", style.OK
			if s.LaunchedAt.IsZero() {
				state += " (adopted)"
			}
		case event.PhaseFailed:
			state, tn = component.JoinWords("failed", s.Class), style.Crit
		case event.PhaseExited:
			state, tn = "exited", style.Warn
			if s.Exit >= 0 {
				state += " " + strconv.Itoa(s.Exit)
			}
			if s.Exit > 0 {
				tn = style.Crit
			}
		case event.PhaseStopping:
			state = "stopping"
			if s.Note != "" {
				detail = ": " + s.Note
			}
		case event.PhaseKilled:
			state, tn = "killed", style.Dim
		case event.PhaseNone:
			state, tn = "no server", style.Dim
		default:
			state = string(s.Phase)
		}
		name := s.Server
		if s.Phase == event.PhaseNone {
			name = ""
		}
		who := name
		if s.PID > 0 {
			who = component.JoinWords(name, "pid "+strconv.Itoa(s.PID))
		}
		text, short := component.JoinWords(who, state), component.JoinWords(name, state)
		if detail != "" {
			if !strings.HasPrefix(detail, ":") {
				detail = " " + detail
			}
			text, short = text+detail, short+detail
		}
		// A detail (a stage, what a kill waits for) may be cut; the rest of
		// the header goes first.
		out = append(out, seg{text: text, short: short, tone: tn, cut: detail != "", prio: prioServer, shortPrio: prioServerWho, detail: style.Width(detail)})
		if s.Phase == event.PhaseReady && s.ReadyAfter > 0 {
			out = append(out, seg{text: "ready in " + style.ShortDur(s.ReadyAfter), tone: style.Dim, prio: prioReadyIn})
		}
	}
	cur := ""
	if c.hasSt {
		cur = s.Profile
	}
	switch {
	case c.next != "" && c.next != cur && cur != "":
		out = append(out, seg{text: "profile " + cur + " -> " + c.next, short: "profile -> " + c.next, tone: style.Warn, prio: prioProfile})
	case c.next != "" && c.next != cur:
		out = append(out, seg{text: "next profile " + c.next, tone: style.Warn, prio: prioProfile})
	case cur != "":
		out = append(out, seg{text: "profile " + cur, tone: style.Text, prio: prioProfile})
	}
	return out
}

// arrow joins the two sides of a change. ASCII: the arrow characters are
// ambiguous-width (two cells in some CJK setups), which would misalign the
// screen in tmux.
const arrow = " -> "
