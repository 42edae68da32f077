package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/hostwatch"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// countingHost counts the commands run on the host (one SSH session each)
// and the long-lived ones started.
type countingHost struct {
	remote.Host
	runs, starts atomic.Int32
}

func (h *countingHost) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	h.runs.Add(1)
	return h.Host.Run(ctx, cmd, stdin)
}

func (h *countingHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	h.starts.Add(1)
	return h.Host.Start(ctx, cmd)
}

// watchAgent is a remote.Agent whose `agent watch` is this test binary
// running hostwatch.Run at interval, with the arguments' checkout or
// server (see TestMain); none with noAgent.
type watchAgent struct {
	interval time.Duration
	noAgent  bool
}

func (a *watchAgent) AgentCommand(ctx context.Context, args ...string) (string, error) {
	if a.noAgent {
		return "", fmt.Errorf("%w: test", remote.ErrNoAgent)
	}
	o := hostwatch.Options{Interval: a.interval}
	var srv hostwatch.ServerSpec
	for i := 0; i < len(args); i++ {
		k, v, _ := strings.Cut(args[i], "=")
		switch k {
		case "--repo":
			o.Repo = v
		case "--pidfile":
			srv.Pidfile = v
		case "--exit-file":
			srv.ExitFile = v
		case "--match":
			srv.Match = v
		case "--port":
			i++
			srv.Port, _ = strconv.Atoi(args[i])
		}
	}
	if srv.Pidfile != "" {
		o.Server = &srv
	}
	js, _ := json.Marshal(o)
	cmd, err := remote.Command("env", "FLIGHTDECK_HOSTWATCH_CHILD=1", os.Args[0], string(js))
	return `printf '{"t":"launch","pid":%s}\n' "$$"; exec ` + cmd, err
}

// sleeper is this test binary sleeping a minute with args as its command
// line.
func sleeper(t *testing.T, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), "FLIGHTDECK_TEST_SLEEP=1")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// TestMonitorFindsOnTheWatchStream runs Live's server monitor over a real
// sshd, with the agent and then with the shell watcher: a server started
// by hand and killed, a pidfile written and removed each change
// ServerObserved within an interval or two of the host side; while nothing
// changes, no command is run on the host (no Find per interval).
func TestMonitorFindsOnTheWatchStream(t *testing.T) {
	ssh := dialTestSSHD(t)
	const iv = 200 * time.Millisecond
	for _, noAgent := range []bool{false, true} {
		t.Run(map[bool]string{false: "agent", true: "shell"}[noAgent], func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			logDir := t.TempDir()
			h := &countingHost{Host: ssh}
			ctl := &Control{Host: h, Config: config.Builtins(), Target: config.Host{Name: "t", LogDir: logDir, Workdir: logDir, Preset: "sim", Port: port}}
			rec := newRecorder()
			l := NewLive(LiveConfig{Host: h, Control: ctl, NoGPU: true}, rec.sink)
			l.agent = &watchAgent{interval: iv, noAgent: noAgent}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- l.Run(ctx) }()
			defer func() { cancel(); <-done }()

			observed := func(what string, want func(event.ServerFound) bool) event.ServerFound {
				t.Helper()
				var got event.ServerFound
				rec.waitFor(t, what, 5*time.Second, func(es []event.Event) bool {
					for i := len(es) - 1; i >= 0; i-- {
						if o, ok := es[i].Data.(event.ServerObserved); ok {
							got = o.Found
							return want(got)
						}
					}
					return false
				})
				return got
			}
			observed("nothing running", func(f event.ServerFound) bool { return !f.Running })
			time.Sleep(2 * time.Second) // the stream's start and its first Find
			runs := h.runs.Load()
			time.Sleep(3 * time.Second)
			if n := h.runs.Load() - runs; n != 0 {
				t.Errorf("%d commands in 3 s of steady state (15 host-side intervals), want 0", n)
			}

			// A server started by hand: its command line names the port.
			p := sleeper(t, "flightdeck", "sim", "server", "--port", strconv.Itoa(port))
			at := time.Now()
			f := observed("a server started by hand", func(f event.ServerFound) bool { return f.Running })
			if f.How != server.ByProcess || f.ServerPID != p.Process.Pid {
				t.Errorf("found %+v, want pid %d by process", f, p.Process.Pid)
			}
			if d := time.Since(at); d > iv+2*time.Second {
				t.Errorf("seen after %v", d)
			}
			p.Process.Kill()
			p.Wait()
			observed("the server killed", func(f event.ServerFound) bool { return !f.Running })

			// A pidfile naming a live process (the launch wrapper), then removed.
			root := sleeper(t)
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", root.Process.Pid))
			if err != nil {
				t.Fatal(err)
			}
			st := strings.Fields(string(b[strings.LastIndex(string(b), ") ")+2:]))[19]
			rec1 := fmt.Sprintf(`{"pid":%d,"pgid":%d,"sid":%d,"start_time":%s,"mark":"0123456789abcdef0123456789abcdef","launch":{"log_path":%q}}`+"\n",
				root.Process.Pid, root.Process.Pid, root.Process.Pid, st, filepath.Join(logDir, "x.log"))
			if err := os.WriteFile(filepath.Join(logDir, server.PidfileName), []byte(rec1), 0o600); err != nil {
				t.Fatal(err)
			}
			f = observed("the pidfile written", func(f event.ServerFound) bool { return f.Running && f.How == server.ByPidfile })
			if f.Record == nil || f.Record.PID != root.Process.Pid {
				t.Errorf("found %+v", f)
			}
			root.Process.Kill()
			root.Wait()
			observed("the pidfile's process killed", func(f event.ServerFound) bool { return !f.Running && f.Record != nil })
			os.Remove(filepath.Join(logDir, server.PidfileName))
			observed("the pidfile removed", func(f event.ServerFound) bool { return !f.Running && f.Record == nil })
		})
	}
}
