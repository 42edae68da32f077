package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// journalFlags are the journal options of the cockpit commands (connect,
// demo).
type journalFlags struct {
	file string // --journal: append to (or create) this file
	off  bool   // --no-journal
	name string // --name: the session's name, in the file name and header
}

func addJournalFlags(fl *pflag.FlagSet, f *journalFlags) {
	fl.StringVar(&f.file, "journal", "", "record the session in this journal (appended to when it exists; default a new file under $XDG_STATE_HOME/flightdeck/journals/<host>/)")
	fl.BoolVar(&f.off, "no-journal", false, "record nothing (no experiments then: e and n need a journal)")
	fl.StringVar(&f.name, "name", "", "session name, in the journal's file name and header")
}

// check refuses contradictory flags before anything is set up.
func (f journalFlags) check() error {
	if f.off && f.file != "" {
		return errors.New("--journal and --no-journal: choose one")
	}
	if f.off && f.name != "" {
		return errors.New("--name names the journal: it does nothing with --no-journal")
	}
	return nil
}

// labCloseTimeout bounds how long quitting waits for the open experiment's
// end and the fingerprints being captured to reach the journal.
const labCloseTimeout = 10 * time.Second

// retryNames is how many "-2", "-3", … suffixes a default journal name tries
// when a journal of the same second and name exists (two cockpits started
// together).
const retryNames = 20

// openJournal opens the session's journal, before the screen opens: with
// --no-journal none (nil, nil); with --journal FILE that file, appended to
// when it exists (it must be a journal) or created; else a new file
// journal.NewPath(DefaultDir, hostLabel, --name or h.Label or "session",
// now). h is the header of a new file; Created is set here. Errors: a
// *journal.LockedError when another cockpit writes the file, a file that
// is not a journal, the I/O error of a directory that cannot be made.
func (f journalFlags) open(hostLabel string, h event.SessionHeader) (*journal.Writer, error) {
	w, _, err := f.openCounting(hostLabel, h)
	return w, err
}

// openCounting is open, also returning how many experiments an existing
// journal already holds (its exp-start events), so that the session's ids
// continue after them.
func (f journalFlags) openCounting(hostLabel string, h event.SessionHeader) (*journal.Writer, int, error) {
	if f.off {
		return nil, 0, nil
	}
	h.Flightdeck = versionString()
	h.Name = f.name
	if u, err := user.Current(); err == nil {
		h.User = u.Username
	}
	h.Hostname, _ = os.Hostname()
	h.PID = os.Getpid()
	h.Created = time.Now()
	if f.file != "" {
		if fi, err := os.Stat(f.file); err == nil && fi.IsDir() {
			return nil, 0, fmt.Errorf("--journal %s is a directory: give a file in it (e.g. %s), or leave --journal out for a new file in the default directory",
				f.file, filepath.Join(f.file, "session.jsonl"))
		}
		w, err := journal.Append(f.file, h)
		if errors.Is(err, fs.ErrNotExist) {
			w, err = journal.Create(f.file, h)
		}
		if err != nil {
			return nil, 0, journalFlagError{f.file, err}
		}
		n, err := countExperiments(f.file)
		if err != nil {
			w.Close()
			return nil, 0, journalFlagError{f.file, err}
		}
		return w, n, nil
	}
	dir, err := journal.DefaultDir()
	if err != nil {
		return nil, 0, fmt.Errorf("journal: %w (pass --journal FILE, or --no-journal)", err)
	}
	name := f.name
	if name == "" {
		name = h.Label
	}
	if name == "" {
		name = "session"
	}
	for i := 1; ; i++ {
		n := name
		if i > 1 {
			n += "-" + strconv.Itoa(i)
		}
		w, err := journal.Create(journal.NewPath(dir, hostLabel, n, h.Created), h)
		var locked *journal.LockedError
		if (errors.Is(err, fs.ErrExist) || errors.As(err, &locked)) && i < retryNames {
			continue // taken, or being created by a cockpit started the same second
		}
		if err != nil {
			return nil, 0, fmt.Errorf("journal: %w (pass --journal FILE elsewhere, or --no-journal)", err)
		}
		return w, 0, nil
	}
}

