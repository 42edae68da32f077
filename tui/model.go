// Package tui is flightdeck's terminal cockpit (Bubble Tea v2): a header
// with host, connection, server state and HEAD; one row per GPU with
// abnormal values highlighted; a tok/s sparkline; a filterable log tail;
// with Options.Control, server control: K kill (confirmed), L the launch
// form, p the env profile picker, as overlays (tui/dialogs/launch,
// tui/dialogs/profile, opened in control.go); with
// Options.Git, the git panel (g) in place of the log tail: status, stash,
// revert, checkout and undo (tui/panels/git, its dialogs tui/dialogs/git,
// wired in git.go); with Options.Experiments, e starts and ends
// experiments and n writes notes into the session journal, and x opens
// the experiments panel (tui/panels/experiments, wired in
// experiments.go), where space marks experiments, c compares two (the
// compare view, tui/dialogs/compare), B marks the baseline and w writes a
// conclusion; with Options.Bench, b runs a benchmark; with
// Options.Repeat, R relaunches the current configuration N times to
// measure its noise (tui/panels/bench, its forms tui/dialogs/measure,
// wired in bench.go). tui/replay plays a recorded journal back through
// the same model, read-only, with a timeline (Options.Mode and
// readonly.go are what it drives the model by).
//
// The model consumes the event stream (EventsMsg batches of event.Event)
// and is deterministic: Update does no I/O and never reads the clock (time
// comes from events and ClockMsg), so a replayed journal renders what was
// seen live. Run wires a model to a channel of events.
package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	cmpdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/compare"
	expdialog "github.com/flightdeck-dev/flightdeck/tui/dialogs/experiment"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/launch"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/measure"
	"github.com/flightdeck-dev/flightdeck/tui/panels/bench"
	"github.com/flightdeck-dev/flightdeck/tui/panels/experiments"
	gitpanel "github.com/flightdeck-dev/flightdeck/tui/panels/git"
	"github.com/flightdeck-dev/flightdeck/tui/panels/gpus"
	"github.com/flightdeck-dev/flightdeck/tui/panels/logtail"
	"github.com/flightdeck-dev/flightdeck/tui/panels/spark"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Theme picks the palette.
type Theme uint8

const (
	// ThemeAuto starts dark and follows the terminal's background-colour
	// reply if one arrives (it is never waited for: tmux and SSH often drop it).
	ThemeAuto  Theme = iota
	ThemeDark        // always the dark palette
	ThemeLight       // always the light palette
)

