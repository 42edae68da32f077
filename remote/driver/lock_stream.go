package driver

// Run's loop when the Lock has an Agent: the heartbeat (driving) or the
// read of the lock (watching) rides one long-lived stream, and the
// compare-and-swap state machine of lock.go is fed from its lines. The
// one-off operations (Acquire, Release, a take-over, Confirm, a claim
// when the lock changed hands) still run lockScript.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// agentRetry is how long Run waits before it asks the Agent again after
// it said the host has none (remote.ErrNoAgent): an install retried in
// the background may come.
const agentRetry = time.Minute

// maxStreamBackoff caps the wait before a stream that failed is started
// again (doubling from one heartbeat); lockScript beats meanwhile.
const maxStreamBackoff = time.Minute

// maxLineBytes bounds one line of a stream (a lock line is about 600
// bytes: the content is at most MaxFileBytes+1 bytes, base64).
const maxLineBytes = 64 << 10

// streamKind is what runs on the host for a stream.
type streamKind uint8

const (
	agentStream streamKind = iota // `flightdeck agent lock` (ServeLock)
	loopStream                    // loopScript: a shell loop of builtins
)

func (k streamKind) String() string {
	if k == agentStream {
		return "the agent's lock stream"
	}
	return "the lock's shell loop"
}

// lockStream is one stream Run keeps. Its fields are Run's, except those
// the line handlers set under l.op.
type lockStream struct {
	gen     int
	kind    streamKind
	drive   bool   // it heartbeats our lock; else it reads it
	want    string // drive: the version the host side compares with next; "" once it ended
	started int64  // mono() just before the start: host-side times count from it
	lines   int    // lines handled
	quiet   int    // the shell loop: looks in a row that found the holder's file untouched
	over    bool   // it ended, or it must be replaced
	cancel  context.CancelFunc
}

// streamMsg is a line of a stream, or its end (line nil, err why).
type streamMsg struct {
	gen  int
	line []byte
	at   int64 // mono() when the operation the line answers was asked for
	err  error
}

// silenceLimit is how long a stream may stay silent before Run takes it
// for dead or frozen (about two heartbeats; the first line gets time for
// the SSH session and the agent's start too, within the lease).
func silenceLimit(every, stale time.Duration, first bool) time.Duration {
	d := 2*every + every/2
	if first {
		d += min(5*time.Second, stale/4)
	}
	return d
}

// kickCh is the channel that wakes Run's stream loop when an operation
// outside the stream (Confirm's heartbeat) changed the lock's version.
func (l *Lock) kickCh() chan struct{} {
	l.kickOnce.Do(func() { l.kick = make(chan struct{}, 1) })
	return l.kick
}

// poke wakes Run's stream loop, if one runs.
func (l *Lock) poke() {
	select {
	case l.kickCh() <- struct{}{}:
	default:
	}
}

