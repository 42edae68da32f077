package follow

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// agentScenario is the user's log life, played on path while a Follower
// with an agent follows it over h: appends, a truncation, a rewrite to a
// larger size (cp over the log), a rotation (mv and a new file), a
// removal and a new file, a dropped connection with lines written
// meanwhile. Every line must come exactly once, with its offset, one
// Reset between two files (drop: a function that drops the connection
// and brings it back after change, or nil to skip that step).
func agentScenario(t *testing.T, c *collector, path string, drop func(change func())) {
	t.Helper()
	gens := [][]string{genLines("start", 50)}
	c.waitStream(t, "the first lines", expectStream(gens...))
	more := genLines("appended", 30)
	appendFile(t, path, joinLines(more[:10])+more[10][:7])
	appendFile(t, path, more[10][7:]+"\n"+joinLines(more[11:]))
	gens[0] = append(gens[0], more...)
	c.waitStream(t, "appended lines, one in two writes", expectStream(gens...))

	next := func(what string, n int, change func(lines []string)) {
		t.Helper()
		lines := genLines(what, n)
		gens = append(gens, lines)
		change(lines)
		c.waitStream(t, what, expectStream(gens...))
	}
	next("truncated", 10, func(l []string) { writeFile(t, path, joinLines(l)) })
	next("cp over it, larger", 2000, func(l []string) {
		tmp := path + ".new"
		writeFile(t, tmp, joinLines(l))
		if out, err := exec.Command("cp", tmp, path).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	})
	next("rotated", 40, func(l []string) {
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		appendFile(t, path, joinLines(l))
	})
	next("removed, then a new file", 20, func(l []string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		c.waitFor(t, "the missing notice", func([]string, []event.LogReset) bool {
			n := c.notices()
			return len(n) > 0 && n[len(n)-1].Class == event.NoticeMissing
		})
		appendFile(t, path, joinLines(l))
	})
	if drop != nil {
		last := &gens[len(gens)-1]
		lines := genLines("while disconnected", 25)
		drop(func() { appendFile(t, path, joinLines(lines)) })
		*last = append(*last, lines...)
		c.waitStream(t, "the lines written while disconnected, once", expectStream(gens...))
	}
}

func TestAgentFollowerExactlyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server log.txt") // a space, to exercise quoting
	writeFile(t, path, joinLines(genLines("start", 50)))
	sh := newShHost()
	h := &countingHost{Host: sh}
	ag := &testAgent{}
	_, c := startFollower(t, h, path, Options{Agent: ag})
	agentScenario(t, c, path, func(change func()) {
		sh.setDown(true)
		sh.drop()
		change()
		sh.setDown(false)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.starts {
		if !strings.Contains(s, " agent follow ") {
			t.Errorf("started %q, want only the agent", s)
		}
	}
	if len(h.starts) < 2 {
		t.Errorf("%d starts, want a restart after the drop", len(h.starts))
	}
	for _, r := range h.runs {
		if strings.Contains(r, " dd ") {
			t.Errorf("ran %q: the agent checks the content, not dd", r)
		}
	}
}

// TestAgentFollowerSpawnsNothing: at steady state, while lines are
// appended for a few seconds, the Follower opens no session on the host
// (no Run, no Start beyond the agent's one), and the agent itself, traced
// with strace -f when the host has it, executes nothing and forks nothing
// (its clone calls are threads).
func TestAgentFollowerSpawnsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steady.log")
	writeFile(t, path, joinLines(genLines("start", 50)))
	h := &countingHost{Host: newShHost()}
	ag := &testAgent{}
	trace := filepath.Join(t.TempDir(), "strace.out")
	traced := false
	if _, err := exec.LookPath("strace"); err == nil && exec.Command("strace", "-qq", "-e", "trace=execve", "true").Run() == nil {
		ag.wrap = []string{"strace", "-f", "-qq", "-e", "trace=execve,fork,vfork,clone,clone3", "-o", trace, "--"}
		traced = true
	}
	_, c := startFollower(t, h, path, Options{Agent: ag})
	gens := [][]string{genLines("start", 50)}
	c.waitStream(t, "the first lines", expectStream(gens...))
	runs0, starts0 := h.counts()
	steady := 3 * time.Second
	for end := time.Now().Add(steady); time.Now().Before(end); {
		lines := genLines(fmt.Sprintf("at %v", time.Now().UnixNano()), 3)
		appendFile(t, path, joinLines(lines))
		gens[0] = append(gens[0], lines...)
		time.Sleep(50 * time.Millisecond)
	}
	c.waitStream(t, "every appended line", expectStream(gens...))
	runs, starts := h.counts()
	if starts0 != 1 || starts != 1 || runs != runs0 {
		t.Errorf("sessions on the host: %d runs and %d starts before %v of appends, %d and %d after; want one start and no run during them",
			runs0, starts0, steady, runs, starts)
	}
	t.Logf("%d lines in %v: %d sessions opened during it", len(gens[0])-50, steady, runs-runs0+starts-starts0)
	if !traced {
		t.Log("strace not usable here: the agent's own processes are not counted")
		return
	}
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	execs, forks := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.Contains(l, "execve("):
			execs++
		case strings.Contains(l, "fork("),
			(strings.Contains(l, "clone(") || strings.Contains(l, "clone3(")) && !strings.Contains(l, "CLONE_THREAD"):
			forks++
			t.Logf("trace: %s", l)
		}
	}
	if execs != 1 || forks != 0 {
		t.Errorf("the agent made %d execve (want 1, its own start) and %d forks (want 0)", execs, forks)
	}
}

