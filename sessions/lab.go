package sessions

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// ErrNoExperiment is returned by Lab.End and Lab.Update when no experiment
// is open.
var ErrNoExperiment = errors.New("no experiment is open")

// ErrEmptyNote is returned by Lab.Note for a note with no text.
var ErrEmptyNote = errors.New("empty note")

// ErrLabClosed is returned by the Lab's actions after Close.
var ErrLabClosed = errors.New("the session is closing")

// DefaultProbeTimeout is the deadline of one version probe (and of the
// hostname/kernel read) when Lab.ProbeTimeout is 0.
const DefaultProbeTimeout = 10 * time.Second

// Lab runs the session's experiments and notes: the `e` and `n` keys of the
// cockpit and the CLI's journal commands call it. It starts an experiment
// at every server launch (ending the previous one) and ends it when the
// server is killed, exits or fails; it captures each experiment's
// fingerprint in the background; it computes the result at the end from
// the tok/s samples it has observed (ledger.Ledger).
//
// Wiring: call Observe with every event of the stream after it is
// published, including the Lab's own (Publish may call Observe, directly
// or not: the Lab holds no lock while publishing). The Lab's own events —
// exp-start, exp-fingerprint, exp-update, exp-end, exp-baseline,
// exp-repeat, note, key — go to
// Publish, one at a time and in the order the Lab decided them. Start,
// End, Update and Note wait until their event is published, so call them
// off the goroutine that drains the stream (the UI's: from a tea.Cmd);
// Observe and Key never wait. Set the exported fields before the first
// call; the methods are safe for concurrent use.
type Lab struct {
	Host     remote.Host
	RepoPath string         // the server checkout on the host; "" when none (no git in fingerprints)
	Config   *config.Config // version probes per preset; nil: config.Builtins()
	Preset   string         // the preset whose probes run when no launch is known
	Publish  event.Sink     // where the Lab's events go: the stream
	// ProbeTimeout is the deadline of each version probe and of the
	// hostname/kernel read (DefaultProbeTimeout when 0); the git part of a
	// fingerprint gets three times as long (its patch may be large).
	ProbeTimeout time.Duration
	// Numbered is how many experiments the journal already holds (a
	// session appended to an existing journal): ids continue after
	// e<Numbered>, so they stay unique in the file.
	Numbered int
	// Prior, when set, reports whether an id names an experiment the
	// journal held before this session: Update and Baseline may name it
	// too (a conclusion or a baseline set afterwards).
	Prior func(id string) bool

	mu       sync.Mutex
	ledger   ledger.Ledger     // folded from what the Lab decided and what it observed
	next     int               // experiments started so far
	launch   *event.LaunchInfo // the last launch seen, redacted; nil when none
	launchAt time.Time         // when it was seen
	// relaunching is set by the KillSteps of a relaunch's kill: the
	// server's killed status then ends the experiment as a relaunch.
	relaunching bool
	// killGPUs is the last GPU sample before a kill began: the open
	// experiment's GPUs under load, which its end records (the samples
	// taken while the server stops show idle clocks). nil when no kill is
	// in progress.
	killGPUs []event.GPU
	// busyGPUs is the last GPU sample in which a GPU was busy (utilization
	// above 0), taken at busyAt: an experiment's end records it when it was
	// taken during the experiment (a server idling between requests at
	// the end would show idle clocks, not those under load).
	busyGPUs  []event.GPU
	busyAt    time.Time
	gpuNext   chan struct{}      // closed (and replaced) at every GPU sample
	gpusAt    time.Time          // when the last GPU sample was taken
	status    event.ServerStatus // the last server status seen
	gpus      []event.GPU        // the last GPU sample's GPUs, its Missing ones too (event.GPUSample.WithMissing)
	head      string             // the checkout's short HEAD as last seen on the stream
	defaulted map[string]string  // experiment id → its default name, until the fingerprint confirms the commit in it
	auto      map[string]bool    // experiments named by the Lab, not renamed by hand since
	tags      map[string]string  // experiment id → its repeat suffix in names (" #2/5")
	repeats   map[string]event.Repeat
	// armed tags the next launch-started experiment as a repeat's launch
	// (Repeater); nil when none is expected.
	armed    *event.Repeat
	lastCap  *captureSlot  // the last experiment's fingerprint capture; nil before the first
	outbox   []event.Event // decided, not yet published
	flushing bool          // an asynchronous flush is scheduled
	closed   bool
	base     context.Context // captures run under it; Close cancels it
	cancel   context.CancelFunc

	pubMu sync.Mutex     // held while publishing: keeps the outbox's order
	wg    sync.WaitGroup // captures and asynchronous flushes in flight

	repoMu sync.Mutex
	repo   *git.Repo // opened by the first capture that needs it
}

