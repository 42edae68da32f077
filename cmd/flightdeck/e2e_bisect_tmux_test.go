package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// The eighteenth issue's story from the keyboard: a `git pull` cost tok/s;
// the cockpit bisects the pull's range on the demo's simulated host and
// names the commit, then puts the checkout and the dirty work back.
//
// The demo runs with --history 16 (17 commits in the range, the
// regression at the 10th, two broken builds among them) and --time-scale 20
// (a launch takes about 10 s of wall time then, most of it the kill, the
// GPU memory's release and the SSH round trips, rather than half a
// minute): the bisect's ~20 launches (7 at each endpoint while the A/A
// noise is unknown, then one a step) in about three and a half minutes on
// a loaded 2-core machine. FD_E2E_BISECT_HISTORY=64 runs the demo's default
// history instead (two steps more).

// bisectDemo is a demo on its own state and simulated host directory.
type bisectDemo struct {
	t                *testing.T
	cmd, repo        string
	history          int
	baseline, pulled string // full commit ids: the checkout's HEAD, origin/main
}

func newBisectDemo(t *testing.T) *bisectDemo {
	t.Helper()
	history := 16
	if v := os.Getenv("FD_E2E_BISECT_HISTORY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("FD_E2E_BISECT_HISTORY=%q: %v", v, err)
		}
		history = n
	}
	dir, state := t.TempDir(), t.TempDir()
	d := &bisectDemo{t: t, repo: filepath.Join(dir, "repo"), history: history,
		cmd: fmt.Sprintf("XDG_STATE_HOME=%s %s demo --history %d --time-scale 20 --interval 250ms --dir %s", state, flightdeckBinary(t), history, dir)}
	t.Logf("history %d", history)
	return d
}

