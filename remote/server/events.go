package server

// Launched reports a launch from the cockpit or the CLI. It is an event
// payload (Kind "server-launched") and what the journal records of a launch.
type Launched struct{ Record Record }

// Kind implements event.Payload.
func (Launched) Kind() string { return "server-launched" }

// Observed is one look at the host for the server (Find's result). It is an
// event payload (Kind "server-observed").
type Observed struct{ Found Found }

// Kind implements event.Payload.
func (Observed) Kind() string { return "server-observed" }

// Healthy reports that the server's HTTP endpoint Path answered 200 OK. It
// is an event payload (Kind "server-healthy").
type Healthy struct {
	Port int
	Path string
}

// Kind implements event.Payload.
func (Healthy) Kind() string { return "server-healthy" }

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

// Kind implements event.Payload.
func (KillStep) Kind() string { return "server-kill" }
