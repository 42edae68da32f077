package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// MaxPending is the most bytes a Writer holds in memory while the disk
// refuses them (a full disk); beyond it whole events are dropped and
// counted (Status.Dropped) until a flush succeeds.
const MaxPending = 64 << 20

// syncFile is what a Writer needs of its file: a seam for tests that
// simulate a full disk.
type syncFile interface {
	io.Writer
	Sync() error
	Close() error
}

// Writer appends events to a journal. Write only encodes into memory;
// Flush writes to the disk. A write error (a full disk) keeps the unwritten
// bytes for the next Flush, so nothing is lost until MaxPending bytes wait.
// A Writer holds the journal's lock until Close. Its methods are safe for
// concurrent use.
type Writer struct {
	path string
	lock *fileLock

	mu      sync.Mutex // guards the fields below
	f       syncFile
	enc     encState
	buf     []byte // encoded, not yet written
	bytes   int64  // written to the file so far
	err     error  // the last write or sync error, nil after a good flush
	dropped int
	closed  bool

	flushMu sync.Mutex // one flush at a time; held without mu while writing
}

// Create creates the journal at path: parent directories (mode 0700), the
// file (mode 0600; it must not exist: the error then wraps fs.ErrExist),
// the header line, and fsyncs the file and its directory. h.Format and
// h.Version are set to this package's; a zero h.Created is set to now. The
// Created time is kept to the microsecond (event times are microseconds
// from it). Another writer holding the journal gives a *LockedError.
func Create(path string, h event.SessionHeader) (*Writer, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	lock, err := acquireLock(path)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Writer, error) {
		lock.release()
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fail(fmt.Errorf("journal: %w", err))
	}
	w, err := startFile(path, lock, f, h)
	if err != nil {
		os.Remove(path)
		return fail(err)
	}
	syncDir(dir)
	return w, nil
}

// normalHeader sets h's format and version to this package's and its
// Created time to now when zero, kept to the microsecond in UTC.
func normalHeader(h event.SessionHeader) event.SessionHeader {
	h.Format, h.Version = FormatName, FormatVersion
	if h.Created.IsZero() {
		h.Created = time.Now()
	}
	h.Created = h.Created.UTC().Round(time.Microsecond)
	return h
}

// startFile writes the header line h (normalHeader) to the empty file f,
// fsyncs it and returns the Writer; on an error f is closed.
func startFile(path string, lock *fileLock, f *os.File, h event.SessionHeader) (*Writer, error) {
	h = normalHeader(h)
	head, err := encodeHeader(h)
	if err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Write(head); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: write header: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: sync: %w", err)
	}
	w := &Writer{path: path, lock: lock, f: f, bytes: int64(len(head))}
	w.enc.created = h.Created
	return w, nil
}

