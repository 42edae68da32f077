// Package bisect is the cockpit's bisect panel (i): in the log tail's
// place it shows the bisect of the stream — its range (good..bad, how many
// commits), the candidates left, each commit measured so far in range
// order with its launches, median [95 % CI], delta against the good
// endpoint, verdict and p, the phase and ETA of the launch in progress,
// and at the end the outcome (the culprit, no difference, or not a single
// step with its suspects) and what the checkout was restored to.
//
// Everything it shows comes from the event stream: event.BisectStart,
// event.BisectLaunch and event.BisectEnd (journaled, so a replay shows
// the bisect as it ran) are folded with sessions/bisect.Fold, whose
// decision procedure recomputes the verdicts; event.BisectProgress (the
// screen's only) gives the phase and ETA. Nothing here does I/O. Its keys
// are i (open or close the panel) and X (cancel the bisect started from
// this cockpit: the root asks first, then cancels the driver's context;
// the driver restores the checkout and dirty work).
package bisect

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	sbisect "github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Panel is the bisect panel: the latest bisect of the stream folded into
// a sessions/bisect.State, its latest progress, the scroll position and
// its keys (a component.Component). The root sets the func fields; use
// it by pointer (NewPanel).
type Panel struct {
	// Open is whether the panel is on screen, in the log tail's place.
	Open bool
	// PanelKey (i) opens and closes the panel; CancelKey (X) cancels the
	// bisect started from here (Dangerous: the root's Cancel asks first).
	PanelKey, CancelKey component.Binding

	// Opened, when set, is called when i opens the panel (the root closes
	// the panels it replaces).
	Opened func()
	// Cancel, when set, asks to cancel the bisect running from here.
	Cancel func()
	// CancelWhy, when set, says why X cannot act now; "" when it can.
	CancelWhy func() string
	// Now is the cockpit's clock (model time), for the elapsed time; zero
	// when nil.
	Now func() time.Time

	start    *event.BisectStart // the latest bisect-start, raw (ids go back unchanged)
	startAt  time.Time
	launches []event.BisectLaunch
	end      *event.BisectEnd
	endAt    time.Time
	prog     event.BisectProgress
	hasProg  bool
	state    *sbisect.State // Fold of start and launches, Next applied; nil when it failed
	foldErr  string         // why Fold failed, sanitised
	err      string         // the last start's error (Session.Bisect's), sanitised; "" none

	w, h, top, height int
}

// NewPanel returns a closed panel with no bisect yet.
func NewPanel() *Panel {
	p := &Panel{
		PanelKey:  component.New("view", "i", "bisect", "i"),
		CancelKey: component.New("actions", "X", "cancel bisect", "X"),
	}
	p.PanelKey.Long = "bisect panel: verdicts, ETA"
	p.CancelKey.Long = "cancel bisect (asks first; restores the checkout and dirty work)"
	p.CancelKey.Dangerous = true
	p.CancelKey.Disabled = func() string {
		if p.CancelWhy == nil {
			return "no bisect is running from here"
		}
		return p.CancelWhy()
	}
	return p
}

// Bindings implements component.Panel.
func (p *Panel) Bindings() []*component.Binding {
	return []*component.Binding{&p.PanelKey, &p.CancelKey}
}

// Act implements component.Panel: i toggles the panel, X asks to cancel.
func (p *Panel) Act(b *component.Binding) tea.Cmd {
	switch b {
	case &p.PanelKey:
		if p.Open {
			p.Open = false
			return nil
		}
		p.Open = true
		if p.Opened != nil {
			p.Opened()
		}
	case &p.CancelKey:
		if p.Cancel != nil {
			p.Cancel()
		}
	}
	return nil
}

