package driver

import (
	"context"
	"time"
)

// loopCommand is the command line of the shell loop that keeps stream s
// without an agent; "" while there is none (lockScript beats instead).
func (l *Lock) loopCommand(s *lockStream, every time.Duration) (string, error) { return "", nil }

// loopLine feeds one line of the shell loop to the state machine.
func (l *Lock) loopLine(ctx context.Context, s *lockStream, line []byte) {}
