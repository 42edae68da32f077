package sessions

// The Lab's experiments and notes: the actions that start, end, update and
// annotate them, and how an experiment is opened, closed and named.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Start ends the open experiment, if any (trigger key), and starts one
// called name (default "<profile> @ <short HEAD>", the preset standing in
// for the profile "none") with hypothesis (may be empty). The exp-start is
// published before Start returns; the fingerprint is captured in the
// background and published when complete (exp-fingerprint), never failing
// as a whole. ctx only bounds the wait for publishing. Errors:
// ErrLabClosed after Close, or ctx's.
func (l *Lab) Start(ctx context.Context, name, hypothesis string) (event.ExperimentStart, error) {
	var s event.ExperimentStart
	err := l.act(ctx, func() error {
		now := time.Now()
		if l.ledger.Current() != nil {
			l.endLocked(now, event.TriggerKey, "")
		}
		s = l.startLocked(now, typed(name), typed(hypothesis), event.TriggerKey, nil, nil)
		return nil
	})
	return s, err
}

// End ends the open experiment (trigger key) with conclusion (may be empty)
// and returns its exp-end, published before End returns: the result over
// its steady-state tok/s samples and the last GPU sample. Errors:
// ErrNoExperiment, ErrLabClosed, or ctx's.
func (l *Lab) End(ctx context.Context, conclusion string) (event.ExperimentEnd, error) {
	var end event.ExperimentEnd
	err := l.act(ctx, func() error {
		if l.ledger.Current() == nil {
			return ErrNoExperiment
		}
		end = l.endLocked(time.Now(), event.TriggerKey, typed(conclusion))
		return nil
	})
	return end, err
}

// Update changes an experiment's name, hypothesis or conclusion (empty
// fields stay); u.Exp "" means the open one. Errors: ErrNoExperiment when
// u.Exp is "" and none is open, an unknown experiment, ErrLabClosed, or
// ctx's.
func (l *Lab) Update(ctx context.Context, u event.ExperimentUpdate) error {
	u.Name, u.Hypothesis, u.Conclusion = typed(u.Name), typed(u.Hypothesis), typed(u.Conclusion)
	return l.act(ctx, func() error {
		switch {
		case u.Exp == "":
			cur := l.ledger.Current()
			if cur == nil {
				return ErrNoExperiment
			}
			u.Exp = cur.ID
		case !l.knowsLocked(u.Exp):
			return fmt.Errorf("no experiment %q", u.Exp)
		}
		if u.Name != "" {
			delete(l.defaulted, u.Exp) // named by hand: the fingerprint leaves it alone
			delete(l.auto, u.Exp)
		}
		l.decideLocked(time.Now(), u)
		return nil
	})
}

// Note adds a timestamped note to the journal and to the open experiment
// (if any) and returns it, published before Note returns. The text is
// trimmed and made safe to print (probes/sanitize). Errors: ErrEmptyNote,
// ErrLabClosed, or ctx's.
func (l *Lab) Note(ctx context.Context, text string) (event.Note, error) {
	if err := ctx.Err(); err != nil {
		return event.Note{}, err
	}
	text = typed(text)
	if text == "" {
		return event.Note{}, ErrEmptyNote
	}
	var n event.Note
	err := l.act(ctx, func() error {
		n = event.Note{Text: text}
		if cur := l.ledger.Current(); cur != nil {
			n.Exp = cur.ID
		}
		l.decideLocked(time.Now(), n)
		return nil
	})
	return n, err
}

// knowsLocked reports whether id is the id of an experiment of this
// session or, through Prior, of the journal before it; call with l.mu
// held.
func (l *Lab) knowsLocked(id string) bool {
	if x := l.ledger.Find(id); x != nil && x.ID == id {
		return true
	}
	return l.Prior != nil && l.Prior(id)
}

// currentID is the open experiment's id, "" when none (a benchmark
// records it).
func (l *Lab) currentID() string {
	if x, ok := l.Current(); ok {
		return x.ID
	}
	return ""
}

