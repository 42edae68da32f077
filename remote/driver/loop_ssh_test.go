package driver

// The shell-loop fallback over a real sshd: no agent on the host, the
// heartbeat and the watcher's look ride one shell loop each, with no SSH
// session and no process per beat.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// noAgent is a testAgent that says the host has none.
func noAgent(t *testing.T) *testAgent {
	a := newTestAgent(t)
	err := fmt.Errorf("%w: a test host", remote.ErrNoAgent)
	a.err.Store(&err)
	return a
}

// traced is a counting Host whose streams run under strace -f, each
// writing its trace to the next file in dir. With simple, the command is
// one simple command that strace's shell execs (no fork of its own).
type traced struct {
	*counting
	dir    string
	simple bool
	n      atomic.Int32
}

// wrap is cmd under strace, tracing to out.
func (h *traced) wrap(cmd, out string) (string, error) {
	if h.simple {
		cmd = "exec " + cmd
	}
	return remote.Command("strace", "-f", "-qq", "-e", "trace=process", "-o", out, "sh", "-c", cmd)
}

func (h *traced) StartInput(ctx context.Context, cmd string) (remote.Process, io.WriteCloser, error) {
	out := filepath.Join(h.dir, fmt.Sprintf("trace-%d", h.n.Add(1)))
	wrapped, err := h.wrap(cmd, out)
	if err != nil {
		return nil, nil, err
	}
	return h.counting.StartInput(ctx, wrapped)
}

// children counts the processes a trace shows started (forks and clones
// of a process; threads left out) and the execve calls.
func children(trace string) (forks, execs int) {
	for _, line := range strings.Split(trace, "\n") {
		_, call, _ := strings.Cut(strings.TrimSpace(line), " ")
		call = strings.TrimSpace(call)
		switch {
		case strings.Contains(call, "execve") && strings.HasSuffix(call, "= 0"):
			execs++ // a successful one (a PATH search tries others first)
		case strings.HasPrefix(call, "fork(") || strings.HasPrefix(call, "vfork("),
			(strings.HasPrefix(call, "clone(") || strings.HasPrefix(call, "clone3(")) && !strings.Contains(call, "CLONE_THREAD"):
			forks++
		}
	}
	return forks, execs
}

// Without an agent, a driver and a watcher each keep one shell loop: no
// SSH session over many heartbeats, the file's mtime moves, a take-over
// and a release are followed, both ways.
func testLoopTwoCockpits(t *testing.T, rig *sshRig) {
	dir := t.TempDir()
	ha, hb := rig.dial(t), rig.dial(t)
	pa, pb := newStates(), newStates()
	a, b := streamLock(ha, noAgent(t), dir, alice, pa), streamLock(hb, noAgent(t), dir, bob, pb)
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, b, false, event.RoleWatching)
	runLock(t, a)
	stopB := runLock(t, b)
	eventually(t, "both loops started", func() bool { return ha.starts.Load() == 1 && hb.starts.Load() == 1 })
	settle(t, a.Heartbeat, ha, hb)
	const beats = 12
	na, nb := ha.sessions(), hb.sessions()
	st0, err := os.Stat(lockFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(beats * a.Heartbeat)
	if da, db := ha.sessions()-na, hb.sessions()-nb; da != 0 || db != 0 {
		t.Errorf("%d and %d SSH sessions in %d heartbeats, want 0", da, db, beats)
	}
	st1, err := os.Stat(lockFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !st1.ModTime().After(st0.ModTime().Add(a.Heartbeat)) || !os.SameFile(st0, st1) {
		t.Errorf("the loop did not rewrite its file in place: %v then %v, same file %v", st0.ModTime(), st1.ModTime(), os.SameFile(st0, st1))
	}
	if !a.Driving() || b.Driving() || b.State().Err != "" || a.State().Err != "" {
		t.Fatalf("a %+v, b %+v", a.State(), b.State())
	}
	// The watcher takes over; the driver's loop finds the file replaced.
	mustAcquire(t, b, true, event.RoleDriving)
	st := pa.next(t, "a watches", func(s event.DriverState) bool { return s.Role == event.RoleWatching })
	if !strings.HasPrefix(st.Note, "bob@desk (pid 77) took over at ") {
		t.Errorf("a after the take-over: %+v", st)
	}
	// b's loop heartbeats in place now; a's loop sees it fresh: no
	// session on either side.
	settle(t, a.Heartbeat, ha, hb)
	na, nb = ha.sessions(), hb.sessions()
	time.Sleep(beats * a.Heartbeat)
	if da, db := ha.sessions()-na, hb.sessions()-nb; da != 0 || db != 0 {
		t.Errorf("after the take-over: %d and %d SSH sessions in %d heartbeats, want 0", da, db, beats)
	}
	if a.Driving() || !b.Driving() || fileToken(t, dir) != bob.Token {
		t.Fatalf("after the take-over: a drives %v, b drives %v", a.Driving(), b.Driving())
	}
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	st = pa.next(t, "a drives again", func(s event.DriverState) bool { return s.Role == event.RoleDriving })
	if st.Note != "bob@desk (pid 77) quit: you drive now" {
		t.Errorf("a after b quit: %+v", st)
	}
}

// The fallback's budget, counted with strace on the host: each loop
// spawns at most one process (the watcher's rm at its start) in its whole
// life, none per heartbeat; one SSH session each.
func testLoopBudget(t *testing.T, rig *sshRig) {
	if _, err := os.Stat("/usr/bin/strace"); err != nil {
		t.Skip("no strace")
	}
	dir, traces := t.TempDir(), t.TempDir()
	ha := &traced{counting: rig.dial(t), dir: filepath.Join(traces, "a"), simple: true}
	hb := &traced{counting: rig.dial(t), dir: filepath.Join(traces, "b"), simple: true}
	os.Mkdir(ha.dir, 0o700)
	os.Mkdir(hb.dir, 0o700)
	pb := newStates()
	a, b := streamLock(ha, noAgent(t), dir, alice, nil), streamLock(hb, noAgent(t), dir, bob, pb)
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, b, false, event.RoleWatching)
	stopA, stopB := runLock(t, a), runLock(t, b)
	defer func() {
		if t.Failed() {
			t.Logf("b's states: %+v", pb.list())
		}
	}()
	const beats = 20
	time.Sleep(beats * a.Heartbeat)
	stopB()
	stopA()
	for _, h := range []*traced{ha, hb} {
		files, _ := filepath.Glob(filepath.Join(h.dir, "trace-*"))
		if len(files) != 1 || h.starts.Load() != 1 {
			first, _ := os.ReadFile(files[0])
			t.Errorf("%s: %d loops started (%v), want 1; the first:\n%s", h.dir, h.starts.Load(), files, first)
			continue
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		forks, execs := children(string(b))
		if max := map[*traced]int{ha: 0, hb: 1}[h]; forks > max || execs > 2+max { // execve: strace's sh, then the loop's
			t.Errorf("%s: %d processes and %d execve over %d heartbeats, want at most %d (its start):\n%s", filepath.Base(h.dir), forks, execs, beats, max, b)
		}
	}
}

// The one-line loop script parses in the shells hosts have.
func TestLoopScriptParses(t *testing.T) {
	for _, sh := range []string{"sh", "dash", "bash", "busybox"} {
		path, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		args := []string{"-n", "-c", loopLine1}
		if sh == "busybox" {
			args = append([]string{"sh"}, args...)
		}
		if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s\n%s", sh, err, out, loopLine1)
		}
	}
	if strings.Contains(loopLine1, "\n") {
		t.Error("the loop script has a newline: no shell word can carry it")
	}
}
