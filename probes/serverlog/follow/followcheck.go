package follow

// The Follower's content check (see Follower): a batch is processed on a
// copy of the stream's state, checked against the file's bytes with dd
// when it continues the file, and only then committed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// anchorHolds compares the bytes before the offset with those delivered
// (or, for a Follower that has delivered nothing yet, remembers them). It
// is false only when the file has other bytes there.
func (f *Follower) anchorHolds(ctx context.Context) bool {
	if f.noCheck {
		return true
	}
	off := f.Offset()
	n := int64(len(f.anchor))
	if n == 0 {
		n = min(off, anchorLen)
	}
	got, err := f.readAt(ctx, off-n, n)
	var exitErr *remote.ExitError
	switch {
	case errors.As(err, &exitErr):
		f.checkUnavailable(exitErr)
		return true // tail says what is wrong with the file
	case err != nil:
		return true // tail's start will fail the same way and say so
	case len(f.anchor) == 0:
		f.anchor = got
		return true
	}
	return bytes.Equal(got, f.anchor)
}

// readAt reads n bytes of the file at off with dd (POSIX; one-byte blocks
// so that skip and count are in bytes), fewer at the end of the file. The
// exit statuses above come as *remote.ExitError.
func (f *Follower) readAt(ctx context.Context, off, n int64) ([]byte, error) {
	q, err := remote.Quote(f.path)
	if err != nil {
		return nil, err
	}
	dd, err := remote.Command("env", "LC_ALL=C", "dd", "if="+f.path, "bs=1",
		"skip="+strconv.FormatInt(off, 10), "count="+strconv.FormatInt(n, 10))
	if err != nil {
		return nil, err
	}
	cmd := fmt.Sprintf("[ -e %s ] || exit %d; [ -f %s ] || exit %d; exec %s", q, readMissing, q, readNotRegular, dd)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := f.host.Run(rctx, cmd, nil)
	if err != nil {
		return nil, err
	}
	return res.Stdout, nil
}

// checkUnavailable turns content checks off when dd is not there.
func (f *Follower) checkUnavailable(e *remote.ExitError) {
	if e.Code == readNoCommand && !f.noCheck {
		f.noCheck = true
		f.emitError("dd not found: a rewrite of the log that tail misses goes unnoticed", 0)
	}
}

// process runs a batch through a copy of st. A content check is needed
// when the batch delivers lines that continue the file at an offset > 0
// and holds none of tail's resets (after a reset there is nothing to
// compare: the file is read from 0 again).
func (f *Follower) process(st streamState, batch []byte) processed {
	p := processed{at: st.offset, anchor: bytes.Clone(st.rd.anchor)}
	st.rd = st.rd.clone()
	st.sp.carry = bytes.Clone(st.sp.carry)
	st.sp.msg = bytes.Clone(st.sp.msg)
	p.head = append(p.head, st.rd.partial[:min(len(st.rd.partial), headLen)]...)
	resetSeen, linesBefore := false, false
	st.sp.split(batch, func(data []byte) {
		if !resetSeen && len(p.head) < headLen {
			p.head = append(p.head, data[:min(len(data), headLen-len(p.head))]...)
		}
		lines, consumed := st.rd.feed(data, st.offset)
		st.offset += consumed
		if len(lines) > 0 {
			p.ops = append(p.ops, streamOp{lines: lines, end: st.offset})
			linesBefore = linesBefore || !resetSeen
		}
	}, func(msg []byte) {
		text := tailText(msg)
		ev := classifyTail(text)
		if ev.notice != "" {
			p.ops = append(p.ops, streamOp{notice: ev.notice, text: text})
		}
		switch {
		case ev.reset != "":
			resetSeen = true
			if st.offset > 0 || st.rd.partLen > 0 {
				p.ops = append(p.ops, streamOp{reset: ev.reset})
			}
			st.offset, st.rd = 0, lineReader{}
		case ev.notice == "" && !ev.quiet:
			p.ops = append(p.ops, streamOp{err: text})
		}
	})
	p.state = st
	p.needsCheck = f.strict && linesBefore && !resetSeen && p.at > 0 && len(p.anchor) > 0 && !f.noCheck
	return p
}

