package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/remote/strace"
)

// Issue 20's quiet-host budget: the processes a cockpit may start on the
// GPU host during steadyWindow of steady state, beyond its long-lived
// streams.
const (
	steadyWindow = 60 * time.Second
	// agentBudget: with the agent on the host, everything watched rides
	// long-lived streams.
	agentBudget = 0
	// fallbackBudget: without the agent (--sampler nvidia-smi).
	fallbackBudget = 6
	// After the screen is complete (GPUs, tok/s, HEAD, the server
	// ready), the start-up's one-off reads (version probes, the
	// fingerprint, what changed since the last session) end before the
	// count starts: at least settleMin, then until the host has started
	// nothing for settleQuiet, or settleMax has passed (a host that never
	// goes quiet is counted as it is).
	settleMin   = 5 * time.Second
	settleQuiet = 5 * time.Second
	settleMax   = 30 * time.Second
)

// hostProcsCase is one sampling path of the steady-state count.
type hostProcsCase struct {
	name    string
	sampler string // --sampler
	budget  int
	header  string // what the header says about how GPUs are sampled
}

var hostProcsCases = []hostProcsCase{
	{"agent", "auto", agentBudget, "GPU agent"},
	{"nvidia-smi", "nvidia-smi", fallbackBudget, "GPU nvidia-smi"},
}

// TestHostProcessesAtSteadyStateOverSSHD counts, with strace on the host's
// sshd, the processes a cockpit (`flightdeck connect`, the real binary in
// tmux, the agent uploaded as in production) starts on a host with a
// running simulated server (its log growing, a git checkout, the driver
// lock held) during a minute of steady state: 0 on the agent path, at
// most 6 on the nvidia-smi path. The paths run in parallel (and beside
// the demo's); the failure lists every command started, grouped and
// counted. Steady state starts once the screen is complete and the
// start-up's one-off reads are over (steady).
func TestHostProcessesAtSteadyStateOverSSHD(t *testing.T) {
	t.Parallel() // with the demo's: the four counts take one window of wall time
	for _, c := range hostProcsCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.sampler == "auto" && !nvml.Compiled() {
				t.Skip("this build has no cgo: the agent cannot sample")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			h, err := sim.Start(ctx, sim.Options{NoSSH: true, StartupDelay: time.Second, Seed: 20})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if err := h.StartServer(ctx, nil); err != nil {
				t.Fatal(err)
			}
			// The host's agent samples the sim's fake NVML.
			srv := sshdtest.Start(t, sshdtest.Options{PathDirs: []string{h.BinDir}, Env: map[string]string{sim.EnvNVML: h.Dir}, Trace: true})
			known := filepath.Join(t.TempDir(), "known_hosts")
			srv.WriteKnownHosts(known)
			// The server's own port, as a user's config gives it: the
			// test host is shared with other tests' servers, started and
			// stopped while this one counts, and a cockpit watching the
			// default port 30000 is right to look again when one appears.
			conf := filepath.Join(t.TempDir(), "flightdeck.toml")
			if err := os.WriteFile(conf, fmt.Appendf(nil, "[defaults]\nport = %d\n", h.ServerPort), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd, err := remote.Command(flightdeckBinary(t), "--config", conf, "connect", srv.Target(), "-F", os.DevNull, "-i", srv.ClientKeyPath(),
				"--known-hosts", known, "--log", h.LogPath, "--repo", h.RepoPath, "--sampler", c.sampler)
			if err != nil {
				t.Fatal(err)
			}
			s := startTmux(t, 200, 50, cmd)
			steady(t, s, c, regexp.MustCompile(`tok/s .*[\d.]+ now`), func(since time.Time) int { return srv.StartedSince(since).Count() })
			mark := srv.Mark()
			time.Sleep(steadyWindow)
			st := srv.StartedSince(mark)
			stillLive(t, s, c)
			reportHostProcs(t, c, "sshd", st.Count(), st.String())
			s.quit()
		})
	}
}

