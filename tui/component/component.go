package component

import "github.com/flightdeck-dev/flightdeck/tui/style"

// Cursor is how the cockpit's scrolling keys (j/k and the arrows,
// pgup/pgdn, g/home, G/end) move the component that has the focus.
type Cursor interface {
	// Move moves the cursor (or the rows shown) d rows; negative is up.
	Move(d int)
	// Page is how many rows pgup and pgdn move: the rows shown less one,
	// at least 1.
	Page() int
	// Home goes to the first row, End to the last (the log: to its
	// newest line, following again).
	Home()
	End()
}

// Component is a panel with a place on the screen: the GPU table, the log
// tail, the git and the experiments panels. It owns its state, its keys
// and their help (Panel), is given the rectangle it draws in (SetSize),
// draws itself there (View), and takes the scrolling keys while the root
// gives it the focus (Cursor). The root owns the layout, the focus and the
// routing: which component the stream's events, the answers of commands
// and the scrolling keys go to. Nothing here does I/O: every method runs
// from bubbletea's Update or View.
type Component interface {
	Panel
	Cursor
	// SetSize gives the component w cells by h rows for its next View.
	SetSize(w, h int)
	// View appends the component's rows to lines, at most the h rows of
	// SetSize and none wider than its w cells, styled with st.
	View(lines []string, st *style.Styles) []string
}
