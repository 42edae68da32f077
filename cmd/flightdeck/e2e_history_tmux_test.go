package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoHistoryInTmux: a second demo appending to the first one's
// journal (--journal SAME_FILE) numbers its experiment e2 and its x panel
// lists the first session's e1, "earlier in this journal": the count and
// the numbering agree; c compares the two sessions' experiments.
func TestDemoHistoryInTmux(t *testing.T) {
	// A state directory of its own: the other tests' demo journals are of
	// the same (simulated) host, and would be its history too.
	bin := "XDG_STATE_HOME=" + t.TempDir() + " " + flightdeckBinary(t)
	path := filepath.Join(t.TempDir(), "hunt.jsonl")
	ready := func(screen string) string {
		if !readyHeader.MatchString(screen) {
			return "header does not say the server is ready"
		}
		return ""
	}
	first := startTmux(t, 160, 45, bin+" demo --journal "+path)
	first.waitScreen(30*time.Second, ready)
	first.quit()

	s := startTmux(t, 160, 45, bin+" demo --journal "+path)
	s.waitScreen(30*time.Second, ready)
	s.keys("x")
	s.waitScreen(10*time.Second, func(screen string) string {
		for _, want := range []string{"1 experiment, 1 earlier", "e2 open", "- earlier in this journal  1 experiment", "    e1  "} {
			if !strings.Contains(screen, want) {
				return "the x panel lacks " + want
			}
		}
		return ""
	})
	// The earlier session's e1 marked, then c on this session's e2: the
	// compare view of the two.
	s.keys("Down", "Down", "Space", "Up", "Up", "c")
	s.waitScreen(10*time.Second, func(screen string) string {
		if !strings.Contains(screen, "compare e1 vs e2") || !strings.Contains(screen, "A  e1 none @ a6d51c0 (marked)") {
			return "no compare view of e1 and e2"
		}
		return ""
	})
	s.keys("Escape")
	s.waitScreen(10*time.Second, func(screen string) string {
		if strings.Contains(screen, "compare e1 vs e2") {
			return "esc did not close the compare view"
		}
		return ""
	})
	s.quit()
}