// initLocked prepares the Lab's context and maps; call with l.mu held.
func (l *Lab) initLocked() {
	if l.base == nil {
		l.base, l.cancel = context.WithCancel(context.Background())
	}
	if l.defaulted == nil {
		l.defaulted, l.auto, l.tags, l.repeats = map[string]string{}, map[string]bool{}, map[string]string{}, map[string]event.Repeat{}
	}
	if l.gpuNext == nil {
		l.gpuNext = make(chan struct{})
	}
}

// gpusSince returns the GPUs of the last sample taken at or after t, or
// a channel closed at the next sample when there is none yet.
func (l *Lab) gpusSince(t time.Time) ([]event.GPU, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.initLocked()
	if len(l.gpus) > 0 && !l.gpusAt.Before(t) {
		return l.gpus, nil
	}
	return nil, l.gpuNext
}

// lastGPUs returns the last sample's GPUs, whenever it was taken.
func (l *Lab) lastGPUs() []event.GPU {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gpus
}

// Observe folds one event of the stream: GPU samples, the checkout's HEAD,
// launches and server states, tok/s samples and readiness (for results).
// A launch ends the open experiment (relaunch) and starts one (launch); the
// server going killed, exited or failed ends the open one (kill, exit). It
// is cheap and never waits for I/O: what it decides is published by
// another goroutine.
func (l *Lab) Observe(e event.Event) {
	switch e.Data.(type) {
	case event.ExperimentStart, event.ExperimentFingerprint, event.ExperimentUpdate, event.ExperimentEnd,
		event.Note, event.Baseline, event.Repeat:
		return // the Lab's own: already in the ledger when decided
	case event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState, event.DriverState, event.HostChanges, event.HostState,
		event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale, event.GitAction,
		event.GitMoved, event.GitStatus, event.JournalStatus, event.Key, event.KillStep,
		event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset,
		event.Prefill, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
		event.ServerFailure, event.ServerHealthy, event.ServerLaunched, event.ServerObserved,
		event.ServerReady, event.ServerStatus, event.Session, event.SpecDecode, event.Throughput,
		event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// nothing for the Lab
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.initLocked()
	l.ledger.Apply(e)
	switch p := e.Data.(type) {
	case event.GPUSample:
		// A GPU whose handle fails (Missing) stays in the experiments'
		// GPUs, lost, under the name and bus id it had.
		l.gpus, l.gpusAt = p.WithMissing(l.gpus), p.At
		if l.gpusAt.IsZero() {
			l.gpusAt = e.At
		}
		if busy(l.gpus) {
			l.busyGPUs, l.busyAt = l.gpus, l.gpusAt
		}
		close(l.gpuNext)
		l.gpuNext = make(chan struct{})
	case event.RepoHead:
		l.head = shortOf(p.Short, p.Commit)
	case event.GitStatus:
		l.head = shortOf(p.Head.Short, p.Head.ID)
	case event.ServerObserved:
		// An adopted server's launch, from its pidfile (seen at every
		// poll: copied only when it is another launch).
		if f := p.Found; f.Running && f.How == server.ByPidfile && f.Record != nil {
			if r := f.Record.Launch; l.launch == nil || l.launch.LogPath != r.LogPath || !l.launch.At.Equal(r.At) {
				l.launch = redactLaunch(r)
			}
		}
	case event.ServerLaunched:
		l.launch, l.launchAt = redactLaunch(p.Record.Launch), e.At
		l.relaunching = false
		if l.closed {
			return
		}
		if l.ledger.Current() != nil {
			l.endLocked(e.At, event.TriggerRelaunch, "")
		}
		rep := l.armed
		l.armed = nil
		l.startLocked(e.At, "", "", event.TriggerLaunch, l.launch, rep)
		l.kickLocked()
	case event.KillStep:
		l.relaunching = p.Relaunch && p.Step != "failed"
		switch {
		case p.Step == "failed":
			l.killGPUs = nil
		case l.killGPUs == nil:
			l.killGPUs = l.gpus
		}
	case event.DriverState:
		// Another cockpit drives now: its relaunches and kills are not
		// published here, so an open experiment would go on measuring a
		// server that is no longer this session's. (Unsure is not yet a
		// take-over: the host may answer and the lock still be ours.)
		if p.Role == event.RoleWatching && !l.closed && l.ledger.Current() != nil {
			l.endLocked(e.At, event.TriggerTakenOver, "")
			l.kickLocked()
		}
	case event.ServerStatus:
		prev := l.status.Phase
		l.status = p
		if l.closed || prev == "" || prev == p.Phase || l.ledger.Current() == nil {
			return
		}
		switch p.Phase {
		case event.PhaseKilled:
			trig := event.TriggerKill
			if l.relaunching {
				trig = event.TriggerRelaunch
			}
			l.endLocked(e.At, trig, "")
			l.kickLocked()
		case event.PhaseExited, event.PhaseFailed:
			l.endLocked(e.At, event.TriggerExit, "")
			l.kickLocked()
		}
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState,
		event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUFailure, event.GPUSource, event.GPUStale, event.GitAction,
		event.GitMoved, event.HostChanges, event.HostState, event.JournalStatus, event.Key, event.LogBench, event.LogFollowError,
		event.LogLines, event.LogNotice, event.LogReset, event.Note, event.Prefill, event.Repeat,
		event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoUnreadable, event.ServerFailure, event.ServerHealthy,
		event.ServerReady, event.Session, event.SpecDecode, event.Throughput, event.TokRate,
		event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// nothing for the Lab
	}
}

// busy reports a sample in which some GPU is working (utilization above
// 0 %).
func busy(gs []event.GPU) bool {
	for i := range gs {
		if u := gs[i].UtilGPUPct; u.Valid() && u.Value > 0 {
			return true
		}
	}
	return false
}

// clean trims typed text and makes it safe to print (probes/sanitize).
func clean(s string) string { return sanitize.String(strings.TrimSpace(s)) }

// typed is clean for what the user typed (a note, an experiment's name,
// hypothesis, conclusion): kept as typed but for escape sequences and
// controls (sanitize.Typed).
func typed(s string) string { return sanitize.Typed(strings.TrimSpace(s)) }

// shortOf is a short commit id: short when given, else the id cut.
func shortOf(short, id string) string {
	if short != "" {
		return sanitize.String(short)
	}
	return sanitize.String(git.ShortID(id))
}

// Key records a key that caused an action (event.Key). It never waits:
// the event is published by another goroutine. Keys after Close are
// dropped.
func (l *Lab) Key(key, action string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.initLocked()
	if l.closed {
		return
	}
	l.outbox = append(l.outbox, event.Event{At: time.Now(), Data: event.Key{Key: key, Action: action}})
	l.kickLocked()
}

// Close ends the open experiment (trigger quit), publishes what is left to
// publish and waits for the fingerprints being captured, until ctx ends;
// then it cancels the captures still running (they publish what they have,
// with the rest in Errors). Later Start, End, Update and Note calls return
// ErrLabClosed; later launches start nothing. It is safe to call twice.
func (l *Lab) Close(ctx context.Context) {
	l.mu.Lock()
	l.initLocked()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	if l.ledger.Current() != nil {
		l.endLocked(time.Now(), event.TriggerQuit, "")
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.flush(context.Background())
		l.wg.Wait()
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	l.cancel()
}

// Current returns a copy of the open experiment; ok is false when none is
// open. Its Result is zero: Provisional computes it.
func (l *Lab) Current() (exp ledger.Experiment, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.ledger.Current(); c != nil {
		return *c, true
	}
	return ledger.Experiment{}, false
}

// Experiments returns the session's experiments in start order (a new
// slice; the elements' slices are shared and must not be modified).
func (l *Lab) Experiments() []ledger.Experiment {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ledger.Experiment(nil), l.ledger.Experiments()...)
}

// Provisional returns the open experiment's result so far (zero when none
// is open). It costs O(n log n) in its samples: call it when drawing.
func (l *Lab) Provisional() event.ExperimentResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ledger.Provisional()
}
