// Package replay plays a recorded session journal back in the cockpit,
// read-only, with a timeline (play, pause, speed, seek, the experiments'
// marks, a typed time), and follows a journal being written (flightdeck
// follow: the replay kept at its live end, follow.go). It drives the root
// cockpit model, tui.Model, fed the journal's events as the position
// moves, through the hooks the cockpit gives a read-only mode
// (tui.Options.Mode and a few methods); the cockpit never imports it.
//
// The screen at position t is what the live cockpit showed at t (at the
// same size less the timeline line): the same model, the same events, and
// a tui.ClockMsg of the journal's start + t for the ages.
package replay

import (
	"context"
	"errors"
	"sync"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/tui"
	"github.com/flightdeck-dev/flightdeck/tui/screen"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Source is an indexed journal; *journal.Journal implements it.
// Events and CatchUp read the file and are called only inside tea.Cmds,
// one at a time (the replay serialises them: a journal need not be safe
// for concurrent use).
type Source interface {
	// Header is the journal's header: the host and label it names.
	Header() event.SessionHeader
	// Start is the wall-clock time of position 0 (the header's created
	// time); events are at Start() + their journal time.
	Start() time.Time
	// Duration is the time of the last event (≥ 0).
	Duration() time.Duration
	// Marks are the experiments' starts and ends and the notes, in time
	// order.
	Marks() []journal.Mark
	// Events returns the events with journal time in (from, to], in file
	// order.
	Events(from, to time.Duration) ([]event.Event, error)
	// CatchUp returns the events that rebuild the screen at t in a fresh
	// model: what is still shown at t of everything before it.
	CatchUp(t time.Duration) ([]event.Event, error)
}

// Options are the replay's starting state (New).
type Options struct {
	// At is the starting position, clamped to the journal: 0 is its start.
	At time.Duration
	// Play starts playing at once instead of paused.
	Play bool
	// Speed is the starting speed, 1 to 64 (rounded down to a power of
	// two); 0 means 1.
	Speed int
	// Follow follows a journal being written (flightdeck follow): the
	// replay starts at the journal's end (rebuilt from the start), polls
	// the source every FollowPoll (Refresher) and plays the events
	// appended; the header and window title say "follow", the timeline
	// says LIVE. At, Play and Speed are ignored. See follow.go.
	Follow bool
	// History, when set, is the host's history before the journal (the
	// sessions recorded earlier: sessions/history.Collect), given to the
	// cockpit at its start and at every rebuild: the experiments panel
	// lists it, and a baseline mark naming an earlier journal's
	// experiment resolves.
	History *event.History
}

// Replay speeds: 1x to 64x, doubling.
const maxSpeed = 64

// replayTick is how often the position moves while playing: by
// replayTick × speed of journal time each time.
const replayTick = 100 * time.Millisecond

// seekStep is how far left and right move the position.
const seekStep = 10 * time.Second

// Model is the replay's Bubble Tea model. Create it with New and run it
// with Run; it is used by pointer.
type Model struct {
	hist  *event.History // Options.History
	src   Source
	srcMu *sync.Mutex // held by the tea.Cmd reading src
	opts  tui.Options // as given to tui.New for every fresh inner model
	inner *tui.Model
	keys  keyMap     // the replay's own (tui.Options.Mode's Keys)
	ck    tui.KeyMap // the cockpit's (tui.Options.Keys): q quits, G/end goes live

	start time.Time
	dur   time.Duration
	marks []journal.Mark

	width, height int
	bg            *tea.BackgroundColorMsg // the terminal's answer, for fresh inner models

	pos      time.Duration // what the inner model shows (or is being rebuilt to)
	playing  bool
	speed    int
	epoch    int  // counts seeks: answers of an older epoch are dropped
	playGen  int  // counts play/pause: ticks of an older one are dropped
	seeking  bool // a CatchUp is in flight
	fetching bool // an Events read is in flight
	jumping  bool // t: the time input has the keys
	jump     textinput.Model
	quitting bool

	// tickCmd makes the play tick; nil means tea.Tick(replayTick) (tests
	// deliver ticks themselves).
	tickCmd func(gen int) tea.Cmd

	fol *followState // follow mode (Options.Follow); nil in a replay
}

// New returns a replay of src for a cockpit configured by opts:
// read-only (Control, Git, Experiments, Bench, Repeat and Measure are
// dropped), the label and host from the journal's header unless opts
// names them, starting at o.At, paused unless o.Play; with o.Follow, a
// follower of it (follow.go). Nothing is read until Init's command runs.
func New(src Source, opts tui.Options, o Options) *Model {
	h := src.Header()
	opts.ReadOnly = true
	opts.Control, opts.Git, opts.Experiments = nil, nil, nil
	opts.Bench, opts.Repeat, opts.Measure = nil, nil, nil
	if opts.Label == "" {
		opts.Label = h.Label
	}
	if opts.Host == "" {
		opts.Host = h.Host
	}
	if opts.LogPath == "" {
		opts.LogPath = h.LogPath
	}
	opts.NoLog = opts.NoLog || h.NoLog
	r := &Model{src: src, srcMu: new(sync.Mutex), opts: opts, keys: defaultKeys(), ck: tui.DefaultKeyMap(), start: src.Start(),
		dur: max(src.Duration(), 0), marks: src.Marks(), width: defaultWidth, height: defaultHeight, speed: 1}
	if opts.Keys != nil {
		r.ck = *opts.Keys
	}
	for r.speed*2 <= min(o.Speed, maxSpeed) {
		r.speed *= 2
	}
	r.pos = clampDur(o.At, 0, r.dur)
	r.playing = o.Play
	if o.Follow {
		r.initFollow()
	}
	r.opts.Keys = &r.ck
	r.opts.Mode.Keys = r.keys.help()
	r.hist = o.History
	r.inner = r.newInner()
	r.jump = textinput.New()
	r.jump.Prompt = ""
	r.jump.Placeholder = "h:mm:ss"
	r.jump.CharLimit = 20
	r.jump.SetStyles(r.inner.InputStyles())
	return r
}

// newInner is a fresh read-only cockpit at the replay's size and palette.
func (r *Model) newInner() *tui.Model {
	m := tui.New(r.opts)
	m.Update(tea.WindowSizeMsg{Width: r.width, Height: max(r.height-1, 1)})
	if r.bg != nil {
		m.Update(*r.bg)
	}
	if r.hist != nil {
		m.Update(tui.EventsMsg{{At: r.start, Data: *r.hist}})
	}
	return m
}

// Cockpit returns the inner cockpit model: the screen above the timeline.
func (r *Model) Cockpit() *tui.Model { return r.inner }

// Position is the replay's position: journal time since its start.
func (r *Model) Position() time.Duration { return r.pos }

// Playing reports whether the replay plays (else it is paused).
func (r *Model) Playing() bool { return r.playing }

// Speed is the play speed: 1, 2, 4, ... 64.
func (r *Model) Speed() int { return r.speed }

// Quitting reports whether the replay asked the program to quit.
func (r *Model) Quitting() bool { return r.quitting }

func clampDur(d, lo, hi time.Duration) time.Duration { return max(lo, min(d, hi)) }

// replayTickMsg moves the position while playing.
type replayTickMsg struct{ gen int }

// replayEventsMsg is the answer of an Events read for (from, to].
type replayEventsMsg struct {
	epoch    int
	from, to time.Duration
	events   []event.Event
	err      error
}

// replaySeekMsg is the answer of a CatchUp for to.
type replaySeekMsg struct {
	epoch  int
	to     time.Duration
	events []event.Event
	err    error
}

// Init asks for the terminal's background colour (via the inner model),
// rebuilds the screen at the starting position, and starts playing if
// asked to.
func (r *Model) Init() tea.Cmd {
	if r.fol != nil {
		return r.followInit()
	}
	cmds := []tea.Cmd{r.inner.Init(), r.seek(r.pos)}
	if r.playing {
		cmds = append(cmds, r.play())
	}
	return tea.Batch(cmds...)
}

// seek starts rebuilding the screen at t (clamped) in a fresh model;
// the answers of earlier seeks and reads are dropped from now on.
func (r *Model) seek(t time.Duration) tea.Cmd {
	if r.fol != nil {
		if t >= r.dur && !r.fol.stopped {
			return r.goLive() // the end of a followed journal is live
		}
		r.fol.live = false
	}
	t = clampDur(t, 0, r.dur)
	r.epoch++
	r.pos, r.seeking, r.fetching = t, true, false
	src, mu, epoch := r.src, r.srcMu, r.epoch
	return func() tea.Msg {
		mu.Lock()
		defer mu.Unlock()
		evs, err := src.CatchUp(t)
		return replaySeekMsg{epoch: epoch, to: t, events: evs, err: err}
	}
}

// play starts playing (from the start when at the end).
func (r *Model) play() tea.Cmd {
	r.playing = true
	r.playGen++
	var seek tea.Cmd
	if r.pos >= r.dur && r.dur > 0 && r.fol == nil {
		seek = r.seek(0)
	}
	return tea.Batch(seek, r.tick())
}

func (r *Model) pause() {
	r.playing = false
	r.playGen++
}

func (r *Model) tick() tea.Cmd {
	gen := r.playGen
	if r.tickCmd != nil {
		return r.tickCmd(gen)
	}
	return tea.Tick(replayTick, func(time.Time) tea.Msg { return replayTickMsg{gen: gen} })
}

// step reads the next replayTick × speed of events, unless a read or a
// seek is in flight (then this tick is skipped: the position waits for
// the file).
func (r *Model) step() tea.Cmd {
	if r.seeking || r.fetching {
		return nil
	}
	from := r.pos
	to := min(from+replayTick*time.Duration(r.speed), r.dur)
	r.fetching = true
	src, mu, epoch := r.src, r.srcMu, r.epoch
	return func() tea.Msg {
		mu.Lock()
		defer mu.Unlock()
		evs, err := src.Events(from, to)
		return replayEventsMsg{epoch: epoch, from: from, to: to, events: evs, err: err}
	}
}

// Update applies one message. It does no I/O: reads run in tea.Cmds.
func (r *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if r.fol != nil {
		defer r.followHelp()
		if cmd, ok := r.followUpdate(msg); ok {
			return r, cmd
		}
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		r.width, r.height = max(msg.Width, 1), max(msg.Height, 1)
		r.inner.Update(tea.WindowSizeMsg{Width: r.width, Height: max(r.height-1, 1)})
		return r, nil
	case tea.BackgroundColorMsg:
		r.bg = &msg
		r.inner.Update(msg)
		r.jump.SetStyles(r.inner.InputStyles())
		return r, nil
	case replayTickMsg:
		if msg.gen != r.playGen || !r.playing {
			return r, nil
		}
		if r.pos >= r.dur && !r.seeking && !r.fetching {
			return r, r.atEnd()
		}
		return r, tea.Batch(r.step(), r.tick())
	case replayEventsMsg:
		if msg.epoch != r.epoch || !r.fetching {
			return r, nil // a seek superseded it
		}
		r.fetching = false
		if msg.err != nil {
			r.pause()
			r.inner.Flash("replay: "+style.ErrText(msg.err), style.Crit)
			return r, nil
		}
		r.inner.Update(tui.EventsMsg(msg.events))
		r.pos = msg.to
		r.inner.Update(tui.ClockMsg{Now: r.start.Add(r.pos)})
		if r.pos >= r.dur && r.playing {
			return r, r.atEnd()
		}
		return r, nil
	case replaySeekMsg:
		if msg.epoch != r.epoch {
			return r, nil // a later seek superseded it
		}
		r.seeking = false
		if msg.err != nil {
			r.pause()
			r.inner.Flash("replay: seek to "+fmtClock(msg.to)+": "+style.ErrText(msg.err), style.Crit)
			return r, nil
		}
		fresh := r.newInner()
		fresh.CarryView(r.inner)
		fresh.Update(tui.EventsMsg(msg.events))
		fresh.Update(tui.ClockMsg{Now: r.start.Add(msg.to)})
		r.inner, r.pos = fresh, msg.to
		return r, nil
	case tea.KeyPressMsg:
		return r.key(msg)
	case tea.PasteMsg:
		if r.jumping {
			var cmd tea.Cmd
			r.jump, cmd = r.jump.Update(msg)
			return r, cmd
		}
	case tui.EventsMsg, event.Event, tui.ClockMsg:
		return r, nil // time comes from the journal only
	}
	_, cmd := r.inner.Update(msg)
	return r, cmd
}

// View is the cockpit's screen, one line shorter, and the timeline.
func (r *Model) View() tea.View {
	v := r.inner.View()
	tl := r.timeline(r.width)
	if r.height <= 1 {
		v.Content = tl
	} else {
		v.Content += "\n" + tl
	}
	return v
}

var _ tea.Model = (*Model)(nil)

// Run runs r on the terminal until the user quits (nil), ctx ends
// (ctx.Err()), or the program fails.
// Frames are drawn only when the view changed (package screen).
func Run(ctx context.Context, r *Model, opts ...tea.ProgramOption) error {
	// The colour mode's profile first, so that opts can still override it.
	p, err := screen.NewProgram(r, screen.Target{Profile: r.opts.ForcedProfile()},
		append(append([]tea.ProgramOption{tea.WithContext(ctx)}, r.opts.ColorOptions()...), opts...)...)
	if err != nil {
		return err
	}
	_, err = p.Run()
	if err != nil && ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return ctx.Err()
	}
	return err
}

// Default terminal size until the first tea.WindowSizeMsg (the cockpit's).
const (
	defaultWidth  = 80
	defaultHeight = 24
)
