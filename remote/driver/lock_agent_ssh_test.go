package driver

// The stream path over a real sshd: the driver heartbeats and the watcher
// reads through `agent lock` (the test binary), with no SSH session per
// beat; take-over, release, a dropped driver, a frozen stream.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// sshRig is a real sshd on loopback that the test's cockpits dial.
type sshRig struct {
	srv   *sshdtest.Server
	known string
}

func newSSHRig(t *testing.T) *sshRig {
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	return &sshRig{srv: srv, known: known}
}

// dial opens one more connection, as one more cockpit.
func (r *sshRig) dial(t *testing.T) *counting {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	h, err := remote.DialSSH(ctx, r.srv.Target(), remote.SSHOptions{ConfigFile: os.DevNull,
		IdentityFiles: []string{r.srv.ClientKeyPath()}, KnownHostsFiles: []string{r.known}, NoAgent: true,
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return &counting{Host: h}
}

// streamLock is a Lock on the stream path with a 200 ms heartbeat.
func streamLock(h remote.Host, a remote.Agent, dir string, me event.DriverInfo, pub *states) *Lock {
	l := newLock(h, dir, me, pub)
	l.Heartbeat, l.StaleAfter, l.Agent = 200*time.Millisecond, 2*time.Second, a
	return l
}

// TestLockStreamsOverSSH runs the stream path's cases on one sshd.
func TestLockStreamsOverSSH(t *testing.T) {
	rig := newSSHRig(t)
	t.Run("two cockpits", func(t *testing.T) { testAgentTwoCockpits(t, rig) })
	t.Run("driver dropped", func(t *testing.T) { testAgentDriverDropped(t, rig) })
	t.Run("frozen stream", func(t *testing.T) { testAgentFrozenStream(t, rig) })
	t.Run("mixed with the script", func(t *testing.T) { testAgentMixedWithScript(t, rig) })
	t.Run("no child process", func(t *testing.T) { testAgentNoChildProcess(t, rig) })
	t.Run("fallback loop", func(t *testing.T) { testLoopTwoCockpits(t, rig) })
	t.Run("fallback budget", func(t *testing.T) { testLoopBudget(t, rig) })
	t.Run("sshd restarted", func(t *testing.T) { testAgentReconnect(t, rig) }) // last: it drops every connection
}

// Two cockpits, one driving and one watching, each through its agent
// stream: over many heartbeats neither opens an SSH session, the lock file
// is refreshed, and the watcher follows a take-over and a release.
func testAgentTwoCockpits(t *testing.T, rig *sshRig) {
	dir := filepath.Join(t.TempDir(), "logs")
	ha, hb := rig.dial(t), rig.dial(t)
	aa, ab := newTestAgent(t), newTestAgent(t)
	pa, pb := newStates(), newStates()
	a, b := streamLock(ha, aa, dir, alice, pa), streamLock(hb, ab, dir, bob, pb)
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, b, false, event.RoleWatching)
	runLock(t, a)
	stopB := runLock(t, b)
	eventually(t, "both streams started", func() bool { return len(aa.pidList()) == 1 && len(ab.pidList()) == 1 })

	// Steady state: 10 heartbeats, no session on either connection.
	settle(t, a.Heartbeat, ha, hb)
	const beats = 10
	na, nb := ha.sessions(), hb.sessions()
	st0, err := os.Stat(lockFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(beats * a.Heartbeat)
	if d := ha.sessions() - na; d != 0 {
		t.Errorf("the driver opened %d SSH sessions in %d heartbeats, want 0", d, beats)
	}
	if d := hb.sessions() - nb; d != 0 {
		t.Errorf("the watcher opened %d SSH sessions in %d heartbeats, want 0", d, beats)
	}
	st1, err := os.Stat(lockFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !st1.ModTime().After(st0.ModTime()) || os.SameFile(st0, st1) {
		t.Errorf("the lock file was not rewritten by the heartbeat: %v then %v", st0.ModTime(), st1.ModTime())
	}
	if !a.Driving() || b.Driving() || fileToken(t, dir) != alice.Token {
		t.Fatalf("a drives %v, b drives %v, file %s", a.Driving(), b.Driving(), fileToken(t, dir))
	}
	if len(aa.pidList()) != 1 || len(ab.pidList()) != 1 {
		t.Errorf("agents started: %v and %v, want one each", aa.pidList(), ab.pidList())
	}

	// Take-over by the watcher: the driver's agent finds the file changed.
	mustAcquire(t, b, true, event.RoleDriving)
	st := pa.next(t, "watching after the take-over", func(s event.DriverState) bool { return s.Role == event.RoleWatching })
	if !strings.HasPrefix(st.Note, "bob@desk (pid 77) took over at ") || st.Holder.Token != bob.Token {
		t.Errorf("a after the take-over: %+v", st)
	}
	eventually(t, "new streams after the take-over", func() bool { return len(aa.pidList()) >= 2 && len(ab.pidList()) >= 2 })
	settle(t, a.Heartbeat, ha, hb)
	na, nb = ha.sessions(), hb.sessions()
	time.Sleep(beats * a.Heartbeat)
	if da, db := ha.sessions()-na, hb.sessions()-nb; da != 0 || db != 0 {
		t.Errorf("after the take-over: %d and %d SSH sessions in %d heartbeats, want 0", da, db, beats)
	}
	if a.Driving() || !b.Driving() || fileToken(t, dir) != bob.Token {
		t.Fatalf("after the take-over: a drives %v, b drives %v", a.Driving(), b.Driving())
	}

	// b quits: a's watching stream sees the lock gone and takes it.
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	st = pa.next(t, "driving after the release", func(s event.DriverState) bool { return s.Role == event.RoleDriving })
	if st.Note != "bob@desk (pid 77) quit: you drive now" {
		t.Errorf("a after b's release: %+v", st)
	}
	eventually(t, "a drives", func() bool { return a.Driving() && fileToken(t, dir) == alice.Token })
}

// The driver's connection drops: its agent ends at its next write (the
// session is gone), the driver stops driving by itself, and the watcher
// takes the lock once it is stale, not before.
func testAgentDriverDropped(t *testing.T, rig *sshRig) {
	dir := t.TempDir()
	ha, hb := rig.dial(t), rig.dial(t)
	aa, ab := newTestAgent(t), newTestAgent(t)
	pa, pb := newStates(), newStates()
	a, b := streamLock(ha, aa, dir, alice, pa), streamLock(hb, ab, dir, bob, pb)
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, b, false, event.RoleWatching)
	runLock(t, a)
	runLock(t, b)
	eventually(t, "both streams started", func() bool { return len(aa.pidList()) == 1 && len(ab.pidList()) == 1 })
	agentPID := aa.pidList()[0]
	dropped := time.Now()
	ha.Host.Close()
	st := pb.next(t, "b drives", func(s event.DriverState) bool { return s.Role == event.RoleDriving })
	took := time.Since(dropped)
	if !strings.HasPrefix(st.Note, "took the stale lock of alice@laptop (pid 4123): no heartbeat for ") {
		t.Errorf("b's note: %+v", st)
	}
	if min := b.StaleAfter - b.Heartbeat; took < min {
		t.Errorf("b took the lock %v after the drop: the last heartbeat was at most %v old", took, min)
	}
	if a.Driving() {
		t.Error("a still drives after b took its stale lock")
	}
	eventually(t, "the dropped driver's agent to end", func() bool {
		return errors.Is(syscall.Kill(agentPID, 0), syscall.ESRCH)
	})
}

// A frozen agent (SIGSTOP: its stream goes silent, its session stays
// open) is noticed within about two heartbeats: the error is published, a
// script beat keeps the lock, and a new stream takes over.
func testAgentFrozenStream(t *testing.T, rig *sshRig) {
	dir := t.TempDir()
	h := rig.dial(t)
	ag := newTestAgent(t)
	pub := newStates()
	a := streamLock(h, ag, dir, alice, pub)
	mustAcquire(t, a, false, event.RoleDriving)
	runLock(t, a)
	eventually(t, "the stream started", func() bool { return len(ag.pidList()) == 1 })
	pid := ag.pidList()[0]
	// Stop it right after a heartbeat, outside its mutex.
	st0, err := os.Stat(lockFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a heartbeat", func() bool {
		st, err := os.Stat(lockFile(dir))
		return err == nil && !os.SameFile(st, st0)
	})
	time.Sleep(a.Heartbeat / 4) // the rename is the last step inside the mutex but two short ones
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL); syscall.Kill(pid, syscall.SIGCONT) })
	frozen := time.Now()
	st := pub.next(t, "the silent stream", func(s event.DriverState) bool { return s.Err != "" })
	if !strings.Contains(st.Err, "the agent's lock stream sent nothing for") || st.Role != event.RoleDriving {
		t.Errorf("state %+v", st)
	}
	if d, limit := time.Since(frozen), silenceLimit(a.Heartbeat, a.StaleAfter, false)+a.Heartbeat; d > limit+500*time.Millisecond {
		t.Errorf("the silence was noticed after %v, limit %v", d, limit)
	}
	pub.next(t, "the error cleared", func(s event.DriverState) bool { return s.Err == "" && s.Role == event.RoleDriving })
	eventually(t, "a new stream", func() bool { return len(ag.pidList()) == 2 })
	if !a.Driving() || fileToken(t, dir) != alice.Token {
		t.Errorf("a drives %v, the file holds %s", a.Driving(), fileToken(t, dir))
	}
	n := h.sessions()
	time.Sleep(10 * a.Heartbeat)
	if d := h.sessions() - n; d != 0 {
		t.Errorf("%d SSH sessions in 10 heartbeats on the new stream, want 0", d)
	}
}

