package component

import "github.com/flightdeck-dev/flightdeck/tui/style"

// Banner is one notice line above the panels (a sampler's failure, stale
// data, an action in flight): its text, a shorter form for a terminal too
// narrow for it ("" when none), and its tone.
type Banner struct {
	Text, Short string
	Tone        style.Token
}

// Fit returns the form of b that fits w cells, if either does, else the
// text (to be cut).
func (b Banner) Fit(w int) string {
	if style.Width(b.Text) > w && b.Short != "" {
		return b.Short
	}
	return b.Text
}
