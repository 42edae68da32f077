package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// TestDemoCompareVerdictInTmux is the sixth issue's story from the keyboard,
// on the real binary: a short benchmark on the demo's first launch; R
// repeats the untuned launch to 4 launches; a relaunch with nccl-ll-ring and
// R again; B marks the first as the baseline (the header shows the live
// delta); space on both and c opens the compare view, which says the profile
// is faster with p and n, lists the NCCL variables and the A/A noise. After
// quitting, journal diff prints the same verdict.
func TestDemoCompareVerdictInTmux(t *testing.T) {
	// Not parallel: on a loaded run its journal diff once counted e1
	// twice (its own journal and the host's copy of it).
	// A state directory of its own: other demos' journals are of the same
	// (simulated) host, and their launches would join the A/A noise.
	bin := flightdeckBinary(t)
	path := t.TempDir() + "/compare.jsonl"
	s := startTmux(t, 200, 50, "XDG_STATE_HOME="+t.TempDir()+" "+bin+" demo --journal "+path)
	// field replaces the focused form field's text.
	field := func(text string) {
		for range 6 {
			s.keys("BSpace")
		}
		s.typed(text)
	}
	// repeat runs R with 3 more launches of 3 samples each and waits for it
	// to finish.
	repeat := func(series string) {
		s.keys("R")
		s.waitScreen(5*time.Second, has("more launches"))
		field("3")
		s.keys("Tab")
		field("3")
		s.keys("Enter")
		// The first of the four is the launch already up: right after a
		// relaunch it still has its warm-up (10 s) and 3 samples to go.
		s.waitScreen(60*time.Second, has("repeat 2/4 of "+series))
		s.waitScreen(150*time.Second, has("repeat done"))
	}

	s.waitScreen(40*time.Second, readyAt("none", sim.ModelTokPerSec(false, false, false)))

	// b: four requests, then the result box.
	s.keys("b")
	s.waitScreen(5*time.Second, has("warm-up"))
	for range 4 { // endpoint, input len, output len, concurrency, then requests
		s.keys("Tab")
	}
	field("4")
	s.keys("Enter")
	box := s.waitScreen(60*time.Second, has("bench b1 on e1: done"))
	if !regexp.MustCompile(`output\s+[\d.]+ tok/s`).MatchString(box) || !strings.Contains(box, "4 ok") {
		t.Errorf("the result box lacks the output tok/s or 4 ok requests:\n%s", box)
	}
	s.keys("Escape")
	s.waitScreen(5*time.Second, func(screen string) string {
		if strings.Contains(screen, "bench b1 on e1: done") {
			return "esc did not dismiss the result box"
		}
		return ""
	}) // (and a key sent right after esc would read as alt+key)

	repeat("e1") // e1..e4: untuned

	// e5..e8: nccl-ll-ring.
	s.keys("L")
	s.waitScreen(10*time.Second, has("flightdeck sim server"))
	s.keys("Tab")
	for i := 0; !strings.Contains(s.capture(), "< nccl-ll-ring >"); i++ {
		if i == 5 {
			t.Fatalf("could not choose nccl-ll-ring:\n%s", s.capture())
		}
		s.keys("Right")
		time.Sleep(200 * time.Millisecond)
	}
	s.keys("Enter")
	s.waitScreen(10*time.Second, has("y/N"))
	s.keys("y")
	s.waitScreen(45*time.Second, readyAt("nccl-ll-ring", sim.ModelTokPerSec(true, false, false)))
	repeat("e5")

	// The panel: B on e1, then the header's live delta; space on e1 and e5, c.
	s.keys("x")
	s.waitScreen(10*time.Second, has("8 experiments"))
	for range 8 {
		s.keys("Up")
	}
	s.keys("B")
	s.waitScreen(10*time.Second, has("delta vs e1 (baseline)"))
	s.waitScreen(10*time.Second, func(screen string) string {
		if !regexp.MustCompile(`e8 [\d.]+ tok/s  vs e1 \+4\d\.\d%`).MatchString(strings.SplitN(screen, "\n", 2)[0]) {
			return "the header lacks e8's delta vs e1"
		}
		return ""
	})
	s.keys("Space")
	for range 4 {
		s.keys("Down")
	}
	s.keys("Space", "c")
	view := s.waitScreen(10*time.Second, has("compare e1 vs e5"))
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`tok/s \(server log\)\s+6[0-4]\.\d \[[^\]]+\] n=\d+\s+(8[7-9]|90)\.\d \[[^\]]+\] n=\d+\s+\+4\d\.\d%\s+faster \+4\d\.\d% across launches \(p=0\.029 n=4\+4\)`),
		regexp.MustCompile(`env\s+NCCL_PROTO\s+\(unset\)\s+LL`),
		regexp.MustCompile(`none @ [0-9a-f]{7}\s+4 launches`),
	} {
		if !want.MatchString(view) {
			t.Errorf("the compare view lacks %s:\n%s", want, view)
		}
	}
	s.keys("Escape")
	s.waitScreen(5*time.Second, func(screen string) string {
		if strings.Contains(screen, "compare e1 vs e5") {
			return "esc did not close the compare view"
		}
		return ""
	})
	s.quit()

	out, err := exec.Command(bin, "journal", "diff", path, "e1", "e5").CombinedOutput()
	if err != nil {
		t.Fatalf("journal diff: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`\+4\d\.\d%\s+faster \+4\d\.\d% across launches \(p=0\.029 n=4\+4\)`).Match(out) {
		t.Errorf("journal diff lacks the verdict:\n%s", out)
	}
}
