package server

import (
	"slices"
	"strconv"

	"github.com/flightdeck-dev/flightdeck/remote"
)

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// displayWord is w as a user would type it in a shell, or Go-quoted when
// no shell word can carry it.
func displayWord(w string) string {
	if q, err := remote.Quote(w); err == nil {
		return q
	}
	return strconv.Quote(w)
}
