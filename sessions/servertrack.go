package sessions

import (
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// ServerTracker is the readiness state machine of the inference server:
//
//	launching → loading (start-up stages in the log) → ready (ready line,
//	then an HTTP health answer) → failed (a failure in the log) / exited
//	(gone by itself, with its status when recorded) / killed (by us)
//
// An already running server found at connect (adopted) starts as running
// and becomes ready when its health check answers. It consumes the event
// stream — event.ServerLaunched, event.ServerObserved, event.ServerHealthy,
// event.KillStep, event.LogLines, event.ServerReady, event.ServerFailure —
// and is pure: no I/O, no clock. Not safe for concurrent use.
type ServerTracker struct {
	st        event.ServerStatus
	known     bool // st holds an observation
	readyLine bool // the ready line of this run was seen
	killing   bool
	// last is the latest observation. Observations are published only
	// when they change, so a launch's server seen running before its
	// event.ServerLaunched arrived is not observed again: its pid comes from here.
	last    event.ServerFound
	hasLast bool
}

// Status is the current status; Phase is "" before the first observation.
func (t *ServerTracker) Status() event.ServerStatus { return t.st }

// NeedsHealth reports whether a health check would move the server on: its
// ready line was seen (or it was adopted running) and it is not ready yet.
func (t *ServerTracker) NeedsHealth() bool {
	switch t.st.Phase {
	case event.PhaseRunning:
		return true
	case event.PhaseLoading, event.PhaseLaunching:
		return t.readyLine
	}
	return false
}

// Starting reports whether the server is launching or loading (the monitor
// then looks more often).
func (t *ServerTracker) Starting() bool {
	return t.st.Phase == event.PhaseLaunching || t.st.Phase == event.PhaseLoading
}

func (t *ServerTracker) set(p event.ServerPhase, at time.Time) {
	if t.st.Phase != p {
		t.st.Phase, t.st.Since = p, at
	}
}

// Apply feeds one event and returns the new status and whether it changed.
func (t *ServerTracker) Apply(e event.Event) (event.ServerStatus, bool) {
	before := t.st
	switch p := e.Data.(type) {
	case event.ServerLaunched:
		l := p.Record.Launch
		t.st = event.ServerStatus{Phase: event.PhaseLaunching, Server: l.Server, How: server.ByPidfile, Preset: l.Preset,
			Profile: l.Profile, LogPath: l.LogPath, Port: l.Port, LaunchedAt: l.At, Since: e.At, Exit: -1}
		t.known, t.readyLine, t.killing = true, false, false
		if f := t.last; t.hasLast && f.Running && f.Record != nil && f.Record.Launch.LogPath == l.LogPath {
			t.st.PID = f.ServerPID // seen running before this event arrived
		}
	case event.ServerObserved:
		t.last, t.hasLast = p.Found, true
		t.observe(p.Found, e.At)
	case event.ServerHealthy:
		if t.NeedsHealth() && (t.st.Port == 0 || p.Port == t.st.Port) {
			t.set(event.PhaseReady, e.At)
			t.st.Health, t.st.Stage, t.st.Port = p.Path, "", p.Port
			if !t.st.LaunchedAt.IsZero() {
				t.st.ReadyAfter = e.At.Sub(t.st.LaunchedAt)
			}
		}
	case event.KillStep:
		switch p.Step {
		case "done":
			t.killing = false
			t.set(event.PhaseKilled, e.At)
			t.st.Note, t.st.Stage, t.st.PID = p.Detail, "", 0
		case "failed":
			t.killing = false
			t.st.Note = "kill failed: " + errText(p.Err)
		default:
			t.killing = true
			t.set(event.PhaseStopping, e.At)
			t.st.Note = p.Detail
		}
	case event.LogLines:
		if t.Starting() && t.ours(p.Path) {
			for _, l := range p.Lines {
				if st, ok := serverlog.ParseStage(l.Text); ok {
					t.set(event.PhaseLoading, e.At)
					t.st.Stage = st
				}
			}
		}
	case event.ServerReady:
		switch t.st.Phase {
		case event.PhaseLaunching, event.PhaseLoading, event.PhaseRunning:
			t.readyLine = true
			if p.Server != "" {
				t.st.Server = sanitize.String(p.Server)
			}
			if t.st.Phase != event.PhaseRunning {
				t.set(event.PhaseLoading, e.At)
				t.st.Stage = "ready line; checking health"
			}
		}
	case event.ServerFailure:
		switch t.st.Phase {
		case event.PhaseLaunching, event.PhaseLoading, event.PhaseRunning, event.PhaseReady, event.PhaseExited:
			// Exited too: the log's last lines may arrive after the exit
			// was seen; they say why (the exit status stays).
			t.set(event.PhaseFailed, e.At)
			t.st.Class, t.st.Text, t.st.Stage = string(p.Class), sanitize.String(p.Text), ""
		case event.PhaseFailed:
			// A traceback's cause comes after its first line: the primary
			// class (FailureClass.Tier, the rule parse log uses) wins.
			if p.Class.Tier() < event.ServerFailureClass(t.st.Class).Tier() {
				t.st.Class, t.st.Text = string(p.Class), sanitize.String(p.Text)
			}
		}
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState,
		event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale,
		event.GitAction, event.GitMoved, event.GitStatus, event.JournalStatus, event.Key,
		event.LogBench, event.LogFollowError, event.LogNotice, event.LogReset, event.Note,
		event.Prefill, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
		event.ServerStatus, event.Session, event.SpecDecode, event.Throughput, event.TokRate,
		event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// the server's status does not depend on them
	}
	return t.st, t.st != before
}

// ours reports whether a log path is the current run's log (any log when
// the run's log is unknown).
func (t *ServerTracker) ours(path string) bool {
	return t.st.LogPath == "" || path == "" || path == t.st.LogPath
}

func (t *ServerTracker) observe(f event.ServerFound, at time.Time) {
	if f.Running {
		t.st.PID, t.st.How = f.ServerPID, f.How
		phase := t.st.Phase
		if r := f.Record; r != nil && f.How == server.ByPidfile && t.st.LogPath != "" && r.Launch.LogPath != t.st.LogPath {
			phase = "" // launched from elsewhere (a teammate, the CLI): a new run
		}
		switch phase {
		case "", event.PhaseNone, event.PhaseExited, event.PhaseKilled:
			// Adopted: running before we looked, or relaunched elsewhere.
			t.st = event.ServerStatus{Phase: event.PhaseRunning, PID: f.ServerPID, How: f.How, Since: at, Exit: -1}
			if r := f.Record; r != nil && f.How == server.ByPidfile {
				l := r.Launch
				t.st.Server, t.st.Preset, t.st.Profile, t.st.LogPath, t.st.Port = l.Server, l.Preset, l.Profile, l.LogPath, l.Port
			} else if f.Port > 0 {
				t.st.Port = f.Port // what it listens on, or its --port
			}
			t.readyLine, t.killing = false, false
		}
		t.known = true
		return
	}
	if t.killing {
		return // the kill reports its own end
	}
	switch t.st.Phase {
	case "":
		t.st = event.ServerStatus{Phase: event.PhaseNone, Since: at, Exit: -1}
		if r := f.Record; r != nil {
			// The last launch, for the header and the launch form.
			l := r.Launch
			t.st.Server, t.st.Preset, t.st.Profile, t.st.LogPath, t.st.Port = l.Server, l.Preset, l.Profile, l.LogPath, l.Port
			if f.Exit >= 0 {
				t.st.Phase, t.st.Exit = event.PhaseExited, f.Exit
			}
		}
	case event.PhaseLaunching, event.PhaseLoading, event.PhaseReady, event.PhaseRunning:
		t.set(event.PhaseExited, at)
		t.st.Exit, t.st.PID, t.st.Stage = f.Exit, 0, ""
	case event.PhaseFailed:
		t.st.Exit, t.st.PID = f.Exit, 0
	}
	t.known = true
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return sanitize.String(err.Error())
}
