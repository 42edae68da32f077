package server

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// gonePID returns a pid that no process has now.
func gonePID(t *testing.T) int {
	for p := 999990; p > 900000; p-- {
		if _, err := os.Stat("/proc/" + strconv.Itoa(p)); os.IsNotExist(err) {
			return p
		}
	}
	t.Skip("no free pid found")
	return 0
}

// TestForgedPidfileKillsNothingElse: a pidfile naming a gone pid (or a
// live one with another start time) with someone else's session as its
// group and session — pairs share a writable log_dir — is no server:
// Find does not call that session running, and a kill aimed at it signals
// nobody (issue 19, item 2).
func TestForgedPidfileKillsNothingElse(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	victim := exec.Command("sh", "-c", "sleep 1000 & sleep 1001")
	victim.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	leader := victim.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-leader, syscall.SIGKILL)
		victim.Wait()
	})
	waitFor(t, "the victim's two sleeps", func() bool { return len(sessionMembers(leader)) == 3 })
	st := startTime(t, leader)
	for _, c := range []struct {
		name  string
		pid   int
		start uint64
		pgid  int
		sid   int
	}{
		{"gone root", gonePID(t), 12345, leader, leader},
		{"reused pid", leader, st + 1, leader, leader},
	} {
		logDir := t.TempDir()
		rec := fmt.Sprintf(`{"pid":%d,"pgid":%d,"sid":%d,"start_time":%d,"launch":{"preset":"sim","argv":["sleep"],"workdir":"/","log":"/x.log","exit":"/x.exit","at":"2026-12-01T10:00:00Z"}}`,
			c.pid, c.pgid, c.sid, c.start)
		if err := os.WriteFile(filepath.Join(logDir, PidfileName), []byte(rec+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Find(ctx, h, logDir, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		if f.Running || len(f.Tree) > 0 {
			t.Errorf("%s: the forged pidfile's session counts as the server: %+v", c.name, f)
		}
		// A kill aimed at it as the pidfile says.
		_, err = Kill(ctx, h, event.KillTarget{PID: c.pid, StartTime: c.start, PGID: c.pgid, SID: c.sid}, time.Second)
		if err != nil {
			t.Errorf("%s: kill: %v", c.name, err)
		}
		if n := len(sessionMembers(leader)); n != 3 {
			t.Fatalf("%s: the victim's session has %d of its 3 processes left", c.name, n)
		}
	}
}

// statFields returns the fields of /proc/PID/stat after the command name:
// [0] is the state, [3] the session, [19] the start time; nil when gone.
func statFields(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
}

// sessionMembers lists the live, non-zombie processes of session sid.
func sessionMembers(sid int) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid := filepath.Base(d)
		if f := statFields(pid); len(f) > 3 && f[3] == strconv.Itoa(sid) && f[0] != "Z" {
			n, _ := strconv.Atoi(pid)
			out = append(out, n)
		}
	}
	return out
}

// startTime reads the start time of pid (field 22 of /proc/PID/stat).
func startTime(t *testing.T, pid int) uint64 {
	f := statFields(strconv.Itoa(pid))
	if len(f) < 20 {
		t.Fatalf("pid %d is gone", pid)
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// markedPIDs lists the live processes whose environment holds
// FLIGHTDECK_LAUNCH=mark.
func markedPIDs(mark string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/environ")
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), "FLIGHTDECK_LAUNCH="+mark) {
			continue
		}
		if f := statFields(filepath.Base(d)); len(f) > 0 && f[0] != "Z" {
			n, _ := strconv.Atoi(filepath.Base(d))
			out = append(out, n)
		}
	}
	return out
}

// TestKillSweepsTheLaunchMark: a preset that double-forks a daemon into a
// session of its own, ignoring SIGTERM with children of its own, then
// execs the server. Neither parent, group nor session leads to the daemon;
// the launch's mark in its environment does: Kill escalates to it and
// reports success only once nothing with the mark is left (issue 19,
// item 3).
func TestKillSweepsTheLaunchMark(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	dir := t.TempDir()
	script := `( setsid sh -c 'trap "" TERM; sleep 401 & sleep 402 & wait' & ); exec sleep 403`
	r, err := Launch(ctx, h, Spec{Preset: "daemon", Argv: []string{"sh", "-c", script}, LogDir: dir, Workdir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !validMark(r.Mark) || r.Mark == "" {
		t.Fatalf("launch record mark %q", r.Mark)
	}
	t.Cleanup(func() {
		for _, p := range markedPIDs(r.Mark) {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	// The wrapper, the server (sleep 403), the daemon's shell and its two sleeps.
	waitFor(t, "the five marked processes", func() bool { return len(markedPIDs(r.Mark)) == 5 })
	f, err := Find(ctx, h, dir, 0, "")
	if err != nil || !f.Running || f.Target.Mark != r.Mark {
		t.Fatalf("find: %+v %v", f, err)
	}
	if len(f.Tree) != 5 {
		t.Errorf("the server's tree has %d processes, want the 5 marked ones: %+v", len(f.Tree), f.Tree)
	}
	res, err := Kill(ctx, h, f.Target, 500*time.Millisecond)
	if err != nil {
		t.Fatalf("kill: %v", err)
	}
	if left := markedPIDs(r.Mark); len(left) > 0 {
		t.Fatalf("kill reported success with marked processes alive: %v", left)
	}
	if len(res.Escalated) != 3 {
		t.Errorf("escalated %v, want the daemon's shell and its two sleeps", res.Escalated)
	}
}
