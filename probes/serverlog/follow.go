package serverlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/probes/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote"
)

// FollowError reports that following the log failed for a while: tail
// could not start, its stream ended (connection lost, process killed), or
// tail complained on stderr ("cannot open 'x' for reading: Permission
// denied"). The Follower retries by itself. It is an event payload.
type FollowError struct {
	Path  string
	Err   string        // what went wrong, sanitised
	Retry time.Duration // wait before the next attempt; 0 when tail keeps running
}

// Kind implements event.Payload.
func (FollowError) Kind() string { return "log-follow-error" }

// FollowOptions tunes a Follower. The zero value follows the whole file
// from byte 0.
type FollowOptions struct {
	// Offset is the byte offset to start at, e.g. one saved from an earlier
	// Follower; it must be the start of a line. Ignored when Backlog > 0.
	Offset int64
	// Backlog > 0 starts near the end of the file instead: at the first
	// line that starts within the last Backlog bytes (the cockpit does not
	// replay a 2 GB log).
	Backlog int64
	// MinBackoff and MaxBackoff bound the wait between restarts of tail,
	// doubling from one to the other while restarts keep failing
	// (defaults 200 ms and 10 s).
	MinBackoff, MaxBackoff time.Duration
	// MaxBatch is the most lines one Lines event carries (default 2048).
	MaxBatch int
}

// Follower follows one log file on a host, like `tail -F`, and survives
// dropped connections, truncation and rotation without losing or repeating
// a line. It emits, through its sink:
//   - Lines: complete lines in batches (everything one read returned),
//     never a partial line: the bytes after the last newline are held until
//     their newline arrives;
//   - Reset: the file was truncated, replaced or rotated and reading
//     restarted at offset 0 (the consumer should drop what it derived from
//     the old content);
//   - FollowError: following failed for a while and is being retried.
//
// It runs `exec env LC_ALL=C tail -c +<offset+1> -F -- <path>` (no PTY, so
// stdout is byte-exact and stderr separate; LC_ALL=C so that tail's notices
// are in English), built with remote.Command. The offset advances only
// over complete lines. GNU tail reports truncation and replacement on
// stderr only ("file truncated", "has been replaced", "has appeared;
// following new file"); on such a notice the Follower stops that tail,
// emits Reset and restarts at 0. When the stream ends for any other reason
// (process exit, connection lost) it restarts with backoff, and before
// every start it runs `stat -L -c '%i %s' -- <path>`: a changed inode
// (rotation while disconnected) or a size below the offset (truncation)
// restarts at 0 with a Reset. A file that does not exist yet is waited for
// (tail -F retries). Lines appended to a rotated-away file after the
// connection dropped are not read (FILE.1 is not looked at).
//
// Known limit: stdout and stderr are separate streams, so a few lines of
// the new content that tail sends right after a truncation notice can be
// delivered before the notice is read; they are delivered again after the
// Reset. What follows a Reset is always exact.
type Follower struct {
	host remote.Host
	path string
	sink event.Sink
	opts FollowOptions

	offset atomic.Int64
	mu     sync.Mutex // serialises sink calls
}

// NewFollower returns a Follower of path on host that reports to sink. It
// does nothing until Run.
func NewFollower(host remote.Host, path string, sink event.Sink, opts FollowOptions) *Follower {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(10*time.Second, opts.MinBackoff)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 2048
	}
	f := &Follower{host: host, path: path, sink: sink, opts: opts}
	if opts.Backlog <= 0 {
		f.offset.Store(max(opts.Offset, 0))
	}
	return f
}

// Offset returns the byte offset just after the last complete line
// delivered: where a new Follower should start to continue without loss or
// repetition.
func (f *Follower) Offset() int64 { return f.offset.Load() }

// Path returns the followed path.
func (f *Follower) Path() string { return f.path }

