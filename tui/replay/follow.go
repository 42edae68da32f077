package replay

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/tui"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Follow mode (Options.Follow): the replay of a journal being written,
// kept at its end. It catches up from the start to the end, then
// polls the source every FollowPoll and plays what was appended, so the
// screen is at most a poll and the writer's write period behind the
// driving cockpit (flightdeck follow). The view keys work as in a replay;
// seeking back (left, [, t, space to pause) leaves the live end, and
// G/end (or playing up to the end) returns to it. Acting keys say
// "follow: read-only".

// Refresher is a Source on a file being written: Refresh reads what was
// appended since the last call and returns how many events it added
// (Duration and Marks then include them), or an error when the file can no
// longer be read as the same journal (it shrank). *journal.Journal
// implements it. A followed source without it never grows.
type Refresher interface {
	Refresh() (int, error)
}

// pathSource is a Source that names its file (*journal.Journal):
// the follower then says when the file at that path was replaced or
// removed.
type pathSource interface {
	Path() string
}

// FollowPoll is how often a follower polls its journal for new events.
const FollowPoll = 250 * time.Millisecond

// followQuiet is how long the writer may be silent before the timeline
// says since when.
const followQuiet = 5 * time.Second

// followState is the follow mode's part of a Model.
type followState struct {
	live    bool // at the end, playing what arrives
	polling bool // a poll is in flight
	stopped bool // the source failed for good: no more polls
	// now is the wall-clock time of the last poll tick; lastNew is when
	// the journal last grew (the last event's time at the catch-up).
	now, lastNew time.Time
	// edge is the journal time the live screen has every event up to;
	// seen is how many of those events have edge as their running-max
	// time (see nextEdge).
	edge time.Duration
	seen int
	// problem is what went wrong with the file, for the timeline (""
	// none); problemCrit marks it as an error rather than a warning.
	problem     string
	problemCrit bool
	// ended is when the followed cockpit released the driver lock (it
	// quit): the journal will not grow; zero while it may.
	ended time.Time
	// file is the identity of the followed file when first polled; only
	// touched inside tea.Cmds under the replay's srcMu.
	file *followFile
	// tickCmd makes the poll tick; nil means tea.Tick(FollowPoll) (tests
	// deliver ticks themselves).
	tickCmd func() tea.Cmd
}

// followFile is the followed file's identity (os.SameFile), read and
// written only under the replay's srcMu.
type followFile struct {
	fi      os.FileInfo
	changed string // "replaced" or "removed" once noticed
}

// followTickMsg asks for a poll; At is the wall-clock time.
type followTickMsg struct{ At time.Time }

// followPollMsg is a poll's answer: the journal's new end and marks, and
// when live was set at the poll's start, the events appended since, with
// the new edge.
type followPollMsg struct {
	epoch  int
	live   bool
	edge   time.Duration
	seen   int
	dur    time.Duration
	marks  []journal.Mark
	events []event.Event
	file   string // "replaced" or "removed" when just noticed
	err    error
}

// followLiveMsg is the answer of a catch-up to the journal's end.
type followLiveMsg struct {
	epoch  int
	dur    time.Duration
	seen   int
	marks  []journal.Mark
	events []event.Event
	err    error
}

// initFollow turns a new replay into a follower: the cockpit says
// "follow" for the mode and "follow: read-only" to the keys that would
// act (tui.Options.Mode), and G/end and space describe their follow roles
// in the help.
func (r *Model) initFollow() {
	r.fol = &followState{live: true}
	r.playing = false
	r.pos = r.dur
	r.opts.Mode.Word, r.opts.Mode.Refusal = "follow", "follow: read-only"
	b := &r.ck.Bottom
	b.Long = "bottom of the log; back to the live end of the journal"
	b.SetHelp("G/end", "live")
	b.Short = true // in the footer: the way back to live
	r.keys.Play.Long = "pause (leaves the live end) / play (up to the live end)"
	r.keys.Play.SetHelp("spc", "pause") // then "play" away from the live end (followHelp)
}

// followHelp names what space does now in the footer: pause while live
// or playing, play otherwise.
func (r *Model) followHelp() {
	word := "play"
	if r.fol.live || r.playing {
		word = "pause"
	}
	if r.keys.Play.Help().Desc != word {
		r.keys.Play.SetHelp("spc", word)
	}
}

