package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	jnl "github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// lockFlags are the driver lock's flags of connect and demo.
type lockFlags struct {
	takeOver  bool
	heartbeat time.Duration // hidden: tests and slow links
	stale     time.Duration // hidden
}

func addLockFlags(fl *pflag.FlagSet, f *lockFlags) {
	fl.BoolVar(&f.takeOver, "take-over", false, "drive the host even when another cockpit drives it (that one becomes read-only)")
	fl.DurationVar(&f.heartbeat, "lock-heartbeat", 0, "driver lock heartbeat period (default 5s)")
	fl.DurationVar(&f.stale, "lock-stale", 0, "a driver lock without a heartbeat for this long is taken over (default 30s)")
	_ = fl.MarkHidden("lock-heartbeat")
	_ = fl.MarkHidden("lock-stale")
}

// driving is a cockpit's driver lock on its host, and the mirror of its
// journal there when the journal is written on another machine.
type driving struct {
	lockP  atomic.Pointer[driver.Lock] // set once, before the lock is used
	mirror *sessions.Mirror            // nil: the journal is on the host, or none
	sink   lateSink

	stopMirror func() // set while the mirror runs (finishMirror)

	mu     sync.Mutex
	errs   []string // what went wrong, for report
	silent bool     // quiet: the host is gone
}

// takeLock takes (or watches) the driver lock in dir on host before the
// screen opens, so that a second cockpit starts read-only. journal is the
// local journal ("" for none); onHost says that this machine is the host
// (local, or the demo's simulated host), so the journal is there as it is;
// otherwise it is mirrored to the host for `flightdeck follow HOST`. An
// error reading or writing the lock is returned: the cockpit does not open
// unsure of who drives.
func takeLock(ctx context.Context, host remote.Host, dir, journal string, onHost bool, f lockFlags) (*driving, error) {
	d := &driving{}
	me := driver.Self()
	if journal != "" {
		me.Journal = journal
		if !onHost {
			// One name per cockpit: two cockpits' journals of the same
			// name (--journal session.jsonl) never share a mirror.
			name := jnl.SafeName(me.User+"@"+me.Machine) + "-" + strconv.Itoa(me.PID) + "-" + filepath.Base(journal)
			p, err := sessions.MirrorPath(ctx, host, name)
			if err != nil {
				return nil, fmt.Errorf("driver lock: the journal's mirror on the host: %w", err)
			}
			me.Journal = p
			d.mirror = &sessions.Mirror{Host: host, Local: journal, Remote: p}
		}
	}
	if d.mirror != nil {
		// The lock names the mirror: it must hold the journal's header
		// before a follower can read the name.
		d.stopMirror = d.startMirror(ctx)
		d.waitMirror(ctx, host, me.Journal)
	}
	if err := d.acquire(ctx, &driver.Lock{Host: host, Dir: dir, Me: me, Heartbeat: f.heartbeat, StaleAfter: f.stale}, f.takeOver); err != nil {
		d.finishMirror()
		return nil, fmt.Errorf("driver lock on %s: %w", host.Name(), err)
	}
	return d, nil
}

// waitMirror waits (15 s at most: a loaded host) until the mirror at path on host has its
// first line, the journal's header.
func (d *driving) waitMirror(ctx context.Context, host remote.Host, path string) {
	q, err := remote.Quote(path)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if _, err := host.Run(ctx, "test -s "+q, nil); err == nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// finishMirror stops the journal's mirror, if any, after its last lines
// reached the host: call it after the journal is closed.
func (d *driving) finishMirror() {
	if d != nil && d.stopMirror != nil {
		d.stopMirror()
		d.stopMirror = nil
	}
}

// acquire makes l the cockpit's lock, publishing through the session's
// sink, and takes it (or watches): the state is published, so the screen
// says who drives.
func (d *driving) acquire(ctx context.Context, l *driver.Lock, takeOver bool) error {
	l.Publish = d.sink.publish
	d.lockP.Store(l)
	_, err := l.Acquire(ctx, takeOver)
	return err
}

// guard refuses an action while this cockpit does not drive (Control's
// and Git's Guard): keys are refused on the screen already; this stops an
// action queued, or begun, just before a take-over, by confirming the
// lock on the host (one heartbeat) before it acts.
func (d *driving) guard(ctx context.Context) error {
	l := d.lock()
	if l == nil {
		return nil
	}
	return l.Confirm(ctx)
}

// fence is the driver lock a kill checks right before its signal
// (Control's Fence); the zero Fence before the lock was taken.
func (d *driving) fence() server.Fence {
	l := d.lock()
	if l == nil {
		return server.Fence{}
	}
	file, token := l.Fence()
	return server.Fence{File: file, Token: token}
}

// lock is the cockpit's lock; nil before acquire.
func (d *driving) lock() *driver.Lock { return d.lockP.Load() }

// TakeOver takes the lock whoever holds it (the cockpit's T key), within
// 15 s.
func (d *driving) TakeOver(ctx context.Context) error {
	l := d.lock()
	if l == nil {
		return errors.New("not connected to the host yet")
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := l.Acquire(ctx, true)
	return err
}

// run keeps the lock until ctx ends, publishing to sink what changes
// (the state Acquire published first), then releases the lock. Problems
// are in the published state, on the screen; none ends the session. What
// went wrong at the end (a release that failed) is kept for report, to
// print once the screen is closed.
func (d *driving) run(ctx context.Context, sink event.Sink) {
	d.sink.set(sink)
	if err := d.lock().Run(ctx); err != nil {
		d.fail("driver lock", err)
	}
}

// startMirror starts copying the journal to the host and returns the
// function that stops it (finishMirror calls it once the journal is
// closed, so that its last lines reach the host too).
func (d *driving) startMirror(ctx context.Context) (stop func()) {
	if d == nil || d.mirror == nil {
		return func() {}
	}
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

// start runs the lock (run) in its own goroutine under ctx and returns
// the function that stops it and waits for its release: defer it in the
// live function, so that the lock is released before the host closes,
// also when the probes fail first.
func (d *driving) start(ctx context.Context, sink event.Sink) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.run(ctx, sink)
	}()
	return func() {
		cancel()
		<-done
	}
}

func (d *driving) fail(what string, err error) {
	d.mu.Lock()
	if !d.silent {
		d.errs = append(d.errs, what+": "+sanitize.String(err.Error()))
	}
	d.mu.Unlock()
}

// quiet forgets what went wrong (and what will, at the release): the
// host is gone, which the caller says once.
func (d *driving) quiet() {
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
// is taken before the session's stream exists), then forwards them.
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
