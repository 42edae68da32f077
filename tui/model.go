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
// wired in bench.go); with Options.Bisect, b in a compare view or I on a
// git reflog entry opens the bisect start dialog (tui/dialogs/bisect),
// i shows the bisect panel (tui/panels/bisect) and X cancels the bisect
// (wired in bisect.go). tui/replay plays a recorded journal back through
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
	"time"

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
	bisectpanel "github.com/flightdeck-dev/flightdeck/tui/panels/bisect"
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
	// Keys replaces DefaultKeyMap, the root's own keys (quit, help,
	// scrolling, the server and experiment actions), when non-nil; the
	// panels' keys (f, /, w, tab, g's, x's, b, R, i, X) are the panels' own.
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
	// Link redials the host's connection behind C, while it is
	// reconnecting or not answering (its call runs in a tea.Cmd and does
	// not wait for the dial); nil: C says it cannot. event.ConnState
	// events drive the header either way.
	Link LinkControl
	// Bisect runs the bisects started from a compare view (b) or the git
	// panel (I), in tea.Cmds under the context Control's do; X cancels
	// the one running (asked first). nil: those keys say why they cannot.
	// The bisect events drive the bisect panel (i) either way.
	Bisect BisectControl
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
	opts   Options
	keys   KeyMap
	styles style.Styles

	width, height int
	now           time.Time

	host    string
	label   string // Options.Label, sanitised
	conn    event.ConnState
	hasConn bool
	server  serverState
	head    string
	// headCommit is HEAD's full commit id (event.RepoHead, event.GitStatus),
	// "" unknown; code is the commit the running server was launched from
	// (servercode.go).
	headCommit string
	code       serverCode

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

	// Issue 17: what changed on the host since the last session here
	// (since.go): its banner, and H to list the changes.
	since sinceBanner

	// Issue 18: the bisect panel (tui/panels/bisect, wired in bisect.go)
	// and the bisect started from here.
	bis    *bisectpanel.Panel
	bisRun bisectRun
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
		bis:         bisectpanel.NewPanel(),
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
	m.wireBisect()
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
	s.Gen = m.styles.Gen + 1
	m.styles = s
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

// tick asks for the next ClockMsg on the next whole second (tea.Every),
// the instants the recorder's flushes and the journal mirror's polls fall
// on too, so that the clock wakes the process with them.
func tick() tea.Cmd {
	return tea.Every(clockEvery, func(t time.Time) tea.Msg { return ClockMsg{Now: t} })
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
