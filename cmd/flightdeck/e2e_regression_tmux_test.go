package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// TestDemoRegressionAcrossSessionsInTmux is the seventeenth issue's story
// from the keyboard: session 1 measures the good commit a6d51c0 and
// repeats its launch (R: the host's A/A noise), then quits; a `git pull`
// outside any cockpit; session 2 on the same simulated host names the pull
// and its files on its first screen, relaunches, and compares its launch
// with session 1's experiment from the x panel's history: one launch
// against three, and a verdict because the noise is known.
func TestDemoRegressionAcrossSessionsInTmux(t *testing.T) {
	t.Parallel()
	bin := flightdeckBinary(t)
	dir, state := t.TempDir(), t.TempDir()
	demo := "XDG_STATE_HOME=" + state + " " + bin + " demo --history 3 --dir " + dir
	good, pulled := sim.ModelTokPerSec(false, false, false), sim.ModelTokPerSec(false, true, false)

	s := startTmux(t, 160, 45, demo)
	s.waitScreen(40*time.Second, readyAt("none", good))
	// R: two more launches of three steady samples each.
	s.keys("R")
	s.waitScreen(5*time.Second, has("more launches"))
	for _, v := range []string{"2", "3"} {
		for range 6 {
			s.keys("BSpace")
		}
		s.typed(v)
		s.keys("Tab")
	}
	s.keys("Enter")
	s.waitScreen(60*time.Second, has("repeat 2/3 of e1")) // after e1 measured its own samples
	s.waitScreen(150*time.Second, has("repeat done"))
	s.quit()

	cmd := exec.Command("git", "-C", filepath.Join(dir, "repo"), "pull", "-q", "--ff-only")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git pull: %v\n%s", err, out)
	}

	s = startTmux(t, 160, 45, demo)
	first := s.waitScreen(40*time.Second, func(screen string) string {
		for _, want := range []string{"since your last session here", "a6d51c0 -> e7b9c70 by git pull", "pynccl.py"} {
			if !strings.Contains(screen, want) {
				return "the first screen lacks " + want
			}
		}
		return ""
	})
	t.Logf("session 2 connects:\n%s", first)
	s.keys("Escape")
	s.waitScreen(45*time.Second, readyAt("none", pulled))
	// e1 measures three steady samples: a launch that counts.
	s.keys("x")
	measured := regexp.MustCompile(`e1\s+none @ e7b9c70\s+e7b9c70\s+none\s+5\d\.\d \[[^\]]*\]\s+[3-9]\s`)
	s.waitScreen(60*time.Second, func(screen string) string {
		if !measured.MatchString(screen) {
			return "e1 has not three steady samples yet"
		}
		return ""
	})
	s.keys("x")
	// A relaunch (L, enter, y): e2, a second launch at the pulled HEAD.
	s.keys("L")
	s.waitScreen(10*time.Second, has("flightdeck sim server"))
	s.keys("Enter")
	s.waitScreen(10*time.Second, has("y/N"))
	s.keys("y")
	s.waitScreen(60*time.Second, func(screen string) string {
		if !strings.Contains(screen, "e2 ") {
			return "no e2 yet"
		}
		return readyAt("none", pulled)(screen)
	})
	// The x panel: this session's e1 and e2, then session 1 (expanded, the
	// newest earlier one) with its three launches; the cursor is on e2,
	// once it has three steady samples too.
	s.keys("x")
	s.waitScreen(10*time.Second, has("2 experiments, 3 earlier"))
	measured2 := regexp.MustCompile(`e2\s+none @ e7b9c70\s+e7b9c70\s+none\s+5\d\.\d \[[^\]]*\]\s+[3-9]\s`)
	s.waitScreen(60*time.Second, func(screen string) string {
		if !measured2.MatchString(screen) {
			return "e2 has not three steady samples yet"
		}
		return ""
	})
	s.keys("Down", "Down", "Space", "Up", "Up", "c")
	qualified := regexp.MustCompile(`compare (\S+-demo:e1) vs e2`)
	view := s.waitScreen(15*time.Second, func(screen string) string {
		if !qualified.MatchString(screen) {
			return "no compare view of session 1's e1 and e2"
		}
		return ""
	})
	verdict := regexp.MustCompile(`slower -[6-9]\.\d% vs A/A noise sd \d\.\d+% \(p[<=][0-9.]+ n=3\+2, noise from 5 launches`)
	if !verdict.MatchString(view) {
		t.Errorf("the compare view lacks the verdict %s:\n%s", verdict, view)
	}
	s.keys("Escape")
	s.waitScreen(5*time.Second, func(screen string) string {
		if qualified.MatchString(screen) {
			return "esc did not close the compare view"
		}
		return ""
	}) // (a key sent right after esc would read as alt+key)
	s.quit()
}