// One cockpit on the agent path, one on the script path: take-overs both
// ways are noticed, and once each change settled exactly one drives.
func testAgentMixedWithScript(t *testing.T, rig *sshRig) {
	dir := t.TempDir()
	ha, hb := rig.dial(t), rig.dial(t)
	ag := newTestAgent(t)
	pa, pb := newStates(), newStates()
	a := streamLock(ha, ag, dir, alice, pa)
	b := streamLock(hb, nil, dir, bob, pb) // no Agent: lockScript every beat
	one := func(what string, driver *Lock) {
		t.Helper()
		for range 20 {
			ad, bd := a.Driving(), b.Driving()
			if ad && bd {
				t.Fatalf("%s: both drive", what)
			}
			if (ad != (driver == a)) || (bd != (driver == b)) || fileToken(t, dir) != driver.Me.Token {
				t.Fatalf("%s: a drives %v, b drives %v, the file holds %s", what, ad, bd, fileToken(t, dir))
			}
			time.Sleep(a.Heartbeat / 4)
		}
	}
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, b, false, event.RoleWatching)
	runLock(t, a)
	stopB := runLock(t, b)
	eventually(t, "a's stream", func() bool { return len(ag.pidList()) == 1 })
	one("a drives", a)
	mustAcquire(t, b, true, event.RoleDriving)
	pa.next(t, "a watches", func(s event.DriverState) bool { return s.Role == event.RoleWatching && s.Holder.Token == bob.Token })
	one("b took over", b)
	mustAcquire(t, a, true, event.RoleDriving)
	pb.next(t, "b watches", func(s event.DriverState) bool {
		return s.Role == event.RoleWatching && strings.HasPrefix(s.Note, "alice@laptop (pid 4123) took over at ")
	})
	eventually(t, "a's driving stream", func() bool { return len(ag.pidList()) >= 3 })
	one("a took over", a)
	// a quits; b's script beat takes the free lock.
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Both Runs race for the free lock: one gets it.
	eventually(t, "one drives after a's release", func() bool { return a.Driving() != b.Driving() })
	driver := a
	if b.Driving() {
		driver = b
	}
	one("after a's release", driver)
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
}

