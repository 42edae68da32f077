package server

import (
	"strconv"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// displayWord is w as a user would type it in a shell, or Go-quoted when
// no shell word can carry it.
func displayWord(w string) string {
	if q, err := remote.Quote(w); err == nil {
		return q
	}
	return strconv.Quote(w)
}
