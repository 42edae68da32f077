package agent

// One agent session: the Runner starts the installed agent on the host,
// reads its lines and stderr, publishes its events and says how the
// session ended (exited, fell silent, refused by the loader, lost with its
// connection).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// lineMsg is a decoded line and when it arrived.
type lineMsg struct {
	m   Message
	err error
	at  time.Time
}

// agent runs the installed agent once and says how it ended.
func (s *runState) agent(ctx context.Context, inst installed, conn *atomic.Value) outcome {
	c := s.c
	// One session checks the agent and execs it (runScript): what runs is
	// what was checked.
	args := []string{"-c", runScript, "flightdeck-agent", c.cacheDir, inst.key, inst.sum,
		"agent", "--interval", strconv.FormatInt(c.interval.Milliseconds(), 10) + "ms"}
	if s.r.PCIe {
		args = append(args, "--pcie")
	}
	cmd, err := remote.Command("sh", args...)
	if err != nil {
		return outcome{reason: "agent path on host: " + err.Error()}
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	proc, err := s.r.Host.Start(actx, cmd)
	if err != nil {
		if retryable(ctx, err) {
			s.stale("connection to host lost; restarting the agent")
			return outcome{}
		}
		return outcome{reason: "start agent: " + err.Error(), retry: true}
	}

	lines := make(chan lineMsg, 16)
	done := make(chan struct{})
	stopReading := sync.OnceFunc(func() { close(done) })
	exited := make(chan error, 1)
	stderr := newTail(4 << 10)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		rd := NewReader(proc.Stdout())
		for {
			m, err := rd.Next()
			if err != nil && !errors.As(err, new(*LineError)) {
				return // EOF or the stream broke
			}
			select {
			case lines <- lineMsg{m: m, err: err, at: c.now()}:
			case <-done:
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		if e := proc.Stderr(); e != nil {
			_, _ = io.Copy(stderr, e)
		}
	}()
	go func() {
		wg.Wait()
		exited <- proc.Wait()
	}()
	waited := false
	defer func() {
		stopReading()
		proc.Close()
		// A stalled agent may keep its session (and the readers) until it
		// exits: wait for it only when Run is ending, not before the
		// fallback starts. The goroutines end with the session.
		if !waited && ctx.Err() != nil {
			t := time.NewTimer(5 * time.Second)
			select {
			case <-exited:
			case <-t.C:
			}
			t.Stop()
		}
	}()

	a := &agentStream{s: s, inst: inst}
	staleWindow := max(time.Duration(c.staleAfter)*c.interval, c.minStale)
	timer := time.NewTimer(max(c.startTimeout, staleWindow))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return a.end("", false)
		case l := <-lines:
			if reason, alive := a.handle(l); reason != "" {
				return a.end(reason, false)
			} else if alive {
				// NVML is open once the hello is out: from then on the
				// agent writes a line at least every 2 intervals.
				timer.Reset(staleWindow)
			}
		case <-timer.C:
			// Silence may be the network's (a stall shorter than the SSH
			// keepalive's detection): ask the host before blaming the
			// agent.
			if !s.hostAnswers(ctx, conn) {
				if ctx.Err() != nil {
					return a.end("", false)
				}
				return a.lost()
			}
			what := fmt.Sprintf("agent sent nothing for %d intervals of %v", c.staleAfter, c.interval)
			if c.minStale > time.Duration(c.staleAfter)*c.interval {
				what = fmt.Sprintf("agent sent nothing for %v", c.minStale)
			}
			if !a.hello {
				what = fmt.Sprintf("agent sent no hello within %v", max(c.startTimeout, staleWindow))
			}
			proc.Close()
			s.kill(ctx, a.pid, false)
			// The killed agent's session ends with it: wait for that
			// (briefly: an agent whose pid never came may keep its
			// session on a server that refuses signals), so that its
			// session is gone before another starts. Its lines are no
			// longer read.
			stopReading()
			waited = waitFor(exited, closeWait)
			return a.end(a.withNotes(what, stderr), true)
		case err := <-exited:
			waited = true
			for drained := false; !drained; {
				select {
				case l := <-lines:
					if reason, _ := a.handle(l); reason != "" {
						return a.end(reason, false)
					}
				default:
					drained = true
				}
			}
			if ctx.Err() != nil {
				return a.end("", false)
			}
			if errors.Is(err, remote.ErrDisconnected) {
				return a.lost()
			}
			ee, exitedWithCode := errors.AsType[*remote.ExitError](err)
			if exitedWithCode && !a.hello &&
				(ee.Code == exitChanged || ee.Code == exitRefused || ee.Code == exitNoProcFD) {
				// runScript refused to start it: a refused cache stays
				// refused, a host without /proc/self/fd stays so; an
				// agent changed since its check (another cockpit's
				// upload) is installed again at the retry.
				return a.end("agent not started: "+lastLine(stderr.bytes(), ee.Stderr), ee.Code == exitChanged)
			}
			if l := loaderError(stderr.bytes()); exitedWithCode && !a.hello && l != "" {
				// The dynamic loader refused the binary (a glibc older
				// than the one it was built against): every retry would
				// meet the same.
				return a.end("agent cannot run on the host: "+l, false)
			}
			what := "agent exited"
			if err != nil {
				what += ": " + exitText(err)
			}
			return a.end(a.withNotes(what, stderr), true)
		}
	}
}

