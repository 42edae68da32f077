package hostwatch

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWatcherCPU measures (with FLIGHTDECK_WATCH_CPU=SECONDS) the CPU time
// the host-side watchers use at steady state, at 1 s intervals: the agent
// (this test binary running Run) and the shell watcher, each on the
// checkout at FLIGHTDECK_WATCH_REPO (default: this repository) and on a
// server (a port, DefaultMatch-like pattern). It logs the figures; it
// asserts only that they were measured.
func TestWatcherCPU(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("FLIGHTDECK_WATCH_CPU"))
	if secs <= 0 {
		t.Skip("set FLIGHTDECK_WATCH_CPU=SECONDS to measure")
	}
	repo := os.Getenv("FLIGHTDECK_WATCH_REPO")
	if repo == "" {
		repo, _ = filepath.Abs("../..")
	}
	logDir := t.TempDir()
	srv := &ServerSpec{Pidfile: filepath.Join(logDir, "p.json"), ExitFile: filepath.Join(logDir, "p.exit"), Port: 30000,
		Match: `sglang\.launch_server|sglang::|vllm\.entrypoints`}
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"checkout", Options{Repo: repo}},
		{"server", Options{Server: srv}},
	} {
		for _, via := range []string{"agent", "shell"} {
			var cmd *exec.Cmd
			if via == "agent" {
				js, err := json.Marshal(c.o)
				must(t, err)
				cmd = exec.Command(os.Args[0], string(js))
				cmd.Env = append(os.Environ(), "FLIGHTDECK_HOSTWATCH_CHILD=1")
			} else {
				line, err := ShellCommand(c.o)
				must(t, err)
				cmd = exec.Command("sh", "-c", "exec "+line)
			}
			must(t, cmd.Start())
			time.Sleep(3 * time.Second) // the start
			pid := cmd.Process.Pid      // the shell's sh execs bash: the same pid
			a := cpuTicks(t, pid)
			time.Sleep(time.Duration(secs) * time.Second)
			b := cpuTicks(t, pid)
			cmd.Process.Kill()
			cmd.Wait()
			t.Logf("%s, %s watcher: %d ms of CPU in %d s (%.2f %% of a core)", c.name, via, (b-a)*10, secs, float64(b-a)*10/float64(secs*1000)*100)
		}
	}
}

// cpuTicks is a process's utime+stime in clock ticks (100 a second).
func cpuTicks(t *testing.T, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	must(t, err)
	f := strings.Fields(string(b[strings.LastIndex(string(b), ") ")+2:]))
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}
