package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// Mirror copies a journal being written on this machine to a GPU host, as
// it grows, so that `flightdeck follow HOST` finds it there when the
// driving cockpit runs elsewhere (a laptop talking to the host over SSH).
//
// It keeps one long-running remote process (a `cat >> FILE`, the writer)
// and writes to its stdin the complete lines appended to the local
// file since the last write: a line still being written (no '\n' yet) is
// sent once it is complete, so the remote file never ends in a torn line
// the mirror put there. After a dropped connection it waits for the host to
// reconnect, kills the previous writer if it still runs (a frozen peer
// keeps it alive, holding lines it would append later; see
// mirrorFenceScript) and reads the remote file's size: when the remote
// file is a prefix of the local one it resumes there (a line cut off with
// the connection is completed); else it cuts the remote file back to the
// last line boundary both files agree on (`truncate -s N`) and resumes
// from there. No line is lost or written twice. The writer is recorded in
// a hidden sidecar file next to the mirror (.NAME.writer). Files it
// creates on the host are 0600, directories 0700.
//
// Nothing is removed at the end: a follower may still be reading the
// mirror. Mirrors are left on the host for `journal ls`-style cleanup.
type Mirror struct {
	// Host is the GPU host the mirror is written on.
	Host remote.Host
	// Local is the journal being written on this machine.
	Local string
	// Remote is the mirror's path on the host; a leading "~/" is the
	// remote user's home. "" means ~/.flightdeck/journals/<base name of
	// Local> (see MirrorPath).
	Remote string
	// Every is how often the local file is polled for new lines; 0 means
	// 250 ms.
	Every time.Duration
	// StopGrace bounds the last write after ctx ends (the host may be
	// unreachable then); 0 means 5 s.
	StopGrace time.Duration

	// hook, when set (tests), is called after each poll of the local file
	// ("poll") and each resynchronisation ("sync").
	hook func(what string)
}

// Mirror defaults.
const (
	defaultMirrorEvery = 250 * time.Millisecond
	defaultMirrorGrace = 5 * time.Second
	// mirrorChunk is the most bytes read from the local file at once
	// (more for a longer line).
	mirrorChunk = 1 << 20
	// mirrorCheck is the most bytes of the last common line compared
	// with the remote file at a resynchronisation.
	mirrorCheck = 4096
)

// MirrorDir is where mirrors go on a host, under the remote user's home.
const MirrorDir = ".flightdeck/journals"

// MirrorPath returns the default mirror path on h of the local journal at
// local: $HOME/.flightdeck/journals/<base name of local>, with the remote
// user's home resolved on h (an absolute path, for the driver lock's
// Info.Journal). It returns an error when the home cannot be read (wrapping
// remote.ErrDisconnected while the host is unreachable and ctx ends).
func MirrorPath(ctx context.Context, h remote.Host, local string) (string, error) {
	return resolveRemotePath(ctx, h, "~/"+MirrorDir+"/"+filepath.Base(local))
}

// resolveRemotePath resolves a leading "~/" in p to the remote user's home.
func resolveRemotePath(ctx context.Context, h remote.Host, p string) (string, error) {
	if !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	res, err := h.Run(ctx, `printf '%s\n' "$HOME"`, nil)
	if err != nil {
		return "", fmt.Errorf("mirror: reading the home directory on %s: %w", h.Name(), err)
	}
	home := strings.TrimRight(string(res.Stdout), "\n")
	if !strings.HasPrefix(home, "/") {
		return "", fmt.Errorf("mirror: %s: $HOME is %q, not an absolute path", h.Name(), home)
	}
	return path.Join(home, p[2:]), nil
}

// errCatEnded is the pipe's error when the remote cat ended without us
// closing its stdin.
var errCatEnded = errors.New("mirror: the remote copy ended")

