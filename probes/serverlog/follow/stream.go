package follow

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// maxMessage is the longest tail message the splitter holds: tail's
// messages are a path (at most PATH_MAX) and a sentence. A longer "message"
// is log content that happened to contain the marker, and is data.
const maxMessage = 64 << 10

// splitter cuts the merged stream into data and tail's messages, in order.
type splitter struct {
	marker []byte // "/" and the nonce segments: how argv[0], and so every message, starts
	carry  []byte // the stream's last bytes, which may be the start of a marker
	inMsg  bool
	msg    []byte // the message so far, after the marker
}

// split passes chunk on, in stream order: data(b) for the file's bytes,
// message(m) for each complete message (without the marker and newline),
// both valid only during the call.
func (s *splitter) split(chunk []byte, data, message func([]byte)) {
	buf := chunk
	if len(s.carry) > 0 {
		buf = append(append([]byte(nil), s.carry...), chunk...)
		s.carry = s.carry[:0]
	}
	for len(buf) > 0 {
		if s.inMsg {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				s.msg = append(s.msg, buf...)
				if len(s.msg) > maxMessage {
					s.notMessage(data, nil)
				}
				return
			}
			s.msg = append(s.msg, buf[:i]...)
			buf = buf[i+1:]
			if len(s.msg) > maxMessage || !isTailMessage(s.msg) {
				s.notMessage(data, []byte{'\n'})
				continue
			}
			message(s.msg)
			s.inMsg, s.msg = false, s.msg[:0]
			continue
		}
		if j := bytes.Index(buf, s.marker); j >= 0 {
			if j > 0 {
				data(buf[:j])
			}
			s.inMsg = true
			buf = buf[j+len(s.marker):]
			continue
		}
		k := markerStart(buf, s.marker)
		if n := len(buf) - k; n > 0 {
			data(buf[:n])
		}
		s.carry = append(s.carry, buf[len(buf)-k:]...)
		return
	}
}

// notMessage passes what was taken for a message on as data, with tail
// appended.
func (s *splitter) notMessage(data func([]byte), tail []byte) {
	b := append(append(append([]byte(nil), s.marker...), s.msg...), tail...)
	s.inMsg, s.msg = false, s.msg[:0]
	data(b)
}

// markerStart returns the length of the longest end of buf that is the
// start of marker (shorter than marker): bytes that must wait for the next
// chunk. Log lines end in '\n', so it is almost always 0.
func markerStart(buf, marker []byte) int {
	if len(buf) == 0 || (buf[len(buf)-1] != '/' && buf[len(buf)-1] != '.') {
		return 0
	}
	for k := min(len(buf), len(marker)-1); k > 0; k-- {
		if bytes.HasPrefix(marker, buf[len(buf)-k:]) {
			return k
		}
	}
	return 0
}

// kwTailColon ends tail's argv[0] in a message ("…/tail: ").
var kwTailColon = []byte("tail: ")

// isTailMessage reports whether m, what followed the marker up to a
// newline, has the shape of a message: the rest of tail's path (no
// spaces), ": ", and a text. A line of `ps` output that shows our tail's
// command line has the marker but not this shape.
func isTailMessage(m []byte) bool {
	i := bytes.Index(m, kwTailColon)
	return i >= 0 && bytes.IndexByte(m[:i], ' ') < 0
}

// tailText returns the text of a message: without tail's path and ": ".
func tailText(m []byte) string {
	return string(m[bytes.Index(m, kwTailColon)+len(kwTailColon):])
}

// tailEvent is what one of tail's messages means for the Follower.
type tailEvent struct {
	reset  string               // Reset reason when tail now reads a new file (or the truncated one) from byte 0
	notice event.LogNoticeClass // the Notice to emit, "" when none
	quiet  bool                 // informational: nothing to report
}

// Endings and beginnings of GNU tail's messages (coreutils 8.x–9.x,
// src/tail.c, LC_ALL=C). A name is quoted as tail's quotef/quoteaf do.
var (
	tailTruncated  = ": file truncated"
	tailReplaced   = " has been replaced;  following new file"
	tailAppeared   = " has appeared;  following new file"
	tailAccessible = " has become accessible"
	tailQuiet      = []string{
		"inotify cannot be used, reverting to polling",
		"inotify resources exhausted",
		"using polling mode", "using notification mode", "using blocking mode",
		"directory containing watched file was removed",
		"cannot watch ", // "cannot watch parent directory of 'x'", "cannot watch 'x'": tail polls instead
		keepaliveText,   // StreamFile's (the agent's), never tail's
	}
)

// classifyTail says what tail's message text (without its "tail: ") means.
func classifyTail(text string) tailEvent {
	switch {
	case strings.HasSuffix(text, tailTruncated):
		return tailEvent{reset: "truncated"}
	case strings.HasSuffix(text, tailReplaced):
		return tailEvent{reset: "replaced"}
	case strings.HasSuffix(text, tailAppeared):
		return tailEvent{reset: "rotated", notice: event.NoticeAppeared}
	case strings.HasSuffix(text, tailAccessible):
		return tailEvent{reset: "reopened", notice: event.NoticeAppeared}
	case strings.Contains(text, "cannot follow end of this type of file"),
		strings.Contains(text, " has been replaced with an untailable "):
		return tailEvent{notice: event.NoticeNotAFile}
	case strings.HasPrefix(text, "cannot open "), strings.Contains(text, " has become inaccessible"),
		strings.HasPrefix(text, "error reading "), strings.HasPrefix(text, "cannot fstat "):
		return tailEvent{notice: errnoClass(text)}
	}
	for _, q := range tailQuiet {
		if strings.HasPrefix(text, q) {
			return tailEvent{quiet: true}
		}
	}
	// "'x': Permission denied": tail reports a new errno of a file it
	// cannot open with just the name and the error.
	if c := errnoClass(text); c != event.NoticeInaccessible {
		return tailEvent{notice: c}
	}
	if strings.HasSuffix(text, ": Permission denied") {
		return tailEvent{notice: event.NoticeInaccessible}
	}
	return tailEvent{}
}

