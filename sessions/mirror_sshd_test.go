package sessions

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
)

// TestMirrorOverSSHDExactlyOnceAfterAFrozenPeer: the sshd serving the
// mirror's connection is frozen (SIGSTOP) while lines are sent to it; the
// keepalive gives the connection up, the mirror resynchronises over a new
// one and goes on; then the frozen sshd is continued and hands the old
// `cat >>` what it held. The file on the host must still be the local
// journal exactly: no line twice, none out of order.
func TestMirrorOverSSHDExactlyOnceAfterAFrozenPeer(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	host, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile: os.DevNull, IdentityFiles: []string{srv.ClientKeyPath()}, KnownHostsFiles: []string{known}, NoAgent: true,
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond,
		KeepaliveInterval: 250 * time.Millisecond, KeepaliveCountMax: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()

	dir := t.TempDir()
	local := filepath.Join(dir, "local.jsonl")
	dst := filepath.Join(dir, "host", "m.jsonl") // sshd runs commands on this machine
	n := 0
	add := func(k int) {
		var b strings.Builder
		for range k {
			fmt.Fprintf(&b, "[%d,\"log-lines\",{\"i\":%d,\"pad\":%q}]\n", n, n, strings.Repeat("x", n%40))
			n++
		}
		appendFile(t, local, b.String())
	}
	add(100)
	var syncs atomic.Int32
	hooks, stop := mirrorRunCounting(t, &Mirror{Host: host, Local: local, Remote: dst, Every: 10 * time.Millisecond}, &syncs)
	waitContent(t, dst, readString(t, local))

	old := appendingTo(t, dst)
	frozen := sshdAbove(t, old)
	for _, p := range frozen {
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			for _, p := range frozen {
				_ = syscall.Kill(p, syscall.SIGCONT)
			}
		}
	}
	defer thaw()
	before := syncs.Load()
	// Lines sent while the peer is frozen: they wait in its socket.
	for range 5 {
		add(20)
		waitPolls(t, hooks, 2)
	}
	deadline := time.Now().Add(15 * time.Second)
	for syncs.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("no resynchronisation after the peer froze")
		}
		time.Sleep(20 * time.Millisecond)
	}
	add(50)
	waitContent(t, dst, readString(t, local))

	// The frozen sshd wakes: whatever it held must not reach the file.
	thaw()
	waitGoneOrZombie(old, 5*time.Second)
	add(50)
	want := readString(t, local)
	deadline = time.Now().Add(10 * time.Second)
	for fileLen(t, dst) < len(want) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // anything more would land now
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got := readString(t, dst)
	if got != want {
		t.Fatalf("the mirror on the host is not the local journal: %s", lineDiff(want, got))
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lineDiff says where got first departs from want, line by line, and how
// many lines each holds and got holds twice.
func lineDiff(want, got string) string {
	w, g := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	seen := map[string]bool{}
	dups := 0
	for _, l := range g {
		if l != "" && seen[l] {
			dups++
		}
		seen[l] = true
	}
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	at := func(ls []string, i int) string {
		if i < len(ls) {
			return strconv.Quote(ls[i])
		}
		return "the end"
	}
	return fmt.Sprintf("%d lines, want %d; %d duplicated; line %d is %s, want %s", len(g)-1, len(w)-1, dups, i+1, at(g, i), at(w, i))
}

// appendingTo returns the pid of the live process whose stdout is path
// (the mirror's remote `cat >>`).
func appendingTo(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if l, err := os.Readlink("/proc/" + e.Name() + "/fd/1"); err == nil && l == path && procState(pid) != "Z" {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process appends to %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sshdAbove returns the sshd processes serving pid's connection: its
// sshd ancestors below the listener (sshd -D), which must keep accepting.
func sshdAbove(t *testing.T, pid int) []int {
	t.Helper()
	var procs []int
	for p := procField(pid, 1); p > 1; p = procField(p, 1) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm")
		if !strings.HasPrefix(string(comm), "sshd") {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if bytes.Contains(cmdline, []byte("-D")) {
			break
		}
		procs = append(procs, p)
	}
	if len(procs) == 0 {
		t.Fatalf("no sshd session process above %d", pid)
	}
	return procs
}

// procState is a process's state letter ("" when it is gone).
func procState(pid int) string {
	f := procFields(pid)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// procField returns field i (0 is the state, 1 the parent pid) after the
// command name of /proc/PID/stat as a number; 0 when it cannot.
func procField(pid, i int) int {
	f := procFields(pid)
	if len(f) <= i {
		return 0
	}
	n, _ := strconv.Atoi(f[i])
	return n
}

func procFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// waitGoneOrZombie waits up to d for pid to exit.
func waitGoneOrZombie(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if s := procState(pid); s == "" || s == "Z" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
