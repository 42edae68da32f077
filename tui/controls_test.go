package tui

import "github.com/flightdeck-dev/flightdeck/sessions"

// The cockpit's keys drive a sessions.Session: it implements every
// control (sessions cannot import tui, so the check lives here).
var (
	_ ServerControl     = (*sessions.Session)(nil)
	_ GitControl        = (*sessions.Session)(nil)
	_ ExperimentControl = (*sessions.Session)(nil)
	_ BenchControl      = (*sessions.Session)(nil)
	_ RepeatControl     = (*sessions.Session)(nil)
	_ MeasureControl    = (*sessions.Session)(nil)
	_ DriverControl     = (*sessions.Session)(nil)
)
