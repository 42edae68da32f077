package strace

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Trace is what a strace output file says: every process seen.
type Trace struct {
	procs   map[int]*Process // by pid (thread group id): the live one of that pid
	tgid    map[int]int      // thread id → its thread group's pid
	pending map[int]string   // per task: the first part of an unfinished call
	all     []*Process       // every process, in the order first seen
}

// ParseFile reads the strace output file at path (see Parse).
func ParseFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads strace output written with Args (one file, -f, -ttt). A last
// line without its newline (strace is still writing it) is left out.
// Lines of other system calls and signal lines ("--- SIGCHLD ... ---") are
// skipped. Errors: a line that does not start with a pid and a time, with
// its line number.
func Parse(r io.Reader) (*Trace, error) {
	t := &Trace{procs: map[int]*Process{}, tgid: map[int]int{}, pending: map[int]string{}}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			return t, nil // a partial last line is still being written
		}
		if err != nil {
			return nil, err
		}
		if err := t.line(strings.TrimSuffix(line, "\n")); err != nil {
			return nil, fmt.Errorf("strace output line %d: %w", n, err)
		}
	}
}

// line reads one line: "PID SECONDS.MICROS REST".
func (t *Trace) line(s string) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	pidStr, rest, ok1 := strings.Cut(s, " ")
	rest = strings.TrimLeft(rest, " ")
	timeStr, rest, ok2 := strings.Cut(rest, " ")
	pid, err := strconv.Atoi(pidStr)
	if !ok1 || !ok2 || err != nil || pid <= 0 {
		return fmt.Errorf("want \"PID SECONDS.MICROS syscall(...)\" (strace -f -ttt), got %q", clip(s))
	}
	at, err := parseTime(timeStr)
	if err != nil {
		return fmt.Errorf("%w in %q", err, clip(s))
	}
	p := t.task(pid, at)
	switch {
	case strings.HasPrefix(rest, "+++ "):
		t.exit(pid, p, at, strings.TrimSuffix(strings.TrimPrefix(rest, "+++ "), " +++"))
		return nil
	case strings.HasPrefix(rest, "--- "):
		return nil // a signal
	case strings.HasPrefix(rest, "<... "):
		name, tail, ok := strings.Cut(strings.TrimPrefix(rest, "<... "), " resumed>")
		if !ok {
			return fmt.Errorf("malformed resumed call %q", clip(s))
		}
		first, had := t.pending[pid]
		delete(t.pending, pid)
		if !had || !strings.HasPrefix(first, name+"(") {
			return nil // its start was before the trace began (or another call's): nothing to join
		}
		rest = first + tail
	case strings.HasSuffix(rest, " <unfinished ...>"):
		t.pending[pid] = strings.TrimSuffix(rest, " <unfinished ...>")
		return nil
	}
	t.call(pid, p, at, rest)
	return nil
}

// task returns the process that thread id belongs to, creating it (first
// seen at at) when new, or when the pid's last process has exited (the pid
// was reused).
func (t *Trace) task(tid int, at time.Time) *Process {
	pid, ok := t.tgid[tid]
	if !ok {
		pid = tid
		t.tgid[tid] = tid
	}
	p := t.procs[pid]
	if p == nil || p.Exit != "" {
		if p != nil {
			pid = tid
			t.tgid[tid] = tid
		}
		p = &Process{PID: pid, Start: at}
		t.procs[pid] = p
		t.all = append(t.all, p)
	}
	if at.Before(p.Start) {
		p.Start = at
	}
	return p
}

// exit records "+++ exited with N +++" and the like; a thread's exit is
// not its process's.
func (t *Trace) exit(tid int, p *Process, at time.Time, what string) {
	if tid != p.PID {
		return
	}
	if strings.HasPrefix(what, "superseded by execve") {
		return // a thread that exec'd took over the process: it goes on
	}
	p.Exit, p.End = what, at
}

// call reads a complete system call "name(args) = ret ...".
func (t *Trace) call(tid int, p *Process, at time.Time, s string) {
	name, args, ok := strings.Cut(s, "(")
	if !ok {
		return
	}
	ret := retval(args)
	switch name {
	case "execve", "execveat":
		if ret != "0" {
			return // a failed exec (a PATH search): nothing started
		}
		e, ok := parseExecve(args, name == "execveat")
		if !ok {
			return
		}
		e.Time = at
		p.Execs = append(p.Execs, e)
	case "clone", "clone3", "fork", "vfork":
		child, err := strconv.Atoi(ret)
		if err != nil || child <= 0 {
			return // failed, or "? ERESTARTNOINTR": it will be called again
		}
		flags := args
		if i := strings.Index(args, "flags="); i >= 0 {
			flags = args[i+len("flags="):]
			if j := strings.IndexAny(flags, ",}) "); j >= 0 {
				flags = flags[:j]
			}
		} else {
			flags = ""
		}
		if hasFlag(flags, "CLONE_THREAD") {
			if _, seen := t.tgid[child]; !seen {
				t.tgid[child] = p.PID
			} else if t.tgid[child] == child && child != p.PID {
				// The thread's own lines came first and made it a
				// process: fold it into its group.
				t.fold(child, p)
			}
			return
		}
		if c := t.procs[child]; c != nil && !c.Forked && c.Parent == 0 && len(t.all) > 0 && c != t.all[0] {
			// The child's own lines, even its exit, came before its
			// fork returned in the parent (strace logs a call when it
			// completes; a short-lived subshell can end first): the
			// same process, not a reused pid.
			c.Parent, c.Forked = p.PID, true
			return
		}
		c := t.task(child, at)
		c.Parent, c.Forked = p.PID, true
	}
}

