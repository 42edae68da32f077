package follow

// The Follower's agent path (Options.Agent): `flightdeck agent follow` in
// tail's place, whose stream (StreamFile's) is read like tail's; and what
// watches one run besides its stream (the agent's arrival while tail runs,
// CheckLazy's timer, the agent's silence).

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// agentSilence is how long an agent run may send nothing (it sends a
// keepalive every 2 s) before it is taken for lost and restarted.
const agentSilence = 10 * time.Second

// agentState is what the Follower knows of Options.Agent.
type agentState struct {
	ready  chan struct{} // closed when the first AgentCommand returned
	err    error         // its error; read only after ready is closed
	broken bool          // an agent run failed to start: tail until that run ends
}

// waitAgent asks Options.Agent once in the background (AgentCommand waits
// for the host's install to settle) and returns the function that stops
// the asking and waits for it.
func (f *Follower) waitAgent(ctx context.Context) func() {
	f.agent.ready = make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := f.opts.Agent.AgentCommand(wctx, "agent", "follow", "--help")
		f.agent.err = err
		close(f.agent.ready)
	}()
	return func() {
		cancel()
		<-done
	}
}

// agentUsable says whether this start runs the agent: it is settled and
// usable now (the first start waits AgentWait for it to settle). An
// agent that was not usable is asked again at every start.
func (f *Follower) agentUsable(ctx context.Context, first bool) bool {
	if f.opts.Agent == nil || f.agent.broken {
		return false
	}
	if first {
		t := time.NewTimer(f.opts.AgentWait)
		select {
		case <-f.agent.ready:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	select {
	case <-f.agent.ready:
	default:
		return false
	}
	_, err := f.opts.Agent.AgentCommand(ctx, "agent", "follow", "--help") // settled: answers at once
	return err == nil
}

// agentCommand is the command line of `flightdeck agent follow` from the
// current offset, with the delivered anchor for the agent's first check.
func (f *Follower) agentCommand(ctx context.Context) (string, error) {
	args := []string{"agent", "follow", "--marker", string(f.marker), "--offset", strconv.FormatInt(f.Offset(), 10)}
	if len(f.anchor) > 0 {
		args = append(args, "--anchor", hex.EncodeToString(f.anchor))
	}
	args = append(args, "--", f.path)
	return f.opts.Agent.AgentCommand(ctx, args...)
}

// agentEnded marks the agent broken when its run ended without a byte
// after the launch line (the launcher refused it, an agent without
// `follow`, a stream that did not start with the launch line), unless the
// connection was lost: the next start uses tail.
func (f *Follower) agentEnded(l *launchLine, err error) {
	if l.after.Load() == 0 && !errors.Is(err, remote.ErrDisconnected) {
		f.agent.broken = true
	}
}

// errNoLaunch: the agent's stdout did not begin with its launch line.
var errNoLaunch = errors.New("agent follow: the stream does not start with the launch line")

// launchPrefix is how the launcher's first line, {"t":"launch","pid":N},
// begins (remote.Agent).
var launchPrefix = []byte(`{"t":"launch"`)

// launchLine passes its stream on without the first line, which must be
// the launch line.
type launchLine struct {
	r     io.Reader
	done  bool   // the launch line is consumed
	line  []byte // it so far
	after atomic.Int64
}

func (l *launchLine) Read(p []byte) (int, error) {
	for !l.done {
		n, err := l.r.Read(p)
		i := bytes.IndexByte(p[:n], '\n')
		if i < 0 {
			l.line = append(l.line, p[:n]...)
			if len(l.line) > 256 {
				return 0, fmt.Errorf("%w: %q…", errNoLaunch, sanitize.String(string(l.line[:64])))
			}
			if err != nil {
				return 0, err
			}
			continue
		}
		l.line = append(l.line, p[:i]...)
		if !bytes.HasPrefix(l.line, launchPrefix) || len(l.line) > 256 {
			return 0, fmt.Errorf("%w: %q", errNoLaunch, sanitize.String(string(l.line[:min(len(l.line), 64)])))
		}
		l.done = true
		rest := copy(p, p[i+1:n])
		l.after.Add(int64(rest))
		if rest > 0 || err != nil {
			return rest, err
		}
	}
	n, err := l.r.Read(p)
	l.after.Add(int64(n))
	return n, err
}

// runWatch is what one run waits for besides its stream.
type runWatch struct {
	f          *Follower
	agentReady <-chan struct{}  // tail's run: the agent settled (nil: not waited for)
	lazyC      <-chan time.Time // CheckLazy: a check is due
	lazyT      *time.Timer
	lastLazy   time.Time
	silentC    <-chan time.Time // the agent's run: nothing heard for agentSilence
	silentT    *time.Timer
}

func (f *Follower) newRunWatch(useAgent, lazy bool, started time.Time) *runWatch {
	w := &runWatch{f: f, lastLazy: started}
	switch {
	case useAgent:
		w.silentT = time.NewTimer(agentSilence)
		w.silentC = w.silentT.C
	case f.opts.Agent != nil && !f.agent.broken && !f.opts.InProcess:
		select {
		case <-f.agent.ready: // settled without a usable agent: asked at the next start
		default:
			w.agentReady = f.agent.ready
		}
	}
	return w
}

// heard: the stream gave data.
func (w *runWatch) heard() {
	if w.silentT != nil {
		w.silentT.Reset(agentSilence)
	}
}

// delivered: lines were delivered unchecked (CheckLazy); a check is due
// LazyInterval after the last one.
func (w *runWatch) delivered() {
	if w.lazyC != nil {
		return
	}
	w.lazyT = time.NewTimer(max(0, time.Until(w.lastLazy.Add(w.f.opts.LazyInterval))))
	w.lazyC = w.lazyT.C
}

// agentCame says whether the agent that settled is usable.
func (w *runWatch) agentCame() bool {
	w.agentReady = nil
	return w.f.agent.err == nil
}

func (w *runWatch) stop() {
	if w.lazyT != nil {
		w.lazyT.Stop()
	}
	if w.silentT != nil {
		w.silentT.Stop()
	}
}

// startInProcess runs StreamFile from the current offset in a goroutine,
// as the agent would run it on the host (Options.InProcess).
func (f *Follower) startInProcess(ctx context.Context) remote.Process {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	p := &inProcess{stdout: pr, cancel: cancel, done: make(chan struct{})}
	o := StreamOptions{Path: f.path, Offset: f.Offset(), Anchor: bytes.Clone(f.anchor), Marker: f.marker}
	go func() {
		defer close(p.done)
		p.err = StreamFile(ctx, pw, o)
		pw.CloseWithError(p.err) // nil: EOF
	}()
	return p
}

// inProcess is StreamFile in a goroutine as a remote.Process.
type inProcess struct {
	stdout *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
	err    error // StreamFile's, after done
}

func (p *inProcess) Stdout() io.Reader { return p.stdout }
func (p *inProcess) Stderr() io.Reader { return strings.NewReader("") }

func (p *inProcess) Wait() error {
	<-p.done
	return p.err
}

func (p *inProcess) Close() error {
	p.cancel()
	p.stdout.CloseWithError(io.ErrClosedPipe) // a write blocked on the pipe fails
	<-p.done
	return nil
}