// Options configure a Model.
type Options struct {
	// Host is shown in the header until a event.ConnState names the host.
	Host string
	// Label is a fixed name shown in the header and window title before
	// the host, e.g. "demo": "flightdeck  demo  root@127.0.0.1:40123
	// connected". Unlike Host, no event.ConnState replaces it. "" shows none.
	Label string
	// ReadOnly is for journal replay: no clock ticks (time comes only from
	// events), keys that would change the host say so instead of acting,
	// and the header and window title say "replay".
	ReadOnly bool
	// LogPath is the followed server log, shown above the log tail until a
	// event.LogLines names it.
	LogPath string
	// NoLog says the session follows no server log (connect without
	// --log): until a event.LogLines arrives anyway, the tok/s line and
	// the log area say so and how to follow one, instead of waiting for
	// throughput lines. Leave it false when a log will be followed even if
	// its path is not known yet (the demo).
	NoLog bool
	// Head is the repository HEAD text, e.g. "bba2fc4 (+3 dirty)"; HeadMsg
	// replaces it. It is a hook until a sessions payload carries git state.
	Head string
	// Theme is the palette; NoColor (set it from NO_COLOR) overrides it with
	// a colourless one that marks abnormal values by bold and reverse video.
	Theme   Theme
	NoColor bool
	// Color is the --color mode (color.go): ColorNever is NoColor; 16, 256
	// and truecolor force that profile on the program Run starts; ColorAuto
	// leaves detection to Bubble Tea (resolve it first with Detect).
	Color ColorMode
	// LogLines is the log ring buffer size in lines; 0 means DefaultLogLines.
	LogLines int
	// Keys replaces DefaultKeyMap when non-nil.
	Keys *KeyMap
	// Control drives the inference server (K kill, L launch, p profile);
	// nil makes those keys say that server control is not available here.
	// Its Launch and Kill run in tea.Cmds with a context that ends when
	// Run returns. event.ServerStatus events drive the header either way.
	Control ServerControl
	// Git acts on the server's git checkout from the git panel (g); nil
	// means no git control: g then opens a read-only panel if event.GitStatus
	// events arrive (a replayed journal), else says how to name a
	// repository. Its I/O methods run in tea.Cmds under the context
	// Control's do (it ends when Run returns); LastSnapshot is called from
	// Update. event.GitStatus, event.GitAction and event.GitMoved events drive the panel
	// and its HEAD-moved banner either way.
	Git GitControl
	// Experiments starts and ends experiments and writes notes (e, n) in
	// the session journal; nil means no journal: e and n say so. Its calls
	// run in tea.Cmds under the context Control's do. Experiment and note
	// events drive the header and the experiments panel (x) either way.
	Experiments ExperimentControl
	// Bench runs the benchmark behind b (the form, then Run in a tea.Cmd
	// under the context Control's do; esc or b again cancels it); nil
	// makes b say why it cannot run (a replay, or no server connection).
	// event.BenchStarted, event.BenchProgress and event.BenchDone events drive the
	// progress line and the result box either way.
	Bench BenchControl
	// Repeat relaunches the current configuration N times behind R (the
	// form, then Run in a tea.Cmd; esc or R again cancels it); nil makes R
	// say why it cannot run. event.RepeatProgress events drive its
	// progress line either way.
	Repeat RepeatControl
	// Measure marks the baseline (B in the experiments panel) and reads a
	// commit range for the compare view (c) when the journal did not
	// record one; nil: B says why it cannot act and the compare view shows
	// only what was recorded. Its calls run in tea.Cmds.
	Measure MeasureControl
	// ServesHost says that quitting this cockpit ends the host itself (the
	// demo serving its simulated host): while another cockpit drives it,
	// q asks once and says so.
	ServesHost bool
	// Driver takes the host's driver lock over behind T (asked first; its
	// call runs in a tea.Cmd); nil: T says how to take over instead.
	// event.DriverState events drive the header, the banners and what the
	// keys that act do, either way.
	Driver DriverControl
	// Mode is what a read-only cockpit says it is and the keys of what
	// drives it (tui/replay sets it for a replay or a follower); the live
	// cockpit ignores it.
	Mode Mode
}

type serverPhase uint8

const (
	serverUnknown  serverPhase = iota
	serverStarting             // the log was reset: a new launch
	serverRunning              // throughput lines seen, no readiness line
	serverReady
	serverFailed
)

type serverState struct {
	phase serverPhase
	name  string // "sglang" / "vllm" when a Ready said so
	since time.Time

	// The run's primary failure (FailureClass.Tier); a event.LogReset
	// starts a new run and clears it.
	fail     event.ServerFailureClass
	failTier int
	hasFail  bool
}

// Model is the cockpit's root Bubble Tea model. Create it with New; it is
// used by pointer (Update mutates it and returns it).
type Model struct {
	opts     Options
	keys     KeyMap
	styles   style.Styles
	styleGen int

	width, height int
	now           time.Time

	host    string
	label   string // Options.Label, sanitised
	conn    event.ConnState
	hasConn bool
	server  serverState
	head    string

	gpus *gpus.Panel // the GPU table, its banners, Xids and sampler; tab focuses it
	rate spark.Series
	log  *logtail.Panel

	showHelp   bool
	helpTop    int    // first row of the help screen shown when it scrolls
	helpMax    int    // the largest helpTop at the last render; 0 when it fits
	status     string // the answer to the last key that could not act
	statusTone style.Token
	quitting   bool

	// Server control (control.go): its state and the context Launch and
	// Kill run under; the dialogs over the screen.
	ctl        ServerControl
	ctx        context.Context
	srv        serverControl
	overlay    component.Stack // the dialogs open over the screen; the top one has the keys
	killTarget string          // "sglang pid 4123", as asked
	quitArmed  bool            // q pressed while an action runs: a second q quits

	// Who drives the host (driver.go): the driver lock's last state.
	drv driverState

	// The git panel (git.go wires it and its dialogs).
	git *gitpanel.Panel

	// Experiments, notes and the experiments panel (tui/panels/experiments,
	// wired in experiments.go), the forms that start and end experiments
	// and write notes (tui/dialogs/experiment), the recorder's latest
	// status (sanitised: the header's rec field), the key being handled
	// (recorded as the cause of the action it starts), and HEAD's short id
	// for experiment names.
	exp        *experiments.Panel
	expForms   *expdialog.Dialogs
	journal    event.JournalStatus
	hasJournal bool
	pressed    string
	headShort  string
	// headChanged counts tracked paths with uncommitted changes (the
	// latest event.RepoHead's entries, untracked ones left out); -1 unknown.
	headChanged int

	// Issue 6: the benchmark and the repeat (tui/panels/bench and their
	// dialogs tui/dialogs/measure, wired in bench.go) and the compare
	// views (tui/dialogs/compare, wired in experiments.go).
	bench *bench.Panel
	cmp   *cmpdialog.Views
}