// fold merges the record made for a thread seen before its clone returned
// into its process.
func (t *Trace) fold(tid int, into *Process) {
	th := t.procs[tid]
	delete(t.procs, tid)
	t.tgid[tid] = into.PID
	for i, p := range t.all {
		if p == th {
			t.all = append(t.all[:i], t.all[i+1:]...)
			break
		}
	}
	if th != nil {
		into.Execs = append(into.Execs, th.Execs...)
		sort.SliceStable(into.Execs, func(i, j int) bool { return into.Execs[i].Time.Before(into.Execs[j].Time) })
	}
}

// hasFlag reports whether the "A|B|C" set holds f.
func hasFlag(set, f string) bool {
	for _, x := range strings.Split(set, "|") {
		if x == f {
			return true
		}
	}
	return false
}

// retval is what follows the last ") = " of a call: "0", "12345", "-1", "?".
func retval(args string) string {
	i := strings.LastIndex(args, ") = ")
	if i < 0 {
		return ""
	}
	r := args[i+len(") = "):]
	if j := strings.IndexByte(r, ' '); j >= 0 {
		r = r[:j]
	}
	return r
}

// parseExecve reads execve's arguments: "PATH", [ARGV...], ENVP.
// execveat's start with a directory fd.
func parseExecve(args string, at bool) (Exec, bool) {
	s := args
	if at {
		_, after, ok := strings.Cut(s, ", ")
		if !ok {
			return Exec{}, false
		}
		s = after
	}
	path, n, trunc, ok := cString(s)
	if !ok {
		return Exec{}, false
	}
	e := Exec{Path: path, Truncated: trunc}
	s = strings.TrimPrefix(s[n:], ", ")
	if !strings.HasPrefix(s, "[") {
		return e, true // NULL or an unreadable pointer: no argv
	}
	s = s[1:]
	for {
		s = strings.TrimPrefix(s, ", ")
		switch {
		case strings.HasPrefix(s, "]"):
			return e, true
		case strings.HasPrefix(s, "..."):
			e.Truncated = true
			return e, true
		}
		a, n, trunc, ok := cString(s)
		if !ok {
			e.Truncated = true
			return e, true
		}
		e.Argv = append(e.Argv, a)
		e.Truncated = e.Truncated || trunc
		s = s[n:]
	}
}

// cString reads the C string strace printed at the start of s ("...",
// with \" \\ \n \t \r \v \f \a \b \e, \xNN and octal \NNN escapes, and
// "..." after the closing quote when cut): its value, the bytes it took,
// whether it was cut.
func cString(s string) (string, int, bool, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", 0, false, false
	}
	var b bytes.Buffer
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			n := i + 1
			if strings.HasPrefix(s[n:], "...") {
				return b.String(), n + 3, true, true
			}
			return b.String(), n, false, true
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", 0, false, false
		}
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e':
			b.WriteByte(0x1b)
		case 'x':
			if i+2 >= len(s) {
				return "", 0, false, false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", 0, false, false
			}
			b.WriteByte(byte(v))
			i += 2
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, err := strconv.ParseUint(s[i:j], 8, 16)
			if err != nil || v > 0xff {
				return "", 0, false, false
			}
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte(c) // \" \\ and any other
		}
	}
	return "", 0, false, false // no closing quote
}

// parseTime reads -ttt's "SECONDS.MICROS".
func parseTime(s string) (time.Time, error) {
	sec, frac, ok := strings.Cut(s, ".")
	secs, err1 := strconv.ParseInt(sec, 10, 64)
	if !ok || err1 != nil || secs < 0 || len(frac) == 0 || len(frac) > 9 || frac[0] == '-' || frac[0] == '+' {
		return time.Time{}, fmt.Errorf("time %q is not SECONDS.MICROS (strace -ttt)", clip(s))
	}
	ns, err := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is not SECONDS.MICROS (strace -ttt)", clip(s))
	}
	return time.Unix(secs, ns), nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
