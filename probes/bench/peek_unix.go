//go:build unix

package bench

import (
	"net"
	"syscall"
)

// peeker looks at an idle connection's socket without reading from it.
// Its method value is made once per connection, so a check allocates
// nothing.
type peeker struct {
	rc   syscall.RawConn
	fn   func(fd uintptr) bool // p.recv
	buf  [1]byte
	err  error
	dead bool
}

// newPeeker returns c's peeker, or nil when c has no socket (an SSH
// channel, a net.Pipe).
func newPeeker(c net.Conn) *peeker {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &peeker{rc: rc}
	p.fn = p.recv
	return p
}

// recv peeks at one byte. Go's sockets are non-blocking, so with nothing
// to read it fails at once with EAGAIN.
func (p *peeker) recv(fd uintptr) bool {
	for {
		_, _, p.err = syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK)
		if p.err != syscall.EINTR {
			break
		}
	}
	return true // done: never wait for the socket to become readable
}

// alive says whether the socket may carry another request: nothing to
// read yet (EAGAIN). End of file (the server closed it: no error), an
// error (reset) or bytes no request asked for (no error) say it may not;
// one system call.
func (p *peeker) alive() bool {
	if p.dead {
		return false
	}
	if err := p.rc.Read(p.fn); err != nil {
		p.dead = true // closed, or its descriptor gone
		return false
	}
	p.dead = p.err != syscall.EAGAIN && p.err != syscall.EWOULDBLOCK
	return !p.dead
}