func TestFollowerWithoutAgentUsesTail(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "t.log")
	appendFile(t, path, "l1\nl2\n")
	sh := newShHost()
	h := &countingHost{Host: sh}
	ag := noAgent()
	_, c := startFollower(t, h, path, Options{Agent: ag})
	c.waitFor(t, "the lines", hasLines("l1", "l2"))
	ag.mu.Lock()
	asked := ag.calls
	ag.mu.Unlock()
	sh.drop()
	appendFile(t, path, "l3\n")
	c.waitFor(t, "the line after the restart", hasLines("l1", "l2", "l3"))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.starts {
		if !strings.Contains(s, " -F -- ") {
			t.Errorf("started %q, want tail", s)
		}
	}
	ag.mu.Lock()
	defer ag.mu.Unlock()
	if ag.calls <= asked {
		t.Errorf("the agent was asked %d times before the restart and %d after; want it asked again", asked, ag.calls)
	}
}

// TestFollowerSwitchesToTheAgent: the agent's install settles after tail
// started; the Follower restarts with the agent, every line once.
func TestFollowerSwitchesToTheAgent(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "s.log")
	gens := [][]string{genLines("first", 20)}
	writeFile(t, path, joinLines(gens[0]))
	h := &countingHost{Host: newShHost()}
	ag := &testAgent{ready: make(chan struct{})}
	_, c := startFollower(t, h, path, Options{Agent: ag, AgentWait: 10 * time.Millisecond})
	c.waitStream(t, "the lines through tail", expectStream(gens...))
	close(ag.ready)
	c.waitFor(t, "the agent's start", func([]string, []event.LogReset) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.starts) == 2
	})
	more := genLines("then", 30)
	appendFile(t, path, joinLines(more))
	gens[0] = append(gens[0], more...)
	c.waitStream(t, "the lines through the agent", expectStream(gens...))
	h.mu.Lock()
	defer h.mu.Unlock()
	if !strings.Contains(h.starts[0], " -F -- ") || !strings.Contains(h.starts[1], " agent follow ") {
		t.Errorf("starts %q, want tail then the agent", h.starts)
	}
}

// TestFollowerBrokenAgentFallsBack: an agent whose launcher refuses to
// run it (exit 25 after the launch line) is reported, and tail follows.
func TestFollowerBrokenAgentFallsBack(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "b.log")
	appendFile(t, path, "l1\nl2\n")
	ag := &testAgent{cmd: `printf '{"t":"launch","pid":%s}\n' "$$"; echo 'refusing the agent cache: not owned' >&2; exit 25`}
	h := &countingHost{Host: newShHost()}
	_, c := startFollower(t, h, path, Options{Agent: ag})
	c.waitFor(t, "the lines through tail", hasLines("l1", "l2"))
	c.mu.Lock()
	said := false
	for _, e := range c.events {
		if fe, ok := e.Data.(event.LogFollowError); ok && strings.Contains(fe.Err, "refusing the agent cache") {
			said = true
		}
	}
	c.mu.Unlock()
	if !said {
		t.Error("the launcher's reason was not reported")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.starts) != 2 || !strings.Contains(h.starts[1], " -F -- ") {
		t.Errorf("starts %q, want the agent then tail", h.starts)
	}
}

