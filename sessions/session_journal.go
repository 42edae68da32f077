package sessions

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
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// JournalOptions say where a session is recorded.
type JournalOptions struct {
	// Off records nothing: no experiments then (e and n need a journal).
	Off bool
	// File appends to this journal, or creates it when it does not exist;
	// "" makes a new file journal.NewPath(Dir, Options.Name, Name or the
	// header's Label or "session", now).
	File string
	// MustExist refuses a File that does not exist (the commands that
	// change a journal afterwards: a baseline, a note, a conclusion).
	MustExist bool
	// Name is the session's name, in a new file's name and the header.
	Name string
	// Dir is where a new file goes; "" is journal.DefaultDir().
	Dir string
}

// Check refuses contradictory options before anything is set up.
func (o JournalOptions) Check() error {
	if o.Off && o.File != "" {
		return errors.New("--journal and --no-journal: choose one")
	}
	if o.Off && o.Name != "" {
		return errors.New("--name names the journal: it does nothing with --no-journal")
	}
	return nil
}

// retryNames is how many "-2", "-3", … suffixes a default journal name tries
// when a journal of the same second and name exists (two cockpits started
// together).
const retryNames = 20

// JournalError is an error opening Options.Journal.File: "--journal FILE:
// why", the journal package's "journal: " prefix left out (the flag
// already says it). It unwraps to the cause (a *journal.LockedError,
// journal.ErrNotJournal, fs.ErrNotExist).
type JournalError struct {
	Path string
	Err  error
}

func (e JournalError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "journal: ")
	if strings.HasPrefix(msg, e.Path+": ") || strings.Contains(msg, " "+e.Path+": ") || strings.Contains(msg, " "+e.Path+" ") {
		return "--journal: " + msg // it names the file already
	}
	return "--journal " + e.Path + ": " + msg
}

func (e JournalError) Unwrap() error { return e.Err }

// recording is a session's journal: its writer, the experiments it held
// already, and the recorder writing the stream into it.
type recording struct {
	w     *journal.Writer
	hdr   event.SessionHeader // the header this session recorded with (its start)
	prior int                 // experiments already in an appended journal
	ids   map[string]bool     // their ids

	cancel context.CancelFunc
	done   chan error
}

// openRecording opens the session's journal (see JournalOptions); nil,
// nil with Off.
func openRecording(o Options) (*recording, error) {
	j := o.Journal
	if j.Off {
		return nil, nil
	}
	h := o.Header
	h.Flightdeck = o.Version
	h.Name = j.Name
	if u, err := user.Current(); err == nil {
		h.User = u.Username
	}
	h.Hostname, _ = os.Hostname()
	h.PID = os.Getpid()
	h.Created = time.Now()
	if j.File != "" {
		if fi, err := os.Stat(j.File); err == nil && fi.IsDir() {
			return nil, fmt.Errorf("--journal %s is a directory: give a file in it (e.g. %s), or leave --journal out for a new file in the default directory",
				j.File, filepath.Join(j.File, "session.jsonl"))
		}
		w, err := journal.Append(j.File, h)
		if errors.Is(err, fs.ErrNotExist) && !j.MustExist {
			w, err = journal.Create(j.File, h)
		}
		if err != nil {
			return nil, JournalError{j.File, err}
		}
		n, ids, err := countExperiments(j.File)
		if err != nil {
			w.Close()
			return nil, JournalError{j.File, err}
		}
		return &recording{w: w, hdr: h, prior: n, ids: ids}, nil
	}
	dir := j.Dir
	if dir == "" {
		var err error
		if dir, err = journal.DefaultDir(); err != nil {
			return nil, fmt.Errorf("journal: %w (pass --journal FILE, or --no-journal)", err)
		}
	}
	name := j.Name
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
		w, err := journal.Create(journal.NewPath(dir, o.Name, n, h.Created), h)
		var locked *journal.LockedError
		if (errors.Is(err, fs.ErrExist) || errors.As(err, &locked)) && i < retryNames {
			continue // taken, or being created by a cockpit started the same second
		}
		if err != nil {
			return nil, fmt.Errorf("journal: %w (pass --journal FILE elsewhere, or --no-journal)", err)
		}
		return &recording{w: w, hdr: h}, nil
	}
}

// countExperiments is the highest experiment number in the journal at
// path (e7 -> 7), 0 when it holds none, and the ids of its experiments.
func countExperiments(path string) (int, map[string]bool, error) {
	j, err := journal.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer j.Close()
	n := 0
	ids := map[string]bool{}
	for _, m := range j.Marks() {
		if m.Kind != event.KindExperimentStart {
			continue
		}
		ids[m.Exp] = true
		if k, err := strconv.Atoi(strings.TrimPrefix(m.Exp, "e")); err == nil && strings.HasPrefix(m.Exp, "e") {
			n = max(n, k)
		}
	}
	return n, ids, nil
}

// known reports whether id names an experiment the journal held before
// this session (Lab.Prior).
func (r *recording) known(id string) bool { return r.ids[id] }

// path is the journal's absolute path (what the driver lock tells
// followers).
func (r *recording) path() string {
	if p, err := filepath.Abs(r.w.Path()); err == nil {
		return p
	}
	return r.w.Path()
}

// start subscribes the recorder to stream: it writes every event to the
// journal (Recorder: flushed every second, and at once after notes, keys,
// experiment boundaries and actions) until the stream closes. The
// recorder's journal states (a full disk, and when it clears) are
// published to the stream from a goroutine of their own, latest first, so
// that the recorder's flusher never waits on a slow screen.
func (r *recording) start(stream *Stream) {
	ctx, cancel := context.WithCancel(context.Background())
	events := stream.Subscribe(ctx, 4096)
	r.cancel = cancel
	r.done = make(chan error, 1)
	go func() {
		st := newStatusForwarder(ctx, stream.Publish)
		defer st.stop()
		rc := &Recorder{W: r.w, Publish: st.send, FlushEvery: time.Second}
		r.done <- rc.Run(ctx, events)
	}()
}

// finish waits for the recorder to drain the closed stream, then closes
// the journal; it returns the recorder's error, else the close's.
func (r *recording) finish() error {
	err := <-r.done
	if cerr := r.w.Close(); err == nil {
		err = cerr
	}
	r.cancel()
	return err
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