// Apply folds one bisect event into the panel: a bisect-start begins a
// new bisect (the previous one is forgotten), a launch or an end of
// another bisect is ignored, a progress is kept until the next one.
func (p *Panel) Apply(pl event.Payload, at time.Time) {
	switch v := pl.(type) {
	case event.BisectStart:
		s := v
		p.PanelKey.Short = true // the footer lists i once there is a bisect to show
		p.start, p.startAt, p.launches, p.end, p.hasProg, p.err, p.top = &s, at, nil, nil, false, "", 0
		p.prog = event.BisectProgress{}
		p.refold()
	case event.BisectLaunch:
		if p.start == nil || v.ID != p.start.ID {
			return
		}
		p.launches = append(p.launches, v)
		p.refold()
	case event.BisectEnd:
		if p.start != nil && v.ID != p.start.ID {
			return
		}
		e := v
		p.end, p.endAt, p.hasProg = &e, at, false
	case event.BisectProgress:
		if p.start != nil && v.ID != p.start.ID || p.end != nil {
			return
		}
		p.prog, p.hasProg = v, true
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState, event.DriverState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart, event.ExperimentUpdate, event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale, event.GitAction, event.GitMoved, event.GitStatus, event.History, event.HostChanges, event.HostState, event.JournalStatus, event.Key, event.KillStep, event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset, event.Note, event.Prefill, event.Repeat, event.RepeatProgress, event.RepoHead, event.RepoUnreadable, event.ServerFailure, event.ServerHealthy, event.ServerLaunched, event.ServerObserved, event.ServerReady, event.ServerStatus, event.Session, event.SpecDecode, event.Throughput, event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// not a bisect's
	}
}

// refold rebuilds the state from the records and lets the decision
// procedure set the verdicts (Next is pure: the same records give the
// same verdicts as the live driver's).
func (p *Panel) refold() {
	st, err := sbisect.Fold(*p.start, p.launches)
	if err != nil {
		p.state, p.foldErr = nil, sanitize.FirstLine(err.Error())
		return
	}
	st.Next()
	p.state, p.foldErr = st, ""
}

// SetState replaces the folded state (tests, and a caller that decided
// the verdicts elsewhere); it is drawn as Fold's would be.
func (p *Panel) SetState(st *sbisect.State) { p.state, p.foldErr = st, "" }

// State is the folded state of the latest bisect; nil before any, or when
// its records do not fold.
func (p *Panel) State() *sbisect.State { return p.state }

// Has reports whether the stream has shown a bisect (the panel has
// something to show).
func (p *Panel) Has() bool { return p.start != nil }

// Running reports whether the stream's latest bisect has started and not
// ended.
func (p *Panel) Running() bool { return p.start != nil && p.end == nil }

// ID is the latest bisect's id, "" before any.
func (p *Panel) ID() string {
	if p.start == nil {
		return ""
	}
	return p.start.ID
}

// Failed records the error a start from here ended with (Session.Bisect
// returned before any record, or with an error): the panel's title says
// it until the next bisect starts. "" clears it.
func (p *Panel) Failed(err string) { p.err = sanitize.FirstLine(err) }

// Progress is the latest progress of the running bisect; ok is false
// when none arrived since its last record.
func (p *Panel) Progress() (event.BisectProgress, bool) { return p.prog, p.hasProg }

// MeanLaunch is the mean wall time of the latest bisect's launches that
// say how long they took (the start dialog's estimate); 0 when none do.
func (p *Panel) MeanLaunch() time.Duration {
	var sum time.Duration
	n := 0
	for _, l := range p.launches {
		if l.Took > 0 {
			sum += l.Took
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// SetSize implements component.Component.
func (p *Panel) SetSize(w, h int) { p.w, p.h = w, h }

// Move implements component.Cursor: it scrolls the rows.
func (p *Panel) Move(d int) { p.top = max(p.top+d, 0) }

// Page implements component.Cursor.
func (p *Panel) Page() int { return max(p.height-1, 1) }

// Home implements component.Cursor.
func (p *Panel) Home() { p.top = 0 }

// End implements component.Cursor.
func (p *Panel) End() { p.top = 1 << 30 }

func (p *Panel) now() time.Time {
	if p.Now == nil {
		return time.Time{}
	}
	return p.Now()
}

var _ component.Component = (*Panel)(nil)

// verdictTone is the tone a verdict is drawn in.
func verdictTone(st *style.Styles, v sbisect.Verdict) style.Tone {
	switch v {
	case sbisect.Good:
		return st.OK
	case sbisect.Bad:
		return st.Crit
	case sbisect.Between, sbisect.Mixed, sbisect.Skipped:
		return st.Warn
	}
	return st.Dim
}
