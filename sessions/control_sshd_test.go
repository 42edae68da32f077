package sessions

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// simTarget is the simulated host as a configured host (what the demo uses).
func simTarget(h *sim.Host, profile string) config.Host {
	return config.Host{Name: "sim", Target: h.Target(), LogDir: filepath.Dir(h.LogPath), Repo: h.RepoPath,
		Workdir: h.RepoPath, Preset: "sim", Profile: profile, Model: "/shared/kimi-k2.5-int4", TP: 8, Port: h.ServerPort}
}

func lastStatus(es []event.Event) (event.ServerStatus, bool) {
	for i := len(es) - 1; i >= 0; i-- {
		if st, ok := es[i].Data.(event.ServerStatus); ok {
			return st, true
		}
	}
	return event.ServerStatus{}, false
}

func phaseIs(p event.ServerPhase) func([]event.Event) bool {
	return func(es []event.Event) bool {
		st, ok := lastStatus(es)
		return ok && st.Phase == p
	}
}

// TestControlOverRealSSHD: through a real OpenSSH sshd serving the
// simulated host, launch the server with the nccl-ll-ring profile and a
// tree of workers (one ignores SIGTERM, one left the session with setsid,
// and the parent orphans them on SIGTERM); watch it go ready at the tuned
// speed; kill sshd and restart it — the server survives and a new cockpit
// adopts it; then kill it: every process gone, the GPU memory reported
// free.
func TestControlOverRealSSHD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := sim.Start(ctx, sim.Options{NoSSH: true, TimeScale: 4, StartupDelay: 2 * time.Second, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := sshdtest.Start(t, sshdtest.Options{PathDirs: []string{h.BinDir}})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	dial := func() *remote.SSH {
		host, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
			ConfigFile: os.DevNull, IdentityFiles: []string{srv.ClientKeyPath()}, KnownHostsFiles: []string{known},
			NoAgent: true, ReconnectMin: 50 * time.Millisecond, ReconnectMax: 300 * time.Millisecond, KeepaliveInterval: 2 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		return host
	}
	host := dial()
	defer host.Close()

	ctl := &Control{Host: host, Config: config.Builtins(), Target: simTarget(h, "none"), NoProcessMatch: true, Grace: time.Second, GPUTimeout: 30 * time.Second}
	rec := newRecorder()
	liveCtx, stopLive := context.WithCancel(ctx)
	liveDone := make(chan error, 1)
	go func() {
		liveDone <- RunLive(liveCtx, LiveConfig{Host: host, Interval: 200 * time.Millisecond, Control: ctl}, rec.sink)
	}()
	rec.waitFor(t, "nothing running", 20*time.Second, phaseIs(event.PhaseNone))

	req := ctl.Request()
	req.Profile = "nccl-ll-ring"
	req.Extra = "--sim-workers 2 --sim-stubborn-worker --sim-setsid-worker --sim-orphan-workers"
	plan, err := ctl.Plan(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.CommandLine, "NCCL_PROTO=LL") || !strings.Contains(plan.CommandLine, "flightdeck sim server") {
		t.Fatalf("command line %q", plan.CommandLine)
	}
	r, err := ctl.Launch(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(r.Launch.LogPath), "sim-") || r.Launch.Env["NCCL_ALGO"] != "Ring" {
		t.Fatalf("launch record %+v", r.Launch)
	}
	rec.waitFor(t, "ready", time.Minute, phaseIs(event.PhaseReady))
	st, _ := lastStatus(rec.snapshot())
	if st.ReadyAfter <= 0 || st.Health == "" || st.Profile != "nccl-ll-ring" || st.LogPath != r.Launch.LogPath {
		t.Errorf("ready status %+v", st)
	}
	// The log followed is the new launch's, and its tok/s is the tuned one.
	want := sim.ModelTokPerSec(true, false, false)
	rec.waitFor(t, "tuned tok/s from the new log", time.Minute, func(es []event.Event) bool {
		for _, e := range es {
			if rt, ok := e.Data.(event.TokRate); ok && !rt.Dropped && math.Abs(rt.TokPerSec-want) < 0.05*want {
				return true
			}
		}
		return false
	})
	var seenPhases []event.ServerPhase
	for _, e := range rec.snapshot() {
		if st, ok := e.Data.(event.ServerStatus); ok && (len(seenPhases) == 0 || seenPhases[len(seenPhases)-1] != st.Phase) {
			seenPhases = append(seenPhases, st.Phase)
		}
	}
	if got := phasesString(seenPhases); !strings.HasPrefix(got, "none launching loading ready") {
		t.Errorf("phases %s, want none → launching → loading → ready", got)
	}

	// Drop the SSH connection: the detached server survives it.
	found, err := ctl.Find(ctx)
	if err != nil || !found.Running {
		t.Fatalf("before the drop: %+v %v", found, err)
	}
	srv.Stop()
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	rec.waitFor(t, "reconnected", 30*time.Second, func(es []event.Event) bool {
		for i := len(es) - 1; i >= 0; i-- {
			if s, ok := es[i].Data.(event.ConnState); ok {
				return s.Conn == event.Connected && s.Attempt == 0 && i > 0
			}
		}
		return false
	})
	stopLive()
	<-liveDone

	// A new cockpit (new connection, new control) adopts the running server.
	host2 := dial()
	defer host2.Close()
	ctl2 := &Control{Host: host2, Config: config.Builtins(), Target: simTarget(h, "none"), NoProcessMatch: true, Grace: time.Second, GPUTimeout: 30 * time.Second}
	rec2 := newRecorder()
	live2, stop2 := context.WithCancel(ctx)
	done2 := make(chan error, 1)
	go func() {
		done2 <- RunLive(live2, LiveConfig{Host: host2, Interval: 200 * time.Millisecond, Control: ctl2}, rec2.sink)
	}()
	defer func() { stop2(); <-done2 }()
	rec2.waitFor(t, "adopted and healthy", 30*time.Second, phaseIs(event.PhaseReady))
	st, _ = lastStatus(rec2.snapshot())
	if st.How != server.ByPidfile || st.PID != found.ServerPID || st.Profile != "nccl-ll-ring" {
		t.Errorf("adopted %+v, want pid %d by pidfile", st, found.ServerPID)
	}
	if ctl2.Request().Profile != "nccl-ll-ring" {
		t.Errorf("the next launch does not start from the adopted one's profile: %+v", ctl2.Request())
	}

	// A relaunch from elsewhere (the first cockpit's control, another
	// connection): the second cockpit follows the new launch's log.
	ctl.Host = host2
	r2, err := ctl.Launch(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	rec2.waitFor(t, "the new launch's log lines in the other cockpit", 30*time.Second, func(es []event.Event) bool {
		for _, e := range es {
			if ls, ok := e.Data.(event.LogLines); ok && ls.Path == r2.Launch.LogPath {
				return true
			}
		}
		return false
	})
	rec2.waitFor(t, "the relaunched server ready", 30*time.Second, func(es []event.Event) bool {
		st, ok := lastStatus(es)
		return ok && st.Phase == event.PhaseReady && st.LogPath == r2.Launch.LogPath
	})

	// Kill: the whole tree, including the orphaned workers.
	found, _ = ctl2.Find(ctx)
	if len(found.Tree) < 4 {
		t.Fatalf("tree %+v: want the wrapper, the server and its workers", found.Tree)
	}
	if err := ctl2.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	rec2.waitFor(t, "killed", 20*time.Second, phaseIs(event.PhaseKilled))
	st, _ = lastStatus(rec2.snapshot())
	if !strings.Contains(st.Note, "GPU memory free") || !strings.Contains(st.Note, "SIGKILL") {
		t.Errorf("kill note %q: want the SIGKILL escalation and the freed memory", st.Note)
	}
	for _, p := range found.Tree {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
			t.Errorf("pid %d (%s) survived the kill", p.PID, p.Comm)
		}
	}
	apps, err := gpu.QueryComputeApps(ctx, host2, "")
	if err != nil || len(apps) != 0 {
		t.Errorf("compute apps after the kill: %+v %v", apps, err)
	}
	if err := ctl2.Kill(ctx); !errors.Is(err, server.ErrNoServer) {
		t.Errorf("second kill: %v, want ErrNoServer", err)
	}
}

func phasesString(ps []event.ServerPhase) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, " ")
}
