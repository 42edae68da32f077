// Package follow follows an inference server's log on a host, like
// `tail -F` over SSH (or locally): complete lines in batches, exactly once
// across dropped connections, truncation, rotation and a file that does
// not exist yet, each with its byte offset (event.LogLines, LogReset,
// LogNotice, LogFollowError). What the lines say is for the parsers of
// probes/serverlog.
package follow

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/internal/ctxwait"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Options tunes a Follower. The zero value follows the whole file
// from byte 0.
type Options struct {
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
	// MaxBatch is the most lines one event.LogLines carries (default 2048).
	MaxBatch int
	// CheckInterval is the least time between two content checks in
	// CheckStrict (see Follower), default 250 ms: while lines keep coming,
	// they are delivered at most this much (plus a round trip) after tail
	// read them.
	CheckInterval time.Duration
	// Check is when tail's batches are checked against the file (see
	// Follower): CheckStrict, the zero value, before each is delivered;
	// CheckLazy after, at most every LazyInterval. Not used on the agent
	// path: the agent checks on the host, in-process.
	Check CheckMode
	// LazyInterval is the least time between two checks in CheckLazy
	// (default 30 s: at most 2 processes a minute on the host).
	LazyInterval time.Duration
	// Agent, when set, follows with `flightdeck agent follow` on the host
	// (StreamFile) instead of tail: no content checks from here, no
	// process on the host while it runs. When AgentCommand says
	// remote.ErrNoAgent, tail is used, and the agent asked again at the
	// next restart.
	Agent remote.Agent
	// AgentWait is how long the first start waits for Agent's install to
	// settle (default 5 s) before it starts tail; the Follower switches
	// to the agent when it settles later.
	AgentWait time.Duration
}

// CheckMode says when the Follower compares tail's batches with the file.
type CheckMode uint8

const (
	// CheckStrict delivers a batch that continues the file only after a
	// content check (one dd at most every CheckInterval while lines
	// arrive): every line exactly once, even when tail misses a rewrite.
	CheckStrict CheckMode = iota
	// CheckLazy delivers at once and checks at most every LazyInterval
	// after lines were delivered; see Follower for what it gives up.
	CheckLazy
)

// Follower follows one log file on a host, like `tail -F`, and survives
// dropped connections, truncation and rotation without losing or repeating
// a line. It emits, through its sink:
//   - event.LogLines: complete lines in batches, never a partial line: the bytes
//     after the last newline are held until their newline arrives;
//   - event.LogReset: the file was truncated, replaced or rotated and reading
//     restarted at offset 0 (the consumer should drop what it derived from
//     the old content); every line of the new content comes after it,
//     exactly once, with its offset in the new file;
//   - event.LogNotice: the file is missing, not a regular file, unreadable, or
//     appeared (once per change of class, not on every retry);
//   - event.LogFollowError: following failed for a while and is being retried.
//
// How. It runs GNU tail from the offset with stderr merged into stdout,
// `tail -c +<offset+1> -F -- <path> 2>&1`, LC_ALL=C (English messages),
// no PTY (byte-exact output), built with remote.Quote. The merge keeps
// tail's messages in order with the data: tail writes a message with
// error(3), which flushes the data before it, so "file truncated" comes
// exactly after the old file's last bytes (perhaps after a partial line)
// and before the new content. To tell a message from log content that
// imitates one, tail is executed by a path spelled with a per-Follower
// random nonce: 64 random "./" or "/" segments ("/./././/./usr/bin/tail");
// tail starts every message with that argv[0], log content cannot contain
// it, and the rest of the message must be "…tail: <text>". On "file
// truncated", "has been replaced", "has appeared" or "has become
// accessible" the Follower drops the held partial line and emits Reset at
// that point of the stream, then the new content from offset 0, without
// restarting tail.
//
// GNU tail misses a truncation when the file is rewritten to at least its
// old size before tail looks (truncate and a large write in a row, or
// `cp` over the log): it then prints the new file from the old offset,
// without a message. So lines are delivered only after a content check:
// before a batch that continues the file at offset o is delivered, `dd`
// reads the file's bytes just before o (up to 128) and the batch's first
// bytes. If the bytes before o are those delivered, nothing was rewritten
// since they were read, and the batch is delivered. If they differ but the
// file has the batch's bytes at o, tail read the batch from the rewritten
// file: the batch is dropped, Reset is emitted and tail restarts at 0.
// Otherwise the file changed after tail read the batch: the batch is
// delivered, then Reset, and tail restarts at 0. Checks run at most every
// CheckInterval while lines arrive, one `dd` each, and not for a batch that
// starts at offset 0 or holds one of tail's own resets: what tail read
// before it reported a truncation is the old content, which is gone, so it
// is delivered as read. Only regular files are read by dd (a FIFO would
// lose bytes). A file rewritten with the very same bytes before o is not
// told from an appended one; it does not matter, the bytes are the same.
//
// When the stream ends for any other reason (process exit, connection
// lost) undelivered bytes are dropped (they are read again), and tail
// restarts with backoff. Before every start `stat -L -c '%i %s %f'` runs:
// a changed inode (rotation while disconnected), a size below the offset,
// or bytes before the offset that are not those delivered (rewritten while
// disconnected) restart at 0 with a Reset. A file that does not exist yet
// is waited for (tail -F retries). Lines appended to a rotated-away file
// after the connection dropped are not read (FILE.1 is not looked at).
//
// Needs GNU tail, stat and dd (coreutils) on the host. Without dd the
// content check is off (a FollowError says so) and a rewrite that tail
// misses goes unnoticed; another tail's messages would be read as log
// lines. The nonce is on tail's command line, where local users of the
// host can read it (ps); they could forge a message, log content alone
// cannot.
type Follower struct {
	host   remote.Host
	path   string
	sink   event.Sink
	opts   Options
	marker []byte // "/" and the nonce segments: how tail's argv[0] starts

	offset atomic.Int64
	mu     sync.Mutex // serialises sink calls

	// Run's state, touched only by Run's goroutine.
	anchor  []byte               // the file's last bytes before offset (at most anchorLen), as delivered
	noCheck bool                 // dd is missing: no content checks
	notice  event.LogNoticeClass // the class of the last Notice emitted
	// unwatched is set while tail restarts after a run that ended (a lost
	// connection) until it delivers checked lines: a reset found then
	// happened while the log was not watched.
	unwatched bool
	strict    bool // the current run is tail's in CheckStrict
	// CheckLazy: the offset last found to hold the bytes delivered before
	// it (0: none yet), and those bytes.
	lazyAt     int64
	lazyAnchor []byte
	agent      agentState
}

