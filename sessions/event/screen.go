package event

// The screen's buffer sizes: how much of the stream the cockpit's screen
// keeps. The cockpit's model (tui) sizes its buffers by them, and a journal
// seek (journal.CatchUp) rebuilds at least as much, so that a seek in a
// replay shows what playing through to the same time showed.
const (
	// ScreenLogLines is the log ring's size, lines (the default: a
	// replay's options may ask for more).
	ScreenLogLines = 10000
	// ScreenRatePoints is how many tok/s points the throughput ring
	// keeps: wider than any terminal.
	ScreenRatePoints = 1024
	// ScreenMarkSearch is how many log lines a ready or failure event
	// searches back for the line it came from (to highlight it).
	ScreenMarkSearch = 512
	// ScreenMarkHorizon is how many log lines a ready or failure whose
	// line has not arrived yet waits for it before it is given up.
	ScreenMarkHorizon = 2048
)