// Default terminal size until the first tea.WindowSizeMsg.
const (
	defaultWidth  = 80
	defaultHeight = 24
)

// New returns a model with no data yet; it renders "waiting" placeholders.
func New(o Options) *Model {
	m := &Model{
		opts:        o,
		headChanged: -1,
		host:        sanitize.String(o.Host),
		label:       sanitize.String(o.Label),
		head:        sanitize.String(o.Head),
		gpus:        gpus.NewPanel(),
		log:         logtail.NewPanel(o.LogLines),
		width:       defaultWidth,
		height:      defaultHeight,
		ctl:         o.Control,
		ctx:         context.Background(),
		git:         gitpanel.NewPanel(o.Git),
		exp:         experiments.NewPanel(o.Experiments),
		bench:       bench.NewPanel(),
	}
	m.log.Path = sanitize.String(o.LogPath)
	if o.Keys != nil {
		m.keys = *o.Keys
	} else {
		m.keys = DefaultKeyMap()
	}
	if o.ReadOnly {
		m.keys.Quit.Long = "quit" // a replay has no server to keep running
	}
	m.wireKeys()
	m.wireGit()
	m.wireExperiments()
	m.wireBench()
	m.log.Covered = func() string { return logCovered(m) }
	m.log.NoLog = m.noLog
	switch {
	case o.plain():
		m.setStyles(style.Plain())
	case o.Theme == ThemeLight:
		m.setStyles(style.Default(false))
	default:
		m.setStyles(style.Default(true))
	}
	return m
}

func (m *Model) setStyles(s style.Styles) {
	m.styles = s
	m.styleGen++
	is := textinput.DefaultStyles(s.Dark)
	is.Focused.Prompt = s.Accent.Style()
	is.Focused.Placeholder = s.Dim.Style()
	is.Blurred.Prompt = s.Accent.Style()
	is.Cursor.Blink = false // a blinking cursor would make frames time-dependent
	m.log.SetInputStyles(is)
	if f, ok := m.overlay.Top().(*expdialog.Form); ok {
		f.SetStyles(m.inputStyles())
	}
	for _, id := range []string{launch.ID, measure.BenchID, measure.RepeatID} {
		if f, ok := m.overlay.Find(id).(interface{ SetInputStyles(textinput.Styles) }); ok {
			f.SetInputStyles(m.inputStyles())
		}
	}
}

// inputStyles are the launch form's text field styles.
func (m *Model) inputStyles() textinput.Styles {
	s := m.styles
	is := textinput.DefaultStyles(s.Dark)
	is.Focused.Placeholder = s.Dim.Style()
	is.Blurred.Placeholder = s.Dim.Style()
	is.Cursor.Blink = false
	return is
}

// Styles returns the palette in use.
func (m *Model) Styles() style.Styles { return m.styles }

// Init asks for the terminal's background colour (answered later, if at
// all) and, unless read-only, starts the clock that ages "ready 3m12s".
func (m *Model) Init() tea.Cmd {
	var cmds []tea.Cmd
	if m.opts.Theme == ThemeAuto && !m.opts.plain() {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	if !m.opts.ReadOnly {
		cmds = append(cmds, tick())
	}
	return tea.Batch(cmds...)
}

func tick() tea.Cmd {
	return tea.Tick(clockEvery, func(t time.Time) tea.Msg { return ClockMsg{Now: t} })
}

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
			m.flash("take-over failed: "+errText(msg.Err), style.Crit)
		} else if m.status == "taking over ..." {
			m.status = "" // the lock's note says whose it was
		}
	case GitRefreshMsg, GitActionMsg, GitLogMsg, GitPreviewMsg, GitSnapshotsMsg:
		return m, m.gitResult(msg)
	case ExperimentStartedMsg, ExperimentEndedMsg, ExperimentUpdatedMsg, NoteSavedMsg, BaselineMsg:
		m.exp.Result(msg)
	case BenchResultMsg:
		m.benchResult(msg)
	case RepeatResultMsg:
		return m, m.repeatResult(msg)
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

