package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// lockScript's MUTEX argument.
const (
	mutexFlock = "flock" // flock(1) when the host has it, else mkdir
	mutexMkdir = "mkdir" // always the mkdir mutex (tests)
)

// opTimeout bounds one operation on the host: the script waits up to 5 s
// for the mutex, and an SSH host that is reconnecting makes calls wait.
const opTimeout = 15 * time.Second

// releaseTimeout bounds the Release that Run does when its context ends.
const releaseTimeout = 3 * time.Second

// maxTries is how many compare-and-swap rounds one operation makes before
// it reports that the lock file keeps changing.
const maxTries = 5

// Lock is this cockpit's side of the driver lock on one host: the lock file
// Dir/FileName on the host, read and written through Host.Run with a POSIX
// shell script (a compare-and-swap under a mutex, so two cockpits never
// both think they drive), or, with an Agent, the heartbeat through one
// long-lived stream doing the same (lock_stream.go). Set the exported fields, then call Acquire
// (or just Run). The methods are safe for concurrent use; operations on the
// host are serialised.
type Lock struct {
	// Host is the GPU host the lock is on.
	Host remote.Host
	// Dir is the directory on the host that holds the lock file: absolute,
	// "~/..." or home-relative (resolved with the host's $HOME). "" is
	// server.DefaultLogDir, next to the server's pidfile. It is created
	// when the lock is first taken.
	Dir string
	// Me is this cockpit (User, Machine, PID, Journal). Zero User, Machine
	// and PID are filled from Self; an empty Token gets a new random one.
	// Since is set when the lock is taken. Text fields must be printable and
	// within MaxNameBytes / MaxJournalBytes; Token hex (see NewToken).
	Me event.DriverInfo
	// Heartbeat is how often Run refreshes the lock while driving, and
	// checks it while watching. 0: DefaultHeartbeat.
	Heartbeat time.Duration
	// StaleAfter is how old (host clock, whole seconds) the lock file's
	// mtime must be for the lock to count as abandoned; at least 2 s and
	// twice Heartbeat. 0: DefaultStaleAfter.
	StaleAfter time.Duration
	// Publish, when not nil, receives an event.DriverState (At: time.Now())
	// at each change of role, holder, note or error. It must not block.
	Publish event.Sink
	// Agent, when not nil, lets Run keep the lock through one long-lived
	// stream instead of a script per beat: `flightdeck agent lock` on the
	// host (no process spawned per beat), or, while the host has no agent
	// (remote.ErrNoAgent), a shell loop of builtins (see lock_stream.go).
	// Nil: lockScript every Heartbeat, as before.
	Agent remote.Agent

	mutex string // lockScript's MUTEX: "" is mutexFlock

	kickOnce sync.Once
	kick     chan struct{} // Run's stream loop: the version changed outside the stream

	op        sync.Mutex       // held by each operation on the host; guards the fields below
	ready     bool             // dir, file and me are set
	dir, file string           // absolute on the host
	me        event.DriverInfo // Me with its defaults; Since is when we last took the lock
	ver       string           // version of the file we last wrote while driving; "" otherwise

	driving atomic.Bool
	// wrote is when our last successful write of the lock file started
	// (mono(); 0: none yet): Driving and the watchdog expire it.
	wrote atomic.Int64

	mu        sync.Mutex // guards state and published
	state     event.DriverState
	published bool
}

// Driving reports whether this cockpit holds the lock (its keys may act):
// it took the lock, and its last successful write of it started less than
// StaleAfter less one heartbeat ago, so no watcher can have taken it as
// stale yet, whatever the host answers now.
func (l *Lock) Driving() bool { return l.driving.Load() && !l.expired() }

// Confirm checks on the host, now, that no other cockpit drives it, right
// before an action that must not run under another driver (a kill, a
// launch, a checkout): the local Driving is as old as the last heartbeat,
// and a take-over in between would otherwise let both cockpits act.
//
// While this cockpit drives, it is one heartbeat (a write of the lock
// file if it is still the one we wrote). After this cockpit released the
// lock itself (it is stopping: Release), an action it began while driving
// may finish unless another cockpit holds the lock now (one read).
//
// It returns nil when the action may run; else an error saying why: who
// drives now (the state turns watching, as a heartbeat would), or that
// the lock could not be confirmed (ctx ended, the host did not answer,
// the file is garbled): it fails closed.
func (l *Lock) Confirm(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("read-only: the driver lock cannot be confirmed: %w", err)
	}
	if l.Driving() {
		l.refresh(ctx)
		st := l.State()
		switch {
		case l.Driving() && st.Err == "":
			return nil
		case st.Err != "" && st.Role != event.RoleWatching:
			return fmt.Errorf("read-only: the driver lock cannot be confirmed: %s", st.Err)
		}
	}
	st := l.State()
	switch {
	case st.Role == event.RoleNone && st.Note == NoteReleased:
		info, fresh, err := Read(ctx, l.Host, l.Dir)
		switch {
		case err != nil:
			return fmt.Errorf("read-only: the driver lock cannot be confirmed: %w", err)
		case fresh && info.Token != "" && info.Token != l.me.Token:
			return fmt.Errorf("read-only: %s drives this host now (driver lock)", whoPID(info))
		}
		return nil
	case st.Role == event.RoleWatching && st.Holder.Token != "":
		return fmt.Errorf("read-only: %s drives this host now (driver lock)", whoPID(st.Holder))
	case st.Err != "":
		return fmt.Errorf("read-only: the driver lock cannot be confirmed: %s", st.Err)
	}
	return errors.New("read-only: this cockpit does not drive the host now (driver lock)")
}

