package agent

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

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/internal/ctxwait"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Runner is the cockpit's side of the agent: it installs `flightdeck
// agent` on a host, runs it on one SSH session and publishes its events,
// or falls back to the nvidia-smi stream.
//
// Run publishes, in order:
//   - event.GPUSource{Mode: agent, Detail: "agent 0.8.0, NVML 12.550.54.15,
//     driver 550.54.15 (uploaded)"} once the agent said hello ("simulated
//     NVML, agent …" when it samples the simulated host's fake NVML), then
//     the agent's event.GPUSample, event.Xid, event.GPUFailure and event.GPUStale events,
//     stamped with this machine's clock when their line arrived (as the
//     nvidia-smi stream stamps its rows; the host's clock may be skewed).
//     The agent reports a read blocked in NVML with a event.GPUStale after 2
//     intervals and every interval after: the agent is alive and stays in
//     use (nvidia-smi would block on the same driver);
//   - event.GPUStale{Reason: "connection to host lost; restarting the
//     agent"} when the connection drops under the agent, or when the
//     agent fell silent and the host does not run a command (":") within
//     3 s either (a network stall shorter than the SSH keepalive's
//     detection is not the agent's fault); the agent is started again
//     once the host is back (Host.Start waits for the reconnection), and
//     the agent left behind (still running on the host when its sshd
//     hung) is killed first: `kill -s KILL PID`, when /proc/PID/cmdline
//     still is the agent's;
//   - event.GPUSource{Mode: nvidia-smi, Fallback: why} when the agent cannot
//     run, and then the nvidia-smi Fallback's events. For good when the
//     reason would stay: this build has no cgo, the host's
//     OS/architecture differs, the host has no NVIDIA driver
//     (libnvidia-ml.so.1 is neither in LD_LIBRARY_PATH, the usual
//     directories nor the loader's cache: nothing is uploaded), no
//     SHA-256 tool or mktemp, the agent cache is not the login user's,
//     is writable by its group or others, or the agent is a symbolic
//     link, the upload was refused (the host's exit status) or corrupted,
//     the host has no /proc/self/fd, the dynamic loader refused the agent
//     before its hello ("agent cannot run on the host: …: version
//     `GLIBC_2.34' not found (required by …)"), NVML is unavailable on
//     the host (the agent's own report), the agent speaks another
//     protocol;
//   - or, with "; retrying the agent in the background" after why, when
//     an install step timed out or failed without the host's answer
//     ("agent install check failed: … context deadline exceeded"), the
//     agent exited (why says how, "agent exited: killed by SIGTERM
//     (exit status 143)", with its last stderr line), wrote no line at
//     all (no sample, stale report or heartbeat) for StaleAfter intervals
//     or no hello within StartTimeout while the host still answered,
//     could not be started, or changed between its check and its start.
//     A silent agent's session is closed and its process killed (`kill
//     -s KILL PID` in a new session, PID from the launch line: OpenSSH
//     leaves a command running when its session closes); its session's
//     end is awaited for up to 5 s. The agent is then tried
//     again 30 s later, and after each failed try twice as long, up to 5
//     min (a fresh start of the backoff after an agent that sampled for 5
//     min), while the fallback samples: one install check and one agent
//     session at a time. A retried agent's events are held until its
//     first sample; then the fallback is stopped (its last sample
//     published) before event.GPUSource{Mode: agent} and the agent's events
//     are, so the two never publish samples at once. A retry that meets
//     a reason of the first kind publishes event.GPUSource{Mode: nvidia-smi,
//     Fallback: why} and stops retrying.
//
// Set the exported fields before Run; the zero values take the defaults
// given.
type Runner struct {
	Host remote.Host

	Interval time.Duration // between samples; default 1 s, at least 10 ms
	PCIe     bool          // read PCIe rx/tx throughput (agent --pcie)
	// Binary is the local agent binary to upload: the flightdeck
	// executable (a linux build with cgo, for the host's OS and
	// architecture). Required: without it the Runner falls back to
	// nvidia-smi, saying so.
	Binary string
	// Version is this build's version, the cache key on the host; default:
	// the binary's SHA-256 prefix.
	Version string
	// CacheDir is the agent cache on the host, absolute or relative to the
	// login directory (not expanded by a shell: no "~"); default
	// "${XDG_CACHE_HOME:-$HOME/.cache}/flightdeck". The agent lives in
	// <CacheDir>/agent/<Version>/flightdeck.
	CacheDir string
	// Fallback is the nvidia-smi sampler run when the agent cannot be; its
	// Host and Interval, when unset, are set to the Runner's. Default: a
	// gpu.Sampler with defaults.
	Fallback *gpu.Sampler

	// StartTimeout bounds the wait for the agent's hello (NVML
	// initialisation takes seconds without persistence mode); default
	// 15 s. From the hello on, StaleAfter applies instead: a live agent
	// writes a line at least every 2 intervals, sample or not.
	StartTimeout time.Duration
	// StaleAfter is how many intervals without any line from the agent (a
	// sample, a stale report, a heartbeat: a live agent writes one at least
	// every 2 intervals) make the Runner give up on it; default 3.
	StaleAfter int
	// MinStale is the shortest silence the Runner gives up on, whatever
	// StaleAfter × Interval: a loaded host (a CPU-bound server, a busy
	// CI machine) can keep a live agent from writing for seconds, and
	// flapping to nvidia-smi and back helps no one. 0: no floor.
	MinStale time.Duration
	Now      func() time.Time // default time.Now

	// retryFirst and retryMax are the backoff of the agent's retries
	// beside the fallback (default 30 s doubling to 5 min); a test seam.
	retryFirst, retryMax time.Duration
}