// dialogOpen reports whether a dialog on the overlay stack has the keys.
func (m *Model) dialogOpen() bool { return !m.overlay.Empty() }

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
	case event.RepoUnreadable:
		m.head = "? (repository unreadable)"
	case event.ServerLaunched:
		// The non-critical Xids were about the processes before it
		// (force-killing a TP server logs Xid 45 on every GPU).
		m.gpus.ClearAppXids()
	case event.ServerStatus:
		switch p.Phase {
		case event.PhaseLaunching, event.PhaseKilled, event.PhaseExited:
			m.rate.EndRun() // the next figures are another run's
		}
		m.srv.setStatus(p)
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
	case event.DriverState:
		m.applyDriver(p, ev.At)
	case event.Baseline, event.ExperimentFingerprint, event.ExperimentStart, event.Key,
		event.KillStep, event.LogBench, event.LogFollowError, event.Note, event.Prefill,
		event.Repeat, event.ServerHealthy, event.ServerObserved, event.Session, event.SpecDecode,
		event.Throughput:
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

// key handles a key press: the filter input first, then bindings.
func (m *Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := &m.keys
	if m.log.Typing() {
		// The filter prompt takes every key, so typing never runs as
		// commands (logtail.Panel.Type).
		return m, m.log.Type(msg)
	}
	m.status, m.statusTone = "", style.Warn
	m.drv.note = ""
	m.pressed = msg.String()
	if cmd, ok := m.overlay.Key(msg); ok {
		return m, cmd
	}
	armed := m.quitArmed
	m.quitArmed = false
	if m.showHelp && m.helpKey(msg) {
		return m, nil
	}
	if msg.String() == "esc" {
		switch {
		case m.showHelp:
			m.showHelp = false
		case m.bench.Showing():
			m.bench.Dismiss() // the result box
		case m.git.Open:
			m.git.Close()
		case m.exp.Open:
			m.exp.Open = false
		case m.git.Moved():
			m.git.Acknowledge() // the HEAD-moved banner
		case m.exp.Pending() != "":
			m.exp.Dismiss() // the conclusion banner is dismissed
		case m.bench.BenchRun.Running:
			m.askStop("bench")
		case m.bench.RepeatRun.Running:
			m.askStop("repeat")
		case m.log.Filter != "":
			m.log.ClearFilter()
		case m.srv.failed != "":
			m.srv.failed = ""
		}
		return m, nil
	}
	if key.Matches(msg, k.Quit.Binding) && m.git.Doing() != "" {
		// Quitting cancels the action's context: a git action cut short
		// leaves the tree half-changed. q (or ctrl+c) quits when it ends;
		// a second one at once.
		return m, m.gitQuit()
	}
	if key.Matches(msg, k.Quit.Binding) && m.bench.RepeatRun.Running && (armed || m.bench.QuitWhen || msg.String() == "ctrl+c") {
		// A repeat cut short mid-relaunch leaves the server killed: stop
		// it and quit when it returns; pressed again, quit now.
		return m, m.repeatQuit()
	}
	if key.Matches(msg, k.Quit.Binding) && msg.String() != "ctrl+c" && (m.srv.busy != actionNone || m.bench.RepeatRun.Running) && !armed {
		// A kill or relaunch cut short leaves the server half-stopped.
		// Ask once.
		m.quitArmed = true
		if m.srv.busy == actionNone {
			m.flash(bench.RepeatArmText, style.Warn)
			return m, nil
		}
		m.flash(controlUnavailable(m, "")+"; quitting cancels it - q again to quit", style.Warn)
		return m, nil
	}
	if key.Matches(msg, k.Quit.Binding) && msg.String() != "ctrl+c" && m.opts.ServesHost && m.watching() && !armed {
		m.quitArmed = true
		m.flash("this demo serves the simulated host that "+m.holderText(false)+" drives: quitting ends it for everyone - q again to quit", style.Warn)
		return m, nil
	}
	if key.Matches(msg, k.Quit.Binding) && msg.String() != "ctrl+c" && m.bench.BenchRun.Running && !armed {
		// Quitting stops the benchmark (it is recorded as cancelled):
		// ask once, as b does.
		m.quitArmed = true
		m.flash("a benchmark is running: quitting stops it - q again to quit", style.Warn)
		return m, nil
	}
	for _, b := range m.matchOrder() {
		if !key.Matches(msg, b.Binding) || !m.exp.Open && slices.Contains(m.exp.Exclusive(), b) {
			continue // w, space and c are the panel's; elsewhere they are the log's and git's
		}
		if why := b.Why(); why != "" {
			m.status = why
			return m, nil
		}
		return m.act(b)
	}
	return m, nil
}

