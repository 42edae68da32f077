package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// maxRefusedOpens bounds the retries of a session the server refused as
// over its limit (about 8 s in all, 50 ms more each time).
const maxRefusedOpens = 17

// newSession opens a session on the live connection. It first takes a
// session slot (held until release), waits for a redial if needed, and
// bounds NewSession by ctx (it can hang on a broken connection, see
// golang/go#26643).
func (s *SSH) newSession(ctx context.Context) (*ssh.Session, *sshConn, func(), error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, nil, fmt.Errorf("remote: %s: waiting for a free session (%d in use): %w", s.name, cap(s.sem), ctx.Err())
	case <-s.life.Done():
		return nil, nil, nil, fmt.Errorf("remote: %s: %w", s.name, ErrClosed)
	}
	var once sync.Once
	release := func() { once.Do(func() { <-s.sem }) }
	refused := 0
	for {
		c, err := s.acquire(ctx)
		if err != nil {
			release()
			return nil, nil, nil, err
		}
		type result struct {
			sess *ssh.Session
			err  error
		}
		ch := make(chan result, 1)
		go func() {
			sess, err := c.client.NewSession()
			ch <- result{sess, err}
		}()
		select {
		case r := <-ch:
			var oce *ssh.OpenChannelError
			switch {
			case r.err == nil:
				return r.sess, c, release, nil
			case errors.As(r.err, &oce) && oce.Reason == ssh.ConnectionFailed && refused < maxRefusedOpens:
				// sshd's answer at MaxSessions ("open failed"): a session
				// we closed may still count on its side until its command
				// exits, or the server allows fewer than we assume. Wait
				// for one to end.
				refused++
				t := time.NewTimer(time.Duration(refused) * 50 * time.Millisecond)
				select {
				case <-t.C:
					continue
				case <-ctx.Done():
					t.Stop()
					release()
					return nil, nil, nil, fmt.Errorf("remote: %s: opening session: %w (%w)", s.name, ctx.Err(), r.err)
				}
			case errors.As(r.err, &oce):
				release()
				return nil, nil, nil, fmt.Errorf("remote: %s: opening session: %w", s.name, r.err)
			}
			// The transport is broken; nothing ran. Redial and retry.
			s.drop(c, fmt.Errorf("opening session: %w", r.err))
		case <-ctx.Done():
			// Leave the pending NewSession behind; its slot frees when it
			// returns (at the latest when the connection is closed).
			go func() {
				if r := <-ch; r.sess != nil {
					r.sess.Close()
				}
				release()
			}()
			return nil, nil, nil, fmt.Errorf("remote: %s: opening session: %w", s.name, ctx.Err())
		}
	}
}

// Run runs cmd in a session without a PTY; see Host.Run. stdin is copied
// until it reaches EOF (Run waits for that copy). At ctx end the
// session is closed (without waiting for that to finish: a frozen peer may
// never answer) and Run returns an error wrapping ctx.Err(). The remote
// command then gets SIGPIPE on its next write; wrap it in `timeout` when it
// must die promptly.
func (s *SSH) Run(ctx context.Context, cmd string, stdin io.Reader) (Result, error) {
	sess, c, release, err := s.newSession(ctx)
	if err != nil {
		return Result{}, err
	}
	var stdout, stderr bytes.Buffer
	sess.Stdout, sess.Stderr = &stdout, &stderr
	if stdin != nil {
		sess.Stdin = stdin
	}
	if err := sess.Start(cmd); err != nil {
		closeSession(sess)
		release()
		return Result{}, s.startError(c, err)
	}
	done := make(chan error, 1)
	go func() {
		err := sess.Wait()
		release()
		done <- err
	}()
	select {
	case err := <-done:
		res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
		err = s.waitError(c, err, nil, res.Stderr)
		var ee *ExitError
		if errors.As(err, &ee) {
			res.ExitCode = ee.Code
		}
		return res, err
	case <-ctx.Done():
		closeSession(sess)
		return Result{}, fmt.Errorf("remote: %s: command stopped: %w", s.name, ctx.Err())
	}
}

// Start starts cmd in a session without a PTY; see Host.Start. The
// session holds one of the MaxSessions slots until the server closes it.
// Close (or ctx's end) asks the server to kill the command's process group
// (SIGKILL) before closing the session; on a server that does not honour
// the request (OpenSSH before 7.9) a command that neither reads nor writes
// keeps its slot (and its server-side session) until it exits.
func (s *SSH) Start(ctx context.Context, cmd string) (Process, error) {
	p, _, err := s.start(ctx, cmd, false)
	return p, err
}

