package follow

// The host side of the agent path: `flightdeck agent follow` reads the log
// in-process and writes the stream a Follower reads, in the form of GNU
// tail's merged output (see Follower), so that the same splitter and
// classifier read both.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
)

// StreamOptions says what StreamFile follows and how.
type StreamOptions struct {
	// Path is the log file, followed by name (like tail -F).
	Path string
	// Offset is where to start in the file found at Path at the first
	// poll, in bytes: the Follower's offset, the start of a line.
	Offset int64
	// Anchor is the reader's copy of the file's bytes just before Offset
	// (at most 128, the last ones count). When the file has other bytes
	// there, it was rewritten: StreamFile says "file truncated" and
	// starts at 0. Empty: the bytes found there are taken as they are.
	Anchor []byte
	// Marker starts every message: the Follower's nonce marker (at least
	// 16 bytes of '/' and '.' starting with '/', which log content cannot
	// contain unless someone who read it on the command line forged it).
	Marker []byte
	// Poll is the time between two looks at the file (default 150 ms).
	Poll time.Duration
	// Keepalive is the longest silence: a quiet message is written when
	// nothing else was for this long (default 2 s), so that a closed
	// SSH session ends StreamFile (EPIPE, or SIGPIPE on a stdout) within
	// that time.
	Keepalive time.Duration
}

// keepaliveText is the text of StreamFile's keepalive message (quiet for
// the Follower's classifier).
const keepaliveText = "flightdeck agent follow: alive"

// streamChunk is the most StreamFile reads with one pread.
const streamChunk = 256 << 10

// StreamFile follows o.Path in this process and writes to w what the
// Follower reads from `tail -c +N -F PATH 2>&1`: the file's bytes from
// o.Offset as they are appended (partial lines included; the Follower holds
// them), and, in order with them, messages of the form marker + "tail: " +
// text + "\n" worded as GNU tail's (LC_ALL=C):
//   - "'P': file truncated": the file is shorter than what was read, or
//     its bytes before the read offset are not those read (rewritten:
//     the in-process content check, made on every poll that finds the
//     size or modification time changed); reading restarts at 0;
//   - "'P' has been replaced;  following new file": another file has the
//     name (rotation); what the old one still had is written first;
//   - "'P' has appeared;  following new file": a file is there again after
//     a problem was reported; read from 0;
//   - "cannot open 'P' for reading: No such file or directory" (or another
//     strerror text), "'P' has become inaccessible: No such file or
//     directory" (the open file lost its name), "'P': cannot follow end of
//     this type of file" (not a regular file): once per change;
//   - a keepalive (keepaliveText) after o.Keepalive without a write.
//
// It spawns no process: stat(2) of the path, fstat(2) and pread(2) of the
// open file every o.Poll. A FIFO or device is never opened for reading
// (it would block or consume data). It returns when ctx ends (nil) or a
// write fails (that error); an error for bad options before writing
// anything.
func StreamFile(ctx context.Context, w io.Writer, o StreamOptions) error {
	if o.Path == "" {
		return errors.New("follow: stream: no path")
	}
	if o.Offset < 0 {
		return fmt.Errorf("follow: stream: offset %d is negative", o.Offset)
	}
	if !validMarker(o.Marker) {
		return fmt.Errorf("follow: stream: marker %q: want at least 16 bytes of '/' and '.' starting with '/'", o.Marker)
	}
	if len(o.Anchor) > anchorLen {
		o.Anchor = o.Anchor[len(o.Anchor)-anchorLen:]
	}
	if o.Poll <= 0 {
		o.Poll = 150 * time.Millisecond
	}
	if o.Keepalive <= 0 {
		o.Keepalive = 2 * time.Second
	}
	s := &fileStream{o: o, w: w, lastWrite: time.Now()}
	defer s.closeFile()
	t := time.NewTicker(o.Poll)
	defer t.Stop()
	for {
		if err := s.poll(); err != nil {
			return err
		}
		if time.Since(s.lastWrite) >= o.Keepalive {
			if err := s.message(keepaliveText); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// validMarker reports whether m can be a Follower's marker.
func validMarker(m []byte) bool {
	if len(m) < 16 || m[0] != '/' {
		return false
	}
	return len(bytes.Trim(m, "/.")) == 0
}

// fileStream is StreamFile's state.
type fileStream struct {
	o         StreamOptions
	w         io.Writer
	lastWrite time.Time

	f      *os.File    // the followed file, nil while there is none
	fi     os.FileInfo // f's identity, as fstat gave it at open
	pos    int64       // the offset in f of the next byte to write
	anchor []byte      // f's bytes before pos (at most anchorLen), as written
	size   int64       // fstat's size at the last poll
	mtime  time.Time   // and modification time
	opened bool        // a file was opened: later ones are read from 0
	// problem is the class of the last problem reported ("" none; "missing",
	// "notafile", "error"), so that each is said once.
	problem string
	buf     []byte
}

// poll looks at the path and the open file once and writes what changed.
func (s *fileStream) poll() error {
	fi, err := os.Stat(s.o.Path)
	if s.f != nil {
		if err == nil && os.SameFile(fi, s.fi) {
			return s.readNew()
		}
		// Renamed away, removed or replaced: what the old file still has
		// comes first.
		if derr := s.drain(); derr != nil {
			return derr
		}
		s.closeFile()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return s.report("missing", quoteName(s.o.Path)+" has become inaccessible: "+strerror(err))
			}
			return s.report("error", "cannot open "+quoteName(s.o.Path)+" for reading: "+strerror(err))
		}
		return s.open(fi, true)
	}
	if err != nil {
		class := "error"
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			class = "missing"
		}
		return s.report(class, "cannot open "+quoteName(s.o.Path)+" for reading: "+strerror(err))
	}
	return s.open(fi, false)
}