// Run mirrors Local to Remote until ctx ends, then writes the complete
// lines not yet sent (within StopGrace) and returns nil, or an error saying
// what could not be mirrored (the host unreachable at the end: one wrapping
// ctx.Err() when ctx ended while it waited for the host or compared the
// files). It returns
// early with an error when the local file cannot be read or shrinks below
// what was mirrored, or when the remote command fails other than by a
// dropped connection (a full disk, no permission); a dropped connection
// is waited out.
func (m *Mirror) Run(ctx context.Context) error {
	if m.Host == nil || m.Local == "" {
		return errors.New("mirror: no host or no local journal")
	}
	f, err := os.Open(m.Local)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	defer f.Close()
	every, grace := m.Every, m.StopGrace
	if every <= 0 {
		every = defaultMirrorEvery
	}
	if grace <= 0 {
		grace = defaultMirrorGrace
	}
	dst := m.Remote
	if dst == "" {
		dst = "~/" + MirrorDir + "/" + filepath.Base(m.Local)
	}
	if dst, err = resolveRemotePath(ctx, m.Host, dst); err != nil {
		return err
	}
	qdst, err := remote.Quote(dst)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}

	// The remote copy outlives ctx by at most grace: the last lines are
	// written after it ends.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()

	tick := newPhaseTimer(every) // with the recorder's writes (phaseTimer)
	defer tick.Stop()
	for {
		sent, tok, err := m.resync(ctx, f, dst, qdst)
		if m.hook != nil {
			m.hook("sync")
		}
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("mirror: stopped before %s on %s was in sync (its last lines may be missing): %w", dst, m.Host.Name(), ctx.Err())
		}
		if err != nil {
			return err
		}
		catCmd, err := remote.Command("sh", "-c", mirrorWriterScript, "flightdeck-mirror", dst, mirrorSidecar(dst), tok)
		if err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := m.Host.Run(runCtx, catCmd, pr)
			if err == nil {
				err = errCatEnded
			}
			pr.CloseWithError(err)
			done <- err
		}()
		err = m.pump(ctx, f, pw, &sent, tick, done, func() *time.Timer { return time.AfterFunc(grace, cancelRun) })
		if err == nil {
			return nil
		}
		if !errors.Is(err, remote.ErrDisconnected) {
			return err
		}
		// Dropped: resynchronise once the host is back.
	}
}

// pump writes the new complete lines to pw at every tick until the remote
// copy ends (its error is returned) or ctx ends (the last lines are
// written, the copy's stdin is closed and nil is returned once it exits;
// stopRun starts the grace period after which the copy is cut off).
func (m *Mirror) pump(ctx context.Context, f *os.File, pw *io.PipeWriter, sent *int64, tick *phaseTimer, done <-chan error, stopRun func() *time.Timer) error {
	for {
		select {
		case <-ctx.Done():
			t := stopRun()
			defer t.Stop()
			werr := m.send(f, pw, sent)
			pw.Close()
			err := <-done // at most StopGrace: then runCtx ends
			if errors.Is(err, errCatEnded) {
				err = nil
			}
			if werr == nil && err == nil {
				return nil
			}
			if err == nil {
				err = werr
			}
			return fmt.Errorf("mirror: the last lines of %s may be missing on %s: %w", m.Local, m.Host.Name(), err)
		case err := <-done:
			return m.remoteErr(err)
		case <-tick.C():
			tick.Next()
			err := m.send(f, pw, sent)
			if m.hook != nil {
				m.hook("poll")
			}
			var le *localError
			if errors.As(err, &le) {
				pw.CloseWithError(err)
				<-done
				return err
			}
			// A write error is the remote copy's end: done says why.
		}
	}
}

// remoteErr classifies the end of the remote copy while ctx is alive.
func (m *Mirror) remoteErr(err error) error {
	if errors.Is(err, remote.ErrDisconnected) {
		return err
	}
	if errors.Is(err, errCatEnded) {
		return fmt.Errorf("mirror to %s: the remote copy exited early", m.Host.Name())
	}
	if ee, ok := errors.AsType[*remote.ExitError](err); ok && ee.Code == mirrorSuperseded {
		return fmt.Errorf("mirror to %s: another mirror of the same file took it over", m.Host.Name())
	}
	return fmt.Errorf("mirror to %s: %w", m.Host.Name(), err)
}

// localError is a failure to read the local journal.
type localError struct{ err error }

func (e *localError) Error() string { return "mirror: " + e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

// send writes to w the complete lines of f after *sent, advancing *sent
// by what w took.
func (m *Mirror) send(f *os.File, w io.Writer, sent *int64) error {
	st, err := f.Stat()
	if err != nil {
		return &localError{err}
	}
	size := st.Size()
	if size < *sent {
		return &localError{fmt.Errorf("%s shrank from %d to %d bytes while mirrored", m.Local, *sent, size)}
	}
	chunk := int64(mirrorChunk)
	for *sent < size {
		n := min(chunk, size-*sent)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, *sent); err != nil && !errors.Is(err, io.EOF) {
			return &localError{err}
		}
		end := bytes.LastIndexByte(buf, '\n')
		if end < 0 {
			if n < chunk {
				return nil // only a torn tail: wait for its end
			}
			chunk *= 2 // a line longer than the chunk
			continue
		}
		k, err := w.Write(buf[:end+1])
		*sent += int64(k)
		if err != nil {
			return err
		}
		chunk = mirrorChunk
	}
	return nil
}

