package remote

import (
	"context"
	"io"
)

// InputStarter is a Host that can start a command whose stdin the caller
// writes while it runs: a long-lived watcher on the host that its caller
// keeps told, line by line, that it is alive (`flightdeck agent lock`
// refreshes the driver lock only while its cockpit says so). *SSH and
// *Local implement it.
type InputStarter interface {
	// StartInput is Host.Start with the command's stdin: what is written
	// to it reaches the command; Close ends its input (EOF): close it when
	// done. Writes fail once the command or the connection ended.
	StartInput(ctx context.Context, cmd string) (Process, io.WriteCloser, error)
}

var (
	_ InputStarter = (*SSH)(nil)
	_ InputStarter = (*Local)(nil)
)

// StartInput implements InputStarter: the session's stdin.
func (s *SSH) StartInput(ctx context.Context, cmd string) (Process, io.WriteCloser, error) {
	return s.start(ctx, cmd, true)
}

// StartInput implements InputStarter: a pipe to the command's stdin.
func (l *Local) StartInput(ctx context.Context, cmd string) (Process, io.WriteCloser, error) {
	return l.startCmd(ctx, cmd, true)
}
