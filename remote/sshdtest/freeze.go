package sshdtest

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Freeze stops (SIGSTOP) the sshd processes that serve the connections
// open now, as a host that hangs: those TCP connections stay open and go
// silent, while the listener still serves new connections and the
// commands the frozen sessions run keep running. It returns thaw, which
// resumes them (SIGCONT); the test's end thaws them too. It fails the
// test when no connection is open.
func (s *Server) Freeze() (thaw func()) {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		s.t.Fatal("sshdtest: Freeze: sshd is not running")
	}
	var pids []int
	for _, pid := range descendants(cmd.Process.Pid) {
		if sshdProcess(pid) {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		s.t.Fatal("sshdtest: Freeze: no connection open")
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			s.t.Fatalf("sshdtest: Freeze: SIGSTOP %d: %v", pid, err)
		}
	}
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		})
	}
	s.t.Cleanup(thaw)
	return thaw
}

// sshdProcess reports whether pid runs sshd (a connection's monitor or
// session process: "sshd", or "sshd-session" and "sshd-auth" since OpenSSH
// 9.8), not a command it started.
func sshdProcess(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return false
	}
	switch strings.TrimSpace(string(b)) {
	case "sshd", "sshd-session", "sshd-auth":
		return true
	}
	return false
}
