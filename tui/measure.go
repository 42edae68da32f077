package tui

import (
	"context"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/panels/bench"
)

// BenchControl runs the benchmark behind b; *sessions.Bencher implements
// it. See bench.Control.
type BenchControl = bench.Control

// RepeatControl runs the repeat behind R; *sessions.Repeater implements
// it. See bench.RepeatControl.
type RepeatControl = bench.RepeatControl

// MeasureControl is what the compare view and the baseline mark need
// beyond ExperimentControl; *sessions.Lab implements it.
type MeasureControl interface {
	// Baseline marks experiment id as the baseline ("" clears it).
	Baseline(ctx context.Context, id string) error
	// Range reads what lies between two commits in the server's checkout
	// (git on the host), for a compare view whose range was not recorded.
	Range(ctx context.Context, from, to string) (*event.CommitRange, error)
}
