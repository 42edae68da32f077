package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Replay shows a recorded session read-only: the cockpit's own Model,
// fed the journal's events as the position moves, with the timeline line
// at the bottom. The screen at position t is what the live cockpit showed
// at t (at the same size less that line): the same model, the same
// events, and a ClockMsg of the journal's start + t for the ages.

// ReplaySource is an indexed journal; *journal.Journal implements it.
// Events and CatchUp read the file and are called only inside tea.Cmds,
// one at a time (the replay serialises them: a journal need not be safe
// for concurrent use).
type ReplaySource interface {
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

// ReplayOptions are the replay's starting state (Options.Replay).
type ReplayOptions struct {
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
}

// Replay speeds: 1x to 64x, doubling.
const maxSpeed = 64

// replayTick is how often the position moves while playing: by
// replayTick × speed of journal time each time.
const replayTick = 100 * time.Millisecond

// seekStep is how far left and right move the position.
const seekStep = 10 * time.Second

// Replay is the replay's Bubble Tea model. Create it with NewReplay and run
// it with RunReplay; it is used by pointer.
type Replay struct {
	src   ReplaySource
	srcMu *sync.Mutex // held by the tea.Cmd reading src
	opts  Options     // as given to New for every fresh inner model
	inner *Model
	ctx   context.Context

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

	fol *followState // follow mode (ReplayOptions.Follow); nil in a replay
}

// NewReplay returns a replay of src for a cockpit configured by opts:
// read-only (Control, Git, Experiments, Bench, Repeat and Measure are
// dropped), the label and host
// from the journal's header unless opts names them, starting at
// opts.Replay.At, paused unless opts.Replay.Play. Nothing is read until
// Init's command runs.
func NewReplay(src ReplaySource, opts Options) *Replay {
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
	r := &Replay{src: src, srcMu: new(sync.Mutex), opts: opts, ctx: context.Background(), start: src.Start(), dur: max(src.Duration(), 0),
		marks: src.Marks(), width: defaultWidth, height: defaultHeight, speed: 1}
	for r.speed*2 <= min(opts.Replay.Speed, maxSpeed) {
		r.speed *= 2
	}
	r.pos = clampDur(opts.Replay.At, 0, r.dur)
	r.playing = opts.Replay.Play
	if opts.Replay.Follow {
		r.initFollow()
	}
	r.inner = r.newInner()
	r.jump = textinput.New()
	r.jump.Prompt = ""
	r.jump.Placeholder = "h:mm:ss"
	r.jump.CharLimit = 20
	r.jump.SetStyles(r.inner.inputStyles())
	return r
}

// newInner is a fresh read-only cockpit at the replay's size and palette.
func (r *Replay) newInner() *Model {
	m := New(r.opts)
	m.ctx = r.ctx
	m.Update(tea.WindowSizeMsg{Width: r.width, Height: max(r.height-1, 1)})
	if r.bg != nil {
		m.Update(*r.bg)
	}
	return m
}

// Cockpit returns the inner cockpit model: the screen above the timeline.
func (r *Replay) Cockpit() *Model { return r.inner }

// Position is the replay's position: journal time since its start.
func (r *Replay) Position() time.Duration { return r.pos }

// Playing reports whether the replay plays (else it is paused).
func (r *Replay) Playing() bool { return r.playing }

// Speed is the play speed: 1, 2, 4, ... 64.
func (r *Replay) Speed() int { return r.speed }

// Quitting reports whether the replay asked the program to quit.
func (r *Replay) Quitting() bool { return r.quitting }

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
func (r *Replay) Init() tea.Cmd {
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
func (r *Replay) seek(t time.Duration) tea.Cmd {
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
func (r *Replay) play() tea.Cmd {
	r.playing = true
	r.playGen++
	var seek tea.Cmd
	if r.pos >= r.dur && r.dur > 0 && r.fol == nil {
		seek = r.seek(0)
	}
	return tea.Batch(seek, r.tick())
}

func (r *Replay) pause() {
	r.playing = false
	r.playGen++
}

func (r *Replay) tick() tea.Cmd {
	gen := r.playGen
	if r.tickCmd != nil {
		return r.tickCmd(gen)
	}
	return tea.Tick(replayTick, func(time.Time) tea.Msg { return replayTickMsg{gen: gen} })
}

// step reads the next replayTick × speed of events, unless a read or a
// seek is in flight (then this tick is skipped: the position waits for
// the file).
func (r *Replay) step() tea.Cmd {
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
func (r *Replay) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
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
		r.jump.SetStyles(r.inner.inputStyles())
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
			r.inner.flash("replay: "+errText(msg.err), style.Crit)
			return r, nil
		}
		r.inner.Update(EventsMsg(msg.events))
		r.pos = msg.to
		r.inner.Update(ClockMsg{Now: r.start.Add(r.pos)})
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
			r.inner.flash("replay: seek to "+fmtClock(msg.to)+": "+errText(msg.err), style.Crit)
			return r, nil
		}
		fresh := r.newInner()
		carryView(r.inner, fresh)
		fresh.Update(EventsMsg(msg.events))
		fresh.Update(ClockMsg{Now: r.start.Add(msg.to)})
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
	case EventsMsg, event.Event, ClockMsg:
		return r, nil // time comes from the journal only
	}
	_, cmd := r.inner.Update(msg)
	return r, cmd
}

