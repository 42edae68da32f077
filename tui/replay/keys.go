package replay

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The replay's keys, and how a key goes to the time input, the cockpit or
// the replay.

// keyMap is the replay's own keys: play/pause, speed, seek, marks and a
// typed time. The cockpit's help and footer list them (tui.Options.Mode's
// Keys); the replay handles them before the cockpit sees a key.
type keyMap struct {
	Play     component.Binding
	Faster   component.Binding
	Slower   component.Binding
	Back     component.Binding
	Forward  component.Binding
	PrevMark component.Binding
	NextMark component.Binding
	JumpTo   component.Binding
}

// defaultKeys returns the replay's standard bindings.
func defaultKeys() keyMap {
	k := keyMap{
		Play:     component.New("replay", "spc", "play", "space").InFooter(),
		Faster:   component.New("replay", "+/-", "speed", "+", "=").InFooter(),
		Slower:   component.New("replay", "-", "slower", "-"),
		Back:     component.New("replay", "left/right", "seek 10s", "left"),
		Forward:  component.New("replay", "right", "forward 10s", "right"),
		PrevMark: component.New("replay", "[/]", "mark", "[").InFooter(),
		NextMark: component.New("replay", "]", "next mark", "]"),
		JumpTo:   component.New("replay", "t", "time", "t").InFooter(),
	}
	k.Play.Long = "play or pause"
	k.Faster.Long = "faster or slower: 1x 2x 4x ... 64x"
	k.Back.Long = "seek back or forward 10 s"
	k.PrevMark.Long = "previous or next experiment start or end, or note"
	k.JumpTo.Long = "jump to a time: h:mm:ss, mm:ss or seconds"
	return k
}

// help lists the bindings as the help shows them: one entry per pair
// (+/-, left/right, [/]).
func (k *keyMap) help() []*component.Binding {
	return []*component.Binding{&k.Play, &k.Faster, &k.Back, &k.PrevMark, &k.JumpTo}
}

// key handles a key: the time input first, then the inner model's filter
// input or overlay, then the replay's keys; every other key goes to the
// cockpit (scrolling, filter, tab, panels, help; actions say they cannot
// act in a replay).
func (r *Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if r.jumping {
		return r, r.jumpKey(msg)
	}
	in := r.inner
	if in.KeyTaken(msg) {
		// The filter prompt or a dialog has the keys; in the experiments
		// panel space marks an experiment instead of playing.
		_, cmd := in.Update(msg)
		return r, cmd
	}
	k := &r.keys
	in.Flash("", style.Warn)
	if in.HelpKey(msg) {
		return r, nil
	}
	if r.fol != nil {
		if cmd, ok := r.followKey(msg); ok {
			return r, cmd
		}
	}
	switch {
	case key.Matches(msg, r.ck.Quit.Binding):
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
func (r *Model) toMark(dir int) tea.Cmd {
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
		r.inner.Flash(what, style.Dim)
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
	r.inner.Flash(strings.Join(texts, "; "), style.OK)
	return cmd
}

// sameInstant is how close marks are to count as one stop for [ and ].
const sameInstant = 500 * time.Millisecond

// markText names a mark: "0:12:34 e2 started: nccl-ll-ring".
func markText(mk journal.Mark) string {
	what := mk.Kind.String()
	switch mk.Kind {
	case event.KindExperimentStart:
		what = component.JoinWords(sanitize.String(mk.Exp), "started")
	case event.KindExperimentEnd:
		what = component.JoinWords(sanitize.String(mk.Exp), "ended")
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
func (r *Model) jumpKey(msg tea.KeyPressMsg) tea.Cmd {
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
			r.inner.Flash("t: "+err.Error(), style.Crit)
			return nil
		}
		if t > r.dur {
			r.inner.Flash("t: "+fmtClock(t)+" is past the end of the journal ("+fmtClock(r.dur)+")", style.Crit)
			return nil
		}
		return r.seek(t)
	}
	var cmd tea.Cmd
	r.jump, cmd = r.jump.Update(msg)
	return cmd
}