// Following reports whether the replay follows a journal being written
// (Options.Follow).
func (r *Model) Following() bool { return r.fol != nil }

// Live reports whether a follower is at the live end of its journal;
// false for a replay.
func (r *Model) Live() bool { return r.fol != nil && r.fol.live }

// followInit catches up to the end and starts polling.
func (r *Model) followInit() tea.Cmd {
	return tea.Batch(r.inner.Init(), r.goLive(), r.followTick())
}

func (r *Model) followTick() tea.Cmd {
	if r.fol.tickCmd != nil {
		return r.fol.tickCmd()
	}
	return tea.Tick(FollowPoll, func(t time.Time) tea.Msg { return followTickMsg{At: t} })
}

// goLive rebuilds the screen at the journal's end, read anew, in a fresh
// model, and follows from there.
func (r *Model) goLive() tea.Cmd {
	r.epoch++
	r.seeking, r.fetching = true, false
	if r.playing {
		r.pause()
	}
	src, mu, epoch := r.src, r.srcMu, r.epoch
	return func() tea.Msg {
		mu.Lock()
		defer mu.Unlock()
		if rf, ok := src.(Refresher); ok {
			if _, err := rf.Refresh(); err != nil {
				return followLiveMsg{epoch: epoch, err: err}
			}
		}
		dur := max(src.Duration(), 0)
		evs, err := src.CatchUp(dur)
		msg := followLiveMsg{epoch: epoch, dur: dur, marks: src.Marks(), events: evs, err: err}
		if err == nil {
			// How many events end at dur: the first poll skips them.
			var at []event.Event
			at, msg.err = src.Events(dur-time.Microsecond, dur)
			msg.seen = len(at)
		}
		return msg
	}
}

// nextEdge is the follower's position after evs, the events whose
// running-max time is at least edge, in file order: the journal's Events
// selects by running-max time, so an event appended with an earlier time
// than one before it (two probes' clocks) has the running maximum before
// it, at or below the edge of the last poll. Each poll therefore reads
// from just below the edge and skips the seen events it already played
// (they come first: running-max times never decrease). It returns the new
// events, the new edge and how many of evs end at it. start is the
// journal's time 0.
func nextEdge(evs []event.Event, start time.Time, edge time.Duration, seen int) ([]event.Event, time.Duration, int) {
	run, n := edge, 0
	for _, e := range evs {
		if t := e.At.Sub(start); t > run {
			run, n = t, 0
		}
		n++
	}
	fresh := evs[min(seen, len(evs)):]
	if run == edge && len(evs) < seen {
		n = seen // fewer than before: an event did not decode this time
	}
	return fresh, run, n
}

// poll reads what was appended; when live, the events after the position
// too.
func (r *Model) poll() tea.Cmd {
	r.fol.polling = true
	src, mu, epoch, live := r.src, r.srcMu, r.epoch, r.fol.live && !r.seeking
	edge, seen, start := r.fol.edge, r.fol.seen, r.start
	ff := r.fol.file
	if ff == nil {
		ff = &followFile{}
		r.fol.file = ff
	}
	return func() tea.Msg {
		mu.Lock()
		defer mu.Unlock()
		msg := followPollMsg{epoch: epoch, live: live, edge: edge, seen: seen}
		msg.file = checkFile(src, ff)
		if rf, ok := src.(Refresher); ok {
			if _, msg.err = rf.Refresh(); msg.err != nil {
				return msg
			}
		}
		msg.dur, msg.marks = max(src.Duration(), 0), src.Marks()
		if live && msg.dur >= edge {
			var evs []event.Event
			evs, msg.err = src.Events(edge-time.Microsecond, msg.dur)
			msg.events, msg.edge, msg.seen = nextEdge(evs, start, edge, seen)
		}
		return msg
	}
}

// checkFile notes, once, that the file at the source's path is no longer
// the one first seen (replaced) or is gone (removed).
func checkFile(src Source, ff *followFile) string {
	ps, ok := src.(pathSource)
	if !ok || ff.changed != "" {
		return ""
	}
	fi, err := os.Stat(ps.Path())
	switch {
	case err != nil:
		if ff.fi != nil && os.IsNotExist(err) {
			ff.changed = "removed"
		}
	case ff.fi == nil:
		ff.fi = fi
	case !os.SameFile(ff.fi, fi):
		ff.changed = "replaced"
	}
	return ff.changed
}