// Fence returns the lock file's path on the host and this cockpit's token,
// for a kill that checks them in its own script right before its signal
// (server.Fence): Confirm's check and the signal are two host commands
// apart. Both are "" before the lock was first used.
func (l *Lock) Fence() (file, token string) {
	l.op.Lock()
	defer l.op.Unlock()
	if !l.ready {
		return "", ""
	}
	return l.file, l.me.Token
}

// State returns the latest state: the one last published, with the
// holder's heartbeat possibly newer (heartbeats alone are not published).
func (l *Lock) State() event.DriverState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Path returns the lock file's absolute path on the host, "" before the
// first operation resolved it.
func (l *Lock) Path() string {
	l.op.Lock()
	defer l.op.Unlock()
	return l.file
}

// Acquire takes the lock when it is free, already ours, or stale (its
// mtime older than StaleAfter), or whatever holds it when takeOver is set;
// otherwise this cockpit watches. It returns and publishes the new State:
// RoleDriving with this cockpit as Holder, or RoleWatching with the holder
// (zero, and Err saying so, for a garbled fresh lock file). On an error
// (the host: it wraps remote.ErrDisconnected when the connection dropped;
// the directory; a bad Me) the returned State keeps the last role, with
// Err set.
func (l *Lock) Acquire(ctx context.Context, takeOver bool) (event.DriverState, error) {
	l.op.Lock()
	defer l.op.Unlock()
	if err := l.init(ctx); err != nil {
		return l.fail(err)
	}
	return l.claim(ctx, nil, takeOver)
}

// Run keeps the lock until ctx ends: every Heartbeat it refreshes the lock
// file while driving (noticing a take-over: then it watches), or checks it
// while watching (taking it when its holder released it or went stale). It
// calls Acquire(ctx, false) first when no Acquire was made. Errors (a lost
// connection) keep the role, are published once in State.Err, and the next
// beat retries. With an Agent the beats ride a stream (lock_stream.go).
// When ctx ends, Run releases the lock (with a 3 s limit of its own) and
// returns Release's error, nil when all went well.
func (l *Lock) Run(ctx context.Context) error {
	every, _, err := l.periods()
	if err != nil {
		l.fail(err)
		return err
	}
	l.mu.Lock()
	started := l.published
	l.mu.Unlock()
	if !started {
		l.beat(ctx)
	}
	wctx, stopWatchdog := context.WithCancel(ctx)
	defer stopWatchdog()
	go l.watchdog(wctx, every)
	if l.Agent != nil {
		return l.runStreams(ctx, every)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			return l.Release(rctx)
		case <-t.C:
			l.beat(ctx)
		}
	}
}

// Release removes the lock file if it is still ours (another cockpit's lock
// is left alone) and publishes RoleNone with the note "released the lock".
// It does nothing when this cockpit does not drive. A Run still going
// takes the lock again at its next beat if it is free. An error is a
// *NotReleasedError (the lock is then still held, until it goes stale),
// or ctx's cancellation.
func (l *Lock) Release(ctx context.Context) error {
	l.op.Lock()
	defer l.op.Unlock()
	if l.ver == "" {
		return nil // not ours (a watcher), or never taken
	}
	want := l.ver
	for range maxTries {
		s, err := l.exchange(ctx, opDel, want, nil)
		if err != nil {
			return l.notReleased(err)
		}
		if !s.Wrote && !s.Absent() {
			if i, err := parseInfo(s); err == nil && i.Token == l.me.Token {
				want = s.Version // ours, touched since: remove it all the same
				continue
			}
		}
		break
	}
	l.ver = ""
	l.driving.Store(false)
	l.set(event.DriverState{Role: event.RoleNone, Note: NoteReleased})
	return nil
}

