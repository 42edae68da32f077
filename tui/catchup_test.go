package tui

import (
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/tui/panels/logtail"
	"github.com/flightdeck-dev/flightdeck/tui/panels/spark"
)

// TestCatchUpCoversTheModel: journal.CatchUp rebuilds the screen from a
// window of events sized by these bounds; each must cover what the model
// keeps, or a seek in replay would show less than playing through did.
// Both derive from the screen's sizes (event.Screen*): this holds them to
// it should either side drift.
func TestCatchUpCoversTheModel(t *testing.T) {
	for _, c := range []struct {
		name         string
		model, bound int
	}{
		{"log ring (DefaultLogLines)", logtail.DefaultLogLines, journal.CatchUpLogLines},
		{"tok/s ring (spark.Points)", spark.Points, journal.CatchUpRates},
		{"ready/failure search (markSearch)", logtail.MarkSearch, journal.CatchUpMarkSearch},
		{"ready/failure horizon (markHorizon)", logtail.MarkHorizon, journal.CatchUpMarkHorizon},
	} {
		if c.model > c.bound {
			t.Errorf("%s keeps %d, journal.CatchUp covers %d: raise the journal's bound", c.name, c.model, c.bound)
		}
	}
}