// followUpdate handles the follow mode's messages; ok is false for
// others.
func (r *Model) followUpdate(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	f := r.fol
	switch msg := msg.(type) {
	case followTickMsg:
		f.now = msg.At
		if f.lastNew.After(f.now) {
			f.lastNew = f.now // the writer's clock is ahead of ours
		}
		if f.stopped {
			return nil, true
		}
		var poll tea.Cmd
		if !f.polling && !r.fetching {
			poll = r.poll()
		}
		return tea.Batch(poll, r.followTick()), true
	case followPollMsg:
		f.polling = false
		if msg.file != "" {
			f.problem, f.problemCrit = "the journal file was "+msg.file+": showing the one opened", false
		}
		if msg.err != nil {
			r.followFailed(msg.err)
			return nil, true
		}
		if msg.dur > r.dur {
			f.lastNew = f.now
			r.dur = msg.dur
		}
		r.marks = msg.marks
		if msg.live && msg.epoch == r.epoch && f.live && !r.seeking {
			if len(msg.events) > 0 {
				role := r.inner.DriverRole() // before these events
				r.inner.Update(tui.EventsMsg(msg.events))
				r.flashNotes(role, msg.events)
			}
			f.edge, f.seen = msg.edge, msg.seen
			r.pos = max(r.pos, msg.dur)
			r.inner.Update(tui.ClockMsg{Now: r.liveNow()})
		}
		return nil, true
	case followLiveMsg:
		if msg.epoch != r.epoch {
			return nil, true
		}
		r.seeking = false
		if msg.err != nil {
			r.followFailed(msg.err)
			return nil, true
		}
		fresh := r.newInner()
		fresh.CarryView(r.inner)
		fresh.Update(tui.EventsMsg(msg.events))
		// The catch-up holds the journal's last driver state: a release
		// there means the session already ended.
		f.ended = time.Time{}
		for _, e := range msg.events {
			if st, ok := e.Data.(event.DriverState); ok {
				f.ended = time.Time{}
				if st.Role == event.RoleNone && st.Note == driver.NoteReleased {
					f.ended = e.At
				}
			}
		}
		if msg.dur > r.dur || f.lastNew.IsZero() {
			f.lastNew = r.start.Add(msg.dur)
		}
		r.dur, r.marks, r.pos = max(r.dur, msg.dur), msg.marks, msg.dur
		f.live, f.edge, f.seen = true, msg.dur, msg.seen
		fresh.Update(tui.ClockMsg{Now: r.liveNow()})
		r.inner = fresh
		return nil, true
	}
	return nil, false
}

// followFailed stops following after the source failed for good (the
// file shrank, or cannot be read): the screen keeps what it showed, the
// timeline says why (the file named by its base name), the status line
// says it in full.
func (r *Model) followFailed(err error) {
	f := r.fol
	f.stopped, f.live, f.polling = true, false, false
	text := style.ErrText(err)
	r.inner.Flash("follow stopped: "+text, style.Crit)
	if ps, ok := r.src.(pathSource); ok && ps.Path() != "" {
		text = strings.ReplaceAll(text, ps.Path(), filepath.Base(ps.Path()))
	}
	f.problem, f.problemCrit = "follow stopped: "+text, true
}

// liveNow is the cockpit's clock at the live end: the wall clock (the
// ages grow while the writer is quiet), never before the last event (a
// writer's clock ahead of ours).
func (r *Model) liveNow() time.Time {
	end := r.start.Add(r.pos)
	if !r.fol.ended.IsZero() {
		return end // the session ended: its ages stop with it
	}
	if r.fol.now.After(end) {
		return r.fol.now
	}
	return end
}