// syncDir fsyncs a directory so that a new entry in it survives a crash.
// Best effort: some filesystems refuse to sync directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Append resumes writing the existing journal at path for a new cockpit
// session whose header is h: it checks the file's header (errors wrap
// ErrNotJournal, or are a *VersionError), cuts a torn last line (a crash
// mid-write) back to the last "\n" so new lines are never glued to a
// fragment, writes a "session" event carrying h (normalHeader: Created is
// the event's time) and fsyncs, and returns a Writer positioned after it.
// Event times still count from the file's own header. An empty file (0
// bytes, e.g. made by touch or mktemp) is a new journal: h is written as
// its header. A missing file gives an error wrapping fs.ErrNotExist;
// another writer holding the journal a *LockedError.
func Append(path string, h event.SessionHeader) (*Writer, error) {
	lock, err := acquireLock(path)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Writer, error) {
		lock.release()
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fail(fmt.Errorf("journal: %w", err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fail(fmt.Errorf("journal: %w", err))
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return fail(fmt.Errorf("journal: %s: %w (not a regular file)", path, ErrNotJournal))
	}
	if st.Size() == 0 {
		_ = f.Chmod(0o600) // as Create makes it: a journal may hold a dirty patch
		w, err := startFile(path, lock, f, h)
		if err != nil {
			return fail(err)
		}
		return w, nil
	}
	fh, end, err := appendPoint(f, path)
	if err != nil {
		f.Close()
		return fail(err)
	}
	if st, err := f.Stat(); err == nil && st.Size() != end {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return fail(fmt.Errorf("journal: cut torn last line: %w", err))
		}
	}
	w := &Writer{path: path, lock: lock, f: f, bytes: end}
	w.enc.created = fh.Created
	// A version 1 journal goes on in version 1 (log lines and what they
	// derive written apart), so that the release that wrote it reads it
	// whole; the session event says which version wrote it.
	w.enc.v1 = fh.Version < 2
	h = normalHeader(h)
	if err := w.Write(event.Event{At: h.Created, Data: event.Session{SessionHeader: h}}); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Flush(true); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// appendPoint reads the header of f and finds the end of its last complete
// line.
func appendPoint(f *os.File, path string) (event.SessionHeader, int64, error) {
	var h event.SessionHeader
	first := make([]byte, 0, 4096)
	chunk := make([]byte, 4096)
	var off int64
	for {
		n, err := f.ReadAt(chunk, off)
		first = append(first, chunk[:n]...)
		off += int64(n)
		if i := bytes.IndexByte(first, '\n'); i >= 0 {
			first = first[:i]
			break
		}
		if err == io.EOF || n == 0 {
			return h, 0, fmt.Errorf("%s: %w (no complete header line)", path, ErrNotJournal)
		}
		if err != nil {
			return h, 0, fmt.Errorf("journal: %w", err)
		}
		if len(first) > 1<<20 {
			return h, 0, fmt.Errorf("%s: %w (first line over 1 MiB)", path, ErrNotJournal)
		}
	}
	h, err := parseHeader(path, first)
	if err != nil {
		return h, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return h, 0, fmt.Errorf("journal: %w", err)
	}
	// Scan back from the end for the last "\n".
	end := st.Size()
	for end > 0 {
		start := max(0, end-int64(len(chunk)))
		n, err := f.ReadAt(chunk[:end-start], start)
		if err != nil && err != io.EOF {
			return h, 0, fmt.Errorf("journal: %w", err)
		}
		if i := bytes.LastIndexByte(chunk[:n], '\n'); i >= 0 {
			return h, start + int64(i) + 1, nil
		}
		end = start
	}
	return h, 0, fmt.Errorf("%s: %w (no complete header line)", path, ErrNotJournal)
}

// Path returns the journal's file name.
func (w *Writer) Path() string { return w.path }

// Created returns the header's created time: event times count from it.
func (w *Writer) Created() time.Time { return w.enc.created }

// Write encodes e into the memory buffer; it never touches the disk. A
// log-lines batch is held until the next event that is not derived from
// it (its throughput, prefill and tok/s events at its time ride on its
// line: docs/journal-format.md) or the next Flush. A
// payload for the screen only (journal-status, bench-progress,
// repeat-progress) is skipped. It
// returns an error wrapping ErrUnknownKind for a payload outside the
// format, or the codec's error (nothing is buffered then). While MaxPending
// bytes wait for a disk that refuses them, e is dropped and counted
// (Status.Dropped), and Write returns nil: the loss shows in Status.
func (w *Writer) Write(e event.Event) error {
	if e.Data == nil {
		return fmt.Errorf("journal: event without payload: %w", ErrUnknownKind)
	}
	kind := e.Data.Kind()
	if kind.Info().ScreenOnly {
		return nil
	}
	c := codecOf(kind)
	if c == nil {
		return fmt.Errorf("journal: %q: %w", kind, ErrUnknownKind)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("journal: write after close")
	}
	t := toMicros(e.At, w.enc.created)
	if !w.enc.v1 && w.absorb(t, e.Data) {
		return nil // rides on the log-lines line it is derived from
	}
	w.finishLines()
	if len(w.buf) >= MaxPending {
		w.dropped++
		switch kind {
		case event.KindGPUSample:
			// The next sample must be a keyframe: the one it would refer
			// to may be this.
			w.enc.gpu.has = false
		case event.KindLogLines:
			w.enc.log.has = false // the next line is a key
		}
		return nil
	}
	if ls, ok := e.Data.(event.LogLines); ok && !w.enc.v1 {
		w.holdLines(t, appendFrameStart(nil, t, kind.String()), e.At, ls)
		return nil
	}
	n := len(w.buf)
	b := appendFrameStart(w.buf, t, kind.String())
	b, err := c.enc(&w.enc, b, e.At, e.Data)
	if err != nil {
		w.buf = b[:n]
		return fmt.Errorf("journal: encode %s: %w", kind, err)
	}
	w.buf = append(b, ']', '\n')
	return nil
}

// Flush writes the buffered lines with write(2) and, when sync is set,
// fsyncs the file. On an error (ENOSPC) the bytes not written stay buffered
// — a partial write keeps the rest of its line — for the next Flush, and
// the error shows in Status until a Flush succeeds. The error is returned
// too.
func (w *Writer) Flush(sync bool) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errors.New("journal: flush after close")
	}
	w.finishLines()
	out := w.buf
	w.buf = nil
	f := w.f
	w.mu.Unlock()

	var n int
	var err error
	if len(out) > 0 {
		n, err = f.Write(out)
	}
	if err == nil && sync {
		if serr := f.Sync(); serr != nil {
			err = fmt.Errorf("sync %s: %w", w.path, serr)
		}
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	w.bytes += int64(n)
	if rest := out[n:]; len(rest) > 0 {
		// Put the unwritten bytes before whatever Write added meanwhile.
		w.buf = append(rest[:len(rest):len(rest)], w.buf...)
	} else if len(w.buf) == 0 {
		w.buf = out[:0] // reuse the buffer
	}
	if err != nil {
		w.err = err
		return fmt.Errorf("journal: %w", err)
	}
	w.err = nil
	return nil
}

// Status returns the writer's state for the screen: bytes written, bytes
// pending, the last write error (until a flush succeeds) and the events
// dropped.
func (w *Writer) Status() event.JournalStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := event.JournalStatus{Path: w.path, Bytes: w.bytes, Pending: len(w.buf), Dropped: w.dropped}
	if w.err != nil {
		s.Err = w.err.Error()
	}
	return s
}

// Close flushes and fsyncs, closes the file and releases the lock. It
// returns the flush error (the pending bytes are then lost) or the close
// error. Calling it again does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return nil
	}
	err := w.Flush(true)
	w.mu.Lock()
	w.closed = true
	f := w.f
	w.mu.Unlock()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("journal: %w", cerr)
	}
	if lerr := w.lock.release(); err == nil && lerr != nil {
		err = fmt.Errorf("journal: %w", lerr)
	}
	return err
}
