package tui

import "github.com/flightdeck-dev/flightdeck/sessions"

// The cockpit's b drives sessions.Bencher (sessions cannot import tui, so
// the check lives here).
var _ BenchControl = (*sessions.Bencher)(nil)
