package event

import "time"

// Process is one process of a server's tree, from /proc/PID/stat.
type Process struct {
	PID       int    `json:"pid"`
	PPID      int    `json:"ppid"`
	PGID      int    `json:"pgid"`
	SID       int    `json:"sid"`
	State     string `json:"state"`      // "R", "S", "D", …; never "Z" (zombies are left out)
	StartTime uint64 `json:"start_time"` // clock ticks since boot
	Comm      string `json:"comm"`       // the kernel's 15-byte name, unsafe bytes replaced by "?"
}

// KillTarget is what Kill acts on: a root process and, when the root leads
// them, its process group and session.
type KillTarget struct {
	PID       int
	StartTime uint64    // must match /proc/PID/stat, else PID was reused and is not followed
	PGID, SID int       // 0: not used (the root does not lead them)
	Keep      []Process // further processes known to belong to the server (orphaned workers)
	// Mark is the launch's mark (LaunchRecord.Mark): every live process
	// carrying it belongs to the server. "" when the server was adopted.
	Mark string `json:",omitempty"`
}

// ServerFound is what Find learned about the server on a host.
type ServerFound struct {
	Record     *LaunchRecord // the pidfile, nil when there is none (or it is unreadable: see PidfileErr)
	PidfileErr error         // why the pidfile could not be read, nil when fine or absent
	Running    bool          // a server process is alive (Target is set)
	How        string        // ByPidfile, ByPort or ByProcess when Running
	Target     KillTarget
	Tree       []Process // the live processes of the server
	// ServerPID is the server process itself: the launch wrapper's child
	// for a pidfile launch, else the root; 0 when not running.
	ServerPID int
	// Exit is the exit status the launch wrapper recorded for the pidfile's
	// server (-1: none recorded: still running, or killed together with the
	// wrapper).
	Exit int
	// Others lists the servers that matched by command line and port when
	// more than one did; Running is then false: Find does not guess which
	// to adopt (and so Kill never hits the wrong one).
	Others []Process
	// Port is the port a server adopted by port or command line serves;
	// 0 otherwise (ByPidfile: see Record.Launch.Port).
	Port int
}

// ServerLaunched reports a launch from the cockpit or the CLI. It is an event
// payload (Kind "server-launched") and what the journal records of a launch.
type ServerLaunched struct{ Record LaunchRecord }

// ServerObserved is one look at the host for the server (Find's result). It is an
// event payload (Kind "server-observed").
type ServerObserved struct{ Found ServerFound }

// ServerHealthy reports that the server's HTTP endpoint Path answered 200 OK. It
// is an event payload (Kind "server-healthy").
type ServerHealthy struct {
	Port int
	Path string
}

// KillStep reports progress of a kill: Step is "signalling" (SIGTERM sent,
// waiting for the grace period), "waiting-gpu" (processes gone, waiting for
// GPU memory), "done" or "failed" (Err says why: survivors, GPU memory still
// held, the connection). It is an event payload (Kind "server-kill").
type KillStep struct {
	Step   string
	PID    int    // the server process being killed
	Detail string // e.g. "SIGKILL after 10s: 4711" or the survivors, sanitised
	Err    error
	// Relaunch marks the kill that clears the way for a new launch (the
	// experiment it ends is ended by the relaunch, not by a plain kill).
	Relaunch bool `json:",omitempty"`
}

// LaunchRecord is the pidfile: who the server is and how it was launched.
type LaunchRecord struct {
	PID       int    `json:"pid"`        // the launch wrapper (session leader); the server is its child
	PGID      int    `json:"pgid"`       // process group id (= PID after setsid)
	SID       int    `json:"sid"`        // session id (= PID after setsid)
	StartTime uint64 `json:"start_time"` // field 22 of /proc/PID/stat, clock ticks since boot; guards against PID reuse
	// Mark is the launch's mark, 32 hex digits: every process the launch
	// started carries FLIGHTDECK_LAUNCH=Mark in its environment, so a kill
	// finds those that left the tree (double fork, setsid). "" in a
	// pidfile from an older flightdeck.
	Mark   string     `json:"mark,omitempty"`
	Launch LaunchInfo `json:"launch"`
	// Warnings are what the launch said about the host's setup, one
	// sentence each ("/data/logs is writable by every user of the host:
	// …"); not in the pidfile.
	Warnings []string `json:"-"`
}

// LaunchInfo is the resolved launch, as recorded in the pidfile. Env values whose
// names look secret (see Redact) are stored as "<redacted>".
type LaunchInfo struct {
	Preset   string            `json:"preset,omitempty"`
	Profile  string            `json:"profile,omitempty"`
	Server   string            `json:"server,omitempty"` // "sglang" or "vllm": log format and readiness rules
	Argv     []string          `json:"argv"`
	Env      map[string]string `json:"env,omitempty"` // what the launch added; the rest is the login environment
	Workdir  string            `json:"workdir"`       // absolute
	LogPath  string            `json:"log"`           // absolute: <logdir>/<preset>-<timestamp>.log
	ExitPath string            `json:"exit"`          // absolute: the wrapper writes the server's exit status here
	Port     int               `json:"port,omitempty"`
	At       time.Time         `json:"at"` // when the launch was requested (cockpit clock)
}

// ServerPhase is the inference server's state as the cockpit sees it.
type ServerPhase string

const (
	PhaseNone      ServerPhase = "none"      // no server found on the host
	PhaseLaunching ServerPhase = "launching" // launched; no start-up progress in its log yet
	PhaseLoading   ServerPhase = "loading"   // start-up progress in the log (weights, KV cache, CUDA graphs, ready line awaiting the health check)
	PhaseReady     ServerPhase = "ready"     // ready line seen (or adopted) and the HTTP health check answered
	PhaseRunning   ServerPhase = "running"   // alive, readiness unknown (adopted; the health check has not answered yet)
	PhaseFailed    ServerPhase = "failed"    // a failure in its log (Class, Text); it may still be alive
	PhaseExited    ServerPhase = "exited"    // gone by itself; Exit holds the status when the wrapper recorded one
	PhaseStopping  ServerPhase = "stopping"  // a kill is in progress (Note says which step)
	PhaseKilled    ServerPhase = "killed"    // gone after a kill from the cockpit
)

// Up reports a phase in which the server's process is there and serving
// or on its way to: launching, loading, ready or running.
func (p ServerPhase) Up() bool {
	switch p {
	case PhaseLaunching, PhaseLoading, PhaseReady, PhaseRunning:
		return true
	}
	return false
}

// ServerStatus is one observation of the inference server. It is an event
// payload (Kind "server-status"), published whenever any field changes.
type ServerStatus struct {
	Phase   ServerPhase
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