// followKey handles the follow mode's own keys before the replay's: G/end
// returns to the live end (and scrolls as in the cockpit), space pauses
// there. ok is false for the other keys.
func (r *Model) followKey(msg tea.KeyPressMsg) (cmd tea.Cmd, ok bool) {
	switch {
	case key.Matches(msg, r.ck.Bottom.Binding):
		_, scroll := r.inner.Update(msg)
		if r.fol.live || r.fol.stopped {
			return scroll, true
		}
		r.inner.Flash("live: following the journal", style.OK)
		return tea.Batch(scroll, r.goLive()), true
	case key.Matches(msg, r.keys.Play.Binding) && !r.inner.Experiments().Open:
		switch {
		case r.fol.live:
			r.fol.live = false
			r.inner.Flash("paused: G or end returns to the live end", style.Warn)
			return nil, true
		case !r.playing && r.pos >= r.dur && !r.fol.stopped:
			return r.goLive(), true
		}
	}
	return nil, false
}

// atEnd is a playing replay reaching the journal's end: it pauses there;
// a follower goes live instead (caught up anew at the end: events may have
// been appended at times already played).
func (r *Model) atEnd() tea.Cmd {
	r.pause()
	if r.fol != nil && !r.fol.stopped {
		r.inner.Flash("live: following the journal", style.OK)
		return r.goLive()
	}
	r.inner.Flash("end of the journal", style.Dim)
	return nil
}

// followTail is the timeline's right end for a follower: "LIVE", with
// "no new events for 12s" when the writer has been quiet; "behind 0:02:10
// (G: live)" away from the end; or what went wrong with the file. It is
// styled; w is its width in cells.
func (r *Model) followTail() (s string, w int) {
	st := r.inner.Styles()
	f := r.fol
	var parts []string
	var width int
	add := func(text string, paint func(string) string) {
		parts = append(parts, paint(text))
		width += style.Width(text)
	}
	if f.problem != "" {
		if f.problemCrit {
			add(f.problem, st.Crit.Render)
		} else {
			add(f.problem, st.Warn.Render)
		}
	}
	switch {
	case f.stopped:
	case f.live && !f.ended.IsZero():
		add("ENDED "+f.ended.Local().Format("15:04:05")+" (the driver quit)", st.Warn.Render)
	case f.live:
		if quiet := f.now.Sub(f.lastNew); !f.now.IsZero() && quiet > followQuiet {
			add("no new events for "+style.ShortDur(quiet), st.Dim.Render)
		}
		add("LIVE", st.OK.Render)
	default:
		add("behind "+fmtClock(r.dur-r.pos)+" (G: live)", st.Warn.Render)
	}
	if len(parts) == 0 {
		return "", 0
	}
	return strings.Join(parts, "  "), width + 2*(len(parts)-1)
}

// flashNotes shows the last note among evs in the follower's status line
// ("note 10:15:03 (e3): suspect NCCL_ALGO"), until the next key: the
// driver's notes are what a follower most wants to see as they come. It
// also follows the journal's driver states from role (the one before
// evs): a release by the driving cockpit ends the session (the timeline
// says so), a take-over is said on the status line.
func (r *Model) flashNotes(role event.DriverRole, evs []event.Event) {
	for _, e := range evs {
		st, ok := e.Data.(event.DriverState)
		if !ok {
			continue
		}
		prev := role
		role = st.Role
		switch st.Role {
		case event.RoleNone:
			if st.Note == driver.NoteReleased {
				r.fol.ended = e.At // released: the cockpit quit
			}
		case event.RoleDriving:
			r.fol.ended = time.Time{}
			if prev == event.RoleWatching {
				msg := "this journal's cockpit drives again"
				if n := sanitize.String(st.Note); n != "" {
					msg += " (" + n + ")"
				}
				r.inner.Flash(msg, style.Accent)
			}
		case event.RoleWatching:
			if prev == event.RoleDriving || prev == event.RoleUnsure {
				who := sanitize.String(st.Holder.Who())
				if st.Holder.PID > 0 {
					who += " (pid " + strconv.Itoa(st.Holder.PID) + ")"
				}
				r.inner.Flash(who+" took over: this journal's cockpit only watches now; run flightdeck follow again to follow the new driver", style.Warn)
			}
		}
	}
	for i := len(evs) - 1; i >= 0; i-- {
		n, ok := evs[i].Data.(event.Note)
		if !ok {
			continue
		}
		head := "note " + evs[i].At.Local().Format("15:04:05")
		if x := sanitize.String(n.Exp); x != "" {
			head += " (" + x + ")"
		}
		r.inner.Flash(head+": "+sanitize.Typed(n.Text), style.Accent)
		return
	}
}
