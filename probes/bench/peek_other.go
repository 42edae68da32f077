//go:build !unix

package bench

import "net"

// peeker would look at an idle connection's socket; it has no
// implementation here, so every idle connection is taken as alive and
// only the idle time limit (idleTimeout) guards reuse.
type peeker struct{}

// newPeeker returns nil: no socket checks on this system.
func newPeeker(net.Conn) *peeker { return nil }

// alive is never called: newPeeker returns no peeker.
func (*peeker) alive() bool { return true }