// Run follows the file until ctx ends, and then returns ctx's error. It
// returns another error only when the path cannot be put on a shell
// command line (remote.Quote refuses control characters).
func (f *Follower) Run(ctx context.Context) error {
	if _, err := remote.Quote(f.path); err != nil {
		return fmt.Errorf("serverlog: follow %q: %w", f.path, err)
	}
	backoff := f.opts.MinBackoff
	var inode uint64
	haveInode := false
	skipFirst := false // Backlog: drop the partial first line
	first := true
	for {
		st, err := f.stat(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err != nil:
			f.emitError(fmt.Sprintf("stat %s: %v", f.path, err), backoff)
			if !sleep(ctx, backoff) {
				return ctx.Err()
			}
			backoff = min(2*backoff, f.opts.MaxBackoff)
			continue
		case !st.exists:
			if f.Offset() > 0 {
				f.reset("missing")
			}
			haveInode = false
		default:
			off := f.Offset()
			switch {
			case first && f.opts.Backlog > 0:
				if st.size > f.opts.Backlog {
					// Start one byte early: if that byte is a newline the
					// first whole line is kept, else the cut line is dropped.
					f.offset.Store(st.size - f.opts.Backlog - 1)
					skipFirst = true
				}
			case haveInode && st.inode != inode && off > 0:
				f.reset("rotated")
			case st.size < off:
				f.reset("truncated")
			}
			inode, haveInode = st.inode, st.hasInode
		}
		first = false

		res := f.follow(ctx, skipFirst)
		skipFirst = skipFirst && !res.skipped
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res.notice != "" {
			f.reset(res.notice)
			haveInode = false
			skipFirst = false
			backoff = f.opts.MinBackoff
			continue
		}
		if res.healthy {
			backoff = f.opts.MinBackoff
		}
		msg := "tail ended"
		if res.err != nil {
			msg = res.err.Error()
		}
		f.emitError(msg, backoff)
		if !sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, f.opts.MaxBackoff)
	}
}

// fileStat is what `stat -L -c '%i %s'` said about the file.
type fileStat struct {
	exists   bool
	hasInode bool
	inode    uint64
	size     int64
}

// stat runs stat on the file. A missing file is not an error; a stat that
// fails otherwise (not installed, odd output) yields an existing file of
// unknown inode and size, so that no reset is made on its account.
func (f *Follower) stat(ctx context.Context) (fileStat, error) {
	cmd, err := remote.Command("env", "LC_ALL=C", "stat", "-L", "-c", "%i %s", "--", f.path)
	if err != nil {
		return fileStat{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := f.host.Run(sctx, cmd, nil)
	var exitErr *remote.ExitError
	if errors.As(err, &exitErr) {
		if bytes.Contains(res.Stderr, []byte("No such file")) || bytes.Contains(exitErr.Stderr, []byte("No such file")) {
			return fileStat{}, nil
		}
		return fileStat{exists: true, size: 1<<63 - 1}, nil
	}
	if err != nil {
		return fileStat{}, err
	}
	fields := strings.Fields(string(res.Stdout))
	if len(fields) != 2 {
		return fileStat{exists: true, size: 1<<63 - 1}, nil
	}
	ino, err1 := strconv.ParseUint(fields[0], 10, 64)
	size, err2 := strconv.ParseInt(fields[1], 10, 64)
	if err1 != nil || err2 != nil {
		return fileStat{exists: true, size: 1<<63 - 1}, nil
	}
	return fileStat{exists: true, hasInode: true, inode: ino, size: size}, nil
}

// followResult is how one run of tail ended.
type followResult struct {
	notice  string // Reset reason from tail's stderr; the stream was stopped
	healthy bool   // it delivered data or ran long enough to reset the backoff
	skipped bool   // the Backlog's partial first line was dropped
	err     error
}

// healthyAfter: a tail that ran this long counts as healthy even without
// data (an idle server writes nothing).
const healthyAfter = 5 * time.Second

// follow runs one tail from the current offset until its stream ends.
func (f *Follower) follow(ctx context.Context, skipFirst bool) followResult {
	cmd, err := remote.Command("env", "LC_ALL=C", "tail", "-c", "+"+strconv.FormatInt(f.Offset()+1, 10), "-F", "--", f.path)
	if err != nil {
		return followResult{err: err}
	}
	started := time.Now()
	proc, err := f.host.Start(ctx, "exec "+cmd)
	if err != nil {
		return followResult{err: err}
	}

	var notice atomic.Pointer[string]
	var received atomic.Bool // stdout bytes arrived from this tail
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		f.watchStderr(proc, &notice, &received)
	}()

	res := followResult{}
	rd := lineReader{skipFirst: skipFirst}
	buf := make([]byte, 64<<10)
	out := proc.Stdout()
	for {
		n, rerr := out.Read(buf)
		if n > 0 {
			received.Store(true)
			if notice.Load() != nil {
				break // the rest belongs to the new file: re-read it from 0
			}
			res.healthy = true
			lines, consumed := rd.feed(buf[:n], f.Offset())
			f.offset.Add(consumed)
			f.emitLines(lines)
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) && notice.Load() == nil && ctx.Err() == nil {
				res.err = rerr
			}
			break
		}
	}
	proc.Close()
	<-stderrDone
	werr := proc.Wait()
	if p := notice.Load(); p != nil {
		res.notice = *p
	}
	if res.err == nil && res.notice == "" {
		res.err = werr
	}
	res.skipped = rd.skipped
	res.healthy = res.healthy || time.Since(started) >= healthyAfter
	return res
}