// act performs an available binding.
func (m *Model) act(b *component.Binding) (tea.Model, tea.Cmd) {
	if p := m.panelOf(b); p != nil {
		return m, p.Act(b)
	}
	k := &m.keys
	page := m.log.Page()
	gitRows := m.git.Open && !m.gpus.Focused // the panel's cursor takes the log's keys
	expRows := m.exp.Open && !m.gpus.Focused
	switch {
	case m.gpus.Focused:
		page = m.gpus.Page()
	case gitRows:
		page = m.git.Page()
	case expRows:
		page = m.exp.Page()
	}
	switch b {
	case &k.Quit:
		m.quitting = true
		return m, tea.Quit
	case &k.TakeOver:
		m.showHelp = false
		m.confirmTakeOver()
	case &k.Kill:
		m.showHelp = false
		m.confirmKill()
	case &k.Launch:
		m.showHelp = false
		return m, m.openLaunch()
	case &k.Profile:
		m.showHelp = false
		m.openPicker()
	case &k.Git:
		return m, m.toggleGit()
	case &k.Experiments:
		m.toggleExperiments()
	case &k.Experiment:
		if id := m.exp.Pending(); id != "" && m.exp.Ledger().Find(id) != nil {
			m.showHelp = false
			return m, m.expForms.OpenConclude(id)
		}
		if m.bench.RepeatRun.Running {
			// Each launch of a repeat is its experiment: ending one by
			// hand would stop the repeat, starting one would split it.
			m.flash("a repeat is running: it starts and ends its experiments itself (R stops it)", style.Warn)
			return m, nil
		}
		return m, m.expForms.OpenExperiment(m.defaultExpName())
	case &k.Note:
		return m, m.expForms.OpenNote()
	case &k.Help:
		m.showHelp, m.helpTop = !m.showHelp, 0
	case &k.Up:
		m.scroll(-1)
	case &k.Down:
		m.scroll(1)
	case &k.PageUp:
		m.scroll(-page)
	case &k.PageDown:
		m.scroll(page)
	case &k.Bottom:
		switch {
		case m.gpus.Focused:
			m.gpus.End()
		case gitRows:
			m.git.End()
		case expRows:
			m.exp.End()
		default:
			m.log.Resume()
		}
	case &k.Top:
		switch {
		case m.gpus.Focused:
			m.gpus.Home()
		case gitRows:
			m.git.Home()
		case expRows:
			m.exp.Home()
		default:
			m.log.Home()
		}
	}
	return m, nil
}

// panels are the cockpit's parts that own their keys (component.Panel).
func (m *Model) panels() []component.Panel {
	return []component.Panel{m.log, m.gpus, m.git, m.exp, m.bench}
}

// panelOf is the panel whose binding b is, nil for the cockpit's own.
func (m *Model) panelOf(b *component.Binding) component.Panel {
	for _, p := range m.panels() {
		for _, pb := range p.Bindings() {
			if pb == b {
				return p
			}
		}
	}
	return nil
}

// scroll moves the focused panel; the GPU table only while it scrolls
// (the terminal may have grown since tab was pressed).
func (m *Model) scroll(d int) {
	if m.gpus.Focused && m.gpus.Scrolls() {
		m.gpus.Scroll(d)
		return
	}
	if m.git.Open {
		m.git.Move(d)
		return
	}
	if m.exp.Open {
		m.exp.Move(d)
		return
	}
	m.log.Scroll(d)
}

// Quitting reports whether the model asked the program to quit. Quitting
// only ends the UI; it never stops the inference server. A kill or launch
// still in flight is cancelled (Run cancels its context), so q asks twice
// while one runs; during a git action q quits when the action ends (a
// second q at once); during a repeat a confirmed q (or ctrl+c) stops it
// and quits when its relaunch has finished (q again at once).
func (m *Model) Quitting() bool { return m.quitting }

