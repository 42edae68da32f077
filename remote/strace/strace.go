// Package strace accounts for the processes a traced process tree starts:
// it builds strace(1)'s command line (follow forks, trace only execve and
// the fork family, microsecond wall-clock times, one output file) and
// reads that output into one record per process — its pid, parent, start
// time, the programs it executed with their argv, and how it ended — so
// that a test can count what a tree started in a time window and say
// which commands those were.
//
// The output format read is strace's own (strace 5 and 6, `-f -ttt -o
// FILE`): "PID SECONDS.MICROS syscall(args) = ret", a call split by a
// context switch into "... <unfinished ...>" and "<... NAME resumed>...",
// "+++ exited with N +++", "+++ killed by SIG +++". Only complete lines
// are read: a file that strace is still writing can be parsed at any time.
package strace

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// Syscalls are the system calls traced: execve (a program started) and
// the calls that create a process or a thread (clone, clone3, fork,
// vfork), which tell a process from a thread and give each its parent.
const Syscalls = "execve,clone,clone3,fork,vfork"

// MaxString is strace's -s: how many bytes of each string and how many
// elements of each argv are printed; longer ones are marked truncated.
const MaxString = 4096

// ErrNotInstalled is returned by Path when strace cannot be found.
var ErrNotInstalled = errors.New("strace is not installed (apt-get install strace)")

// Path returns the strace executable: /usr/bin/strace, else the one on
// PATH; ErrNotInstalled (wrapped) when there is none.
func Path() (string, error) {
	const std = "/usr/bin/strace"
	if fi, err := os.Stat(std); err == nil && fi.Mode().IsRegular() {
		return std, nil
	}
	p, err := exec.LookPath("strace")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	return p, nil
}

// Args returns strace's options that trace a command (placed before it,
// after "--") into the file out: follow forks (-f), quiet about attaching
// (-q, so exits are still reported), wall-clock times as seconds since the
// epoch with microseconds (-ttt, the clock of time.Now), strings and argv
// up to MaxString, only Syscalls, and --seccomp-bpf so that the tracees
// stop only at those calls (a traced sshd or agent runs at full speed
// otherwise).
func Args(out string) []string {
	return []string{"-f", "-q", "-ttt", "-s", fmt.Sprint(MaxString), "--seccomp-bpf",
		"-e", "trace=" + Syscalls, "-o", out}
}

// Command returns the argv that runs cmd under strace (the program at
// strace) writing to out: strace, Args(out), "--", cmd....
func Command(strace, out string, cmd ...string) []string {
	argv := append([]string{strace}, Args(out)...)
	argv = append(argv, "--")
	return append(argv, cmd...)
}

// Exec is one successful execve.
type Exec struct {
	Time time.Time
	Path string   // the file executed (execve's first argument)
	Argv []string // its argv as strace printed it
	// Truncated says strace cut a string or the list (longer than
	// MaxString).
	Truncated bool
}

// Process is one process (a thread group) of the trace.
type Process struct {
	PID int
	// Parent is the pid of the process that forked it; 0 for the traced
	// command itself (or a process whose fork was not seen).
	Parent int
	// Start is when it was first seen: the earlier of its fork's return
	// in the parent and its own first line.
	Start time.Time
	// Forked says its fork (clone, clone3, fork or vfork) was seen.
	Forked bool
	// Execs are its successful execve calls, in order (a shell's `exec`
	// adds one to the same process).
	Execs []Exec
	// Exit is how it ended, as strace says it ("exited with 0", "killed
	// by SIGKILL"); "" while it runs (or when the trace ended first).
	Exit string
	// End is the time of Exit.
	End time.Time
}

// Argv is the argv of its last execve; nil for a process that only forked
// (a subshell).
func (p *Process) Argv() []string {
	if len(p.Execs) == 0 {
		return nil
	}
	return p.Execs[len(p.Execs)-1].Argv
}