// carryView keeps what the user chose to look at across a seek: the help,
// the panel, focus, wrap and the log filter.
func carryView(from, to *Model) {
	to.showHelp, to.gpus.Focused = from.showHelp, from.gpus.Focused
	to.helpTop, to.helpMax = from.helpTop, from.helpMax
	to.status, to.statusTone = from.status, from.statusTone
	to.git.Open = from.git.Open
	to.exp.CarryView(from.exp)
	to.bench.CarryDismissed(from.bench)
	to.log.Wrap = from.log.Wrap
	if from.log.Query != "" {
		to.log.SetFilter(from.log.Query)
	}
	to.log.TypeAs(from.log)
}

// key handles a key: the time input first, then the inner model's filter
// input or overlay, then the replay's keys; every other key goes to the
// cockpit (scrolling, filter, tab, panels, help; actions say they cannot
// act in a replay).
func (r *Replay) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if r.jumping {
		return r, r.jumpKey(msg)
	}
	in := r.inner
	if in.log.Typing() || in.dialogOpen() {
		_, cmd := in.Update(msg)
		return r, cmd
	}
	k := &in.keys
	in.status = ""
	if in.showHelp && in.helpKey(msg) {
		return r, nil
	}
	if r.fol != nil {
		if cmd, ok := r.followKey(msg); ok {
			return r, cmd
		}
	}
	if in.exp.Open && key.Matches(msg, in.exp.MarkKey.Binding) {
		// space marks an experiment in the panel instead of playing.
		_, cmd := in.Update(msg)
		return r, cmd
	}
	switch {
	case key.Matches(msg, k.Quit.Binding):
		r.quitting = true
		return r, tea.Quit
	case key.Matches(msg, k.Play.Binding):
		if r.playing {
			r.pause()
			return r, nil
		}
		return r, r.play()
	case key.Matches(msg, k.Faster.Binding):
		r.speed = min(r.speed*2, maxSpeed)
	case key.Matches(msg, k.Slower.Binding):
		r.speed = max(r.speed/2, 1)
	case key.Matches(msg, k.Back.Binding):
		return r, r.seek(r.pos - seekStep)
	case key.Matches(msg, k.Forward.Binding):
		return r, r.seek(r.pos + seekStep)
	case key.Matches(msg, k.PrevMark.Binding):
		return r, r.toMark(-1)
	case key.Matches(msg, k.NextMark.Binding):
		return r, r.toMark(1)
	case key.Matches(msg, k.JumpTo.Binding):
		r.jumping = true
		r.jump.SetValue("")
		return r, r.jump.Focus()
	default:
		_, cmd := in.Update(msg)
		return r, cmd
	}
	return r, nil
}