// Status is the one-line answer to the last key that could not act, e.g.
// "no server running", or to the last server action, e.g. "launched:
// /root/.flightdeck/logs/sglang-20251022-102700.log"; "" when none.
func (m *Model) Status() string { return m.status }

// Following reports whether the log tail follows new lines.
func (m *Model) Following() bool { return m.log.Follow }

// Wrapping reports whether long log lines wrap onto continuation rows
// (toggled by w) instead of being cut at the terminal width.
func (m *Model) Wrapping() bool { return m.log.Wrap }

// Filter is the active log filter as typed, "" when none; it matches
// regardless of case.
func (m *Model) Filter() string { return m.log.Query }

// noLog reports that no server log is followed and none has arrived.
func (m *Model) noLog() bool { return m.opts.NoLog && !m.log.Seen }

// windowTitle is "flightdeck [replay] [label] host".
func (m *Model) windowTitle() string {
	t := "flightdeck "
	if m.opts.ReadOnly {
		t += m.modeWord() + " "
	}
	if m.label != "" {
		t += m.label + " "
	}
	return t + m.hostLabel()
}

// hostLabel is the host for the header and window title.
func (m *Model) hostLabel() string {
	if m.host == "" {
		return "local"
	}
	return m.host
}

var _ tea.Model = (*Model)(nil)

// footer is the status line when a key could not act, else the short
// help: "key desc" pairs in ShortHelp order while they fit, with keys that
// cannot act now dimmed.
func (m *Model) footer(width int) string {
	st := &m.styles
	if m.status != "" {
		return st.Tone(m.statusTone).Render(style.Truncate(m.status, width))
	}
	if d := m.overlay.Top(); d != nil {
		return component.HintLine(st, d.Help(), width)
	}
	if m.git.Open {
		return m.git.Footer(st, width, &m.keys.Help, &m.keys.Git, &m.keys.Quit)
	}
	if m.exp.Open {
		k := &m.keys
		return m.exp.Footer(st, width, &k.Help, &k.Experiment, &k.Note, &k.Experiments, &k.Quit)
	}
	all := m.footerKeys()
	if m.opts.ReadOnly {
		// A replay: its own keys instead of actions that cannot act.
		ro := []*component.Binding{all[0]}
		ro = append(ro, m.opts.Mode.Keys...)
		for _, b := range all[1:] {
			if b.Group != "actions" {
				ro = append(ro, b)
			}
		}
		all = ro
	} else if m.watching() {
		// Another cockpit drives: T instead of the actions that wait.
		ro := []*component.Binding{all[0]}
		if m.opts.Driver != nil {
			ro = append(ro, &m.keys.TakeOver)
		}
		for _, b := range all[1:] {
			if b.Group != "actions" || b == &m.keys.Git {
				ro = append(ro, b)
			}
		}
		all = ro
	}
	pairW := func(b *component.Binding) int { return component.HintWidth(b.Help().Key, b.Help().Desc) }
	// Help and quit always fit first, then the log keys; actions fill what
	// is left.
	show := make([]bool, len(all))
	used := -2
	for pass := range 3 {
		for i, kb := range all {
			if !kb.Short && kb != &m.keys.TakeOver || show[i] {
				continue
			}
			group := m.keys.footerLike(kb)
			switch essential := kb == &m.keys.Help || kb == &m.keys.Quit || kb == &m.keys.TakeOver; {
			case pass == 0 && !essential, pass == 1 && group == "actions", pass == 2 && group != "actions":
				continue
			}
			if used+pairW(kb) > width {
				break // keep the footer a prefix of the list, no gaps
			}
			show[i] = true
			used += pairW(kb)
		}
	}
	var b strings.Builder
	for i, kb := range all {
		if !show[i] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString(m.keyHint(kb.Help().Key, kb.Help().Desc, kb))
	}
	return b.String()
}

// keyHint draws one key of a footer: the key, dimmed while b (nil for no
// binding) is unavailable, a space and what the key does, dimmed.
func (m *Model) keyHint(key, desc string, b *component.Binding) string {
	kt := m.styles.Key
	if b != nil && b.Why() != "" {
		kt = m.styles.Dim
	}
	return kt.Render(key) + " " + m.styles.Dim.Render(desc)
}
