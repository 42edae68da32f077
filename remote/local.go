package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"golang.org/x/sys/unix"
)

// Local is the Host for the machine flightdeck runs on (for example inside
// tmux on the GPU host itself). Each command runs as `sh -c CMD` in its own
// process group, so stopping it (ctx end, Process.Close, Local.Close) kills
// the whole group with SIGKILL; a process that left the group (setsid, the
// detached inference server) keeps running. Local is always Connected until
// Close.
type Local struct {
	hub *stateHub

	mu     sync.Mutex
	closed bool
	procs  map[*localProc]struct{}
}

var (
	_ Host   = (*Local)(nil)
	_ Dialer = (*Local)(nil)
)

// NewLocal returns a Host that runs commands on this machine.
func NewLocal() *Local {
	return &Local{
		hub:   newStateHub(event.ConnState{Host: "local", Conn: event.Connected}),
		procs: make(map[*localProc]struct{}),
	}
}

// Name returns "local".
func (l *Local) Name() string { return "local" }

// Watch reports Connected, then Closed after Close. See Host.Watch.
func (l *Local) Watch(ctx context.Context) <-chan event.ConnState { return l.hub.watch(ctx) }

// DialContext dials addr from this machine (net.Dialer).
func (l *Local) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Run runs `sh -c cmd` with stdin (nil: empty) and waits for it. See
// Host.Run. At ctx end the process group is killed and Run returns an error
// wrapping ctx.Err(). If the command exits but a background child keeps its
// stdout open, Run returns at most 1 s later with what was read.
func (l *Local) Run(ctx context.Context, cmd string, stdin io.Reader) (Result, error) {
	var stdout, stderr bytes.Buffer
	c := exec.Command("sh", "-c", cmd)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stdin, c.Stdout, c.Stderr = stdin, &stdout, &stderr
	c.WaitDelay = time.Second
	p := &localProc{cmd: c, done: make(chan struct{})}
	if err := l.start(ctx, p); err != nil {
		return Result{}, err
	}
	err := p.wait()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var ee *ExitError
	if errors.As(err, &ee) {
		res.ExitCode = ee.Code
		ee.Stderr = tail(res.Stderr)
	}
	return res, err
}

// Start starts `sh -c cmd` with stdin from /dev/null. See Host.Start.
func (l *Local) Start(ctx context.Context, cmd string) (Process, error) {
	p, _, err := l.startCmd(ctx, cmd, false)
	return p, err
}

// startCmd is Start, with the command's stdin when withStdin (StartInput).
func (l *Local) startCmd(ctx context.Context, cmd string, withStdin bool) (Process, io.WriteCloser, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("remote: local start: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, fmt.Errorf("remote: local start: %w", err)
	}
	var inR, inW *os.File
	if withStdin {
		if inR, inW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			return nil, nil, fmt.Errorf("remote: local start: %w", err)
		}
	}
	c := exec.Command("sh", "-c", cmd)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Our own pipes (not StdoutPipe): exec would close them in Wait while the
	// caller may still be reading.
	c.Stdout, c.Stderr = outW, errW
	if inR != nil {
		c.Stdin = inR
	}
	p := &localProc{cmd: c, done: make(chan struct{}), stdout: outR, stderrTail: newTailBuffer(stderrTailBytes), files: []*os.File{outR, errR}}
	p.stderr = io.TeeReader(errR, p.stderrTail)
	err = l.start(ctx, p)
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		return nil, nil, err
	}
	if inW == nil {
		return p, nil, nil
	}
	return p, inW, nil
}

// Close kills every running command's process group; later calls fail with
// ErrClosed. It is safe to call twice.
func (l *Local) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	procs := l.procs
	l.procs = nil
	l.mu.Unlock()
	for p := range procs {
		p.stop(ErrClosed)
	}
	l.hub.set(event.ConnState{Host: l.Name(), Conn: event.ConnClosed}, true)
	return nil
}

// start starts p.cmd, registers p, and arranges for ctx end to kill it.
func (l *Local) start(ctx context.Context, p *localProc) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remote: local: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("remote: local: %w", ErrClosed)
	}
	c := p.cmd
	if err := c.Start(); err != nil {
		return fmt.Errorf("remote: local start: %w", err)
	}
	l.procs[p] = struct{}{}
	stopOnCtx := context.AfterFunc(ctx, func() { p.stop(ctx.Err()) })
	go func() {
		err := c.Wait()
		stopOnCtx()
		p.finish(err)
		l.mu.Lock()
		delete(l.procs, p)
		l.mu.Unlock()
	}()
	return nil
}

// localProc is a running `sh -c` and its process group.
type localProc struct {
	cmd        *exec.Cmd
	stdout     io.Reader
	stderr     io.Reader
	stderrTail *tailBuffer // nil for Run, which keeps all of stderr
	files      []*os.File

	mu      sync.Mutex
	stopped error // why we killed it; nil if it ended by itself
	err     error // Wait's result, valid once done is closed
	done    chan struct{}
	closed  sync.Once
}

func (p *localProc) Stdout() io.Reader { return p.stdout }
func (p *localProc) Stderr() io.Reader { return p.stderr }

// Wait waits for the shell to exit. See Process.Wait. An *ExitError holds
// the tail of the stderr read through Stderr() when Wait returns: read it to
// EOF first for the whole tail.
func (p *localProc) Wait() error { return withStderrTail(p.wait(), p.stderrTail) }

func (p *localProc) wait() error {
	<-p.done
	return p.err
}

// Close kills the process group and closes the output pipes.
func (p *localProc) Close() error {
	p.closed.Do(func() {
		p.stop(ErrClosed)
		for _, f := range p.files {
			f.Close()
		}
	})
	return nil
}

// stop kills the process group unless the shell has already been reaped.
func (p *localProc) stop(why error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	if p.stopped == nil {
		p.stopped = why
	}
	// The group id is the shell's pid (Setpgid). The shell is not reaped
	// before done is closed, so the id cannot have been reused.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

func (p *localProc) finish(waitErr error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopped != nil:
		p.err = fmt.Errorf("remote: local command stopped: %w", p.stopped)
	case waitErr == nil || errors.Is(waitErr, exec.ErrWaitDelay):
		// ErrWaitDelay: the shell exited 0 but a background child held
		// stdout open; the command itself succeeded.
		p.err = nil
	default:
		p.err = localExitError(p.cmd.ProcessState, waitErr)
	}
	close(p.done)
}

// localExitError turns an exited shell's status into an *ExitError.
func localExitError(ps *os.ProcessState, waitErr error) error {
	if ps == nil {
		return fmt.Errorf("remote: local command: %w", waitErr)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &ExitError{Code: -1, Signal: signalName(ws.Signal())}
	}
	if code := ps.ExitCode(); code > 0 {
		return &ExitError{Code: code}
	}
	return fmt.Errorf("remote: local command: %w", waitErr)
}

// signalName names sig the way SSH exit-signal does: "KILL", "TERM".
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return strings.TrimPrefix(n, "SIG")
	}
	return fmt.Sprintf("%d", int(sig))
}