// runStreams is Run's loop with an Agent: a stream while one can run (the
// agent's, or the shell loop while the host has no agent), lockScript
// beats while none does. It returns Release's error when ctx ends.
func (l *Lock) runStreams(ctx context.Context, every time.Duration) error {
	_, stale, _ := l.periods()
	msgs := make(chan streamMsg, 8)
	probe := make(chan error, 1)
	var (
		cur        *lockStream
		gen        int
		agentOK    bool  // AgentCommand answered with a command
		probing    bool  // an AgentCommand call is under way
		probeAfter int64 // mono(): ask the Agent again after this
		startAfter int64 // mono(): start the next stream after this
		fails      int   // streams in a row that failed
	)
	tick := time.NewTicker(every)
	defer tick.Stop()
	silence := time.NewTimer(time.Hour)
	silence.Stop()
	restart := time.NewTimer(time.Hour)
	restart.Stop()
	stop := func() {
		if cur != nil {
			cur.cancel()
			cur = nil
		}
		silence.Stop()
	}
	defer stop()
	ask := func() {
		probing = true
		go func() {
			_, err := l.Agent.AgentCommand(ctx, "agent", "lock")
			probe <- err
		}()
	}
	ask()
	for {
		if cur == nil && ctx.Err() == nil {
			if wait := startAfter - mono(); wait > 0 {
				restart.Reset(time.Duration(wait))
			} else if s := l.openStream(ctx, agentOK, gen+1, msgs); s != nil {
				gen, cur = s.gen, s
				silence.Reset(silenceLimit(every, stale, true))
				startAfter = mono() + int64(every)
			}
		}
		select {
		case <-ctx.Done():
			stop()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			return l.Release(rctx)
		case err := <-probe:
			probing = false
			switch {
			case err == nil:
				agentOK, fails = true, 0
				if cur != nil && cur.kind == loopStream {
					stop() // the agent is here: replace the loop
					startAfter = 0
				}
			case errors.Is(err, remote.ErrNoAgent):
				agentOK = false
				probeAfter = mono() + int64(agentRetry)
			}
		case m := <-msgs:
			if cur == nil || m.gen != cur.gen {
				continue
			}
			if m.line == nil {
				if cur.lines == 0 || (m.err != nil && !cur.over) {
					fails++
					startAfter = mono() + int64(min(every<<min(fails, 16), maxStreamBackoff))
				} else {
					fails = 0
				}
				stop()
				continue
			}
			l.streamLine(ctx, cur, m.line, m.at)
			silence.Reset(silenceLimit(every, stale, false))
		case <-silence.C:
			if cur == nil {
				continue
			}
			l.silent(cur, silenceLimit(every, stale, cur.lines == 0))
			stop()
			fails++
			startAfter = mono() + int64(min(every<<min(fails, 16), maxStreamBackoff))
			l.beat(ctx) // today's beat, at once: the role stays right
		case <-restart.C:
		case <-tick.C:
			if cur == nil {
				l.beat(ctx)
			}
			if !probing && !agentOK && mono() > probeAfter {
				ask()
			}
		case <-l.kickCh():
		}
		if cur != nil && !l.fits(cur) {
			stop()
			startAfter = 0
		}
	}
}

// fits reports whether stream s still does what the lock needs: it
// heartbeats the version we hold, or it reads while we hold none.
func (l *Lock) fits(s *lockStream) bool {
	l.op.Lock()
	defer l.op.Unlock()
	switch {
	case s.over:
		return false
	case s.drive:
		return l.ver != "" && l.ver == s.want
	}
	return l.ver == ""
}

// silent records that stream s sent nothing for d, like a failed
// exchange, unless an error is shown already (the host is unreachable:
// the script beat that follows says so, and a stream restarted in vain
// must not make the two messages take turns on the screen).
func (l *Lock) silent(s *lockStream, d time.Duration) {
	l.op.Lock()
	defer l.op.Unlock()
	if l.State().Err != "" {
		return
	}
	l.fail(fmt.Errorf("driver lock on %s: %s sent nothing for %s", l.Host.Name(), s.kind, d))
}

// openStream starts the stream the lock needs now (the agent's when
// agentOK, else the shell loop), or returns nil when it cannot (the lock
// was never set up: lockScript beats until it is). Its lines and end go
// to out, tagged gen.
func (l *Lock) openStream(ctx context.Context, agentOK bool, gen int, out chan<- streamMsg) *lockStream {
	cmd, s, err := l.streamCommand(ctx, agentOK)
	if err != nil || cmd == "" {
		return nil
	}
	s.gen = gen
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.started = mono()
	every, _, _ := l.periods()
	go l.readStream(sctx, cmd, s.kind, gen, every, s.started, out)
	return s
}

// streamCommand builds the command line of the stream the lock needs now.
func (l *Lock) streamCommand(ctx context.Context, agentOK bool) (string, *lockStream, error) {
	l.op.Lock()
	defer l.op.Unlock()
	if !l.ready {
		return "", nil, nil
	}
	every, _, err := l.periods()
	if err != nil {
		return "", nil, err
	}
	mx := l.mutex
	if mx == "" {
		mx = mutexFlock
	}
	s := &lockStream{drive: l.ver != "", want: l.ver}
	if !agentOK {
		s.kind = loopStream
		cmd, err := l.loopCommand(s, every)
		return cmd, s, err
	}
	if _, ok := l.Host.(remote.InputStarter); !ok {
		return "", nil, nil // no stdin to say we are alive: lockScript beats
	}
	args := []string{"agent", "lock", "--file", l.file, "--mutex", mx}
	if s.drive {
		content, err := l.content()
		if err != nil {
			return "", nil, err
		}
		args = append(args, "--put", string(content), "--want", s.want)
	}
	actx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cmd, err := l.Agent.AgentCommand(actx, args...)
	return cmd, s, err
}

