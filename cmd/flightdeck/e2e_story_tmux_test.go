package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// TestDemoExperimentStoryInTmux is the fifth issue's story from the
// keyboard, on the real binary: the demo's first launch is the baseline
// experiment (62.5 tok/s), a note; a relaunch with the nccl-ll-ring profile
// ends it as a relaunch (its conclusion written from the banner) and starts
// the second (89); the regressing commit checked out and relaunched is the
// third (x0.92). The experiments panel lists all three; after quitting, the
// Markdown report tells the story with numbers and names the commit, and
// the replay seeks between the experiments.
func TestDemoExperimentStoryInTmux(t *testing.T) {
	// Not parallel: its replay jumps to 0:00:03, where the first launch
	// must be up, which a loaded machine's slower demo start misses.
	// A state directory of its own: the other tests' demo journals are of
	// the same (simulated) host, and the x panel would list them too.
	state, exe := t.TempDir(), flightdeckBinary(t)
	bin := "XDG_STATE_HOME=" + state + " " + exe
	path := t.TempDir() + "/story.jsonl"
	s := startTmux(t, 200, 50, bin+" demo --history 3 --journal "+path)
	relaunch := func(profile string) {
		s.keys("L")
		s.waitScreen(10*time.Second, has("flightdeck sim server"))
		if profile != "" {
			s.keys("Tab")
			for i := 0; !strings.Contains(s.capture(), "< "+profile+" >"); i++ {
				if i == 5 {
					t.Fatalf("could not choose %s:\n%s", profile, s.capture())
				}
				s.keys("Right")
				time.Sleep(200 * time.Millisecond)
			}
		}
		s.keys("Enter")
		s.waitScreen(10*time.Second, has("y/N"))
		s.keys("y")
	}
	// measured waits until the open experiment has steady-state samples
	// (its tok/s shows in the header once the warm-up is over), then a few
	// seconds more for a finite confidence interval.
	measured := func(id string) {
		rx := regexp.MustCompile(id + `( [^\n]*@ [0-9a-f]{7})? [\d.]+ tok/s`) // the name goes first when the header is narrow
		s.waitScreen(30*time.Second, func(screen string) string {
			if !rx.MatchString(strings.SplitN(screen, "\n", 2)[0]) {
				return id + " has no steady-state tok/s yet"
			}
			return ""
		})
		time.Sleep(5 * time.Second)
	}

	// e1: the demo's first launch, untuned.
	s.waitScreen(40*time.Second, readyAt("none", sim.ModelTokPerSec(false, false, false)))
	measured("e1")
	s.keys("n")
	s.waitScreen(5*time.Second, has("free text; enter saves"))
	s.typed("baseline looks steady")
	s.keys("Enter")
	s.waitScreen(10*time.Second, has("note saved"))

	// e2: relaunched with the NCCL profile; e1 ends as a relaunch, and its
	// banner asks for a conclusion without taking the keys.
	relaunch("nccl-ll-ring")
	s.waitScreen(45*time.Second, readyAt("nccl-ll-ring", sim.ModelTokPerSec(true, false, false)))
	s.waitScreen(10*time.Second, has("ended (relaunch)"))
	// The banner's e writes e1's conclusion (within its 30 s).
	s.keys("e")
	s.waitScreen(5*time.Second, has("what did it show?"))
	s.typed("untuned: 62.5")
	s.keys("Enter")
	s.waitScreen(10*time.Second, has("conclusion of e1 saved"))
	measured("e2")

	// e3: the regressing commit, checked out in the git panel, relaunched.
	s.keys("g")
	s.waitScreen(10*time.Second, has("reflog"))
	s.keys("c")
	s.waitScreen(10*time.Second, has("Fix PCG MoE Error"))
	regressing := s.pickRegressing()
	s.keys("Enter")
	s.waitScreen(10*time.Second, has("brings in"))
	s.keys("y")
	s.waitScreen(15*time.Second, has("HEAD "+regressing))
	s.keys("g") // close the panel: the log comes back
	relaunch("")
	s.waitScreen(45*time.Second, readyAt("nccl-ll-ring", sim.ModelTokPerSec(true, true, false)))
	s.waitScreen(10*time.Second, has("e3 nccl-ll-ring @ "+regressing))
	measured("e3")

	s.keys("x")
	screen := s.waitScreen(10*time.Second, has("3 experiments"))
	for _, want := range []string{"e1  none @ ", "e2  nccl-ll-ring @ ", "e3  nccl-ll-ring @ " + regressing} {
		if !strings.Contains(screen, want) {
			t.Errorf("the experiments panel lacks %q:\n%s", want, screen)
		}
	}
	s.quit()

	// The report: three experiments with their numbers, the commit named.
	export := exec.Command(exe, "journal", "export", path, "--format", "md")
	export.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	out, err := export.CombinedOutput()
	if err != nil {
		t.Fatalf("journal export: %v\n%s", err, out)
	}
	md := string(out)
	row := func(id string) []string {
		m := regexp.MustCompile(`(?m)^\| ` + id + ` \|(.*)\|$`).FindStringSubmatch(md)
		if m == nil {
			t.Fatalf("no %s row in the report:\n%s", id, md)
		}
		return strings.Split(m[1], "|")
	}
	rate := regexp.MustCompile(`(\d+\.\d) \[`)
	for id, want := range map[string]float64{
		"e1": sim.ModelTokPerSec(false, false, false),
		"e2": sim.ModelTokPerSec(true, false, false),
		"e3": sim.ModelTokPerSec(true, true, false),
	} {
		cells := strings.Join(row(id), "|")
		m := rate.FindStringSubmatch(cells)
		if m == nil {
			t.Errorf("%s: no tok/s median [CI] in %q", id, cells)
			continue
		}
		if near := nowNear(want)(m[1] + " now"); near != "" {
			t.Errorf("%s: %s", id, near)
		}
	}
	if !strings.Contains(strings.Join(row("e3"), "|"), regressing) {
		t.Errorf("e3's row does not name commit %s:\n%s", regressing, md)
	}
	for _, want := range []string{"baseline", "untuned: 62.5", "baseline looks steady", "Fix PCG MoE Error"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}

	// The replay: ] steps to the next experiment; t jumps to a time.
	r := startTmux(t, 200, 50, bin+" replay "+path)
	r.waitScreen(10*time.Second, has("paused 0:00:00"))
	for i := 0; i < 6 && !strings.Contains(r.capture(), "profile nccl-ll-ring"); i++ {
		r.tmux("send-keys", "-t", "e2e", "]")
		time.Sleep(300 * time.Millisecond)
	}
	r.waitScreen(5*time.Second, has("profile nccl-ll-ring"))
	r.tmux("send-keys", "-t", "e2e", "t")
	r.tmux("send-keys", "-t", "e2e", "-l", "0:00:03")
	r.tmux("send-keys", "-t", "e2e", "Enter")
	r.waitScreen(5*time.Second, func(screen string) string {
		if !strings.Contains(screen, "paused 0:00:03") || !strings.Contains(screen, "profile none") {
			return "not back at 0:00:03 with profile none"
		}
		return ""
	})
	r.quit()
}
