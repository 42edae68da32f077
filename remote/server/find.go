package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// How a server was found.
const (
	ByPidfile = "pidfile" // launched by flightdeck: the pidfile's process is alive
	ByPort    = "port"    // the process listening on the server port
	ByProcess = "process" // a command line that looks like an inference server
)

// DefaultMatch is the extended regular expression Find uses to recognise
// an inference server by its NUL-separated command line: SGLang's launcher
// and its scheduler processes, vLLM's CLI, entry points and workers, and
// the simulated server.
const DefaultMatch = `sglang\.launch_server|sglang::|vllm\.entrypoints|(^|/|[^[:print:]])vllm[^[:print:]]serve([^[:print:]]|$)|VLLM::|flightdeck[^[:print:]]sim[^[:print:]]server`

// Find looks for the inference server on h: first the pidfile in logDir
// (its process alive with the recorded start time), then the process
// listening on port (0 skips), then a process whose command line matches
// match ("" skips; DefaultMatch is a good value) and whose --port argument
// is port — one still loading, not yet listening. A server found by port
// or command line was launched by hand or by another tool; Kill works on
// it all the same. Servers on other ports are never taken for this one.
//
// Errors: remote.ErrDisconnected wrapped when the connection dropped, or
// the script's failure. Finding nothing is not an error: Running is false.
func Find(ctx context.Context, h remote.Host, logDir string, port int, match string) (event.ServerFound, error) {
	f := event.ServerFound{Exit: -1}
	if logDir == "" {
		logDir = DefaultLogDir
	}
	if err := Resolve(ctx, h, &logDir); err != nil {
		return f, err
	}
	cmd, err := remote.Command("sh", "-s", "--", path.Join(logDir, PidfileName), path.Join(logDir, exitFileName), strconv.Itoa(port), match)
	if err != nil {
		return f, err
	}
	res, err := h.Run(ctx, cmd, strings.NewReader(findScript))
	if err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) {
			return f, fmt.Errorf("find the server on %s: %s", h.Name(), stderrOr(ee, err))
		}
		return f, fmt.Errorf("find the server on %s: %w", h.Name(), err)
	}
	return parseFind(res.Stdout, port), nil
}

