package tui

import (
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// EventsMsg is a batch of events from the stream, oldest first. Run's
// bridge sends one every ~50 ms (or every MaxBatch events) because
// tea.Program.Send is unbuffered. Payloads the model does not know are
// ignored, so newer producers never break an older UI.
type EventsMsg []event.Event

// ClockMsg carries the wall-clock time for relative ages ("ready 3m12s",
// "next try in 3s"). Update never reads the clock itself, so a replayed
// journal renders exactly what was seen; the model's notion of now is the
// latest of ClockMsg times and event times.
type ClockMsg struct{ Now time.Time }

// HeadMsg sets the repository HEAD shown in the header, preformatted by the
// sender, e.g. "bba2fc4 (+3 dirty)". It is a hook until a sessions payload
// carries git state; an empty Head hides the field. The text is sanitised.
type HeadMsg struct{ Head string }

// clockEvery is how often the model asks for a ClockMsg while live.
const clockEvery = time.Second