// TestHostProcessesAtSteadyStateOnTheDemo is the same count on the
// demo's simulated host, whose SSH server runs inside the demo: the demo
// runs under strace -f (so every command its host runs, and anything the
// cockpit itself would start, is traced) once its server is ready.
func TestHostProcessesAtSteadyStateOnTheDemo(t *testing.T) {
	t.Parallel()
	st := needStraceOrSkip(t)
	for _, c := range hostProcsCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.sampler == "auto" && !nvml.Compiled() {
				t.Skip("this build has no cgo: the agent cannot sample")
			}
			out := filepath.Join(t.TempDir(), "demo.strace")
			argv := strace.Command(st, out, flightdeckBinary(t), "demo", "--sampler", c.sampler)
			cmd, err := remote.Command(argv[0], argv[1:]...)
			if err != nil {
				t.Fatal(err)
			}
			s := startTmux(t, 200, 50, cmd)
			steady(t, s, c, readyHeader, func(since time.Time) int {
				tr, err := strace.ParseFile(out)
				if err != nil {
					t.Fatal(err)
				}
				return len(tr.Started(since, time.Time{}))
			})
			mark := time.Now()
			time.Sleep(steadyWindow)
			tr, err := strace.ParseFile(out)
			if err != nil {
				t.Fatal(err)
			}
			ps := tr.Started(mark, mark.Add(steadyWindow))
			stillLive(t, s, c)
			reportHostProcs(t, c, "demo", len(ps), strace.Summary(ps, tr))
			s.quit()
		})
	}
}

// needStraceOrSkip is strace's path; it skips the test without strace
// (fails it when $CI is set: .ci/run installs it).
func needStraceOrSkip(t *testing.T) string {
	t.Helper()
	p, err := strace.Path()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v (CI is set, so this is a failure)", err)
		}
		t.Skip(err)
	}
	return p
}

// steady waits for the cockpit's complete screen (8 GPU rows sampled the
// way c says, HEAD, and ready), then for the host to settle: started(T)
// counts the processes it started since T.
func steady(t *testing.T, s *tmuxSession, c hostProcsCase, ready *regexp.Regexp, started func(since time.Time) int) {
	t.Helper()
	s.waitScreen(90*time.Second, func(screen string) string {
		head := strings.SplitN(screen, "\n", 2)[0]
		switch {
		case countGPURows(screen) != 8:
			return "not 8 GPU rows"
		case !strings.Contains(head, c.header):
			return fmt.Sprintf("header does not say %q", c.header)
		case !strings.Contains(head, "HEAD "):
			return "no HEAD in the header"
		case !ready.MatchString(screen):
			return "the server is not ready, or no tok/s yet"
		}
		return ""
	})
	start := time.Now()
	time.Sleep(settleMin)
	for time.Since(start) < settleMax && started(time.Now().Add(-settleQuiet)) > 0 {
		time.Sleep(time.Second)
	}
	t.Logf("settled for %v after the screen was complete", time.Since(start).Round(time.Second))
}

// stillLive checks the cockpit still watches the host at the window's
// end: a count of 0 from a dead cockpit would prove nothing.
func stillLive(t *testing.T, s *tmuxSession, c hostProcsCase) {
	t.Helper()
	before := gpuTable(s.capture())
	s.waitScreen(10*time.Second, func(screen string) string {
		head := strings.SplitN(screen, "\n", 2)[0]
		switch {
		case !strings.Contains(head, c.header):
			return fmt.Sprintf("at the end of the window the header does not say %q", c.header)
		case countGPURows(screen) != 8 || gpuTable(screen) == before:
			return "at the end of the window the GPU rows do not update"
		}
		return ""
	})
}

// reportHostProcs logs the count (the figure of docs/performance.md) and fails
// above the budget with every command started.
func reportHostProcs(t *testing.T, c hostProcsCase, where string, n int, summary string) {
	t.Helper()
	if n <= c.budget {
		t.Logf("%s, %s path: %d processes started on the host in %v of steady state (at most %d):\n%s", where, c.name, n, steadyWindow, c.budget, summary)
	} else {
		t.Errorf("%s, %s path: %d processes started on the host in %v of steady state, want at most %d (issue 20); every command, grouped:\n%s",
			where, c.name, n, steadyWindow, c.budget, summary)
	}
}
