package hostwatch

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ServerSpec says which server to fingerprint: Find's arguments
// (remote/server.Find), resolved on the cockpit's side.
type ServerSpec struct {
	// Pidfile and ExitFile are the launch's files in the log directory
	// (server.PidfileName, the exit file), absolute or "~/" paths.
	Pidfile, ExitFile string
	// Port is the server's TCP port; 0 skips the listener.
	Port int
	// Match is the extended regular expression of a server's NUL-separated
	// command line (server.DefaultMatch); "" skips the command lines.
	Match string
}

// ServerPrint fingerprints what remote/server.Find's script reads, from
// small reads of /proc and the log directory:
//
//   - the pidfile's and the exit file's contents;
//   - whether the pidfile's process is alive with its recorded start time
//     (and not a zombie), and its children (/proc/PID/task/PID/children):
//     the server the wrapper runs;
//   - the socket inodes listening on Port (through sock_diag; else
//     /proc/net/tcp, tcp6);
//   - the processes whose command line matches Match and whose --port
//     argument is Port (Find takes no other; with Port 0 it matches none),
//     less shells, this process and any process that has Match itself as
//     an argument (Find's own script and grep, which would otherwise make
//     each Find trigger the next). A process's command line is read when it is first seen and for
//     youngReads intervals after (a fork execs its program just after),
//     then every fullReads intervals: /proc is listed every interval, the
//     command lines of old processes are read every 30 s only, so a
//     long-lived process that execs the server is seen within 30 s.
//
// What it does not follow: the members of the pidfile's process group and
// session once its root has exited as a zombie (the wrapper is reaped at
// once in practice), and the launch's marked processes (they count only
// while the root lives, when the server is running anyway). Not safe for
// concurrent use.
type ServerPrint struct {
	spec  ServerSpec
	re    *regexp.Regexp // nil: no Match
	self  int
	tick  int
	procs map[int]*procSeen
	names []string // scratch for /proc's listing
}

// procSeen is what ServerPrint keeps of a process.
type procSeen struct {
	first   int  // the tick it was first seen
	matched bool // its command line matched (when last read)
	tick    int  // the tick it was last listed
}

// youngReads is how many intervals a new process's command line is read
// again; every fullReads intervals every command line is read again (a
// script that execs the server after a while keeps its pid).
const (
	youngReads = 3
	fullReads  = 30
)

// serverState is one fingerprint.
type serverState struct {
	pidfile, exit, root, children, listen, match string
}

// NewServerPrint prepares a fingerprint of spec's server. Errors: Match
// that Go's regexp cannot compile.
func NewServerPrint(spec ServerSpec) (*ServerPrint, error) {
	s := &ServerPrint{spec: spec, self: os.Getpid(), procs: map[int]*procSeen{}}
	s.spec.Pidfile, s.spec.ExitFile = expandHome(spec.Pidfile), expandHome(spec.ExitFile)
	if spec.Match != "" {
		re, err := regexp.Compile(spec.Match)
		if err != nil {
			return nil, fmt.Errorf("server command-line pattern %q: %w", spec.Match, err)
		}
		s.re = re
	}
	return s, nil
}

var pidfileRe = regexp.MustCompile(`^\{"pid":([0-9]+),"pgid":[0-9]+,"sid":[0-9]+,"start_time":([0-9]+),`)

func (s *ServerPrint) read() serverState {
	s.tick++
	var st serverState
	pf, err := readSmall(s.spec.Pidfile, 64<<10)
	if err != nil {
		st.pidfile = "-"
	} else {
		st.pidfile = string(pf)
	}
	if ex, err := readSmall(s.spec.ExitFile, 64); err == nil {
		st.exit = string(ex)
	}
	if m := pidfileRe.FindSubmatch(pf); m != nil {
		pid, _ := strconv.Atoi(string(m[1]))
		st.root = "gone"
		if state, start, ok := procStat(pid); ok && start == string(m[2]) && state != "Z" && state != "X" {
			st.root = "alive"
			ch, _ := readSmall(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid), 64<<10)
			st.children = string(ch)
		}
	}
	if s.spec.Port > 0 {
		st.listen = listenInodes(s.spec.Port)
	}
	if s.re != nil && s.spec.Port > 0 { // Find matches command lines only for a port
		st.match = s.matches()
	}
	return st
}