// end is the session's outcome: reason ("" for none), whether a retry
// may succeed, and how long it sampled.
func (a *agentStream) end(reason string, retry bool) outcome {
	o := outcome{reason: reason, retry: retry, progressed: a.progressed}
	if a.progressed {
		o.sampledFor = a.s.c.now().Sub(a.firstSample)
	}
	return o
}

// lost ends a session whose connection was lost: not the agent's fault.
// The agent may still run on the host (blocked on its sshd): it is killed
// once the host answers again (killOrphan).
func (a *agentStream) lost() outcome {
	if a.pid > 1 {
		a.s.orphan = a.pid
	}
	a.s.stale("connection to host lost; restarting the agent")
	return a.end("", false)
}

// loaderMarks are what the dynamic loader writes when it cannot run a
// binary: "./flightdeck: /lib/x86_64-linux-gnu/libc.so.6: version
// `GLIBC_2.34' not found (required by ./flightdeck)", or "error while
// loading shared libraries: …".
var loaderMarks = []string{"GLIBC_", "version `GLIBC", "not found (required by", "error while loading shared libraries"}

// loaderError returns the last line of stderr that the dynamic loader
// wrote (sanitised, cut to 200 bytes), or "".
func loaderError(stderr []byte) string {
	lines := strings.Split(string(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		for _, m := range loaderMarks {
			if strings.Contains(lines[i], m) {
				return lastLine([]byte(lines[i]))
			}
		}
	}
	return ""
}

// agentStream is the state of one agent session.
type agentStream struct {
	s           *runState
	inst        installed
	hello       bool
	progressed  bool
	pid         int       // the agent's process id on the host, from the launch line; 0 before
	firstSample time.Time // when the first sample arrived
	lastErr     string    // the last line that could not be read
}

// handle publishes one line's event. It returns a fallback reason when the
// agent cannot be used, and whether the line shows a live agent: any
// protocol line from the hello on (a sample, a stale report, a heartbeat,
// a line of a newer protocol), not an unreadable one.
func (a *agentStream) handle(l lineMsg) (reason string, alive bool) {
	s := a.s
	if l.err != nil {
		a.lastErr = l.err.Error()
		if ve, ok := errors.AsType[*VersionError](l.err); ok {
			return ve.Error(), false
		}
		return "", false
	}
	m := l.m
	switch m.Kind {
	case KindUnknown:
		return "", a.hello
	case KindLaunch:
		if a.pid == 0 && !a.hello {
			a.pid = m.Launch.PID
		}
		return "", false
	case KindHello:
		if !a.hello {
			a.hello = true
			h := m.Hello
			detail := fmt.Sprintf("agent %s, NVML %s, driver %s (%s)", h.Version, h.NVML, h.Driver, a.inst.how)
			if h.Simulated {
				// The simulated host's fake NVML: never pass its GPUs off
				// as real ones.
				detail = "simulated NVML, " + detail
			}
			s.emit(l.at, event.GPUSource{Mode: event.SourceAgent, Detail: cut(sanitize.String(detail), 300)})
		}
		return "", true
	case KindUnavailable:
		return "NVML unavailable on the host: " + m.Unavailable.Reason, false
	}
	if !a.hello {
		return "agent sent a " + m.Kind.String() + " line before its hello", false
	}
	switch p := m.Payload.(type) {
	case nil: // a heartbeat (KindAlive)
	case event.GPUSample:
		p.At = l.at
		s.emit(l.at, p)
		s.lastSample = l.at
		if !a.progressed {
			a.firstSample = l.at
		}
		a.progressed = true
	case event.GPUStale:
		// Alive, stale: NVML is blocked on the host. The screen shows it;
		// the agent stays.
		if !p.LastSample.IsZero() && !m.At.IsZero() {
			p.LastSample = l.at.Add(p.LastSample.Sub(m.At))
		}
		s.emit(l.at, p)
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState,
		event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSource, event.GitAction, event.GitMoved,
		event.GitStatus, event.JournalStatus, event.Key, event.KillStep, event.LogBench,
		event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset, event.Note,
		event.Prefill, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
		event.ServerFailure, event.ServerHealthy, event.ServerLaunched, event.ServerObserved,
		event.ServerReady, event.ServerStatus, event.Session, event.SpecDecode, event.Throughput,
		event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		s.emit(l.at, m.Payload)
	}
	return "", true
}

// withNotes adds the agent's last stderr line (why it exited: "version
// `GLIBC_2.34' not found") or its last unreadable line to a reason.
func (a *agentStream) withNotes(what string, stderr *tailWriter) string {
	if l := lastLine(stderr.bytes()); l != "" {
		return what + ": " + l
	}
	if a.lastErr != "" {
		return what + "; last unreadable line: " + cut(sanitize.String(a.lastErr), 200)
	}
	return what
}

// tailWriter keeps the last max bytes written to it; safe for concurrent
// use.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tailWriter { return &tailWriter{max: max} }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailWriter) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}
