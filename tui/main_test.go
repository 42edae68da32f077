package tui

import (
	"os"
	"testing"
	"time"
)

// TestMain makes the local time zone UTC for every test in the package,
// once and before any goroutine starts: what a screen says of a time of
// day is then the same on every machine.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(m.Run())
}
