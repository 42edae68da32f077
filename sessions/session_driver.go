package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// DriverMode says how a session treats the host's driver lock: who may act
// on the host (kill, launch, change the checkout) while several cockpits
// watch it.
type DriverMode uint8

const (
	// DriverNone uses no lock (tests; a session that never acts).
	DriverNone DriverMode = iota
	// DriverTake holds the lock, as a cockpit does: the first cockpit
	// drives, a second one watches (read-only) until it takes over.
	DriverTake
	// DriverCheck acts only while no cockpit holds the lock, as the CLI
	// does (a kill from a shell must not pull the server from under a
	// cockpit's user), unless DriverOptions.Force.
	DriverCheck
)

// DriverOptions say how a session treats the host's driver lock.
type DriverOptions struct {
	Mode DriverMode
	// TakeOver (DriverTake) drives even when another cockpit drives (that
	// one becomes read-only).
	TakeOver bool
	// Force (DriverCheck) acts even while a cockpit drives.
	Force bool
	// Heartbeat and StaleAfter tune the lock (driver.Lock's; 0: its
	// defaults, 5 s and 30 s).
	Heartbeat, StaleAfter time.Duration
}

// DrivenError is returned by a DriverCheck session's actions while a
// cockpit drives the host.
type DrivenError struct {
	Holder event.DriverInfo
	Host   string
}

func (e *DrivenError) Error() string {
	since := ""
	if !e.Holder.Since.IsZero() {
		since = " since " + e.Holder.Since.Local().Format(time.TimeOnly)
	}
	return fmt.Sprintf("%s (pid %d) drives %s from a cockpit%s: its user may be measuring; --force acts anyway",
		sanitize.String(e.Holder.Who()), e.Holder.PID, e.Host, since)
}

// driving is a session's driver lock on its host (DriverTake), or the
// check of it (DriverCheck), and the mirror of its journal on the host when
// the journal is written on another machine.
type driving struct {
	mode   DriverMode
	host   remote.Host
	dir    string // the lock's directory: the host's log_dir
	force  bool
	lockP  atomic.Pointer[driver.Lock] // DriverTake: set once, before the lock is used
	mirror *Mirror                     // nil: the journal is on the host, or none
	sink   lateSink

	stopMirror func() // set while the mirror runs (finishMirror)

	mu     sync.Mutex
	errs   []string // what went wrong, for report
	silent bool     // quiet: the host is gone
}

// takeLock takes (or watches) the driver lock in dir on host, so that a
// second cockpit starts read-only. journal is the local journal's path (""
// for none); onHost says that this machine is the host (local, or the
// demo's simulated host), so the journal is there as it is; otherwise it
// is mirrored to the host for `flightdeck follow HOST`. An error reading
// or writing the lock is returned: the cockpit does not open unsure of who
// drives.
func takeLock(ctx context.Context, host remote.Host, dir, journalPath string, onHost bool, o DriverOptions) (*driving, error) {
	d := &driving{mode: DriverTake, host: host, dir: dir}
	me := driver.Self()
	if journalPath != "" {
		me.Journal = journalPath
		if !onHost {
			// One name per cockpit: two cockpits' journals of the same
			// name (--journal session.jsonl) never share a mirror.
			name := journal.SafeName(me.User+"@"+me.Machine) + "-" + strconv.Itoa(me.PID) + "-" + filepath.Base(journalPath)
			p, err := MirrorPath(ctx, host, name)
			if err != nil {
				return nil, fmt.Errorf("driver lock: the journal's mirror on the host: %w", err)
			}
			me.Journal = p
			d.mirror = &Mirror{Host: host, Local: journalPath, Remote: p}
		}
	}
	if d.mirror != nil {
		// The lock names the mirror: it must hold the journal's header
		// before a follower can read the name.
		d.stopMirror = d.startMirror(ctx)
		d.waitMirror(ctx, me.Journal)
	}
	l := &driver.Lock{Host: host, Dir: dir, Me: me, Heartbeat: o.Heartbeat, StaleAfter: o.StaleAfter, Publish: d.sink.publish}
	d.lockP.Store(l)
	if _, err := l.Acquire(ctx, o.TakeOver); err != nil {
		d.finishMirror()
		return nil, fmt.Errorf("driver lock on %s: %w", host.Name(), err)
	}
	return d, nil
}