// commit delivers what process found and returns the state after it.
func (f *Follower) commit(p processed, res *followResult) streamState {
	for _, op := range p.ops {
		switch {
		case op.lines != nil:
			f.offset.Store(op.end)
			f.emitLines(op.lines)
			res.healthy = true
			f.unwatched = false
			if f.notice != "" && f.notice != event.NoticeAppeared {
				f.emitNotice(event.NoticeAppeared, quoteName(f.path)+" has appeared")
			}
		case op.notice != "":
			f.emitNotice(op.notice, op.text)
		case op.reset != "":
			f.reset(op.reset)
			res.skipped = true // the cut line of the old content is gone with it
			res.reset = true
		case op.err != "":
			f.emitError(op.err, 0)
		}
	}
	f.anchor = bytes.Clone(p.state.rd.anchor)
	res.skipped = res.skipped || p.state.rd.skipped
	return p.state
}

// check compares the file with what the batch continues (see Follower);
// the error is why the check did not run (checkFailed).
func (f *Follower) check(ctx context.Context, p processed) (checkResult, error) {
	n := int64(len(p.anchor))
	got, err := f.readAt(ctx, p.at-n, n+int64(len(p.head)))
	var exitErr *remote.ExitError
	switch {
	case errors.As(err, &exitErr):
		f.checkUnavailable(exitErr)
		if f.noCheck || exitErr.Code == readNotRegular {
			return checkOK, nil
		}
		return checkGone, nil
	case err != nil:
		return checkFailed, err
	case len(got) >= len(p.anchor) && bytes.Equal(got[:len(p.anchor)], p.anchor):
		return checkOK, nil
	case len(got) == len(p.anchor)+len(p.head) && bytes.Equal(got[len(p.anchor):], p.head):
		return checkStale, nil
	}
	return checkChanged, nil
}

// lazyCheck is CheckLazy's check (see Follower): one dd compares the
// file's bytes before lazyAt with those delivered there. It reports
// whether they differ: the file was rewritten since those bytes were
// read, and lines delivered since may be the new file's, read at the old
// offset. When they hold, the current offset becomes lazyAt: all that was
// delivered up to it was read before this check, from the same file.
func (f *Follower) lazyCheck(ctx context.Context, w *runWatch) bool {
	w.lazyC, w.lastLazy = nil, time.Now()
	if f.noCheck {
		return false
	}
	cur, curAnchor := f.Offset(), bytes.Clone(f.anchor)
	at, anchor := f.lazyAt, f.lazyAnchor
	if at <= 0 || len(anchor) == 0 || at > cur {
		at, anchor = cur, curAnchor
	}
	if at <= 0 || len(anchor) == 0 {
		return false
	}
	got, err := f.readAt(ctx, at-int64(len(anchor)), int64(len(anchor)))
	var exitErr *remote.ExitError
	switch {
	case errors.As(err, &exitErr):
		f.checkUnavailable(exitErr) // missing or not a regular file: tail says so
		return false
	case err != nil:
		return false // the connection: tail's stream ends too, and the restart checks
	case !bytes.Equal(got, anchor):
		return true
	}
	f.lazyAt, f.lazyAnchor = cur, curAnchor
	return false
}

// lazyMark makes the current offset lazyAt when there is none: the
// earliest point delivered since the last check (or the start) is where a
// rewrite since is best seen (after it, tail may have read the new file).
func (f *Follower) lazyMark() {
	if f.lazyAt <= 0 && f.Offset() > 0 && len(f.anchor) > 0 {
		f.lazyAt, f.lazyAnchor = f.Offset(), bytes.Clone(f.anchor)
	}
}