// start is Start, with the command's stdin when withStdin (StartInput).
func (s *SSH) start(ctx context.Context, cmd string, withStdin bool) (Process, io.WriteCloser, error) {
	sess, c, release, err := s.newSession(ctx)
	if err != nil {
		return nil, nil, err
	}
	var stdin io.WriteCloser
	if withStdin {
		stdin, err = sess.StdinPipe()
	}
	var stdout io.Reader
	if err == nil {
		stdout, err = sess.StdoutPipe()
	}
	if err == nil {
		var stderr io.Reader
		if stderr, err = sess.StderrPipe(); err == nil {
			err = sess.Start(cmd)
			if err == nil {
				p := &sshProc{s: s, conn: c, sess: sess, stdout: stdout, stderrTail: newTailBuffer(stderrTailBytes), done: make(chan struct{})}
				p.stderr = io.TeeReader(stderr, p.stderrTail)
				stopOnCtx := context.AfterFunc(ctx, func() { p.stop(ctx.Err()) })
				go func() {
					err := sess.Wait()
					stopOnCtx()
					release()
					p.finish(err)
				}()
				return p, stdin, nil
			}
		}
	}
	closeSession(sess)
	release()
	return nil, nil, s.startError(c, err)
}

// closeSession closes sess without waiting: on a frozen connection Close
// blocks until the connection is closed.
func closeSession(sess *ssh.Session) { go sess.Close() }

// startError classifies a failed session start (exec request).
func (s *SSH) startError(c *sshConn, err error) error {
	if c.isDead() || errors.Is(err, io.EOF) {
		return s.disconnected(c, err)
	}
	return fmt.Errorf("remote: %s: starting command: %w", s.name, err)
}

// waitError classifies Session.Wait's result. stopped is why we closed the
// session ourselves (nil if we did not).
func (s *SSH) waitError(c *sshConn, err error, stopped error, stderr []byte) error {
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return nil
	case stopped != nil:
		// Checked before the exit status: after we close the session the
		// command may still report SIGPIPE or SIGHUP, which is our doing.
		return fmt.Errorf("remote: %s: command stopped: %w", s.name, stopped)
	case errors.As(err, &ee):
		if ee.Signal() != "" {
			return &ExitError{Code: -1, Signal: ee.Signal(), Stderr: tail(stderr)}
		}
		return &ExitError{Code: ee.ExitStatus(), Stderr: tail(stderr)}
	}
	var missing *ssh.ExitMissingError
	switch {
	case errors.As(err, &missing):
		// No exit status: OpenSSH always sends one, so the channel was torn
		// down with the connection.
		return s.disconnected(c, err)
	case errors.Is(err, io.EOF):
		// Exit status 0 arrived, but copying stdin failed: the command
		// exited without reading all of it.
		return nil
	}
	return fmt.Errorf("remote: %s: %w", s.name, err)
}

// disconnected wraps ErrDisconnected (or ErrClosed after Close) with why
// the connection ended.
func (s *SSH) disconnected(c *sshConn, err error) error {
	if c.isDead() {
		if errors.Is(c.cause, ErrClosed) {
			return fmt.Errorf("remote: %s: %w", s.name, ErrClosed)
		}
		err = c.cause
	}
	return fmt.Errorf("remote: %s: %w: %w", s.name, ErrDisconnected, err)
}

// sshProc is a command started by SSH.Start.
type sshProc struct {
	s          *SSH
	conn       *sshConn
	sess       *ssh.Session
	stdout     io.Reader
	stderr     io.Reader
	stderrTail *tailBuffer

	mu      sync.Mutex
	stopped error // why we closed the session; nil if it ended by itself
	err     error // Wait's result, valid once done is closed
	done    chan struct{}
}

func (p *sshProc) Stdout() io.Reader { return p.stdout }
func (p *sshProc) Stderr() io.Reader { return p.stderr }

// Wait waits for the command to end; see Process.Wait. An *ExitError
// holds the tail of the stderr read through Stderr() when Wait returns: read
// it to EOF first for the whole tail.
func (p *sshProc) Wait() error {
	<-p.done
	return withStderrTail(p.err, p.stderrTail)
}

// Close asks the server to SIGKILL the command's process group and closes
// the session (without waiting for the server); Wait then returns an error
// wrapping ErrClosed unless the command had already ended.
func (p *sshProc) Close() error {
	p.stop(ErrClosed)
	return nil
}

func (p *sshProc) stop(why error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	if p.stopped == nil {
		p.stopped = why
		killSession(p.sess)
	}
}

// killSession sends a "signal" request for SIGKILL (RFC 4254 6.9), then
// closes sess, without waiting: both writes can block on a frozen
// connection. Closing alone leaves a command of a session without a PTY
// running on an OpenSSH server until its next write fails (SIGPIPE): a
// command that stalls (blocked in a driver, sleeping) keeps its process
// and its server-side session slot. OpenSSH ≥ 7.9 answers the request
// with killpg on the session's process group (the login shell and what
// it runs); an older server, or one that refuses signals, ignores it, and
// the error, which then says nothing useful, is dropped.
func killSession(sess *ssh.Session) {
	go func() {
		_ = sess.Signal(ssh.SIGKILL)
		sess.Close()
	}()
}

func (p *sshProc) finish(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = p.s.waitError(p.conn, err, p.stopped, nil) // Wait adds the stderr tail
	close(p.done)
}