// errnoClass classifies a message by the strerror(3) text it ends with.
func errnoClass(text string) event.LogNoticeClass {
	switch {
	case strings.HasSuffix(text, ": No such file or directory"), strings.HasSuffix(text, ": Not a directory"):
		return event.NoticeMissing
	case strings.HasSuffix(text, ": Is a directory"):
		return event.NoticeNotAFile
	}
	return event.NoticeInaccessible
}

// anchorLen is how many bytes before the offset the Follower remembers and
// compares with the file to tell appended data from a rewritten file.
const anchorLen = 128

// lineReader cuts the file's bytes into complete lines and holds the rest.
type lineReader struct {
	partial   []byte // bytes after the last newline, at most MaxLineBytes of them
	partLen   int64  // length of the held partial line in the file
	skipFirst bool   // drop everything up to the first newline (Backlog)
	skipped   bool
	recent    []byte // the last anchorLen bytes of the file fed (or known) so far
	anchor    []byte // the last anchorLen bytes before the consumed offset
}

// feed takes the next bytes of the file, where base is the file offset of
// the first held byte (the current offset); it returns the complete lines
// and how many bytes of the file they span.
func (r *lineReader) feed(chunk []byte, base int64) ([]event.LogLine, int64) {
	var consumed int64
	defer r.remember(chunk, &consumed)
	if r.skipFirst {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			// Still inside the cut line; it is never delivered, so the
			// offset may move past it.
			consumed = int64(len(chunk))
			return nil, consumed
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
	lines := make([]event.LogLine, 0, n)
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
		if room := serverlog.MaxLineBytes - (len(text) - start); room > 0 {
			text = append(text, seg[:min(len(seg), room)]...)
		}
		lines = append(lines, event.LogLine{Offset: pos, Text: text[start:len(text):len(text)]})
		pos += fileLen
		consumed += fileLen
		complete = complete[i+1:]
	}
	r.hold(chunk[last+1:])
	return lines, consumed
}

// remember updates recent with chunk and, when bytes were consumed, the
// anchor: the bytes just before the new offset, which are recent up to
// the held partial line.
func (r *lineReader) remember(chunk []byte, consumed *int64) {
	if *consumed > 0 {
		end := int64(len(chunk)) - r.partLen // where the consumed bytes end in chunk
		if end >= 0 {
			r.anchor = lastBytes(r.anchor[:0], r.recent, chunk[:end])
		}
	}
	r.recent = lastBytes(r.recent[:0:0], r.recent, chunk)
}

// lastBytes sets dst to the last anchorLen bytes of a followed by b.
func lastBytes(dst, a, b []byte) []byte {
	if len(b) >= anchorLen {
		return append(dst[:0], b[len(b)-anchorLen:]...)
	}
	keep := min(len(a), anchorLen-len(b))
	out := make([]byte, 0, keep+len(b))
	out = append(out, a[len(a)-keep:]...)
	return append(out, b...)
}

// hold keeps b as (the continuation of) the partial line, up to
// MaxLineBytes bytes of it.
func (r *lineReader) hold(b []byte) {
	r.partLen += int64(len(b))
	if room := serverlog.MaxLineBytes - len(r.partial); room > 0 {
		r.partial = append(r.partial, b[:min(len(b), room)]...)
	}
}

// clone returns a copy that shares no memory with r.
func (r *lineReader) clone() lineReader {
	c := *r
	c.partial = bytes.Clone(r.partial)
	c.recent = bytes.Clone(r.recent)
	c.anchor = bytes.Clone(r.anchor)
	return c
}

// chunkSource reads a stream on its own goroutine, ahead of its consumer by
// at most maxPending bytes.
type chunkSource struct {
	ready chan struct{} // has a value when data or the end is waiting
	room  chan struct{} // has a value when take made room
	done  chan struct{} // closed by stop
	wg    sync.WaitGroup
	mu    sync.Mutex
	buf   []byte
	end   error // io.EOF or the read error, after buf
}

func newChunkSource(r io.Reader) *chunkSource {
	s := &chunkSource{ready: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tmp := make([]byte, 64<<10)
		for {
			n, err := r.Read(tmp)
			s.mu.Lock()
			s.buf = append(s.buf, tmp[:n]...)
			if err != nil {
				s.end = err
			}
			full := len(s.buf) >= maxPending
			s.mu.Unlock()
			signal(s.ready)
			if err != nil {
				return
			}
			for full {
				select {
				case <-s.done:
					return
				case <-s.room:
				}
				s.mu.Lock()
				full = len(s.buf) >= maxPending
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// take returns what was read since the last take and, once everything has
// been taken, why the stream ended.
func (s *chunkSource) take() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buf
	s.buf = nil
	signal(s.room)
	if len(b) > 0 {
		return b, nil
	}
	return nil, s.end
}

// stop ends the reading goroutine; the stream must be closed first.
func (s *chunkSource) stop() {
	close(s.done)
	s.wg.Wait()
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