// settings is a Runner's configuration with defaults applied.
type settings struct {
	interval, startTimeout    time.Duration
	retryFirst, retryMax      time.Duration
	staleAfter                int
	minStale                  time.Duration
	binary, version, cacheDir string
	now                       func() time.Time
}

func (r *Runner) settings() (settings, error) {
	c := settings{interval: r.Interval, startTimeout: r.StartTimeout, staleAfter: r.StaleAfter, minStale: r.MinStale,
		binary: r.Binary, version: r.Version, cacheDir: r.CacheDir, now: r.Now,
		retryFirst: r.retryFirst, retryMax: r.retryMax}
	if c.retryFirst <= 0 {
		c.retryFirst = retryFirst
	}
	if c.retryMax < c.retryFirst {
		c.retryMax = max(c.retryFirst, retryMax)
	}
	if c.interval <= 0 {
		c.interval = time.Second
	}
	c.interval = max(c.interval, 10*time.Millisecond)
	if c.startTimeout <= 0 {
		c.startTimeout = 15 * time.Second
	}
	if c.staleAfter <= 0 {
		c.staleAfter = 3
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.binary == "" {
		// Never a default of os.Executable(): a test binary uploaded and
		// started as "agent" would run its whole suite again on the host.
		return c, errors.New("no agent binary to upload (Runner.Binary)")
	}
	return c, nil
}

// Reconnect backoff between agent starts that end without a sample.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
)

// Backoff of the agent's retries beside the nvidia-smi fallback.
const (
	retryFirst = 30 * time.Second
	retryMax   = 5 * time.Minute
)

