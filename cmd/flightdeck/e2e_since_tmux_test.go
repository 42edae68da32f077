package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// TestDemoSinceLastSessionInTmux is the regression's story: a demo
// measures at the good commit and quits; `git pull` outside any cockpit;
// the next demo in the same --dir names the pull and its files on its
// first screen at 80x24; a third, with nothing done between, says
// nothing changed.
func TestDemoSinceLastSessionInTmux(t *testing.T) {
	bin := flightdeckBinary(t)
	dir, state := t.TempDir(), t.TempDir()
	repo := filepath.Join(dir, "repo")
	demo := "XDG_STATE_HOME=" + state + " " + bin + " demo --history 3 --dir " + dir
	untuned := sim.ModelTokPerSec(false, false, false)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}

	s := startTmux(t, 80, 24, demo)
	s.waitScreen(40*time.Second, has("first session on this host"))
	s.waitScreen(40*time.Second, nowNear(untuned))
	s.quit()

	before := git("rev-parse", "--short=7", "HEAD")
	git("pull", "-q", "--ff-only")
	after := git("rev-parse", "--short=7", "HEAD")
	if before == after {
		t.Fatal("the pull did not move HEAD")
	}

	s = startTmux(t, 80, 24, demo)
	screen := s.waitScreen(40*time.Second, func(screen string) string {
		for _, want := range []string{"since your last session here", "HEAD " + before + " -> " + after + " by git", "pull", "commits, touches", "pynccl.py"} {
			if !strings.Contains(screen, want) {
				return "screen lacks " + want
			}
		}
		return ""
	})
	t.Logf("second demo:\n%s", screen)
	// It stays until dismissed, and H lists it all.
	s.waitScreen(40*time.Second, nowNear(sim.ModelTokPerSec(false, true, false)))
	s.keys("H")
	s.waitScreen(10*time.Second, has("Fast-forward"))
	s.keys("Escape")
	s.waitScreen(10*time.Second, func(screen string) string {
		if strings.Contains(screen, "up/down scroll") || !strings.Contains(screen, before+" -> "+after) {
			return "esc did not close the list, or took the banner with it"
		}
		return ""
	})
	s.keys("Escape")
	s.waitScreen(10*time.Second, func(screen string) string {
		if strings.Contains(screen, "since your last session here") {
			return "esc did not dismiss the banner"
		}
		return ""
	})
	s.quit()

	s = startTmux(t, 80, 24, demo)
	screen = s.waitScreen(40*time.Second, has("nothing changed since your last session here ("))
	t.Logf("third demo:\n%s", screen)
	s.quit()

	// Each demo journaled its state, GPUs and checkout included, and what
	// it found changed.
	js, err := history.Find(filepath.Join(state, "flightdeck", "journals"), "simulated host")
	if err != nil || len(js) != 3 {
		t.Fatalf("%d journals: %v", len(js), err)
	}
	for i, j := range js {
		var states, changes int
		jr, err := journal.Open(j.Path)
		if err != nil {
			t.Fatal(err)
		}
		_ = jr.Scan(func(e event.Event) error {
			switch p := e.Data.(type) {
			case event.HostState:
				states++
				if fp := p.Fingerprint; len(fp.GPUs) != 8 || fp.Git == nil || fp.Git.Repo != repo || fp.Kernel == "" {
					t.Errorf("journal %d: state %+v", i, fp)
				}
			case event.HostChanges:
				changes++
			}
			return nil
		})
		jr.Close()
		if states != 1 || changes != 1 {
			t.Errorf("journal %d: %d host-states, %d host-changes", i, states, changes)
		}
	}
}