// toMark seeks to the previous (dir < 0) or next mark, and names it in the
// footer.
func (r *Replay) toMark(dir int) tea.Cmd {
	// While playing, a mark just passed counts as the present one: [ goes
	// to the one before it.
	grace := time.Duration(0)
	if r.playing {
		grace = time.Second
	}
	idx := -1
	if dir < 0 {
		for i, mk := range r.marks {
			if mk.T < r.pos-grace-sameInstant {
				idx = i
			}
		}
	} else {
		for i, mk := range r.marks {
			if mk.T > r.pos+sameInstant {
				idx = i
				break
			}
		}
	}
	if idx < 0 {
		what := "no later mark"
		if dir < 0 {
			what = "no earlier mark"
		}
		if len(r.marks) == 0 {
			what = "no experiments or notes in this journal"
		}
		r.inner.flash(what, style.Dim)
		return nil
	}
	// Marks at one instant (an experiment's end by a relaunch and the
	// next one's start) are one stop: the position goes to the last of
	// them and the footer names them all.
	first, last := idx, idx
	for first > 0 && r.marks[idx].T-r.marks[first-1].T <= sameInstant {
		first--
	}
	for last+1 < len(r.marks) && r.marks[last+1].T-r.marks[idx].T <= sameInstant {
		last++
	}
	texts := make([]string, 0, last-first+1)
	for _, mk := range r.marks[first : last+1] {
		texts = append(texts, markText(mk))
	}
	cmd := r.seek(r.marks[last].T)
	r.inner.flash(strings.Join(texts, "; "), style.OK)
	return cmd
}

// sameInstant is how close marks are to count as one stop for [ and ].
const sameInstant = 500 * time.Millisecond

// markText names a mark: "0:12:34 e2 started: nccl-ll-ring".
func markText(mk journal.Mark) string {
	what := mk.Kind.String()
	switch mk.Kind {
	case event.KindExperimentStart:
		what = join(sanitize.String(mk.Exp), "started")
	case event.KindExperimentEnd:
		what = join(sanitize.String(mk.Exp), "ended")
	case event.KindNote:
		what = "note"
		if mk.Exp != "" {
			what += " on " + sanitize.String(mk.Exp)
		}
	}
	if t := sanitize.String(mk.Text); t != "" {
		what += ": " + t
	}
	return fmtClock(mk.T) + " " + what
}

// jumpKey handles a key while the time input is open.
func (r *Replay) jumpKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc", "ctrl+c":
		r.jumping = false
		r.jump.Blur()
		return nil
	case "enter":
		r.jumping = false
		r.jump.Blur()
		t, err := ParseClock(r.jump.Value())
		if err != nil {
			r.inner.flash("t: "+err.Error(), style.Crit)
			return nil
		}
		if t > r.dur {
			r.inner.flash("t: "+fmtClock(t)+" is past the end of the journal ("+fmtClock(r.dur)+")", style.Crit)
			return nil
		}
		return r.seek(t)
	}
	var cmd tea.Cmd
	r.jump, cmd = r.jump.Update(msg)
	return cmd
}

// View is the cockpit's screen, one line shorter, and the timeline.
func (r *Replay) View() tea.View {
	v := r.inner.View()
	tl := r.timeline(r.width)
	if r.height <= 1 {
		v.Content = tl
	} else {
		v.Content += "\n" + tl
	}
	return v
}

var _ tea.Model = (*Replay)(nil)

// RunReplay runs r on the terminal until the user quits (nil), ctx ends
// (ctx.Err()), or the program fails.
func RunReplay(ctx context.Context, r *Replay, opts ...tea.ProgramOption) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.ctx, r.inner.ctx = ctx, ctx
	// The colour mode's profile first, so that opts can still override it.
	p := tea.NewProgram(r, append(append([]tea.ProgramOption{tea.WithContext(parent)}, r.opts.colorOptions()...), opts...)...)
	_, err := p.Run()
	if err != nil && parent.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return parent.Err()
	}
	return err
}