// journalFlagError is an error opening --journal FILE: "--journal FILE:
// why", the journal package's "journal: " prefix left out (the flag
// already says it). It unwraps to the cause (a *journal.LockedError,
// ErrNotJournal, fs.ErrNotExist).
type journalFlagError struct {
	path string
	err  error
}

func (e journalFlagError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "journal: ")
	if strings.HasPrefix(msg, e.path+": ") || strings.Contains(msg, " "+e.path+": ") || strings.Contains(msg, " "+e.path+" ") {
		return "--journal: " + msg // it names the file already
	}
	return "--journal " + e.path + ": " + msg
}

func (e journalFlagError) Unwrap() error { return e.err }

// countExperiments is the highest experiment number in the journal at
// path (e7 -> 7), 0 when it holds none.
func countExperiments(path string) (int, error) {
	j, err := journal.Open(path)
	if err != nil {
		return 0, err
	}
	defer j.Close()
	n := 0
	for _, m := range j.Marks() {
		if m.Kind != event.KindExperimentStart {
			continue
		}
		if k, err := strconv.Atoi(strings.TrimPrefix(m.Exp, "e")); err == nil && strings.HasPrefix(m.Exp, "e") {
			n = max(n, k)
		}
	}
	return n, nil
}

// lazyLab is the cockpit's experiments (e, n) for a host that is set up
// after the screen opens: the live function creates the sessions.Lab once
// the host is connected and sets it here. Until then the keys say the host
// is still starting and events are not observed (there are none yet that
// matter: no launch happens before). nil Lab methods are never called: a
// cockpit without a journal has no lazyLab at all.
type lazyLab struct{ l atomic.Pointer[sessions.Lab] }

func (z *lazyLab) set(l *sessions.Lab) { z.l.Store(l) }

// Observe implements the stream's fan-out to the Lab.
func (z *lazyLab) Observe(e event.Event) {
	if l := z.l.Load(); l != nil {
		l.Observe(e)
	}
}

// Close ends the open experiment and waits for the captures in flight
// (bounded by ctx); nothing when no Lab was set.
func (z *lazyLab) Close(ctx context.Context) {
	if l := z.l.Load(); l != nil {
		l.Close(ctx)
	}
}

func (z *lazyLab) Start(ctx context.Context, name, hypothesis string) (event.ExperimentStart, error) {
	if l := z.l.Load(); l != nil {
		return l.Start(ctx, name, hypothesis)
	}
	return event.ExperimentStart{}, errNotYet
}

func (z *lazyLab) End(ctx context.Context, conclusion string) (event.ExperimentEnd, error) {
	if l := z.l.Load(); l != nil {
		return l.End(ctx, conclusion)
	}
	return event.ExperimentEnd{}, errNotYet
}

func (z *lazyLab) Update(ctx context.Context, u event.ExperimentUpdate) error {
	if l := z.l.Load(); l != nil {
		return l.Update(ctx, u)
	}
	return errNotYet
}

func (z *lazyLab) Note(ctx context.Context, text string) (event.Note, error) {
	if l := z.l.Load(); l != nil {
		return l.Note(ctx, text)
	}
	return event.Note{}, errNotYet
}

func (z *lazyLab) Key(key, action string) {
	if l := z.l.Load(); l != nil {
		l.Key(key, action)
	}
}

// Baseline and Range are the Lab's tui.MeasureControl.
func (z *lazyLab) Baseline(ctx context.Context, id string) error {
	if l := z.l.Load(); l != nil {
		return l.Baseline(ctx, id)
	}
	return errNotYet
}

func (z *lazyLab) Range(ctx context.Context, from, to string) (*event.CommitRange, error) {
	if l := z.l.Load(); l != nil {
		return l.Range(ctx, from, to)
	}
	return nil, errNotYet
}

// currentID is the open experiment's id, "" when none (the benchmark
// records it).
func (z *lazyLab) currentID() string {
	if l := z.l.Load(); l != nil {
		if x, ok := l.Current(); ok {
			return x.ID
		}
	}
	return ""
}