// New returns a Follower of path on host that reports to sink. It
// does nothing until Run.
func New(host remote.Host, path string, sink event.Sink, opts Options) *Follower {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(10*time.Second, opts.MinBackoff)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 2048
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = 250 * time.Millisecond
	}
	if opts.LazyInterval <= 0 {
		opts.LazyInterval = 30 * time.Second
	}
	if opts.AgentWait <= 0 {
		opts.AgentWait = 5 * time.Second
	}
	f := &Follower{host: host, path: path, sink: sink, opts: opts, marker: nonceMarker()}
	if opts.Backlog <= 0 {
		f.offset.Store(max(opts.Offset, 0))
	}
	return f
}

// nonceMarker returns "/" followed by 64 segments, "./" or "/" by the bits
// of a random 64-bit value: a path prefix that names the root directory.
func nonceMarker() []byte {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	v := binary.LittleEndian.Uint64(b[:])
	m := make([]byte, 0, 1+2*64)
	m = append(m, '/')
	for i := range 64 {
		if v>>i&1 == 1 {
			m = append(m, '.', '/')
		} else {
			m = append(m, '/')
		}
	}
	return m
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
	if f.opts.Agent != nil {
		defer f.waitAgent(ctx)()
	}
	backoff := f.opts.MinBackoff
	var inode uint64
	haveInode := false
	skipFirst := false // Backlog: drop the partial first line
	first := true
	for {
		useAgent := f.agentUsable(ctx, first)
		st, err := f.stat(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err != nil:
			f.emitError(fmt.Sprintf("stat %s: %v", f.path, err), backoff)
			if !ctxwait.Sleep(ctx, backoff) {
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
			// The agent compares the anchor itself, at its first read.
			if f.Offset() > 0 && !useAgent && !f.anchorHolds(ctx) {
				f.reset("truncated")
				skipFirst = false
			}
			inode, haveInode = st.inode, st.hasInode
			if st.regular && (f.notice == event.NoticeMissing || f.notice == event.NoticeNotAFile) {
				// It came back while tail was not running to say so.
				f.emitNotice(event.NoticeAppeared, quoteName(f.path)+" has appeared")
			}
		}
		first = false

		res := f.follow(ctx, skipFirst, useAgent)
		f.unwatched = true // until the next run delivers checked lines
		skipFirst = skipFirst && !res.skipped
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !useAgent {
			f.agent.broken = false // ask the agent again now
		}
		if res.reset {
			// The stream said the file was replaced or rewritten: the
			// inode from before is not the file's any more.
			haveInode = false
		}
		if res.switched {
			// The agent came after tail started: restart with it.
			backoff = f.opts.MinBackoff
			continue
		}
		if res.restarted {
			// A content check found the file rewritten; Reset is out.
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
		if !ctxwait.Sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, f.opts.MaxBackoff)
	}
}

// fileStat is what `stat -L -c '%i %s %f'` said about the file.
type fileStat struct {
	exists   bool
	hasInode bool
	inode    uint64
	size     int64
	regular  bool
}

// stat runs stat on the file. A missing file is not an error; a stat that
// fails otherwise (not installed, odd output) yields an existing file of
// unknown inode, size and type, so that no reset is made on its account.
func (f *Follower) stat(ctx context.Context) (fileStat, error) { return f.statPath(ctx, f.path) }

// statPath is stat for another path (the rotated copy).
func (f *Follower) statPath(ctx context.Context, path string) (fileStat, error) {
	cmd, err := remote.Command("env", "LC_ALL=C", "stat", "-L", "-c", "%i %s %f", "--", path)
	if err != nil {
		return fileStat{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := f.host.Run(sctx, cmd, nil)
	unknown := fileStat{exists: true, size: 1<<63 - 1}
	var exitErr *remote.ExitError
	if errors.As(err, &exitErr) {
		if bytes.Contains(res.Stderr, []byte("No such file")) || bytes.Contains(exitErr.Stderr, []byte("No such file")) {
			return fileStat{}, nil
		}
		return unknown, nil
	}
	if err != nil {
		return fileStat{}, err
	}
	fields := strings.Fields(string(res.Stdout))
	if len(fields) != 3 {
		return unknown, nil
	}
	ino, err1 := strconv.ParseUint(fields[0], 10, 64)
	size, err2 := strconv.ParseInt(fields[1], 10, 64)
	mode, err3 := strconv.ParseUint(fields[2], 16, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return unknown, nil
	}
	return fileStat{exists: true, hasInode: true, inode: ino, size: size, regular: mode&0o170000 == 0o100000}, nil
}

// followResult is how one run of tail ended.
type followResult struct {
	restarted bool // a content check found the file rewritten: Reset is out, start again at 0
	switched  bool // the agent is ready: start it in tail's place
	reset     bool // a Reset from the stream (tail's or the agent's message) was delivered
	healthy   bool // it delivered data or ran long enough to reset the backoff
	skipped   bool // the Backlog's partial first line was dropped
	err       error
}

// healthyAfter: a tail that ran this long counts as healthy even without
// data (an idle server writes nothing).
const healthyAfter = 5 * time.Second

// maxPending is how much of tail's output is read ahead of delivery (while
// a content check runs); beyond it the reading waits.
const maxPending = 16 << 20

// tailCommand is the command line that runs tail from off: found on PATH,
// executed by a path that starts with the marker (an absolute path, as
// `command -v` prints it; relative when PATH has relative entries, then
// made absolute), stderr merged into stdout.
func (f *Follower) tailCommand(off int64) (string, error) {
	q, err := remote.Quote(f.path)
	if err != nil {
		return "", err
	}
	return `p=$(command -v tail) && [ -f "$p" ] && [ -x "$p" ] || { echo "serverlog: tail not found on PATH" >&2; exit 127; }; ` +
		`case $p in /*) ;; *) p=$PWD/$p ;; esac; LC_ALL=C; export LC_ALL; ` +
		`exec "` + string(f.marker) + `${p#/}" -c +` + strconv.FormatInt(off+1, 10) + ` -F -- ` + q + ` 2>&1`, nil
}

// follow runs one tail (or the agent) from the current offset until its
// stream ends or a content check restarts it.
func (f *Follower) follow(ctx context.Context, skipFirst, useAgent bool) followResult {
	var cmd string
	var err error
	if useAgent {
		cmd, err = f.agentCommand(ctx)
	} else {
		cmd, err = f.tailCommand(f.Offset())
	}
	if err != nil {
		return followResult{err: err}
	}
	f.strict = !useAgent && f.opts.Check == CheckStrict
	lazy := !useAgent && f.opts.Check == CheckLazy
	started := time.Now()
	proc, err := f.host.Start(ctx, cmd)
	if err != nil {
		return followResult{err: err}
	}
	stdout := proc.Stdout()
	var launch *launchLine
	if useAgent {
		launch = &launchLine{r: stdout}
		stdout = launch
	}
	src := newChunkSource(stdout)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		f.watchStderr(proc)
	}()
	defer func() {
		proc.Close()
		src.stop()
		<-stderrDone
	}()

	res := followResult{}
	st := streamState{
		rd:     lineReader{skipFirst: skipFirst, recent: bytes.Clone(f.anchor), anchor: bytes.Clone(f.anchor)},
		sp:     splitter{marker: f.marker},
		offset: f.Offset(),
	}
	var batch []byte // what tail sent that is not delivered yet
	var lastCheck time.Time
	w := f.newRunWatch(useAgent, lazy, started)
	defer w.stop()
	if lazy {
		f.lazyMark() // the restart's check found the bytes before the offset to hold
	}
	for {
		data, end := src.take()
		if len(data) > 0 {
			w.heard()
		}
		batch = append(batch, data...)
		if len(batch) > 0 && end == nil {
			p := f.process(st, batch)
			switch {
			case !p.needsCheck:
				before := f.Offset()
				st = f.commit(p, &res)
				batch = batch[:0]
				if lazy && f.Offset() != before {
					f.lazyMark()
					w.delivered()
				}
			case time.Since(lastCheck) < f.opts.CheckInterval:
				// Let more arrive; it is checked with this.
				if !ctxwait.Sleep(ctx, f.opts.CheckInterval-time.Since(lastCheck)) {
					return res
				}
				continue
			default:
				lastCheck = time.Now()
				v, cerr := f.check(ctx, p)
				switch v {
				case checkOK:
					st = f.commit(p, &res)
					batch = batch[:0]
				case checkStale:
					// The batch came from the rewritten file at the old
					// offset: drop it and read the file from 0.
					f.reset("truncated")
					res.restarted = true
					return res
				case checkChanged, checkGone:
					// Read before the change: deliver it, then read the
					// file anew (a change found since a restart stays
					// one that happened unwatched).
					unwatched := f.unwatched
					f.commit(p, &res)
					f.unwatched = unwatched
					reason := "replaced"
					if v == checkGone {
						reason = "missing"
					}
					f.reset(reason)
					res.restarted = true
					return res
				default: // the check could not run: read it all again
					res.err = fmt.Errorf("content check: %w", cerr)
					return res
				}
			}
		}
		if end != nil {
			// Undelivered bytes are read again by the next tail.
			if !errors.Is(end, io.EOF) && ctx.Err() == nil {
				res.err = end
			}
			break
		}
		select {
		case <-ctx.Done():
			return res
		case <-src.ready:
		case <-w.agentReady:
			if w.agentCame() {
				res.switched = true
				return res
			}
		case <-w.lazyC:
			if f.lazyCheck(ctx, w) {
				f.reset("rewritten")
				res.restarted = true
				return res
			}
		case <-w.silentC:
			res.err = fmt.Errorf("agent follow: nothing heard for %v", agentSilence)
			return res
		}
	}
	werr := proc.Wait()
	if res.err == nil {
		res.err = werr
	}
	if launch != nil {
		f.agentEnded(launch, res.err)
	}
	res.skipped = res.skipped || st.rd.skipped
	res.healthy = res.healthy || time.Since(started) >= healthyAfter
	return res
}

// watchStderr reports what the shell says before tail runs (tail's own
// messages come on stdout).
func (f *Follower) watchStderr(proc remote.Process) {
	sc := bufio.NewScanner(proc.Stderr())
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		f.emitError(string(sc.Bytes()), 0)
	}
}

// quoteName quotes a path the way tail's messages do ('…').
func quoteName(p string) string {
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

func (f *Follower) emitLines(lines []event.LogLine) {
	for len(lines) > 0 {
		n := min(len(lines), f.opts.MaxBatch)
		f.emit(event.LogLines{Path: f.path, Lines: lines[:n:n]})
		lines = lines[n:]
	}
}

func (f *Follower) reset(reason string) {
	r := event.LogReset{Path: f.path, Reason: reason, Delivered: f.Offset()}
	if f.unwatched && r.Delivered > 0 {
		// Found after a restart: what the old content got meanwhile was
		// never read. The rotated copy, when there is one, says how much.
		r.Unwatched, r.Missed = true, -1
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if st, err := f.statPath(ctx, f.path+".1"); err == nil && st.hasInode && st.regular && st.size >= r.Delivered {
			r.Missed = st.size - r.Delivered
		}
		cancel()
	}
	f.offset.Store(0)
	f.anchor = nil
	f.lazyAt, f.lazyAnchor = 0, nil
	f.emit(r)
}

// emitNotice emits a Notice when its class differs from the last one's.
func (f *Follower) emitNotice(class event.LogNoticeClass, text string) {
	if class == f.notice {
		return
	}
	f.notice = class
	f.emit(event.LogNotice{Path: f.path, Class: class, Text: sanitize.String(text)})
}

func (f *Follower) emitError(msg string, retry time.Duration) {
	f.emit(event.LogFollowError{Path: f.path, Err: sanitize.String(msg), Retry: retry})
}

func (f *Follower) emit(p event.Payload) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sink(event.Event{At: time.Now(), Data: p})
}