// Run installs and runs the agent, publishing its events to sink, until
// ctx ends; then it returns nil. It returns an error at once only when it
// cannot run at all (nil Host or sink), and when the fallback sampler
// cannot run at all (gpu.Sampler.Run's error). sink is never called
// concurrently (it is called from Run's goroutine, and from the
// fallback's while the agent is retried beside it), nor after Run
// returns.
func (r *Runner) Run(ctx context.Context, sink event.Sink) error {
	if r.Host == nil {
		return errors.New("agent: Runner.Host is nil")
	}
	if sink == nil {
		return errors.New("agent: Runner.Run: nil sink")
	}
	c, err := r.settings()
	fb := r.Fallback
	if fb == nil {
		fb = &gpu.Sampler{}
	}
	if fb.Host == nil {
		fb.Host = r.Host
	}
	if fb.Interval == 0 {
		fb.Interval = c.interval
	}
	if fb.Now == nil {
		fb.Now = r.Now
	}
	run := &runState{r: r, c: c, out: sink, fb: fb}
	if err != nil {
		return run.fallback(ctx, err.Error())
	}
	conn := watchConn(ctx, r.Host)
	backoff := minBackoff
	wait := c.retryFirst
	for ctx.Err() == nil {
		o := run.attempt(ctx, conn)
		if ctx.Err() != nil {
			break
		}
		switch {
		// run.bg is still set after a retry that did not take over.
		case run.bg != nil && o.reason != "" && !o.retry:
			// A retry met a reason that will not pass: keep the fallback,
			// saying why now.
			run.publishSource(o.reason, false)
			return run.waitFallback(ctx)
		case run.bg != nil:
			// The retry failed, or the connection dropped under it: the
			// fallback goes on; try again later.
		case o.reason == "":
			// The connection dropped under the agent: start it again once
			// the host is back (Host.Run and Host.Start wait for it).
			if o.progressed {
				backoff = minBackoff
			}
			if !ctxwait.Sleep(ctx, backoff) {
				return nil
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		case !o.retry:
			return run.fallback(ctx, o.reason)
		default:
			// The agent exited or fell silent: sample with nvidia-smi and
			// try the agent again in the background. An agent that had
			// worked for a while starts the backoff over.
			if o.sampledFor >= c.retryMax {
				wait = c.retryFirst
			}
			run.publishSource(o.reason, true)
			run.startFallback(ctx)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-run.bg.done:
			// The fallback sampler cannot run at all.
			t.Stop()
			return run.stopFallback()
		case <-t.C:
		}
		wait = min(2*wait, c.retryMax)
	}
	return run.stopFallback()
}

// watchConn keeps the host's latest connection state.
func watchConn(ctx context.Context, h remote.Host) *atomic.Value {
	var v atomic.Value
	v.Store(event.Connected)
	ch := h.Watch(ctx)
	if ch == nil {
		return &v
	}
	go func() {
		for st := range ch {
			v.Store(st.Conn)
		}
	}()
	return &v
}

// runState is one Run call's state across agent restarts.
type runState struct {
	r          *Runner
	c          settings
	fb         *gpu.Sampler
	lastSample time.Time

	mu  sync.Mutex // serialises out: Run's goroutine and the fallback's
	out event.Sink

	// orphan is the process id of an agent left on the host when its
	// connection was lost (0 for none): it may still run there, blocked
	// on a half-dead sshd, and is killed once a command runs again.
	orphan int

	// bg is the nvidia-smi fallback running while the agent is retried;
	// nil when none runs.
	bg *background
	// trial is set while a retried agent runs beside the fallback: its
	// events are held (its stale reports dropped) until its first sample,
	// which stops the fallback and publishes them (promote).
	trial bool
	held  []event.Event
}

// maxHeld bounds the events a retried agent may send before its first
// sample (its hello, Xids, failures).
const maxHeld = 64

// background is a fallback sampler running in its own goroutine.
type background struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned; err is then set
	err    error
}

// outcome is how one agent attempt ended.
type outcome struct {
	// reason is why the agent is not used; "" when its session ended for
	// a reason not its own (the connection dropped, ctx ended).
	reason string
	// retry: the reason may pass (an install step timed out, the agent
	// exited, fell silent or could not be started), so the agent is tried
	// again later; not for a reason that a retry would meet again (no
	// cgo, another architecture, no driver, a refused cache or upload,
	// a loader that refuses the agent, NVML unavailable, another
	// protocol).
	retry bool
	// progressed: a sample arrived; sampledFor is the time from the first
	// sample to the end.
	progressed bool
	sampledFor time.Duration
}