// readStream runs cmd on the host, writes a line to its stdin a heartbeat
// after each answer (each line asks for one operation: no line, no
// heartbeat), and sends its stdout's lines to out (the agent's launch
// line left out), each dated by when its operation was asked for (the
// first by started), then its end.
func (l *Lock) readStream(ctx context.Context, cmd string, kind streamKind, gen int, every time.Duration, started int64, out chan<- streamMsg) {
	send := func(m streamMsg) bool {
		select {
		case out <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	p, in, err := l.Host.(remote.InputStarter).StartInput(ctx, cmd)
	if err != nil {
		send(streamMsg{gen: gen, err: err})
		return
	}
	defer p.Close()
	defer in.Close()
	var asked atomic.Int64
	asked.Store(started)
	answered := make(chan struct{}, 1)
	go ping(ctx, in, every, &asked, answered)
	go io.Copy(io.Discard, p.Stderr()) // its tail is kept for Wait's error
	sc := bufio.NewScanner(p.Stdout())
	sc.Buffer(make([]byte, 0, 4096), maxLineBytes)
	first := kind == agentStream
	for sc.Scan() {
		b := sc.Bytes()
		if first && bytes.HasPrefix(b, []byte(`{"t":"launch"`)) {
			first = false
			continue
		}
		first = false
		if !send(streamMsg{gen: gen, line: bytes.Clone(b), at: asked.Load()}) {
			return
		}
		select {
		case answered <- struct{}{}:
		default:
		}
	}
	err = sc.Err()
	if werr := p.Wait(); err == nil {
		err = werr
	}
	var ee *remote.ExitError
	if errors.As(err, &ee) {
		if msg := lastLine(ee.Stderr); msg != "" {
			err = fmt.Errorf("%s: %w", msg, err)
		}
	}
	if err == nil {
		err = io.EOF
	}
	send(streamMsg{gen: gen, err: err})
}

// ping writes a line to in a heartbeat after each answer, storing in
// asked when (mono()) it asks, until ctx ends or a write fails: one
// operation is outstanding at a time. It runs on its own: a slow host
// operation under l.op never delays the heartbeat.
func ping(ctx context.Context, in io.Writer, every time.Duration, asked *atomic.Int64, answered <-chan struct{}) {
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-answered:
		}
		t.Reset(every)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		asked.Store(mono())
		if _, err := in.Write([]byte{'\n'}); err != nil {
			return
		}
	}
}

// streamLine feeds one line of stream s to the state machine.
func (l *Lock) streamLine(ctx context.Context, s *lockStream, line []byte, at int64) {
	l.op.Lock()
	defer l.op.Unlock()
	s.lines++
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if s.kind == loopStream {
		l.loopLine(ctx, s, line, at)
		return
	}
	snap, ms, opErr, err := parseLockLine(line)
	switch {
	case err != nil:
		s.over = true
		l.fail(fmt.Errorf("driver lock on %s: %s: %w", l.Host.Name(), s.kind, err))
		return
	case opErr != "":
		l.fail(fmt.Errorf("driver lock on %s: %s", l.Host.Name(), sanitize.String(strings.TrimSpace(opErr))))
		return
	}
	if !s.drive {
		if l.ver == "" {
			l.claim(ctx, &snap, false)
		}
		return
	}
	if !snap.Wrote {
		s.over = true // the agent ends after a conflict
	}
	if l.ver == "" || l.ver != s.want {
		// The lock moved outside the stream (Confirm, Release): fits
		// replaces the stream; its line is no news.
		if snap.Wrote {
			s.want = snap.Version
		}
		return
	}
	if !snap.Wrote {
		l.claim(ctx, &snap, false)
		return
	}
	s.want = snap.Version
	l.wroteAt(max(at, s.started+ms*int64(time.Millisecond)), snap.Version)
}

// wroteAt records a heartbeat written by a stream: the file's version is
// now ver, written no earlier than at (mono()). l.op is held.
func (l *Lock) wroteAt(at int64, ver string) {
	if ver != "" {
		l.ver = ver
	}
	if at > l.wrote.Load() {
		l.wrote.Store(at)
	}
	note := ""
	if l.State().Role == event.RoleUnsure {
		note = "the host answers again: still driving"
	}
	l.driving.Store(true)
	l.set(event.DriverState{Role: event.RoleDriving, Holder: l.me, Note: note})
}