// startLocked opens an experiment and starts capturing its fingerprint.
// launch is the exp-start's Launch (nil when started by hand); rep, when
// set, tags it as a launch of a repeat (exp-repeat right after the
// exp-start, and " #I/N" after its default name). Call with l.mu held,
// l.closed false.
func (l *Lab) startLocked(at time.Time, name, hypothesis string, trig event.Trigger, launch *event.LaunchInfo, rep *event.Repeat) event.ExperimentStart {
	l.next = max(l.next, l.Numbered) + 1
	id := "e" + strconv.Itoa(l.next)
	l.killGPUs = nil // a kill before this start was not under this experiment's load
	tag := ""
	if rep != nil {
		tag = repeatTag(rep.I, rep.N)
		l.tags[id] = tag
	}
	if name == "" {
		name = l.defaultNameLocked() + tag
		l.defaulted[id] = name
		l.auto[id] = true
	}
	s := event.ExperimentStart{ID: id, Name: name, Hypothesis: hypothesis, Trigger: trig, Launch: launch}
	l.decideLocked(at, s)
	if rep != nil {
		r := *rep
		r.Exp = id
		l.repeats[id] = r
		l.decideLocked(at, r)
	}
	prev := l.lastCap
	slot := &captureSlot{done: make(chan struct{})}
	l.lastCap = slot
	in := captureInput{exp: id, at: at, launch: l.knownLaunchLocked(), preset: l.presetLocked(), prev: prev}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		fp := l.capture(l.base, in)
		if fp.Git != nil {
			slot.head = fp.Git.Head
		}
		close(slot.done)
		l.captured(id, fp)
	}()
	return s
}

// repeatTag is the suffix of a repeat's launch in experiment names.
func repeatTag(i, n int) string { return " #" + strconv.Itoa(i) + "/" + strconv.Itoa(n) }

// endLocked closes the open experiment with its result. Call with l.mu
// held and an experiment open.
func (l *Lab) endLocked(at time.Time, trig event.Trigger, conclusion string) event.ExperimentEnd {
	cur := l.ledger.Current()
	gpus := l.gpus
	switch {
	case l.busyGPUs != nil && !l.busyAt.Before(cur.Started):
		gpus = l.busyGPUs
	case l.killGPUs != nil:
		gpus = l.killGPUs
	}
	l.killGPUs = nil
	end := event.ExperimentEnd{Exp: cur.ID, Trigger: trig, Conclusion: conclusion, Result: l.ledger.Provisional(), GPUs: gpus}
	l.decideLocked(at, end)
	return end
}

// captured publishes a fingerprint, and the experiment's name when its
// default name named another commit (or none) than the one captured.
func (l *Lab) captured(id string, fp event.Fingerprint) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.decideLocked(time.Now(), event.ExperimentFingerprint{Exp: id, Fingerprint: fp})
	if old, ok := l.defaulted[id]; ok {
		delete(l.defaulted, id)
		if fp.Git != nil && fp.Git.Head != "" {
			name := nameFor(labelOf(fp.Launch, l.presetLocked()), git.ShortID(fp.Git.Head)) + l.tags[id]
			if x := l.ledger.Find(id); name != old && x != nil && x.Name == old {
				l.decideLocked(time.Now(), event.ExperimentUpdate{Exp: id, Name: name})
			}
		}
	}
	l.kickLocked()
}

// defaultNameLocked is "<profile> @ <short HEAD>" for the launch known now.
func (l *Lab) defaultNameLocked() string {
	return nameFor(labelOf(l.knownLaunchLocked(), l.presetLocked()), l.head)
}

func nameFor(label, short string) string {
	if short == "" {
		return label
	}
	return label + " @ " + short
}

// labelOf names a launch by its env profile ("none" included: the name
// says what the experiment varies), by its preset when it has no profile;
// fallback when no launch is known.
func labelOf(launch *event.LaunchInfo, fallback string) string {
	switch {
	case launch != nil && launch.Profile != "":
		return sanitize.String(launch.Profile)
	case launch != nil && launch.Preset != "":
		return sanitize.String(launch.Preset)
	case fallback != "":
		return sanitize.String(fallback)
	}
	return "experiment"
}

// knownLaunchLocked is the launch of the server as known now: the last
// launch or pidfile seen, else what the server status says (an adopted
// server), else nil.
func (l *Lab) knownLaunchLocked() *event.LaunchInfo {
	st := l.status
	// A status older than the last launch describes the server that launch
	// replaced (the new one's status follows a moment later).
	if l.launch != nil && (st.LogPath == "" || st.LogPath == l.launch.LogPath || st.Since.Before(l.launchAt)) {
		return l.launch
	}
	if st.Preset != "" || st.Profile != "" || st.Server != "" {
		return &event.LaunchInfo{Preset: st.Preset, Profile: st.Profile, Server: st.Server, LogPath: st.LogPath, Port: st.Port, At: st.LaunchedAt}
	}
	return l.launch
}

// presetLocked is the preset whose version probes run: the known launch's,
// else Lab.Preset.
func (l *Lab) presetLocked() string {
	if k := l.knownLaunchLocked(); k != nil && k.Preset != "" {
		return k.Preset
	}
	return l.Preset
}
