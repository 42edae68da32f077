package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// TestDemoGitInTmux is the fourth issue's story from the keyboard: with
// uncommitted work in the checkout, stash it under a name, check out the
// regressing commit (the header's HEAD follows), relaunch the server and
// see the regressed tok/s, check out main again, pop the stash — and
// every byte of the work is back.
func TestDemoGitInTmux(t *testing.T) {
	bin := flightdeckBinary(t)
	s := startTmux(t, 200, 50, bin+" demo --history 3")

	screen := s.waitScreen(40*time.Second, func(screen string) string {
		if !readyHeader.MatchString(screen) {
			return "server not ready"
		}
		return nowNear(sim.ModelTokPerSec(false, false, false))(screen)
	})
	dir := regexp.MustCompile(`(/\S*flightdeck-sim-[^/\s]+)/logs/`).FindStringSubmatch(screen)
	if dir == nil {
		t.Fatalf("no sim directory on screen:\n%s", screen)
	}
	repo := filepath.Join(dir[1], "repo")
	baseline := regexp.MustCompile(`HEAD ([0-9a-f]{7})`).FindStringSubmatch(screen)
	if baseline == nil {
		t.Fatalf("no HEAD in the header:\n%s", screen)
	}

	// Uncommitted work, made outside the cockpit: an edit of a file the
	// regressing commit touches (so the checkout needs the stash) and a
	// new file.
	edited := filepath.Join(repo, "python/sglang/srt/distributed/parallel_state.py")
	orig, err := os.ReadFile(edited)
	if err != nil {
		t.Fatal(err)
	}
	work := append(append([]byte{}, orig...), "# local: try a smaller all-reduce bucket\n"...)
	notes := []byte("62.5 untuned, 89 with nccl-ll-ring\n")
	if err := os.WriteFile(edited, work, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), notes, 0o644); err != nil {
		t.Fatal(err)
	}
	s.waitScreen(15*time.Second, has("worktree changed outside flightdeck"))

	s.keys("g")
	s.waitScreen(10*time.Second, func(screen string) string {
		if !strings.Contains(screen, " M  python/sglang/srt/distributed/parallel_state.py") || !strings.Contains(screen, "??  notes.txt") {
			return "panel does not list the dirty files"
		}
		return ""
	})

	// s: stash under a name, with the untracked file.
	s.keys("s")
	s.waitScreen(10*time.Second, has("include untracked"))
	s.typed("bucket experiment")
	s.keys("Tab")
	s.waitScreen(5*time.Second, has("[x] include untracked"))
	s.keys("Enter")
	s.waitScreen(15*time.Second, func(screen string) string {
		if !strings.Contains(screen, "On main: bucket experiment") || !strings.Contains(screen, "clean: nothing to stash") {
			return "stash not in the panel"
		}
		return ""
	})

	// c: pick the regressing commit from the log; preview; y.
	s.keys("c")
	s.waitScreen(10*time.Second, has("Fix PCG MoE Error"))
	regressing := s.pickRegressing()
	s.keys("Enter")
	screen = s.waitScreen(10*time.Second, has("brings in"))
	for _, want := range []string{"pynccl.py", "parallel_state.py", "Fix PCG MoE Error"} {
		if !strings.Contains(screen, want) {
			t.Errorf("preview lacks %q:\n%s", want, screen)
		}
	}
	s.keys("y")
	s.waitScreen(15*time.Second, has("HEAD "+regressing))
	// The action done (HEAD is read before it ends: L meanwhile is
	// refused as busy).
	s.waitScreen(15*time.Second, has("checkout "+regressing+" ok"))

	// L: relaunch on the regressing commit: the tok/s drops by its 8 %.
	s.keys("L")
	s.waitScreen(10*time.Second, has("flightdeck sim server"))
	s.keys("Enter")
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(s.capture(), "y/N") {
		s.keys("y")
	}
	s.waitScreen(45*time.Second, func(screen string) string {
		if !readyHeader.MatchString(screen) {
			return "relaunched server not ready"
		}
		return nowNear(sim.ModelTokPerSec(false, true, false))(screen)
	})

	// Back to main: c, type the branch, enter, y.
	if !strings.Contains(s.capture(), "stash@{0}") { // the panel stays open under the launch form
		s.keys("g")
	}
	s.waitScreen(10*time.Second, has("stash@{0}"))
	s.keys("c")
	s.waitScreen(10*time.Second, has("Fix PCG MoE Error"))
	s.typed("main")
	for i := 0; i < 12 && !strings.Contains(s.capture(), "> checkout main"); i++ {
		s.keys("Up")
		time.Sleep(150 * time.Millisecond)
	}
	s.keys("Enter")
	s.waitScreen(10*time.Second, has("leaves"))
	s.keys("y")
	s.waitScreen(15*time.Second, has("HEAD "+baseline[1]))

	// P: pop the stash; the work is back, byte for byte.
	s.keys("P")
	s.waitScreen(10*time.Second, has("Pop stash@{0}"))
	s.keys("y")
	s.waitScreen(15*time.Second, func(screen string) string {
		if !strings.Contains(screen, "no stashes") || !strings.Contains(screen, "??  notes.txt") {
			return "stash not popped"
		}
		return ""
	})
	for path, want := range map[string][]byte{edited: work, filepath.Join(repo, "notes.txt"): notes} {
		if got, err := os.ReadFile(path); err != nil || string(got) != string(want) {
			t.Errorf("%s after the pop: %v\n%s", path, err, fmt.Sprintf("%q", got))
		}
	}
	s.quit()
}