// resync returns where to resume and the token of the writer to start
// next (see mirrorFenceScript: the previous writer is dead by then, and
// one started before cannot write any more): the remote file's size when
// the remote file is (as far as its last bytes show) a prefix of the local
// one (a line cut off with the connection is then completed, not cut: a
// follower's `tail -F` never sees the file shrink); else the remote file is
// cut back to the last line boundary both agree on (0 when it is not a copy
// of the local file at all).
func (m *Mirror) resync(ctx context.Context, f *os.File, dst, qdst string) (int64, string, error) {
	tok := newMirrorToken()
	fence, err := remote.Command("sh", "-s", "--", dst, path.Dir(dst), mirrorSidecar(dst), tok)
	if err != nil {
		return 0, "", fmt.Errorf("mirror: %w", err)
	}
	res, err := m.Host.Run(ctx, fence, strings.NewReader(mirrorFenceScript))
	if err != nil {
		return 0, "", fmt.Errorf("mirror: stopping the previous writer of %s on %s and reading its size: %w", dst, m.Host.Name(), withStderr(err, res.Stderr))
	}
	out := strings.TrimSpace(string(res.Stdout))
	if out == "missing" {
		return 0, tok, nil
	}
	rsize, err := strconv.ParseInt(out, 10, 64)
	if err != nil || rsize < 0 {
		return 0, "", fmt.Errorf("mirror: size of %s on %s: %q is not a number", dst, m.Host.Name(), out)
	}
	if rsize == 0 {
		return 0, tok, nil
	}
	st, err := f.Stat()
	if err != nil {
		return 0, "", &localError{err}
	}
	if rsize <= st.Size() {
		same, err := m.sameBytes(ctx, f, qdst, dst, max(0, rsize-mirrorCheck), rsize)
		if err != nil {
			return 0, "", err
		}
		if same {
			return rsize, tok, nil
		}
	}
	n, lineStart, err := lastBoundary(f, rsize)
	if err != nil {
		return 0, "", &localError{err}
	}
	if n > 0 {
		// The last line both should hold must match, or the remote file
		// is another file: start it over.
		same, err := m.sameBytes(ctx, f, qdst, dst, max(lineStart, n-mirrorCheck), n)
		if err != nil {
			return 0, "", err
		}
		if !same {
			n = 0
		}
	}
	if _, err := m.Host.Run(ctx, "truncate -s "+strconv.FormatInt(n, 10)+" -- "+qdst, nil); err != nil {
		return 0, "", fmt.Errorf("mirror: cutting %s on %s back to %d bytes: %w", dst, m.Host.Name(), n, err)
	}
	return n, tok, nil
}

// sameBytes reports whether the bytes [from, to) of the remote file equal
// the local file's.
func (m *Mirror) sameBytes(ctx context.Context, f *os.File, qdst, dst string, from, to int64) (bool, error) {
	want := make([]byte, to-from)
	if _, err := f.ReadAt(want, from); err != nil && !errors.Is(err, io.EOF) {
		return false, &localError{err}
	}
	cmd := "tail -c +" + strconv.FormatInt(from+1, 10) + " -- " + qdst + " | head -c " + strconv.FormatInt(to-from, 10)
	res, err := m.Host.Run(ctx, cmd, nil)
	if err != nil {
		return false, fmt.Errorf("mirror: reading %s on %s: %w", dst, m.Host.Name(), err)
	}
	return bytes.Equal(res.Stdout, want), nil
}

// lastBoundary returns the end of the last complete line of f at or
// before limit (0 when none) and the start of that line.
func lastBoundary(f *os.File, limit int64) (end, lineStart int64, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	limit = min(limit, st.Size())
	end = -1
	// Scan back from limit in blocks for the last '\n', then for the one
	// before it.
	const block = 64 << 10
	pos := limit
	buf := make([]byte, block)
	for pos > 0 {
		from := max(pos-block, 0)
		b := buf[:pos-from]
		if _, err := f.ReadAt(b, from); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				continue
			}
			if end < 0 {
				end = from + int64(i) + 1
				continue
			}
			return end, from + int64(i) + 1, nil
		}
		pos = from
	}
	if end < 0 {
		return 0, 0, nil
	}
	return end, 0, nil
}