// recording is what runCockpit records with: the journal's writer, the
// Lab and the repeat that relaunches through it; all nil with
// --no-journal.
type recording struct {
	w     *journal.Writer
	lab   *lazyLab
	rep   *lazyRepeat
	prior int // experiments already in an appended journal
}

// newRecording opens the journal (see journalFlags.open) and prepares the
// Lab the live function will set.
func newRecording(f journalFlags, hostLabel string, h event.SessionHeader) (recording, error) {
	w, prior, err := f.openCounting(hostLabel, h)
	if err != nil || w == nil {
		return recording{}, err
	}
	return recording{w: w, lab: &lazyLab{}, rep: &lazyRepeat{}, prior: prior}, nil
}

// setLab creates the session's Lab with publish as its sink, and the
// repeat (R) that relaunches through ctl and measures through the Lab
// (benchmarking with bn, which may be nil); nothing without a journal.
func (r recording) setLab(l *sessions.Lab, ctl *sessions.Control, bn *sessions.Bencher, publish event.Sink) {
	if r.lab == nil {
		return
	}
	l.Publish = publish
	l.Numbered = r.prior
	r.lab.set(l)
	r.rep.set(&sessions.Repeater{Control: ctl, Lab: l, Bencher: bn, Publish: publish})
}

// currentExp is the Bencher's Experiment: the Lab's open experiment; nil
// without a journal (a benchmark is then tied to no experiment).
func (r recording) currentExp() func() string {
	if r.lab == nil {
		return nil
	}
	return r.lab.currentID
}

// shellQuote is path as one shell word for a command line to copy, or
// sanitised as is when no shell word can carry it.
func shellQuote(path string) string {
	if q, err := remote.Quote(path); err == nil {
		return q
	}
	return sanitize.String(path)
}

// runRecorder writes every event from events to w (sessions.Recorder:
// flushed every second, and at once after notes, keys, experiment
// boundaries and actions) until events closes or ctx ends, then flushes;
// the caller closes w. The recorder's event.JournalStatus events (a full disk,
// and when it clears) go to publish from a goroutine of their own, latest
// first, so that the recorder's flusher never waits on a slow screen.
func runRecorder(ctx context.Context, w *journal.Writer, publish event.Sink, events <-chan event.Event) error {
	st := newStatusForwarder(ctx, publish)
	defer st.stop()
	r := &sessions.Recorder{W: w, Publish: st.send, FlushEvery: time.Second}
	return r.Run(ctx, events)
}

// statusForwarder publishes the latest status it was sent, from its own
// goroutine; older unsent ones are replaced (only the state matters).
type statusForwarder struct {
	mu      sync.Mutex
	latest  *event.Event
	wake    chan struct{}
	done    chan struct{}
	cancel  context.CancelFunc
	publish event.Sink
}

func newStatusForwarder(ctx context.Context, publish event.Sink) *statusForwarder {
	ctx, cancel := context.WithCancel(ctx)
	f := &statusForwarder{wake: make(chan struct{}, 1), done: make(chan struct{}), cancel: cancel, publish: publish}
	go func() {
		defer close(f.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-f.wake:
			}
			f.mu.Lock()
			e := f.latest
			f.latest = nil
			f.mu.Unlock()
			if e != nil {
				f.publish(*e)
			}
		}
	}()
	return f
}

func (f *statusForwarder) send(e event.Event) {
	f.mu.Lock()
	f.latest = &e
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *statusForwarder) stop() {
	f.cancel()
	<-f.done
}

// path is the journal's absolute path (what the driver lock tells
// followers), "" without one.
func (r recording) path() string {
	if r.w == nil {
		return ""
	}
	if p, err := filepath.Abs(r.w.Path()); err == nil {
		return p
	}
	return r.w.Path()
}

// abandon closes the journal of a session that does not start (the
// screen never opened): what it holds stays, a header and nothing else.
func (r recording) abandon() {
	if r.w != nil {
		_ = r.w.Close()
	}
}
