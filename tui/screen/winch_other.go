//go:build !unix

package screen

import (
	"os"

	tea "charm.land/bubbletea/v2"
)

// followSize does nothing where there is no SIGWINCH: the screen keeps the
// size it started with.
func followSize(*os.File, func(tea.Msg)) (stop func()) { return func() {} }
