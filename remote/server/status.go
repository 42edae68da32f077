package server

import "time"

// Phase is the inference server's state as the cockpit sees it.
type Phase string

const (
	PhaseNone      Phase = "none"      // no server found on the host
	PhaseLaunching Phase = "launching" // launched; no start-up progress in its log yet
	PhaseLoading   Phase = "loading"   // start-up progress in the log (weights, KV cache, CUDA graphs, ready line awaiting the health check)
	PhaseReady     Phase = "ready"     // ready line seen (or adopted) and the HTTP health check answered
	PhaseRunning   Phase = "running"   // alive, readiness unknown (adopted; the health check has not answered yet)
	PhaseFailed    Phase = "failed"    // a failure in its log (Class, Text); it may still be alive
	PhaseExited    Phase = "exited"    // gone by itself; Exit holds the status when the wrapper recorded one
	PhaseStopping  Phase = "stopping"  // a kill is in progress (Note says which step)
	PhaseKilled    Phase = "killed"    // gone after a kill from the cockpit
)

// Status is one observation of the inference server. It is an event
// payload (Kind "server-status"), published whenever any field changes.
type Status struct {
	Phase   Phase
	Server  string // "sglang", "vllm", "" when unknown
	PID     int    // the server process (not the launch wrapper); 0 when none
	How     string // ByPidfile, ByPort or ByProcess; "" when none
	Preset  string // from the launch record, "" when adopted
	Profile string // env profile of the launch, "" when adopted
	LogPath string // the launch's log file, "" when unknown
	Port    int    // HTTP port, 0 when unknown

	Since      time.Time     // when Phase began
	LaunchedAt time.Time     // when the launch was requested; zero when adopted
	ReadyAfter time.Duration // LaunchedAt → ready; 0 until ready (or when adopted)

	Stage  string // loading detail: "loading weights", "capturing CUDA graphs", "ready line; checking /health"…
	Class  string // failure class (serverlog classes: "oom", "nccl", "port-in-use", …) when failed
	Text   string // the offending log line, sanitised, when failed
	Exit   int    // exit status when exited and recorded; -1 otherwise
	Health string // the endpoint that answered ("/health"), when ready
	Note   string // what a kill is doing or left behind ("waiting for GPU memory", survivors)
}

// Kind implements event.Payload.
func (Status) Kind() string { return "server-status" }
