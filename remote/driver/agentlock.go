package driver

// `flightdeck agent lock`: the host side of the driver lock's stream. The
// agent, started once over one SSH session, does every heartbeat (or, for
// a watcher, every read of the lock) in-process, and writes one JSON line
// per result; the cockpit's Lock feeds its state machine from the lines.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// LockAgentOptions are `flightdeck agent lock`'s: what ServeLock does.
type LockAgentOptions struct {
	// File is the lock file's absolute path on this host.
	File string
	// Mutex is "flock" (flock(2) on File.mutex and the mkdir mutex
	// File.mutex.d, excluding lockScripts of both kinds) or "mkdir" (the
	// mkdir mutex only); "" is "flock".
	Mutex string
	// Drive, when set, makes each operation a put of Content (a lock
	// file's JSON, without its newline) if the file's version is still
	// Want (then Want becomes the version written); the first conflict
	// ends ServeLock after its line. Otherwise each operation is a read.
	Drive   bool
	Content []byte
	Want    string
}

// lockLine is one line of `agent lock`'s stream (docs/agent-protocol.md):
// {"t":"lock",...} with lockScript's snapshot, or Err when the operation
// failed (the next one retries). Content is base64 (JSON []byte).
type lockLine struct {
	T       string `json:"t"`                 // "lock"
	Result  string `json:"result,omitempty"`  // "ok", "conflict" or "read"
	Now     int64  `json:"now,omitempty"`     // host clock, Unix seconds
	Version string `json:"version,omitempty"` // "absent" or "MTIME CRC SIZE"
	Content []byte `json:"content,omitempty"` // at most MaxFileBytes+1 bytes
	// MS is when the operation started, in ms since the agent started:
	// the cockpit dates its heartbeat from it, never later than it was.
	MS  int64  `json:"ms"`
	Err string `json:"error,omitempty"`
}

// check validates o.
func (o LockAgentOptions) check() error {
	switch {
	case o.File == "" || !path.IsAbs(o.File):
		return fmt.Errorf("agent lock: --file %q: must be an absolute path", o.File)
	case o.Mutex != "" && o.Mutex != mutexFlock && o.Mutex != mutexMkdir:
		return fmt.Errorf("agent lock: --mutex %q: want flock or mkdir", o.Mutex)
	case o.Drive && (len(o.Content) == 0 || len(o.Content) > MaxFileBytes-1):
		return fmt.Errorf("agent lock: --put: the content must be 1 to %d bytes", MaxFileBytes-1)
	case o.Drive && o.Want == "":
		return errors.New("agent lock: --put needs --want")
	}
	return nil
}

// ServeLock runs `flightdeck agent lock`: one operation on the lock file
// now and one for each line read from in (the cockpit writes one per
// heartbeat, so the lock is refreshed only while the cockpit runs: a
// frozen cockpit's lock goes stale as with the script), each followed by
// one line on w. It returns at in's end, when ctx ends, when a write to w
// fails (the SSH session closed: EPIPE) or, driving, after a put found
// the file changed. It spawns no process. Errors: o's, in's, or w's.
func ServeLock(ctx context.Context, in io.Reader, w io.Writer, o LockAgentOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	start := time.Now()
	pings := make(chan error, 1)
	go func() {
		r := bufio.NewReader(in)
		for {
			if _, err := r.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
				pings <- err
				return
			}
			select {
			case pings <- nil:
			case <-ctx.Done():
				return
			}
		}
	}()
	h := hostFile{file: o.File, mutex: o.Mutex}
	want := o.Want
	var buf []byte
	for {
		ln := lockLine{T: "lock", MS: time.Since(start).Milliseconds()}
		var s snapshot
		var err error
		if o.Drive {
			s, err = h.put(want, o.Content)
		} else {
			s, err = h.read()
		}
		conflict := false
		switch {
		case err != nil:
			ln.Err = err.Error()
		default:
			ln.Result, ln.Now, ln.Version, ln.Content = "read", s.Now, s.Version, s.Content
			if o.Drive {
				ln.Result, conflict = "ok", !s.Wrote
				if conflict {
					ln.Result = "conflict"
				} else {
					want = s.Version
				}
			}
		}
		b, merr := json.Marshal(ln)
		if merr != nil {
			return merr
		}
		buf = append(append(buf[:0], b...), '\n')
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("agent lock: %w", err)
		}
		if conflict {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-pings:
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("agent lock: stdin: %w", err)
			}
		}
	}
}

// parseLockLine reads one line of the stream: its snapshot, when the
// operation started (ms since the agent started), or the operation's
// error (remote text, sanitised by the caller), or a parse error.
func parseLockLine(b []byte) (snapshot, int64, string, error) {
	var ln lockLine
	if err := json.Unmarshal(b, &ln); err != nil || ln.T != "lock" {
		return snapshot{}, 0, "", fmt.Errorf("%w: %q", errOutput, clip(string(b), 200))
	}
	if ln.Err != "" {
		return snapshot{}, ln.MS, ln.Err, nil
	}
	var s snapshot
	switch ln.Result {
	case "ok":
		s.Wrote = true
	case "conflict", "read":
	default:
		return s, 0, "", fmt.Errorf("%w: result %q", errOutput, clip(ln.Result, 40))
	}
	if ln.Now <= 0 || ln.MS < 0 {
		return s, 0, "", fmt.Errorf("%w: host clock %d, ms %d", errOutput, ln.Now, ln.MS)
	}
	s.Now, s.Version = ln.Now, ln.Version
	if s.Absent() {
		if len(ln.Content) > 0 {
			return s, 0, "", fmt.Errorf("%w: content after an absent version", errOutput)
		}
		return s, ln.MS, "", nil
	}
	f := strings.Fields(s.Version)
	if len(f) != 3 || strings.Join(f, " ") != s.Version {
		return s, 0, "", fmt.Errorf("%w: version %q", errOutput, clip(s.Version, 80))
	}
	var mt int64
	if _, err := fmt.Sscan(f[0], &mt); err != nil || mt < 0 {
		return s, 0, "", fmt.Errorf("%w: version %q", errOutput, clip(s.Version, 80))
	}
	if len(ln.Content) > MaxFileBytes+1 {
		return s, 0, "", fmt.Errorf("%w: %d bytes of content", errOutput, len(ln.Content))
	}
	s.MTime, s.Content = mt, ln.Content
	return s, ln.MS, "", nil
}
