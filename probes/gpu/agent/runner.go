package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/internal/ctxwait"
	"github.com/flightdeck-dev/flightdeck/remote"
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

	// tool is the install outcome for AgentCommand.
	tool toolState

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
		r.tool.settle(installed{}, c, err, true)
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
		s.r.tool.settle(installed{}, s.c, err, true)
		return outcome{reason: err.Error()}
	case errors.As(err, new(transientReason)):
		s.r.tool.settle(installed{}, s.c, err, false)
		return outcome{reason: err.Error(), retry: true}
	case err != nil:
		// The connection dropped during the install.
		return outcome{}
	}
	s.r.tool.settle(inst, s.c, nil, false)
	// The host answered: an agent left behind by a lost connection can
	// be killed now, before another starts.
	s.killOrphan(ctx)
	return s.agent(ctx, inst, conn)
}