// waitMirror waits (15 s at most: a loaded host) until the mirror at path
// on the host has its first line, the journal's header.
func (d *driving) waitMirror(ctx context.Context, path string) {
	q, err := remote.Quote(path)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if _, err := d.host.Run(ctx, "test -s "+q, nil); err == nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// guard refuses an action while this session may not act: for DriverTake,
// while this cockpit does not drive (keys are refused on the screen
// already; this stops an action queued, or begun, just before a take-over,
// by confirming the lock on the host, one heartbeat, before it acts); for
// DriverCheck, while a cockpit holds a fresh lock (unless forced). A lock
// that cannot be read does not stop a DriverCheck action.
func (d *driving) guard(ctx context.Context) error {
	switch d.mode {
	case DriverTake:
		if l := d.lock(); l != nil {
			return l.Confirm(ctx)
		}
	case DriverCheck:
		if d.force {
			return nil
		}
		if info, held, err := driver.Read(ctx, d.host, d.dir); err == nil && held {
			return &DrivenError{Holder: info, Host: d.host.Name()}
		}
	}
	return nil
}

// fence is the driver lock a kill checks right before its signal
// (Control's Fence); the zero Fence without a held lock.
func (d *driving) fence() server.Fence {
	l := d.lock()
	if l == nil {
		return server.Fence{}
	}
	file, token := l.Fence()
	return server.Fence{File: file, Token: token}
}

// useAgent makes the lock's Run keep it through ag's `agent lock` stream
// (or the shell loop while the host has no agent) instead of a script per
// heartbeat. Call it before start.
func (d *driving) useAgent(ag remote.Agent) {
	if l := d.lock(); l != nil {
		l.Agent = ag
	}
}

// lock is the session's lock; nil unless it holds one (DriverTake).
func (d *driving) lock() *driver.Lock {
	if d == nil {
		return nil
	}
	return d.lockP.Load()
}

// start keeps the lock in a goroutine of its own under ctx, publishing to
// sink what changes (the state Acquire published first), and returns the
// function that stops it and waits for the release: defer it in the run,
// so that the lock is released before the host closes, also when the
// probes fail first. Problems are in the published state, on the screen;
// none ends the session. What went wrong at the end (a release that
// failed) is kept for report, to print once the screen is closed.
func (d *driving) start(ctx context.Context, sink event.Sink) (stop func()) {
	l := d.lock()
	if l == nil {
		return func() {}
	}
	d.sink.set(sink)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := l.Run(ctx); err != nil {
			d.fail("driver lock", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// startMirror starts copying the journal to the host and returns the
// function that stops it (finishMirror calls it once the journal is
// closed, so that its last lines reach the host too).
func (d *driving) startMirror(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.mirror.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			d.fail("journal mirror", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// ownMirror is the base name of the session's own mirror on the host
// ("" when it writes none): what changed since the last session must not
// take the session's own journal for another cockpit's. The mirror is
// named for the cockpit (user@machine-PID-journal, takeLock), so another
// cockpit's journal of the same name is not taken for it.
func (d *driving) ownMirror() string {
	if d == nil || d.mirror == nil {
		return ""
	}
	return path.Base(d.mirror.Remote)
}

// finishMirror stops the journal's mirror, if any, after its last lines
// reached the host: call it after the journal is closed.
func (d *driving) finishMirror() {
	if d != nil && d.stopMirror != nil {
		d.stopMirror()
		d.stopMirror = nil
	}
}

func (d *driving) fail(what string, err error) {
	d.mu.Lock()
	if !d.silent {
		msg := sanitize.String(err.Error())
		if !strings.HasPrefix(msg, what) {
			msg = what + ": " + msg // a NotReleasedError says "driver lock" itself
		}
		d.errs = append(d.errs, msg)
	}
	d.mu.Unlock()
}

// quiet forgets what went wrong (and what will, at the release): the
// host is gone, which the caller says once.
func (d *driving) quiet() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.errs, d.silent = nil, true
	d.mu.Unlock()
}

// report prints what went wrong to w (after the screen closed).
func (d *driving) report(w io.Writer) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.errs {
		fmt.Fprintf(w, "flightdeck: %s\n", e)
	}
}

// lateSink queues events until set gives it the session's sink (the lock
// is taken before the probes run), then forwards them.
type lateSink struct {
	mu      sync.Mutex
	sink    event.Sink
	pending []event.Event
}

func (s *lateSink) publish(e event.Event) {
	s.mu.Lock()
	sink := s.sink
	if sink == nil {
		s.pending = append(s.pending, e)
	}
	s.mu.Unlock()
	if sink != nil {
		sink(e)
	}
}

func (s *lateSink) set(sink event.Sink) {
	s.mu.Lock()
	pending := s.pending
	s.pending, s.sink = nil, sink
	s.mu.Unlock()
	for _, e := range pending {
		sink(e)
	}
}
