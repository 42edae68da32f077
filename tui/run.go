package tui

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/screen"
)

// Bridge batches a stream of events into EventsMsg for a running program.
// tea.Program.Send is unbuffered and every message costs a frame, so
// events are coalesced: a batch is sent FlushEvery after its first event,
// or as soon as it holds MaxBatch events, whichever comes first.
type Bridge struct {
	// Events is the event stream; nil or closed means none (more).
	Events <-chan event.Event
	// Msgs carries other messages (HeadMsg, future action results) to the
	// program as they are. Pending events are flushed before each one, so
	// the model sees the two streams in arrival order.
	Msgs <-chan tea.Msg
	// FlushEvery defaults to 50 ms (k9s's log flush).
	FlushEvery time.Duration
	// MaxBatch defaults to 512 events.
	MaxBatch int
	// Screen is where the cockpit is drawn; the zero Target is the
	// process's terminal. Its colour profile defaults to the model's
	// forced colour mode (Options.Color), else it is detected.
	Screen screen.Target
}

const (
	defaultFlushEvery = 50 * time.Millisecond
	defaultMaxBatch   = 512
)

// Run runs the cockpit on the terminal until the user quits (nil), ctx
// ends (ctx.Err()), or the program fails. Events from the channel reach the
// model in batches (see Bridge). Quitting ends only the UI: nothing here
// stops the inference server or closes the host.
func Run(ctx context.Context, m *Model, events <-chan event.Event, opts ...tea.ProgramOption) error {
	return Bridge{Events: events}.Run(ctx, m, opts...)
}

// Run starts a tea.Program for m with opts, drawn on b.Screen (a frame
// only when the view changed, see package screen; the colour profile from
// m's Options.Color unless opts set one), and the bridge goroutine, and
// returns when the program ends. The bridge stops when ctx ends or the
// program quits; Run waits for it. A server action still running
// (Options.Control's Launch or Kill) has its context cancelled when Run
// returns.
func (b Bridge) Run(ctx context.Context, m *Model, opts ...tea.ProgramOption) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.ctx = ctx
	target := b.Screen
	if target.Profile == colorprofile.Unknown {
		target.Profile = m.opts.ForcedProfile()
	}
	if target.Later == nil {
		target.Later, target.Coalesce = heldEvents, coalesce(m.opts.ReadOnly)
	}
	// The colour mode's profile first, so that opts can still override it.
	p, err := screen.NewProgram(m, target, append(append([]tea.ProgramOption{tea.WithContext(parent)}, m.opts.ColorOptions()...), opts...)...)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.pump(ctx, p.Send)
	}()
	_, err = p.Run()
	cancel()
	<-done
	if err != nil && parent.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return parent.Err()
	}
	return err
}

// heldEvents is the cockpit's screen.Target.Later: a batch of events (a
// GPU sample, log lines) may wait to be drawn with the next frame; keys,
// the clock, every other message and a batch holding an urgent kind (an
// Xid, a launch, a kill step, a note: event.KindInfo.Urgent, what the
// journal syncs at once) draw at once.
func heldEvents(msg tea.Msg) bool {
	evs, ok := msg.(EventsMsg)
	if !ok {
		return false
	}
	for _, e := range evs {
		if e.Data != nil && e.Data.Kind().Info().Urgent {
			return false
		}
	}
	return true
}

// coalesce is how long a batch of events waits for the frame it is drawn
// in: the clock's tick draws it (every second, with the header's age), so
// the period is a little longer than the clock's and a second's sample,
// log lines and clock make one frame. A read-only cockpit has no clock:
// its events wait half a second at most.
func coalesce(readOnly bool) time.Duration {
	if readOnly {
		return clockEvery / 2
	}
	return clockEvery + clockEvery/4
}

// pump moves events and messages to send until ctx ends or both inputs
// are closed. send may block (the program is busy); ctx ending unblocks it
// because tea.Program.Send returns once the program has stopped.
func (b Bridge) pump(ctx context.Context, send func(tea.Msg)) {
	every, maxN := b.FlushEvery, b.MaxBatch
	if every <= 0 {
		every = defaultFlushEvery
	}
	if maxN <= 0 {
		maxN = defaultMaxBatch
	}
	events, msgs := b.Events, b.Msgs
	var batch EventsMsg
	timer := time.NewTimer(every)
	timer.Stop()
	flush := func() {
		if len(batch) > 0 {
			send(batch)
			batch = nil
		}
		timer.Stop()
	}
	for events != nil || msgs != nil || len(batch) > 0 {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				events = nil
				flush()
				continue
			}
			if len(batch) == 0 {
				timer.Reset(every)
			}
			batch = append(batch, e)
			if len(batch) >= maxN {
				flush()
			}
		case msg, ok := <-msgs:
			if !ok {
				msgs = nil
				continue
			}
			flush()
			send(msg)
		case <-timer.C:
			flush()
		}
	}
}