// periods returns Heartbeat and StaleAfter with their defaults, or why they
// are unusable.
func (l *Lock) periods() (every, stale time.Duration, err error) {
	every, stale = l.Heartbeat, l.StaleAfter
	if every == 0 {
		every = DefaultHeartbeat
	}
	if stale == 0 {
		stale = DefaultStaleAfter
	}
	switch {
	case every < 0:
		return 0, 0, fmt.Errorf("driver lock: negative heartbeat %s", every)
	case stale < 2*time.Second || stale < 2*every:
		return 0, 0, fmt.Errorf("driver lock: stale limit %s must be at least 2s and twice the heartbeat (%s): the host's mtime has whole seconds", stale, every)
	}
	return every, stale, nil
}

// init resolves the directory and fills in Me, once. l.op is held.
func (l *Lock) init(ctx context.Context) error {
	if l.ready {
		return nil
	}
	if l.Host == nil {
		return errors.New("driver lock: no host")
	}
	if _, _, err := l.periods(); err != nil {
		return err
	}
	me := l.Me
	if me.User == "" || me.Machine == "" || me.PID == 0 {
		self := Self()
		if me.User == "" {
			me.User = self.User
		}
		if me.Machine == "" {
			me.Machine = self.Machine
		}
		if me.PID == 0 {
			me.PID = self.PID
		}
	}
	if me.Token == "" {
		me.Token = NewToken()
	}
	me.Heartbeat = time.Time{}
	if err := checkMe(me); err != nil {
		return err
	}
	dir, file, err := resolveDir(ctx, l.Host, l.Dir)
	if err != nil {
		return err
	}
	l.dir, l.file, l.me, l.ready = dir, file, me, true
	return nil
}

// beat is one Run step: a heartbeat while driving, else a claim. Errors
// are in the published state.
func (l *Lock) beat(ctx context.Context) {
	l.op.Lock()
	defer l.op.Unlock()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := l.init(ctx); err != nil {
		l.fail(err)
		return
	}
	if l.driving.Load() {
		l.heartbeat(ctx)
		return
	}
	l.claim(ctx, nil, false)
}

// refresh is Confirm's heartbeat: beat's while driving, nothing once the
// lock is released. A Release that ran between Confirm's look and here
// must stay a release: a claim would take the lock again, with nothing
// left to release it.
func (l *Lock) refresh(ctx context.Context) {
	l.op.Lock()
	defer l.op.Unlock()
	if !l.driving.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	l.heartbeat(ctx)
	l.poke()
}

// heartbeat rewrites our lock file (its mtime is the heartbeat) if it is
// still the one we wrote; else it finds out why (a take-over, a vanished
// file) and acts as claim does. l.op is held.
func (l *Lock) heartbeat(ctx context.Context) {
	start := mono()
	content, err := l.content()
	if err != nil {
		l.fail(err)
		return
	}
	s, err := l.exchange(ctx, opPut, l.ver, content)
	if err != nil {
		l.fail(err)
		return
	}
	if s.Wrote {
		l.ver = s.Version
		l.wrote.Store(start)
		note := ""
		if l.State().Role == event.RoleUnsure {
			note = "the host answers again: still driving"
		}
		l.set(event.DriverState{Role: event.RoleDriving, Holder: l.me, Note: note})
		return
	}
	l.claim(ctx, &s, false)
}

// claim takes the lock when it is free, ours, stale, or when takeOver;
// else it watches. first, when not nil, is the file as just read (a failed
// heartbeat); otherwise claim starts by creating the file if there is none.
// l.op is held.
func (l *Lock) claim(ctx context.Context, first *snapshot, takeOver bool) (event.DriverState, error) {
	_, staleAfter, err := l.periods()
	if err != nil {
		return l.fail(err)
	}
	prev := l.State()
	start := mono()
	if !l.driving.Load() {
		l.me.Since = time.Now()
	}
	var s snapshot
	note := ""
	if first != nil {
		s = *first
	} else {
		if prev.Role == event.RoleWatching {
			note = noteQuit(prev.Holder) // if the file is absent
		}
		s, err = l.put(ctx, verAbsent)
	}
	for tries := 0; ; tries++ {
		if err != nil {
			return l.fail(err)
		}
		if s.Wrote {
			l.ver = s.Version
			l.wrote.Store(start)
			l.driving.Store(true)
			return l.set(event.DriverState{Role: event.RoleDriving, Holder: l.me, Note: note}), nil
		}
		if tries == maxTries {
			return l.fail(fmt.Errorf("driver lock %s on %s keeps changing under us", sanitize.String(l.file), l.Host.Name()))
		}
		info, gerr := parseInfo(s)
		garbled := gerr != nil
		switch {
		case s.Absent():
			switch prev.Role {
			case event.RoleWatching:
				note = noteQuit(prev.Holder)
			case event.RoleDriving:
				note = "the lock file vanished: took it again"
			default:
				note = ""
			}
			l.me.Since = time.Now()
		case !garbled && info.Token == l.me.Token:
			note = "" // ours: keep it, with its start time
			if prev.Role == event.RoleUnsure {
				note = "the host answers again: still driving"
			}
			if !info.Since.IsZero() {
				l.me.Since = info.Since
			}
		case s.Age() > staleAfter:
			note = noteStale(info, garbled, s.Age())
			l.me.Since = time.Now()
		case takeOver:
			note = noteTakeOver(info, garbled)
			l.me.Since = time.Now()
		default:
			return l.watch(prev, s, info, gerr), nil
		}
		s, err = l.put(ctx, s.Version)
	}
}

