package driver

// The figure for issue 20: processes the lock starts on the host in 60 s
// at steady state with the default heartbeat, for the three paths side by
// side. Run it by hand (a minute):
//
//	FLIGHTDECK_MEASURE_LOCK=1 go test -run TestLockHostProcessesPerMinute -v ./remote/driver/

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Run of a traced host runs the command under strace too.
func (h *traced) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	out := filepath.Join(h.dir, "run-"+time.Now().Format("150405.000000000"))
	wrapped, err := h.wrap(cmd, out)
	if err != nil {
		return remote.Result{}, err
	}
	return h.counting.Run(ctx, wrapped, stdin)
}

func TestLockHostProcessesPerMinute(t *testing.T) {
	if os.Getenv("FLIGHTDECK_MEASURE_LOCK") == "" {
		t.Skip("a one-minute measurement: set FLIGHTDECK_MEASURE_LOCK=1")
	}
	rig := newSSHRig(t)
	const window = time.Minute
	for _, path := range []string{"agent", "loop", "script"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			dir, traces := t.TempDir(), t.TempDir()
			hosts := [2]*traced{}
			locks := [2]*Lock{}
			for i, me := range []event.DriverInfo{alice, bob} {
				// The agent's command line is a compound one (the launcher's).
				hosts[i] = &traced{counting: rig.dial(t), dir: filepath.Join(traces, me.User), simple: path != "agent"}
				os.Mkdir(hosts[i].dir, 0o700)
				var ag remote.Agent
				switch path {
				case "agent":
					ag = newTestAgent(t)
				case "loop":
					ag = noAgent(t)
				}
				locks[i] = &Lock{Host: hosts[i], Dir: dir, Me: me, Agent: ag}
			}
			mustAcquire(t, locks[0], false, event.RoleDriving)
			mustAcquire(t, locks[1], false, event.RoleWatching)
			runLock(t, locks[0])
			runLock(t, locks[1])
			time.Sleep(2 * DefaultHeartbeat) // steady state
			before := [2]map[string]int{}
			for i, h := range hosts {
				before[i] = traceFiles(h.dir)
			}
			n0, n1 := hosts[0].sessions(), hosts[1].sessions()
			time.Sleep(window)
			for i, h := range hosts {
				sessions := h.sessions() - []int{n0, n1}[i]
				procs := 0
				for f, forks := range traceFiles(h.dir) {
					if was, ok := before[i][f]; ok {
						procs += forks - was // a long-lived stream, started before the window
					} else {
						procs += forks + 1 // a new session's command and its children
					}
				}
				role := []string{"driving", "watching"}[i]
				t.Logf("%s path, %s: %d SSH sessions and %d processes on the host in %v (heartbeat %v)", path, role, sessions, procs, window, DefaultHeartbeat)
				if path != "script" && (sessions != 0 || procs != 0) {
					t.Errorf("%s path, %s: %d sessions, %d processes in %v, want 0", path, role, sessions, procs, window)
				}
			}
		})
	}
}

// traceFiles is the trace files in dir now, with the processes each
// shows started so far.
func traceFiles(dir string) map[string]int {
	m := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		m[f], _ = children(string(b))
	}
	return m
}