// open opens the regular file that fi describes (replaced: it took the
// name of the file followed so far) and reads it.
func (s *fileStream) open(fi os.FileInfo, replaced bool) error {
	notRegular := quoteName(s.o.Path) + ": cannot follow end of this type of file"
	if !fi.Mode().IsRegular() {
		return s.report("notafile", notRegular)
	}
	// O_NONBLOCK: a FIFO put there since the stat must not block the open.
	f, err := os.OpenFile(s.o.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		class := "error"
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			class = "missing"
		}
		return s.report(class, "cannot open "+quoteName(s.o.Path)+" for reading: "+strerror(err))
	}
	ffi, err := f.Stat()
	if err != nil || !ffi.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return s.report("error", "cannot fstat "+quoteName(s.o.Path)+": "+strerror(err))
		}
		return s.report("notafile", notRegular)
	}
	s.f, s.fi, s.size, s.mtime = f, ffi, -1, time.Time{}
	switch {
	case replaced:
		s.pos, s.anchor = 0, nil
		if err := s.message(quoteName(s.o.Path) + " has been replaced;  following new file"); err != nil {
			return err
		}
	case s.problem != "" || s.opened:
		s.pos, s.anchor = 0, nil
		if err := s.message(quoteName(s.o.Path) + " has appeared;  following new file"); err != nil {
			return err
		}
	default:
		s.pos, s.anchor = s.o.Offset, bytes.Clone(s.o.Anchor)
	}
	s.problem, s.opened = "", true
	return s.readNew()
}

// readNew writes what the open file gained since the last poll, after
// checking that its bytes before pos are still those written.
func (s *fileStream) readNew() error {
	fi, err := s.f.Stat()
	if err != nil {
		s.closeFile()
		return s.report("error", "cannot fstat "+quoteName(s.o.Path)+": "+strerror(err))
	}
	size := fi.Size()
	changed := size != s.size || !fi.ModTime().Equal(s.mtime)
	s.size, s.mtime = size, fi.ModTime()
	if size < s.pos {
		if err := s.truncated(); err != nil {
			return err
		}
	}
	if size == s.pos && !(changed && len(s.anchor) > 0) {
		return nil
	}
	return s.read(size, false)
}

// truncated says so and restarts at 0.
func (s *fileStream) truncated() error {
	s.pos, s.anchor = 0, nil
	return s.message(quoteName(s.o.Path) + ": file truncated")
}

// read writes the file's bytes from pos up to size (at least), each pread
// with the anchor's bytes before them: when those differ, the file was
// rewritten and it is read from 0 (unless final: the old file of a
// rotation, whose rest is then dropped).
func (s *fileStream) read(size int64, final bool) error {
	for {
		n := int64(len(s.anchor))
		want := min(max(size-s.pos, 0), streamChunk)
		if cap(s.buf) < int(n+want) {
			s.buf = make([]byte, n+want)
		}
		buf := s.buf[:n+want]
		got, err := s.f.ReadAt(buf, s.pos-n)
		if err != nil && !errors.Is(err, io.EOF) {
			s.closeFile()
			return s.report("error", "error reading "+quoteName(s.o.Path)+": "+strerror(err))
		}
		buf = buf[:got]
		if int64(got) < n || !bytes.Equal(buf[:n], s.anchor) {
			if final {
				return nil
			}
			if err := s.truncated(); err != nil {
				return err
			}
			if fi, err := s.f.Stat(); err == nil {
				size = fi.Size()
			}
			continue
		}
		data := buf[n:]
		if len(data) == 0 {
			return nil
		}
		if err := s.write(data); err != nil {
			return err
		}
		s.pos += int64(len(data))
		s.anchor = lastBytes(s.anchor[:0:0], s.anchor, data)
		if s.pos >= size {
			return nil
		}
	}
}

// drain writes what the open file has beyond pos, before it is let go.
func (s *fileStream) drain() error {
	fi, err := s.f.Stat()
	if err != nil || fi.Size() <= s.pos {
		return nil
	}
	return s.read(fi.Size(), true)
}

func (s *fileStream) closeFile() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// report writes a problem's message when its class differs from the last
// one reported.
func (s *fileStream) report(class, text string) error {
	if class == s.problem {
		return nil
	}
	s.problem = class
	return s.message(text)
}

func (s *fileStream) message(text string) error {
	b := make([]byte, 0, len(s.o.Marker)+len("tail: ")+len(text)+1)
	b = append(append(append(append(b, s.o.Marker...), "tail: "...), text...), '\n')
	return s.write(b)
}

func (s *fileStream) write(b []byte) error {
	s.lastWrite = time.Now()
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("follow: stream: %w", err)
	}
	return nil
}

// strerror is err's errno text as strerror(3) (glibc) words it: "No such
// file or directory", which the Follower's classifier knows.
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		t := errno.Error()
		if t != "" {
			return strings.ToUpper(t[:1]) + t[1:]
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
