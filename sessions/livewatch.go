package sessions

import (
	"context"
	"path"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/hostwatch"
	"github.com/flightdeck-dev/flightdeck/remote/server"
)

// watchServer starts the host-side watch of what Control.Find reads (the
// pidfile and exit file in the log directory, the pidfile's process and
// its children, the listener on the default port, the command lines that
// look like a server: hostwatch.ServerPrint) over one long-lived session,
// through the host's agent (`flightdeck agent watch`), else the shell
// watcher, else a poll every 3 s (hostwatch.Trigger). It returns the
// channel that signals when Find may answer differently, or nil when the
// log directory cannot be resolved yet (the connection is down): monitor
// asks again at its next turn.
//
// The watcher says that something changed, not what: monitor still runs
// Find then (a one-off read), so that remote/server's parser stays the
// one place where a server is recognised, rather than a second parser of
// a Find-like output produced by the agent.
func (l *Live) watchServer(ctx context.Context) <-chan struct{} {
	c := l.cfg.Control
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	logDir, _, err := c.dirs(dctx)
	cancel()
	if err != nil {
		return nil
	}
	match := server.DefaultMatch
	if c.NoProcessMatch {
		match = ""
	}
	tr := &hostwatch.Trigger{Host: c.Host, Agent: l.agent, Poll: 3 * time.Second,
		Watch: hostwatch.Options{Server: &hostwatch.ServerSpec{
			Pidfile:  path.Join(logDir, server.PidfileName),
			ExitFile: path.Join(logDir, server.ExitFileName),
			Port:     c.DefaultPort(),
			Match:    match,
		}}}
	return tr.Start(ctx)
}