// TestFollowerLazyCheck is the fallback's CheckLazy: lines are delivered
// before any dd; a rewrite tail misses (the new file printed from the old
// offset, no message) is found by the next check, at most LazyInterval
// later: Reset "rewritten", and the new file from 0, every line once after
// the Reset. The stale lines delivered before it are what CheckLazy gives
// up. Checks come at most every LazyInterval while lines arrive.
func TestFollowerLazyCheck(t *testing.T) {
	old := joinLines(genLines("old", 50))
	h := newScriptHost(old)
	interval := 400 * time.Millisecond
	_, c := startFollower(t, h, "/logs/server.log", Options{Check: CheckLazy, LazyInterval: interval})
	tl := h.nextTail(t)
	tl.write(t, old)
	c.waitStream(t, "the old lines", expectStream(genLines("old", 50)))
	h.mu.Lock()
	dds := h.dds
	h.mu.Unlock()
	if dds != 0 {
		t.Errorf("%d dd before the first lines were delivered, want 0", dds)
	}

	fresh := genLines("fresh", 2000)
	h.setFile(joinLines(fresh), true)
	tl.write(t, joinLines(fresh)[len(old):]) // tail missed the truncation
	found := time.Now()
	tl2 := h.nextTail(t)
	if d := time.Since(found); d > interval+2*time.Second {
		t.Errorf("the rewrite was found after %v, want within about %v", d, interval)
	}
	if tl2.from != 0 {
		t.Fatalf("tail restarted at %d, want 0", tl2.from)
	}
	tl2.write(t, joinLines(fresh))
	c.waitFor(t, "the fresh file after the Reset", func(l []string, r []event.LogReset) bool { return len(l) >= len(fresh) })
	after, resets := c.lines()
	if strings.Join(after, "\n") != strings.Join(fresh, "\n") {
		t.Errorf("after the Reset: %d lines, want the fresh file's %d", len(after), len(fresh))
	}
	if len(resets) != 1 || resets[0].Reason != "rewritten" {
		t.Errorf("resets %+v, want one, rewritten", resets)
	}

	// Steady lines: at most one check per interval.
	h.mu.Lock()
	dds = h.dds
	h.mu.Unlock()
	steady := 5 * interval
	file := joinLines(fresh)
	for end := time.Now().Add(steady); time.Now().Before(end); {
		l := joinLines(genLines(fmt.Sprintf("steady %d", time.Now().UnixNano()), 2))
		file += l
		h.setFile(file, true)
		tl2.write(t, l)
		time.Sleep(20 * time.Millisecond)
	}
	h.mu.Lock()
	n := h.dds - dds
	h.mu.Unlock()
	if n < 1 || n > 6 {
		t.Errorf("%d checks in %v of lines with LazyInterval %v, want 1 to 6", n, steady, interval)
	}
	if _, r := c.lines(); len(r) != 1 {
		t.Errorf("resets %+v, want no more", r)
	}
}

// TestFollowerRotationThenDrop: tail follows a rotation by its message;
// the connection then drops. The restart's stat finds the new file's
// inode, which is no rotation: no second Reset, no line twice.
func TestFollowerRotationThenDrop(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "r.log")
	gens := [][]string{genLines("old", 5)}
	writeFile(t, path, joinLines(gens[0]))
	h := newShHost()
	_, c := startFollower(t, h, path, Options{})
	c.waitStream(t, "the old lines", expectStream(gens...))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	gens = append(gens, genLines("new", 5))
	appendFile(t, path, joinLines(gens[1]))
	c.waitStream(t, "the new file", expectStream(gens...))
	h.drop()
	more := genLines("after the drop", 5)
	appendFile(t, path, joinLines(more))
	gens[1] = append(gens[1], more...)
	c.waitStream(t, "the lines after the drop, once", expectStream(gens...))
}

// TestAgentFollowerBacklog: the cockpit's first start, near the end of a
// big log, through the agent: the cut line is dropped, the rest once.
func TestAgentFollowerBacklog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.log")
	appendFile(t, path, "line-1\nline-2\nline-3\nline-4\n") // 7 bytes a line
	_, c := startFollower(t, newShHost(), path, Options{Backlog: 10, Agent: &testAgent{}})
	c.waitFor(t, "the last line", hasLines("line-4"))
	appendFile(t, path, "line-5\n")
	c.waitFor(t, "the next line", hasLines("line-4", "line-5"))
	if got, _ := c.lines(); strings.Join(got, ",") != "line-4,line-5" {
		t.Errorf("lines = %q, want line-4,line-5", got)
	}
}

// TestAgentFollowerRewrittenWhileDisconnected: the log is rewritten,
// larger, while the connection is down; the agent started at the old
// offset finds the bytes before it changed (the anchor it was given):
// one Reset, said to have happened unwatched, and the new file from 0.
func TestAgentFollowerRewrittenWhileDisconnected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.log")
	old := genLines("old", 20)
	writeFile(t, path, joinLines(old))
	sh := newShHost()
	_, c := startFollower(t, sh, path, Options{Agent: &testAgent{}})
	c.waitStream(t, "the old lines", expectStream(old))
	sh.setDown(true)
	sh.drop()
	fresh := genLines("fresh", 200)
	writeFile(t, path, joinLines(fresh))
	sh.setDown(false)
	c.waitStream(t, "a Reset and the fresh file", expectStream(old, fresh))
	_, resets := c.lines()
	if r := resets[0]; r.Reason != "truncated" || !r.Unwatched || r.Delivered != int64(len(joinLines(old))) {
		t.Errorf("reset %+v, want truncated, unwatched, after the old file's %d bytes", r, len(joinLines(old)))
	}
}

// TestInProcessFollowerRunsNothing: on the cockpit's own machine
// (Options.InProcess) StreamFile follows in a goroutine: the user's log
// life, every line once, and not one command run or started on the host.
func TestInProcessFollowerRunsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local.log")
	writeFile(t, path, joinLines(genLines("start", 50)))
	h := &countingHost{Host: remote.NewLocal()}
	defer h.Close()
	_, c := startFollower(t, h, path, Options{InProcess: true, Agent: noAgent()})
	agentScenario(t, c, path, nil)
	if runs, starts := h.counts(); runs != 0 || starts != 0 {
		t.Errorf("%d commands run and %d started on the host, want none", runs, starts)
	}
}

var _ remote.Agent = (*testAgent)(nil)