// watchStderr reads tail's stderr. A truncation or replacement notice is
// stored and stops the process; other complaints are reported.
func (f *Follower) watchStderr(proc remote.Process, notice *atomic.Pointer[string], received *atomic.Bool) {
	sc := bufio.NewScanner(proc.Stderr())
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Bytes()
		reason := ""
		switch {
		case bytes.Contains(line, []byte("file truncated")):
			reason = "truncated"
		case bytes.Contains(line, []byte("has been replaced")):
			reason = "replaced"
		case bytes.Contains(line, []byte("has appeared;")):
			reason = "rotated"
		case bytes.Contains(line, []byte("has become inaccessible")),
			bytes.Contains(line, []byte("cannot open")) && bytes.Contains(line, []byte("No such file")),
			bytes.Contains(line, []byte("reverting to polling")):
			continue // tail -F waits for the file to come back; polling is fine
		default:
			f.emitError(string(line), 0)
			continue
		}
		if reason == "rotated" && f.Offset() == 0 && !received.Load() {
			// The file did not exist when tail started: tail now reads the
			// new file from byte 0, which is where we are.
			continue
		}
		if notice.CompareAndSwap(nil, &reason) {
			proc.Close()
		}
	}
}

// lineReader cuts a byte stream into complete lines and holds the rest.
type lineReader struct {
	partial   []byte // bytes after the last newline, at most MaxLineBytes of them
	partLen   int64  // length of the held partial line in the file
	skipFirst bool   // drop everything up to the first newline (Backlog)
	skipped   bool
}

// feed takes the next chunk of the stream, where base is the file offset of
// the first held byte (the current offset); it returns the complete lines
// and how many bytes of the file they span.
func (r *lineReader) feed(chunk []byte, base int64) ([]Line, int64) {
	var consumed int64
	if r.skipFirst {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			// Still inside the cut line; it is never delivered, so the
			// offset may move past it.
			return nil, int64(len(chunk))
		}
		chunk = chunk[i+1:]
		consumed = int64(i + 1)
		r.skipFirst, r.skipped = false, true
	}
	last := bytes.LastIndexByte(chunk, '\n')
	if last < 0 {
		r.hold(chunk)
		return nil, consumed
	}
	complete := chunk[:last+1]
	// One backing array for the whole batch.
	n := bytes.Count(complete, []byte{'\n'})
	text := make([]byte, 0, len(r.partial)+len(complete))
	lines := make([]Line, 0, n)
	pos := base + consumed
	for len(complete) > 0 {
		i := bytes.IndexByte(complete, '\n')
		seg := complete[:i]
		start := len(text)
		fileLen := int64(i + 1)
		if r.partLen > 0 || len(r.partial) > 0 {
			text = append(text, r.partial...)
			fileLen += r.partLen
			r.partial, r.partLen = r.partial[:0], 0
		}
		if room := MaxLineBytes - (len(text) - start); room > 0 {
			text = append(text, seg[:min(len(seg), room)]...)
		}
		lines = append(lines, Line{Offset: pos, Text: text[start:len(text):len(text)]})
		pos += fileLen
		consumed += fileLen
		complete = complete[i+1:]
	}
	r.hold(chunk[last+1:])
	return lines, consumed
}

// hold keeps b as (the continuation of) the partial line, up to
// MaxLineBytes bytes of it.
func (r *lineReader) hold(b []byte) {
	r.partLen += int64(len(b))
	if room := MaxLineBytes - len(r.partial); room > 0 {
		r.partial = append(r.partial, b[:min(len(b), room)]...)
	}
}

func (f *Follower) emitLines(lines []Line) {
	for len(lines) > 0 {
		n := min(len(lines), f.opts.MaxBatch)
		f.emit(Lines{Path: f.path, Lines: lines[:n:n]})
		lines = lines[n:]
	}
}

func (f *Follower) reset(reason string) {
	f.offset.Store(0)
	f.emit(Reset{Path: f.path, Reason: reason, Offset: 0})
}

func (f *Follower) emitError(msg string, retry time.Duration) {
	f.emit(FollowError{Path: f.path, Err: sanitize.String(msg), Retry: retry})
}

func (f *Follower) emit(p event.Payload) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sink(event.Event{At: time.Now(), Data: p})
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