// git runs git in the demo's checkout (the simulated host is this
// machine) and returns its trimmed output.
func (d *bisectDemo) git(args ...string) string {
	d.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", d.repo}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		d.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// start opens the demo and waits for its server at the baseline commit,
// measured: the header names e1's steady tok/s (past its warm-up).
func (d *bisectDemo) start() *tmuxSession {
	d.t.Helper()
	s := startTmux(d.t, 160, 50, d.cmd)
	s.waitScreen(60*time.Second, readyAt("none", sim.ModelTokPerSec(false, false, false)))
	s.waitScreen(60*time.Second, func(screen string) string {
		if !regexp.MustCompile(`  e1 6\d\.\d tok/s`).MatchString(strings.SplitN(screen, "\n", 2)[0]) {
			return "the header has no steady tok/s of e1 yet"
		}
		return ""
	})
	d.baseline = d.git("rev-parse", "HEAD")
	return s
}

// pull is a `git pull` outside the cockpit: HEAD moves to origin/main,
// the regression among the commits it brings in.
func (d *bisectDemo) pull() {
	d.t.Helper()
	d.git("pull", "-q", "--ff-only")
	d.pulled = d.git("rev-parse", "HEAD")
	if d.pulled == d.baseline {
		d.t.Fatal("the pull did not move HEAD")
	}
}

// dirty writes uncommitted work to a tracked file and returns its path
// and content.
func (d *bisectDemo) dirty() (string, []byte) {
	d.t.Helper()
	path := filepath.Join(d.repo, "README.md")
	orig, err := os.ReadFile(path)
	if err != nil {
		d.t.Fatal(err)
	}
	work := append(append([]byte{}, orig...), "\nlocal: the all-reduce bucket sizes I am trying\n"...)
	if err := os.WriteFile(path, work, 0o644); err != nil {
		d.t.Fatal(err)
	}
	return path, work
}

// checkRestored checks the checkout is as the bisect found it: HEAD at
// head on branch main, the dirty file's content work.
func (d *bisectDemo) checkRestored(head, path string, work []byte) {
	d.t.Helper()
	if got := d.git("rev-parse", "HEAD"); got != head {
		d.t.Errorf("HEAD %s after the bisect, want %s", got, head)
	}
	if b := d.git("branch", "--show-current"); b != "main" {
		d.t.Errorf("branch %q after the bisect, want main", b)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != string(work) {
		d.t.Errorf("%s after the bisect: %v\n%q", path, err, got)
	}
}

// dialogLacks is a start dialog's check: the range (baseline..pulled,
// the history's commits and the endpoints), the regression among the
// commits listed when the list fits the screen, the lines in want, and
// the enter key; "" when all are there.
func (d *bisectDemo) dialogLacks(screen string, want ...string) string {
	want = append(want, "bisect "+short(d.baseline)+".."+short(d.pulled),
		fmt.Sprintf("%d commits (endpoints included), %d candidates between them", d.history+1, d.history-1), "enter starts the bisect")
	if d.history <= 24 { // a longer list scrolls
		want = append(want, "Fix PCG MoE Error")
	}
	for _, w := range want {
		if !strings.Contains(screen, w) {
			return "the start dialog lacks " + w
		}
	}
	if !regexp.MustCompile(`~\d+ steps?, ~\d+ launches`).MatchString(screen) {
		return "the start dialog lacks the estimate"
	}
	return ""
}

// short is a commit's 7-digit id.
func short(id string) string { return id[:min(7, len(id))] }

// panelLeft reads the running panel's "N left".
var panelLeft = regexp.MustCompile(`(?m)^(\d+) left  `)

// TestDemoBisectFromCompareInTmux: the server measured at the baseline
// (e1); a `git pull` outside the cockpit; a relaunch measures the pulled
// HEAD (e2), slower; with uncommitted work in README.md, x, space on both,
// c compares them and b opens the bisect's start dialog, which lists the
// range and estimates it; enter starts it. The panel shows the range, the
// candidates left shrinking as commits are measured with their verdicts,
// and at the end the culprit, "Fix PCG MoE Error", and what was restored;
// the checkout is at the pulled HEAD on main again, the work byte for
// byte.
func TestDemoBisectFromCompareInTmux(t *testing.T) {
	// Parallel: its own simulated host and files; most of its time is
	// waiting for launches (CI's 20 minutes on 2 cores).
	t.Parallel()
	d := newBisectDemo(t)
	s := d.start()
	d.pull()
	s.waitScreen(30*time.Second, has("HEAD moved "+short(d.baseline)+" -> "+short(d.pulled)))

	// L, enter, y: e2, at the pulled HEAD, slower by the regression's 8 %.
	s.keys("L")
	s.waitScreen(10*time.Second, has("flightdeck sim server"))
	s.keys("Enter")
	s.waitScreen(10*time.Second, has("y/N"))
	s.keys("y")
	pulledRate := sim.ModelTokPerSec(false, true, false)
	s.waitScreen(60*time.Second, func(screen string) string {
		if !strings.Contains(screen, "HEAD "+short(d.pulled)+"  e2 ") {
			return "no e2 at the pulled HEAD in the header"
		}
		return readyAt("none", pulledRate)(screen)
	})
	path, work := d.dirty()

	// x: e1 and e2, both measured; the cursor on e2.
	s.keys("x")
	measured := func(id, commit string) *regexp.Regexp {
		return regexp.MustCompile(id + `\s+none @ ` + commit + `\s+` + commit + `\s+none\s+\d+\.\d \[[^\]]*\]\s+[1-9]\d*\s`)
	}
	s.waitScreen(60*time.Second, func(screen string) string {
		if !strings.Contains(screen, "2 experiments") {
			return "the x panel does not list 2 experiments"
		}
		if !measured("e1", short(d.baseline)).MatchString(screen) || !measured("e2", short(d.pulled)).MatchString(screen) {
			return "e1 and e2 not both measured yet"
		}
		return ""
	})
	s.keys("Space", "Up", "Space", "c")
	s.waitScreen(15*time.Second, has("compare e1 vs e2"))

	// b: the start dialog, good the faster e1's commit, bad e2's.
	s.keys("b")
	dialog := s.waitScreen(30*time.Second, func(screen string) string {
		if why := d.dialogLacks(screen, "from compare e1 vs e2"); why != "" {
			return why
		}
		if !regexp.MustCompile(`good `+short(d.baseline)+`\s+e1\s+6\d\.\d tok/s`).MatchString(screen) ||
			!regexp.MustCompile(`bad `+short(d.pulled)+`\s+e2\s+5\d\.\d tok/s`).MatchString(screen) {
			return "the start dialog does not name e1 good and e2 bad with their tok/s"
		}
		return ""
	})
	t.Logf("the start dialog:\n%s", dialog)
	start := time.Now()
	s.keys("Enter")

	// The panel: the range, then candidates left that shrink.
	head := regexp.MustCompile(`bisect b1  ` + short(d.baseline) + `\.\.` + short(d.pulled) + `  \d+ commits  tok/s  running`)
	first := s.waitScreen(30*time.Second, func(screen string) string {
		if !head.MatchString(screen) {
			return "no running bisect panel with the range"
		}
		if !panelLeft.MatchString(screen) {
			return "the panel does not say how many candidates are left"
		}
		return ""
	})
	left0, _ := strconv.Atoi(panelLeft.FindStringSubmatch(first)[1])
	t.Logf("the panel at the start (%d left):\n%s", left0, first)
	// An endpoint measured good, the other bad, then a commit between.
	verdicts := regexp.MustCompile(`(?m)^` + short(d.baseline) + ` good .*\s\d+\s+6\d\.\d .* good `)
	mid := s.waitScreen(5*time.Minute, func(screen string) string {
		m := panelLeft.FindStringSubmatch(screen)
		if m == nil {
			if strings.Contains(screen, "culprit") {
				return "" // it ended between two looks
			}
			return "no candidates left count"
		}
		if n, _ := strconv.Atoi(m[1]); n >= left0 {
			return fmt.Sprintf("%d candidates left, not fewer than the %d at the start", n, left0)
		}
		if !verdicts.MatchString(screen) {
			return "the good endpoint has no good verdict"
		}
		return ""
	})
	t.Logf("the panel midway:\n%s", mid)

	// The end: the culprit and what was restored.
	end := s.waitScreen(8*time.Minute, func(screen string) string {
		if strings.Contains(screen, "bisect failed") || strings.Contains(screen, "not a single step") || strings.Contains(screen, "no difference") {
			return "FAIL: the bisect did not end on a culprit"
		}
		if !regexp.MustCompile(`(?m)^culprit [0-9a-f]{7} Fix PCG MoE Error`).MatchString(screen) {
			return "no culprit line naming Fix PCG MoE Error"
		}
		if !strings.Contains(screen, "restored: main at "+short(d.pulled)) {
			return "the panel does not say the checkout was restored"
		}
		return ""
	})
	t.Logf("the panel at the end, after %v:\n%s", time.Since(start).Round(time.Second), end)
	if !regexp.MustCompile(`(?m)^[0-9a-f]{7} culprit .*Fix PCG MoE Error .* bad `).MatchString(end) {
		t.Errorf("the evidence table lacks the culprit's row with its verdict:\n%s", end)
	}
	d.checkRestored(d.pulled, path, work)
	s.waitScreen(30*time.Second, has("HEAD "+short(d.pulled)))
	s.quit()
}

// TestDemoBisectCancelInTmux: after a `git pull` outside the cockpit and
// with uncommitted work, the git panel's I on the reflog entry before the
// pull starts a bisect of the pull's range; once the first launch is
// measured, X and y cancel it: the panel says cancelled, after how many
// launches, and what was restored; HEAD, branch and work are back.
func TestDemoBisectCancelInTmux(t *testing.T) {
	// Parallel: its own simulated host and files; most of its time is
	// waiting for launches (CI's 20 minutes on 2 cores).
	t.Parallel()
	d := newBisectDemo(t)
	s := d.start()
	d.pull()
	path, work := d.dirty()
	s.waitScreen(30*time.Second, has("HEAD moved "+short(d.baseline)+" -> "+short(d.pulled)))

	// g: the reflog; the cursor down to the entry before the pull; I.
	s.keys("g")
	s.waitScreen(15*time.Second, has("reflog"))
	entry := regexp.MustCompile(`(?m)^\s*>\s+` + short(d.baseline) + `\s`)
	for i := 0; !entry.MatchString(s.capture()); i++ {
		if i == 20 {
			t.Fatalf("could not move the cursor to the reflog entry %s:\n%s", short(d.baseline), s.capture())
		}
		s.keys("Down")
		time.Sleep(150 * time.Millisecond)
	}
	s.keys("I")
	dialog := s.waitScreen(30*time.Second, func(screen string) string {
		return d.dialogLacks(screen, "from git panel: reflog entry to HEAD")
	})
	t.Logf("the start dialog:\n%s", dialog)
	s.keys("Enter")

	// One launch measured: a commit row with n 1.
	one := regexp.MustCompile(`(?m)^[0-9a-f]{7} (good|bad) .*\s1\s+\d+\.\d `)
	s.waitScreen(2*time.Minute, func(screen string) string {
		if !strings.Contains(screen, "running") {
			return "no running bisect"
		}
		if !one.MatchString(screen) {
			return "no launch measured yet"
		}
		return ""
	})
	s.keys("X")
	q := s.waitScreen(10*time.Second, func(screen string) string {
		if !regexp.MustCompile(`Cancel the bisect b1 \(\d+ candidates? left\)\?`).MatchString(strings.Join(strings.Fields(screen), " ")) {
			return "no cancel question naming b1 and the candidates left"
		}
		return ""
	})
	t.Logf("X asks:\n%s", q)
	s.keys("y")
	end := s.waitScreen(3*time.Minute, func(screen string) string {
		for _, want := range []string{"tok/s  cancelled", "cancelled (flightdeck bisect --resume continues it)", "restored: main at " + short(d.pulled) + ", dirty work restored"} {
			if !strings.Contains(screen, want) {
				return "the panel lacks " + want
			}
		}
		if !regexp.MustCompile(`(?m)^after [1-9]\d* launch(es)?\s*$`).MatchString(screen) {
			return "the panel does not say after how many launches"
		}
		return ""
	})
	t.Logf("the cancelled panel:\n%s", end)
	d.checkRestored(d.pulled, path, work)
	s.quit()
}