// publish calls the sink, one event at a time.
func (s *runState) publish(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out(e)
}

// emit publishes an event of the agent (held while it is on trial).
func (s *runState) emit(at time.Time, p event.Payload) {
	if s.trial {
		switch p.(type) {
		case event.GPUSample:
			s.promote()
		case event.GPUStale:
			return // the fallback is sampling: not stale
		case nil,
			event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
			event.ConnState, event.DriverState, event.ExperimentEnd, event.ExperimentFingerprint,
			event.ExperimentStart, event.ExperimentUpdate, event.GPUFailure, event.GPUSource,
			event.GitAction, event.GitMoved, event.GitStatus, event.JournalStatus, event.Key,
			event.KillStep, event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice,
			event.LogReset, event.Note, event.Prefill, event.Repeat, event.RepeatProgress,
			event.RepoHead, event.RepoUnreadable, event.ServerFailure, event.ServerHealthy,
			event.ServerLaunched, event.ServerObserved, event.ServerReady, event.ServerStatus,
			event.Session, event.SpecDecode, event.Throughput, event.TokRate, event.Xid:
			if len(s.held) < maxHeld {
				s.held = append(s.held, event.Event{At: at, Data: p})
			}
			return
		}
	}
	s.publish(event.Event{At: at, Data: p})
}

// promote ends a retried agent's trial at its first sample: the fallback
// is stopped (its last sample published) before the agent's held events
// and samples are, so the two never publish samples at once.
func (s *runState) promote() {
	_ = s.stopFallback()
	s.trial = false
	held := s.held
	s.held = nil
	for _, e := range held {
		s.publish(e)
	}
}

// publishSource says that nvidia-smi samples and why; retry adds that the
// agent is tried again.
func (s *runState) publishSource(reason string, retry bool) {
	reason = sanitize.String(reason)
	if retry {
		const note = "; retrying the agent in the background"
		reason = cut(reason, 300-len(note)) + note
	}
	s.publish(event.Event{At: s.c.now(), Data: event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: cut(reason, 300)}})
}

// fallback publishes why the agent is not used and runs the nvidia-smi
// sampler until ctx ends.
func (s *runState) fallback(ctx context.Context, reason string) error {
	s.publishSource(reason, false)
	if err := s.fb.Run(ctx, s.publish); err != nil {
		return fmt.Errorf("agent: fallback sampler: %w", err)
	}
	return nil
}

// startFallback runs the nvidia-smi sampler in the background.
func (s *runState) startFallback(ctx context.Context) {
	fctx, cancel := context.WithCancel(ctx)
	b := &background{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.err = s.fb.Run(fctx, s.publish)
	}()
	s.bg = b
}

// stopFallback stops the background fallback, if one runs, and waits for
// it; it returns the sampler's error (nil when it ran until stopped).
func (s *runState) stopFallback() error {
	b := s.bg
	if b == nil {
		return nil
	}
	s.bg = nil
	b.cancel()
	<-b.done
	if b.err != nil {
		return fmt.Errorf("agent: fallback sampler: %w", b.err)
	}
	return nil
}

// waitFallback lets the background fallback run until ctx ends.
func (s *runState) waitFallback(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-s.bg.done:
	}
	return s.stopFallback()
}

// attempt installs the agent and runs it once; beside a running fallback,
// on trial.
func (s *runState) attempt(ctx context.Context, conn *atomic.Value) outcome {
	if s.bg != nil {
		s.trial = true
		defer func() { s.trial, s.held = false, nil }()
	}
	inst, err := s.r.install(ctx, s.c)
	switch {
	case ctx.Err() != nil:
		return outcome{}
	case errors.As(err, new(fallbackReason)):
		return outcome{reason: err.Error()}
	case errors.As(err, new(transientReason)):
		return outcome{reason: err.Error(), retry: true}
	case err != nil:
		// The connection dropped during the install.
		return outcome{}
	}
	// The host answered: an agent left behind by a lost connection can
	// be killed now, before another starts.
	s.killOrphan(ctx)
	return s.agent(ctx, inst, conn)
}

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