// watch records that another cockpit (info, or an unknown one when gerr
// says the file is garbled) holds the lock. l.op is held.
func (l *Lock) watch(prev event.DriverState, s snapshot, info event.DriverInfo, gerr error) event.DriverState {
	l.ver = ""
	l.driving.Store(false)
	if gerr != nil {
		return l.set(event.DriverState{Role: event.RoleWatching, Holder: event.DriverInfo{Heartbeat: time.Unix(s.MTime, 0)}, Err: garbledErr(l.file, gerr, l.staleAfter())})
	}
	st := event.DriverState{Role: event.RoleWatching, Holder: info}
	switch {
	case prev.Role == event.RoleDriving || prev.Role == event.RoleUnsure:
		st.Note = noteLost(info)
	case prev.Role == event.RoleWatching && prev.Holder.Token != info.Token:
		st.Note = noteNewHolder(prev.Holder, info)
	}
	return l.set(st)
}

// staleAfter is StaleAfter with its default.
func (l *Lock) staleAfter() time.Duration {
	_, stale, _ := l.periods()
	return stale
}

// put writes our Info if the file's version is want.
func (l *Lock) put(ctx context.Context, want string) (snapshot, error) {
	content, err := l.content()
	if err != nil {
		return snapshot{}, err
	}
	return l.exchange(ctx, opPut, want, content)
}

// content is the lock file's JSON (without its newline).
func (l *Lock) content() ([]byte, error) {
	b, err := json.Marshal(l.me)
	if err != nil {
		return nil, fmt.Errorf("driver lock: %w", err)
	}
	return b, nil
}

// exchange runs lockScript on the lock file.
func (l *Lock) exchange(ctx context.Context, op, want string, content []byte) (snapshot, error) {
	mx := l.mutex
	if mx == "" {
		mx = mutexFlock
	}
	return exchange(ctx, l.Host, mx, op, l.dir, l.file, want, content)
}

// fail keeps the role and holder and sets Err; a cancelled context (Run
// ending) is no news for the screen. A driver whose last write of the lock
// started longer ago than StaleAfter less one heartbeat stops driving
// (RoleUnsure; the watchdog says so first when the host keeps a call
// waiting): a watcher may take the lock as stale any moment now, and two
// cockpits must never both act. l.op is held.
func (l *Lock) fail(err error) (event.DriverState, error) {
	st := l.State()
	if errors.Is(err, context.Canceled) {
		return st, err
	}
	st.Err = sanitize.String(err.Error())
	if l.driving.Load() && l.expired() {
		// The lock's version is kept: Release can still remove the file
		// if it is our write (a compare-and-swap on that version).
		l.driving.Store(false)
		st.Role = event.RoleUnsure
		st.Note = unsureNote(time.Duration(mono() - l.wrote.Load()))
	}
	return l.set(st), err
}

// set stores st (Host filled in; the previous Note kept when st has none
// and the role and holder are the same) and publishes it if it differs
// from the previous state by more than the holder's heartbeat.
func (l *Lock) set(st event.DriverState) event.DriverState {
	if l.Host != nil {
		st.Host = l.Host.Name()
	}
	l.mu.Lock()
	prev := l.state
	if st.Note == "" && st.Role == prev.Role && st.Holder.Token == prev.Holder.Token {
		st.Note = prev.Note
	}
	changed := !l.published || !same(prev, st)
	l.state, l.published = st, true
	l.mu.Unlock()
	if changed && l.Publish != nil {
		l.Publish(event.Event{At: time.Now(), Data: st})
	}
	return st
}

// same reports whether a and b show the same thing (all but the holder's
// heartbeat).
func same(a, b event.DriverState) bool {
	return a.Host == b.Host && a.Role == b.Role && a.Note == b.Note && a.Err == b.Err &&
		a.Holder.User == b.Holder.User && a.Holder.Machine == b.Holder.Machine && a.Holder.PID == b.Holder.PID &&
		a.Holder.Since.Equal(b.Holder.Since) && a.Holder.Journal == b.Holder.Journal && a.Holder.Token == b.Holder.Token
}