// parseFind interprets findScript's output for a server wanted on port.
func parseFind(out []byte, port int) event.ServerFound {
	f := event.ServerFound{Exit: -1}
	var (
		listen, match []int
		procs         = map[int]event.Process{}
		self          = map[int]bool{} // the script and its ancestors
		cmdlines      = map[int][]string{}
		script        int
		exitPID       = -1
		exitCode      = -1
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "pidfile":
			r, err := parseRecord([]byte(rest))
			if err != nil {
				f.PidfileErr = err
				continue
			}
			f.Record = &r
		case "exit":
			p, c, _ := strings.Cut(rest, " ")
			if pid, err := strconv.Atoi(p); err == nil {
				if code, err := strconv.Atoi(c); err == nil {
					exitPID, exitCode = pid, code
				}
			}
		case "tree":
			if p, ok := parseProc(rest); ok {
				f.Tree = append(f.Tree, p)
			}
		case "listen", "match":
			if pid, err := strconv.Atoi(rest); err == nil {
				if kind == "listen" {
					listen = append(listen, pid)
				} else {
					match = append(match, pid)
				}
			}
		case "proc":
			if p, ok := parseProc(rest); ok {
				procs[p.PID] = p
			}
		case "cmdline":
			p, args, _ := strings.Cut(rest, " ")
			if pid, err := strconv.Atoi(p); err == nil {
				cmdlines[pid] = strings.Split(strings.TrimSuffix(args, "\x1f"), "\x1f")
			}
		case "script":
			script, _ = strconv.Atoi(rest)
		case "self":
			if pid, err := strconv.Atoi(rest); err == nil {
				self[pid] = true
			}
		}
	}
	if f.Record != nil && exitPID == f.Record.PID {
		f.Exit = exitCode
	}
	if f.Record != nil && len(f.Tree) > 0 {
		r := f.Record
		f.Running, f.How = true, ByPidfile
		f.Target = event.KillTarget{PID: r.PID, StartTime: r.StartTime, PGID: leads(r.PGID, r.PID), SID: leads(r.SID, r.PID), Keep: f.Tree, Mark: r.Mark}
		f.ServerPID = r.PID
		for _, p := range f.Tree {
			if p.PPID == r.PID {
				f.ServerPID = p.PID
				break
			}
		}
		return f
	}
	f.Tree = nil
	// Adoption: the listener first, then command-line matches whose parent
	// is not itself a match (the launcher, not each of its workers), never
	// this script or its children.
	// The listeners (never this script's own chain: the cockpit itself may
	// listen there on a local host, or the SSH daemon serving it), less
	// those whose parent listens too (one server's IPv4 and IPv6 sockets,
	// forked workers). Two unrelated ones: no guess.
	var roots []event.Process
	listening := map[int]bool{}
	for _, pid := range listen {
		if _, ok := procs[pid]; ok && !self[pid] {
			listening[pid] = true
		}
	}
	var listeners []event.Process
	for _, pid := range listen {
		if p := procs[pid]; listening[pid] && !listening[p.PPID] && !slices.ContainsFunc(listeners, func(q event.Process) bool { return q.PID == pid }) {
			listeners = append(listeners, p)
		}
	}
	switch {
	case len(listeners) == 1:
		roots, f.How = listeners, ByPort
	case len(listeners) > 1:
		f.Others = listeners
		return f
	}
	// Shells are never the server: a `bash -c "python3 -m sglang…"` wrapper
	// (or our own scripts, whose arguments hold the pattern) matches, the
	// server is its child.
	matched := map[int]bool{}
	for _, pid := range match {
		if p, ok := procs[pid]; ok && !self[pid] && p.PPID != script && !isShell(p.Comm) {
			matched[pid] = true
		}
	}
	// Only a server that says it serves the wanted port (--port N) is
	// taken for ours: on a shared host, another team's server on another
	// port looks just like it. Several such servers: no guess.
	if len(roots) == 0 && port > 0 {
		var cands []event.Process
		for _, pid := range match {
			p := procs[pid]
			if matched[pid] && !matched[p.PPID] && portArg(cmdlines[pid]) == port {
				cands = append(cands, p)
			}
		}
		switch {
		case len(cands) == 1:
			roots, f.How = cands, ByProcess
		case len(cands) > 1:
			f.Others = cands
		}
	}
	if len(roots) == 0 {
		f.How = ""
		return f
	}
	root := roots[0]
	f.Running, f.ServerPID = true, root.PID
	f.Target = event.KillTarget{PID: root.PID, StartTime: root.StartTime, PGID: leads(root.PGID, root.PID), SID: leads(root.SID, root.PID)}
	f.Tree = []event.Process{root}
	f.Port = port
	return f
}

// leads returns id when the root pid leads it (group or session), else 0:
// signalling the group or session of a server started from an interactive
// shell would also hit that shell.
func leads(id, pid int) int {
	if id == pid {
		return id
	}
	return 0
}

// parseProc reads "pid ppid pgid sid state starttime comm".
func parseProc(s string) (event.Process, bool) {
	f := strings.Fields(s)
	if len(f) < 7 {
		return event.Process{}, false
	}
	var p event.Process
	var err error
	ints := []*int{&p.PID, &p.PPID, &p.PGID, &p.SID}
	for i, dst := range ints {
		if *dst, err = strconv.Atoi(f[i]); err != nil {
			return event.Process{}, false
		}
	}
	if p.StartTime, err = strconv.ParseUint(f[5], 10, 64); err != nil || p.PID <= 0 {
		return event.Process{}, false
	}
	p.State, p.Comm = f[4], strings.Join(f[6:], " ")
	return p, true
}

// keepWord is p as the kill script's keep list names it: "PID:STARTTIME".
func keepWord(p event.Process) string {
	return strconv.Itoa(p.PID) + ":" + strconv.FormatUint(p.StartTime, 10)
}

// isShell reports whether comm is a POSIX shell's name.
func isShell(comm string) bool {
	switch comm {
	case "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox", "fish":
		return true
	}
	return false
}

// portArg is the value of a --port flag in a server's arguments
// ("--port 30000" or "--port=30000"), 0 when there is none.
func portArg(args []string) int {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--port=")
		if !ok && a == "--port" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			if p, err := strconv.Atoi(v); err == nil && p > 0 && p <= 65535 {
				return p
			}
		}
	}
	return 0
}
