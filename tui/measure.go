package tui

import (
	"context"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// BenchControl runs the benchmark behind b; *sessions.Bencher implements
// it. Defaults does no I/O (called from Update); Run does I/O and runs
// only inside a tea.Cmd. Run publishes event.BenchStarted, event.BenchProgress and
// event.BenchDone on the stream (the screen draws those), and returns the
// result when the run ends (cancelled: ctx ended).
type BenchControl interface {
	BenchDefaults() event.BenchConfig
	Bench(ctx context.Context, cfg event.BenchConfig) (*event.BenchResult, error)
}

// RepeatControl runs the repeat behind R; *sessions.Repeater implements
// it. Run does I/O and runs only inside a tea.Cmd; it publishes
// event.RepeatProgress on the stream and returns when the repeat is
// done, fails, or ctx ends.
type RepeatControl interface {
	Repeat(ctx context.Context, cfg sessions.RepeatConfig) error
}

// MeasureControl is what the compare view and the baseline mark need
// beyond ExperimentControl; *sessions.Lab implements it.
type MeasureControl interface {
	// Baseline marks experiment id as the baseline ("" clears it).
	Baseline(ctx context.Context, id string) error
	// Range reads what lies between two commits in the server's checkout
	// (git on the host), for a compare view whose range was not recorded.
	Range(ctx context.Context, from, to string) (*event.CommitRange, error)
}
