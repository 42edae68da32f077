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
// Two ways, one stream. With Options.Agent and a usable agent on the
// host, it runs `flightdeck agent follow` (StreamFile) on one session: the
// agent reads the file in-process (stat, fstat, pread every 150 ms) and
// makes the content check below itself, on every poll with news, so at
// steady state nothing runs on the host but that one process, and nothing
// is started. Otherwise (remote.ErrNoAgent, or an agent run that ended
// without a byte: refused by its launcher, too old), GNU tail. The agent
// writes what tail would (the same data bytes, messages worded as tail's
// after the marker), so both are read by the same code. With
// Options.InProcess (the host is this machine) StreamFile runs in a
// goroutine here instead, and the stat below is os.Stat: no process at
// all.
//
// Tail. It runs GNU tail from the offset with stderr merged into stdout,
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
// without a message. So, in CheckStrict (the zero Options), lines are
// delivered only after a content check:
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
// CheckLazy (the cockpit's fallback: at most 2 processes a minute at
// steady state, with the default LazyInterval of 30 s) delivers every
// batch at once. After lines were delivered, at most every LazyInterval,
// one dd compares the file's bytes before the first offset delivered since
// the last check with those delivered there; when they differ the file was
// rewritten since: Reset (reason "rewritten") and tail restarts at 0. What
// it gives up: for up to LazyInterval plus a round trip after a rewrite
// that tail misses, the lines tail prints from the old offset of the new
// file are delivered as if they continued the old one (with offsets in the
// new file), and after the Reset they come again, in their place, from 0.
// So every line of the new content still comes exactly once after the
// Reset, but some came before it as well, and a consumer must drop what it
// derived before a Reset (the cockpit does); the strict guarantee, no line
// delivered that the file does not hold at its offset, is lost for that
// while. Tail's own messages (truncation it sees, rotation) are as prompt
// as in CheckStrict.
//
// The agent. Its command is remote.Agent's; the launcher's first line
// ({"t":"launch",…}) is dropped, and a stream that does not start with it
// is an error. It gets the offset, the marker and the delivered bytes
// before the offset (which it compares before its first read). It writes a
// keepalive when it wrote nothing for 2 s: a closed session ends it
// (EPIPE), and 10 s without a byte is a lost connection (restarted). On
// rotation it writes what the old file still has, then "has been
// replaced". The first start waits up to AgentWait for the host's agent
// install to settle, then starts tail, which is replaced by the agent (a
// restart at the offset) when it settles usable. Tail is used while the
// agent is not usable, and the agent asked again at the next restart.
//
// When the stream ends for any other reason (process exit, connection
// lost) undelivered bytes are dropped (they are read again), and tail (or
// the agent) restarts with backoff. Before every start `stat -L -c '%i %s
// %f'` runs (a process per restart, not at steady state): a changed inode
// (rotation while disconnected), a size below the offset, or (dd for
// tail; the agent compares them itself) bytes before the offset that are
// not those delivered (rewritten while disconnected) restart at 0 with a
// Reset. A file that does not exist yet is waited for (tail -F retries;
// so does the agent). Lines appended to a rotated-away file after the
// connection dropped are not read (FILE.1 is not looked at).
//
// Needs GNU tail, stat and dd (coreutils) on the host, or the agent and
// stat. Without dd the content check is off (a FollowError says so) and a
// rewrite that tail misses goes unnoticed; another tail's messages would
// be read as log lines. The nonce is on tail's (or the agent's) command
// line, where local users of the host can read it (ps); they could forge a
// message, log content alone cannot.
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
	if f.opts.Agent != nil && !f.opts.InProcess {
		defer f.waitAgent(ctx)()
	}
	backoff := f.opts.MinBackoff
	var inode uint64
	haveInode := false
	skipFirst := false // Backlog: drop the partial first line
	first := true
	for {
		useAgent := f.opts.InProcess || f.agentUsable(ctx, first)
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
	switch {
	case f.opts.InProcess:
	case useAgent:
		cmd, err = f.agentCommand(ctx)
	default:
		cmd, err = f.tailCommand(f.Offset())
	}
	if err != nil {
		return followResult{err: err}
	}
	f.strict = !useAgent && f.opts.Check == CheckStrict
	lazy := !useAgent && f.opts.Check == CheckLazy
	started := time.Now()
	var proc remote.Process
	if f.opts.InProcess {
		proc = f.startInProcess(ctx)
	} else if proc, err = f.host.Start(ctx, cmd); err != nil {
		return followResult{err: err}
	}
	stdout := proc.Stdout()
	var launch *launchLine
	if useAgent && !f.opts.InProcess {
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