func (a serverState) diff(b serverState) string {
	var why []string
	for _, f := range []struct {
		differs bool
		name    string
	}{
		{a.pidfile != b.pidfile, "pidfile"}, {a.exit != b.exit, "exit"}, {a.root != b.root, "root"},
		{a.children != b.children, "children"}, {a.listen != b.listen, "listen"}, {a.match != b.match, "match"},
	} {
		if f.differs {
			why = append(why, f.name)
		}
	}
	return strings.Join(why, ",")
}

// procStat returns a process's state and start time (clock ticks since
// boot, as a decimal string) from /proc/PID/stat.
func procStat(pid int) (state, start string, ok bool) {
	b, err := readSmall(fmt.Sprintf("/proc/%d/stat", pid), 4096)
	if err != nil {
		return "", "", false
	}
	i := bytes.LastIndex(b, []byte(") "))
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 {
		return "", "", false
	}
	return f[0], f[19], true
}

// listenInodes lists the inodes of the TCP sockets listening on port, IPv4
// and IPv6, sorted ("" when none): through sock_diag (listenDiag), else
// from /proc/net/tcp and tcp6 (listenProc).
func listenInodes(port int) string {
	if s, err := listenDiag(port); err == nil {
		return s
	}
	return listenProc(port)
}

// listenProc is listenInodes from /proc/net/tcp and tcp6.
func listenProc(port int) string {
	want := fmt.Sprintf(":%04X", port)
	var inodes []string
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for line := range bytes.SplitSeq(b, []byte{'\n'}) {
			f := strings.Fields(string(line))
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "0A" || !strings.HasSuffix(f[1], want) {
				continue
			}
			inodes = append(inodes, f[9])
		}
	}
	slices.Sort(inodes)
	return strings.Join(slices.Compact(inodes), " ")
}

// matches lists the pids whose command line matches, sorted.
func (s *ServerPrint) matches() string {
	d, err := os.Open("/proc")
	if err != nil {
		return "error: " + err.Error()
	}
	s.names, err = d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return "error: " + err.Error()
	}
	var out []int
	for _, n := range s.names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == s.self {
			continue
		}
		p := s.procs[pid]
		if p == nil {
			p = &procSeen{first: s.tick}
			s.procs[pid] = p
		}
		p.tick = s.tick
		if s.tick-p.first <= youngReads || s.tick%fullReads == 0 {
			p.matched = s.cmdlineMatches(pid)
		}
		if p.matched {
			out = append(out, pid)
		}
	}
	for pid, p := range s.procs {
		if p.tick != s.tick {
			delete(s.procs, pid)
		}
	}
	slices.Sort(out)
	var b strings.Builder
	for _, pid := range out {
		b.WriteString(strconv.Itoa(pid))
		b.WriteByte(' ')
	}
	return b.String()
}

// cmdlineMatches reads pid's command line (its first 4 KiB, as Find does)
// and matches it.
func (s *ServerPrint) cmdlineMatches(pid int) bool {
	b, err := readSmall("/proc/"+strconv.Itoa(pid)+"/cmdline", 4096)
	if err != nil || len(b) == 0 || !s.re.Match(b) {
		return false
	}
	port, next := 0, false
	for arg := range bytes.SplitSeq(b, []byte{0}) {
		a := string(arg)
		if a == s.spec.Match {
			return false // Find's script, its grep, a watcher: they carry the pattern
		}
		v, ok := strings.CutPrefix(a, "--port=")
		if next || ok {
			if !ok {
				v = a
			}
			if p, err := strconv.Atoi(v); err == nil && port == 0 {
				port = p
			}
		}
		next = a == "--port"
	}
	if port != s.spec.Port {
		return false // Find takes only a server that says it serves the port
	}
	comm, _ := readSmall("/proc/"+strconv.Itoa(pid)+"/comm", 64)
	return !isShell(strings.TrimSpace(string(comm)))
}

// isShell reports whether comm is a POSIX shell's name (as remote/server
// does: a `bash -c "python3 -m sglang…"` wrapper is never the server).
func isShell(comm string) bool {
	switch comm {
	case "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox", "fish":
		return true
	}
	return false
}