// Deadlines of the commands about a silent or lost agent.
const (
	// killTimeout bounds the command that kills an agent.
	killTimeout = 10 * time.Second
	// answerTimeout bounds the command (":") that tells a silent agent
	// from a stalled connection.
	answerTimeout = 3 * time.Second
	// closeWait bounds the wait for a killed agent's session to end.
	closeWait = 5 * time.Second
)

// killOrphanScript kills process $1 with SIGKILL when it is an agent the
// Runner started (its command line, read from /proc/$1/cmdline where
// there is one, holds " agent --interval ": runScript's, then the
// agent's): a pid kept across a lost connection may have been reused
// since.
const killOrphanScript = `if [ -r "/proc/$1/cmdline" ]; then case $(tr '\000' ' ' < "/proc/$1/cmdline") in ` +
	`*" agent --interval "*) ;; *) exit 0;; esac; fi; kill -s KILL "$1"`

// kill kills the agent process pid on the host (from its launch line; 0
// when none came), in a new session: closing the agent's session does
// not end a command that does not write, and OpenSSH refuses the
// session's "signal" request for root. A silent agent was alive a moment
// ago, so its pid is not reused; an orphan's is checked first
// (killOrphanScript). It reports whether the host answered (the process
// is gone, or was not the agent); errors are otherwise ignored: the
// fallback goes on either way.
func (s *runState) kill(ctx context.Context, pid int, orphan bool) bool {
	if pid <= 1 {
		return true
	}
	cmd, err := remote.Command("kill", "-s", "KILL", strconv.Itoa(pid))
	if orphan {
		cmd, err = remote.Command("sh", "-c", killOrphanScript, "kill", strconv.Itoa(pid))
	}
	if err != nil {
		return true
	}
	kctx, cancel := context.WithTimeout(ctx, killTimeout)
	defer cancel()
	_, err = s.r.Host.Run(kctx, cmd, nil)
	_, exited := errors.AsType[*remote.ExitError](err)
	return err == nil || exited
}

// killOrphan kills the agent a lost connection left behind, if any; it is
// tried again before the next agent starts when the host did not answer.
func (s *runState) killOrphan(ctx context.Context) {
	if s.orphan != 0 && s.kill(ctx, s.orphan, true) {
		s.orphan = 0
	}
}

// hostAnswers reports whether the host runs a command (":") within
// answerTimeout, when the connection is not known to be lost already.
func (s *runState) hostAnswers(ctx context.Context, conn *atomic.Value) bool {
	if st, _ := conn.Load().(event.ConnPhase); st != event.Connected {
		return false
	}
	actx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	_, err := s.r.Host.Run(actx, ":", nil)
	_, exited := errors.AsType[*remote.ExitError](err)
	return err == nil || exited
}

// waitFor waits up to d for ch; it reports whether ch delivered.
func waitFor(ch <-chan error, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
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

// stale reports that samples stopped because the connection dropped.
func (s *runState) stale(reason string) {
	now := s.c.now()
	missed := 0
	if !s.lastSample.IsZero() {
		missed = max(0, int(now.Sub(s.lastSample)/s.c.interval))
	}
	s.emit(now, event.GPUStale{LastSample: s.lastSample, Missed: missed, Reason: reason})
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
		event.DriverState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSource, event.GitAction, event.GitMoved,
		event.GitStatus, event.JournalStatus, event.Key, event.KillStep, event.LogBench,
		event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset, event.Note,
		event.Prefill, event.Repeat, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
		event.ServerFailure, event.ServerHealthy, event.ServerLaunched, event.ServerObserved,
		event.ServerReady, event.ServerStatus, event.Session, event.SpecDecode, event.Throughput,
		event.TokRate, event.Xid:
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
