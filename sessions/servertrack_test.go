package sessions

import (
	"errors"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestServerTrackerLaunchToReady(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rec := event.LaunchRecord{PID: 100, Launch: event.LaunchInfo{Preset: "sglang", Profile: "nccl-ll-ring", Server: "sglang", LogPath: "/l/sglang-1.log", Port: 30000, At: at(0)}}
	lines := func(path string, text ...string) event.LogLines {
		l := event.LogLines{Path: path}
		for _, s := range text {
			l.Lines = append(l.Lines, event.LogLine{Text: []byte(s)})
		}
		return l
	}
	var tr ServerTracker
	steps := []struct {
		at      int
		ev      event.Payload
		phase   event.ServerPhase
		stage   string
		changed bool
		health  bool
	}{
		{0, event.ServerLaunched{Record: rec}, event.PhaseLaunching, "", true, false},
		{1, event.ServerObserved{Found: event.ServerFound{Running: true, How: server.ByPidfile, ServerPID: 101, Record: &rec, Exit: -1}}, event.PhaseLaunching, "", true, false},
		{2, lines("/l/old.log", "[x TP0] Load weight begin. avail mem=1 GB"), event.PhaseLaunching, "", false, false}, // another file
		{3, lines("/l/sglang-1.log", "[x TP0] Load weight begin. avail mem=1 GB"), event.PhaseLoading, serverlog.StageWeights, true, false},
		{5, lines("/l/sglang-1.log", "[x TP0] Capture cuda graph begin. This can take up to several minutes."), event.PhaseLoading, serverlog.StageCUDAGraphs, true, false},
		{6, event.ServerHealthy{Port: 30000, Path: "/health"}, event.PhaseLoading, serverlog.StageCUDAGraphs, false, false}, // no ready line yet
		{8, event.ServerReady{Server: "sglang", Text: "The server is fired up and ready to roll!"}, event.PhaseLoading, "ready line; checking health", true, true},
		{9, event.ServerHealthy{Port: 30000, Path: "/health"}, event.PhaseReady, "", true, false},
	}
	for i, s := range steps {
		st, changed := tr.Apply(event.Event{At: at(s.at), Data: s.ev})
		if st.Phase != s.phase || st.Stage != s.stage || changed != s.changed || tr.NeedsHealth() != s.health {
			t.Fatalf("step %d (%T): phase %q stage %q changed %v health %v; want %q %q %v %v", i, s.ev, st.Phase, st.Stage, changed, tr.NeedsHealth(), s.phase, s.stage, s.changed, s.health)
		}
	}
	st := tr.Status()
	if st.PID != 101 || st.ReadyAfter != 9*time.Second || st.Profile != "nccl-ll-ring" || st.Health != "/health" || st.Since != at(9) {
		t.Errorf("ready status %+v", st)
	}
	// A launch from elsewhere (another pidfile record) is a new run.
	other := event.LaunchRecord{PID: 200, Launch: event.LaunchInfo{Preset: "sglang", Profile: "none", LogPath: "/l/sglang-2.log", Port: 30000}}
	if st, _ := tr.Apply(event.Event{At: at(12), Data: event.ServerObserved{Found: event.ServerFound{Running: true, How: server.ByPidfile, ServerPID: 201, Record: &other, Exit: -1}}}); st.Phase != event.PhaseRunning || st.LogPath != "/l/sglang-2.log" || st.Profile != "none" {
		t.Fatalf("relaunched elsewhere: %+v", st)
	}
	tr.Apply(event.Event{At: at(13), Data: event.ServerHealthy{Port: 30000, Path: "/health"}})
	tr.Apply(event.Event{At: at(14), Data: event.ServerObserved{Found: event.ServerFound{Running: true, How: server.ByPidfile, ServerPID: 101, Record: &rec, Exit: -1}}})
	// The process goes away by itself: exited with the recorded status.
	st, _ = tr.Apply(event.Event{At: at(20), Data: event.ServerObserved{Found: event.ServerFound{Record: &rec, Exit: 3}}})
	if st.Phase != event.PhaseExited || st.Exit != 3 || st.PID != 0 {
		t.Errorf("after exit: %+v", st)
	}
	// Its last log lines, read after the exit was seen, say why.
	st, _ = tr.Apply(event.Event{At: at(21), Data: event.ServerFailure{Class: event.FailCUDAIllegalMemory, Text: "RuntimeError: CUDA error: an illegal memory access was encountered"}})
	if st.Phase != event.PhaseFailed || st.Exit != 3 || st.Class != "cuda-illegal-memory" {
		t.Errorf("failure after exit: %+v", st)
	}
}

func TestServerTrackerFailureKillAndAdoption(t *testing.T) {
	t0 := time.Now()
	rec := event.LaunchRecord{PID: 7, Launch: event.LaunchInfo{Preset: "sim", LogPath: "/l/a.log", Port: 1, At: t0}}
	var tr ServerTracker
	apply := func(p event.Payload) event.ServerStatus {
		st, _ := tr.Apply(event.Event{At: time.Now(), Data: p})
		return st
	}
	if st := apply(event.ServerObserved{Found: event.ServerFound{Exit: -1}}); st.Phase != event.PhaseNone {
		t.Fatalf("nothing found: %q", st.Phase)
	}
	apply(event.ServerLaunched{Record: rec})
	st := apply(event.ServerFailure{Class: event.FailOOM, Text: "torch.OutOfMemoryError: CUDA out of memory.\x1b[2J"})
	if st.Phase != event.PhaseFailed || st.Class != "oom" || st.Text == "" || containsESC(st.Text) {
		t.Fatalf("failure: %+v", st)
	}
	st = apply(event.ServerObserved{Found: event.ServerFound{Record: &rec, Exit: 1}})
	if st.Phase != event.PhaseFailed || st.Exit != 1 {
		t.Errorf("failed then exited: %+v (the failure stays the headline, with the status)", st)
	}
	// Adopt a server started by hand, kill it.
	st = apply(event.ServerObserved{Found: event.ServerFound{Running: true, How: server.ByPort, ServerPID: 55, Exit: -1}})
	if st.Phase != event.PhaseFailed {
		t.Fatalf("a failed run is not replaced silently: %+v", st)
	}
	tr = ServerTracker{}
	st = apply(event.ServerObserved{Found: event.ServerFound{Running: true, How: server.ByPort, ServerPID: 55, Exit: -1}})
	if st.Phase != event.PhaseRunning || st.How != server.ByPort || !tr.NeedsHealth() {
		t.Fatalf("adopted: %+v", st)
	}
	if st = apply(event.ServerHealthy{Path: "/v1/models"}); st.Phase != event.PhaseReady || st.ReadyAfter != 0 {
		t.Fatalf("adopted and healthy: %+v", st)
	}
	apply(event.KillStep{Step: "signalling", PID: 55})
	if st = apply(event.ServerObserved{Found: event.ServerFound{Exit: -1}}); st.Phase != event.PhaseStopping {
		t.Fatalf("gone during the kill: %+v (the kill reports its own end)", st)
	}
	apply(event.KillStep{Step: "waiting-gpu", Detail: "waiting for GPU memory: 1 processes, 70000 MiB"})
	if st = tr.Status(); st.Note == "" {
		t.Error("no note while waiting for GPU memory")
	}
	if st = apply(event.KillStep{Step: "done", Detail: "GPU memory free"}); st.Phase != event.PhaseKilled || st.PID != 0 {
		t.Fatalf("killed: %+v", st)
	}
	apply(event.KillStep{Step: "failed", Err: errors.New("boom")})
	if st = tr.Status(); st.Note != "kill failed: boom" {
		t.Errorf("kill failure note %q", st.Note)
	}
}

func containsESC(s string) bool {
	for _, r := range s {
		if r == 0x1b {
			return true
		}
	}
	return false
}

// TestServerTrackerLaunchSeenBeforeLaunched: the monitor can see the new
// server running before Control publishes event.ServerLaunched; observations
// are published only when they change, so none follows. The launching
// status keeps the pid seen (the header showed none after a relaunch).
func TestServerTrackerLaunchSeenBeforeLaunched(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	rec := event.LaunchRecord{PID: 300, Launch: event.LaunchInfo{Preset: "sim", Profile: "nccl-ll-ring", Server: "sglang", LogPath: "/l/sim-2.log", Port: 30000, At: t0}}
	old := event.LaunchRecord{PID: 100, Launch: event.LaunchInfo{Preset: "sim", LogPath: "/l/sim-1.log", Port: 30000}}
	var tr ServerTracker
	for _, p := range []event.Payload{
		event.ServerObserved{Found: event.ServerFound{Running: true, How: server.ByPidfile, ServerPID: 101, Record: &old, Exit: -1}},
		event.KillStep{Step: "done", PID: 101, Relaunch: true},
		event.ServerObserved{Found: event.ServerFound{Running: true, How: server.ByPidfile, ServerPID: 301, Record: &rec, Exit: -1}},
		event.ServerLaunched{Record: rec},
	} {
		tr.Apply(event.Event{At: t0, Data: p})
	}
	if st := tr.Status(); st.Phase != event.PhaseLaunching || st.PID != 301 {
		t.Errorf("status %+v: want launching with pid 301", st)
	}
	// A launch whose server was not seen yet has no pid until it is.
	var fresh ServerTracker
	fresh.Apply(event.Event{At: t0, Data: event.ServerObserved{Found: event.ServerFound{Running: true, How: server.ByPidfile, ServerPID: 101, Record: &old, Exit: -1}}})
	if st, _ := fresh.Apply(event.Event{At: t0, Data: event.ServerLaunched{Record: rec}}); st.PID != 0 {
		t.Errorf("pid %d taken from another launch's observation", st.PID)
	}
}