// The agents, under strace -f, start no process at all (no fork, clone of
// a process or execve after their own) over many heartbeats, driving and
// watching.
func testAgentNoChildProcess(t *testing.T, rig *sshRig) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("no strace")
	}
	dir, traces := t.TempDir(), t.TempDir()
	wrap := func(who string) func(int) []string {
		return func(n int) []string {
			return []string{"strace", "-f", "-qq", "-e", "trace=process", "-o", filepath.Join(traces, fmt.Sprintf("%s-%d", who, n))}
		}
	}
	ha, hb := rig.dial(t), rig.dial(t)
	aa, ab := newTestAgent(t), newTestAgent(t)
	aa.wrap, ab.wrap = wrap("a"), wrap("b")
	a, b := streamLock(ha, aa, dir, alice, nil), streamLock(hb, ab, dir, bob, nil)
	// strace -f slows the agents; on a loaded 2-core CI machine a stream at
	// 200 ms beats went silent past its 500 ms limit and was restarted (one
	// SSH session more, counted below). A 1 s beat gives 2.5 s of slack and
	// still tests many beats.
	for _, l := range []*Lock{a, b} {
		l.Heartbeat, l.StaleAfter = time.Second, 10*time.Second
	}
	mustAcquire(t, a, false, event.RoleDriving)
	mustAcquire(t, b, false, event.RoleWatching)
	stopA, stopB := runLock(t, a), runLock(t, b)
	eventually(t, "both streams started", func() bool { return len(aa.pidList()) == 1 && len(ab.pidList()) == 1 })
	settle(t, a.Heartbeat, ha, hb)
	const beats = 10
	na, nb := ha.sessions(), hb.sessions()
	time.Sleep(beats * a.Heartbeat)
	if da, db := ha.sessions()-na, hb.sessions()-nb; da != 0 || db != 0 {
		t.Errorf("%d and %d SSH sessions in %d heartbeats, want 0", da, db, beats)
	}
	pids := []int{aa.pidList()[0], ab.pidList()[0]}
	stopB()
	stopA()
	for _, pid := range pids {
		eventually(t, "the agents to end", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
	}
	files, _ := filepath.Glob(filepath.Join(traces, "*"))
	if len(files) != 2 {
		t.Fatalf("strace outputs %v, want one per agent", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		execs, children := 0, 0
		for _, line := range strings.Split(string(b), "\n") {
			_, call, _ := strings.Cut(strings.TrimSpace(line), " ")
			call = strings.TrimSpace(call)
			switch {
			case strings.HasPrefix(call, "execve("):
				execs++
			case strings.HasPrefix(call, "fork(") || strings.HasPrefix(call, "vfork("),
				(strings.HasPrefix(call, "clone(") || strings.HasPrefix(call, "clone3(")) && !strings.Contains(call, "CLONE_THREAD"):
				children++
			}
		}
		if execs != 1 || children != 0 {
			t.Errorf("%s: %d execve (want 1: the agent's own) and %d child processes (want 0):\n%s", filepath.Base(f), execs, children, b)
		}
		if !strings.Contains(string(b), "exit_group(") && !strings.Contains(string(b), "+++ exited") && !strings.Contains(string(b), "+++ killed") {
			t.Logf("%s: trace without an exit:\n%s", filepath.Base(f), b)
		}
	}
}

// The host's sshd goes away and comes back: the driver turns unsure in
// time (the stream's silence and the failed script beats are published
// as errors, not taking turns), then drives again through a new stream.
func testAgentReconnect(t *testing.T, rig *sshRig) {
	dir := t.TempDir()
	h := rig.dial(t)
	ag := newTestAgent(t)
	pub := newStates()
	a := streamLock(h, ag, dir, alice, pub)
	mustAcquire(t, a, false, event.RoleDriving)
	runLock(t, a)
	eventually(t, "the stream started", func() bool { return len(ag.pidList()) == 1 })
	rig.srv.Stop()
	pub.next(t, "unsure", func(s event.DriverState) bool { return s.Role == event.RoleUnsure })
	if a.Driving() {
		t.Error("still driving with the host gone")
	}
	time.Sleep(a.StaleAfter) // several restarts in vain
	rig.srv.Restart()
	st := pub.next(t, "driving again", func(s event.DriverState) bool { return s.Role == event.RoleDriving && s.Err == "" })
	if st.Note != "the host answers again: still driving" {
		t.Errorf("after the restart: %+v", st)
	}
	eventually(t, "a new stream", func() bool { return len(ag.pidList()) >= 2 && a.Driving() })
	flips := 0
	prev := ""
	for _, s := range pub.list() {
		if s.Err != prev && s.Err != "" && prev != "" {
			flips++
		}
		prev = s.Err
	}
	if flips > 2 {
		t.Errorf("the error changed %d times while the host was away: %+v", flips, pub.list())
	}
}
