package tui

import (
	"sort"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
)

// DefaultLogLines is the default size of the log ring buffer (lines).
const DefaultLogLines = 10000

type lineKind uint8

const (
	lineNormal  lineKind = iota
	lineMarker           // our own marker, e.g. a truncation notice
	lineReady            // the line a serverlog.Ready came from
	lineFailure          // the line a serverlog.Failure came from
)

type logEntry struct {
	text string // sanitised (and cut at sanitize.MaxRunes)
	kind lineKind
}

// pendingMark is a Ready/Failure whose line has not arrived yet (the parser
// and the follower may deliver in either order).
type pendingMark struct {
	text string
	kind lineKind
	seq  int64 // log end when registered; dropped after markHorizon lines
}

const (
	markSearch  = 512 // lines searched back for a Ready/Failure's source line
	markHorizon = 2048
	maxPending  = 32
)

// logTail is a ring buffer of sanitised log lines with follow, scrolling
// and a substring filter. Lines are addressed by seq, a count since the
// start that never repeats; the ring keeps seqs [start, end).
type logTail struct {
	buf   []logEntry
	cap   int
	start int64
	end   int64

	follow   bool
	topSeq   int64 // first visible line when not following
	newLines int64 // lines appended while not following
	height   int   // visible lines at the last render

	filter  string  // lower-cased; "" for none
	matches []int64 // seqs that pass the filter, ascending

	pending []pendingMark
	path    string
	seen    bool // a serverlog.Lines or Reset arrived: a log is followed
}

func newLogTail(capacity int) logTail {
	if capacity <= 0 {
		capacity = DefaultLogLines
	}
	return logTail{cap: capacity, follow: true, height: 1}
}

func (t *logTail) entry(seq int64) *logEntry {
	return &t.buf[seq%int64(t.cap)]
}

func (t *logTail) add(e logEntry) {
	if len(t.buf) < t.cap {
		t.buf = append(t.buf, e)
	} else {
		*t.entry(t.end) = e
		t.start++
	}
	seq := t.end
	t.end++
	if !t.follow {
		t.newLines++
	}
	if t.filter != "" {
		for len(t.matches) > 0 && t.matches[0] < t.start {
			t.matches = t.matches[1:]
		}
		if e.kind == lineMarker || containsFold(e.text, t.filter) {
			t.matches = append(t.matches, seq)
		}
	}
}

// ingest sanitises and appends a batch of raw lines.
func (t *logTail) ingest(ls serverlog.Lines) {
	t.seen = true
	if ls.Path != "" {
		t.path = sanitizeString(ls.Path)
	}
	for _, l := range ls.Lines {
		e := logEntry{text: sanitizeLine(l.Text)}
		if len(t.pending) > 0 {
			e.kind = t.claimPending(e.text)
		}
		t.add(e)
	}
	// Forget marks whose line never came.
	kept := t.pending[:0]
	for _, p := range t.pending {
		if t.end-p.seq < markHorizon {
			kept = append(kept, p)
		}
	}
	t.pending = kept
}

// reset appends the truncation/rotation marker.
func (t *logTail) reset(r serverlog.Reset) {
	t.seen = true
	reason := sanitizeString(r.Reason)
	if reason == "" {
		reason = "reset"
	}
	t.add(logEntry{
		text: "── log " + reason + ", restarting at " + strconv.FormatInt(r.Offset, 10) + " ──",
		kind: lineMarker,
	})
}

func matchesMark(line, text string) bool {
	return line == text || (len(text) >= 8 && strings.Contains(line, text))
}

func (t *logTail) claimPending(line string) lineKind {
	for i, p := range t.pending {
		if matchesMark(line, p.text) {
			t.pending = append(t.pending[:i], t.pending[i+1:]...)
			return p.kind
		}
	}
	return lineNormal
}

// mark highlights the most recent line equal to text (a Ready's or
// Failure's sanitised line), or remembers it for a line still to come.
func (t *logTail) mark(text string, kind lineKind) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	for seq := t.end - 1; seq >= t.start && seq >= t.end-markSearch; seq-- {
		e := t.entry(seq)
		if e.kind == lineNormal && matchesMark(e.text, text) {
			e.kind = kind
			return
		}
	}
	if len(t.pending) == maxPending {
		t.pending = t.pending[1:]
	}
	t.pending = append(t.pending, pendingMark{text: text, kind: kind, seq: t.end})
}

// setFilter filters displayed lines by a case-insensitive substring.
func (t *logTail) setFilter(q string) {
	q = strings.ToLower(q)
	if q == t.filter {
		return
	}
	t.filter = q
	t.matches = t.matches[:0]
	if q == "" {
		t.matches = nil
		return
	}
	for seq := t.start; seq < t.end; seq++ {
		e := t.entry(seq)
		if e.kind == lineMarker || containsFold(e.text, q) {
			t.matches = append(t.matches, seq)
		}
	}
}

// count is the number of displayable lines (after the filter).
func (t *logTail) count() int {
	if t.filter != "" {
		return len(t.matches)
	}
	return int(t.end - t.start)
}

// seqAt maps a display position to a line seq.
func (t *logTail) seqAt(pos int) int64 {
	if t.filter != "" {
		return t.matches[pos]
	}
	return t.start + int64(pos)
}

// posOf maps a seq to the display position of the first line at or after it.
func (t *logTail) posOf(seq int64) int {
	if t.filter != "" {
		return sort.Search(len(t.matches), func(i int) bool { return t.matches[i] >= seq })
	}
	return int(max(seq, t.start) - t.start)
}

// first is the display position of the first visible line.
func (t *logTail) first() int {
	n, h := t.count(), max(t.height, 1)
	if t.follow {
		return max(0, n-h)
	}
	return clamp(t.posOf(t.topSeq), 0, max(0, n-h))
}

// scroll moves the view by delta lines (negative is up); moving up pauses
// follow so that new lines do not pull the view away.
func (t *logTail) scroll(delta int) {
	n, h := t.count(), max(t.height, 1)
	if n == 0 {
		return
	}
	pos := clamp(t.first()+delta, 0, max(0, n-h))
	if delta < 0 && t.follow {
		t.pause()
	}
	if !t.follow {
		t.topSeq = t.seqAt(min(pos, n-1))
	}
}

func (t *logTail) pause() {
	if !t.follow {
		return
	}
	first := t.first()
	t.follow = false
	t.newLines = 0
	if t.count() > 0 {
		t.topSeq = t.seqAt(first)
	} else {
		t.topSeq = t.end
	}
}

func (t *logTail) resume() {
	t.follow = true
	t.newLines = 0
}

func (t *logTail) home() {
	t.pause()
	t.topSeq = t.start
}

// render appends up to h lines of the visible window to out, each cut to w
// cells. Only the window is touched, whatever the buffer holds.
func (t *logTail) render(out []string, st *Styles, w, h int) []string {
	t.height = max(h, 1)
	n := t.count()
	first := t.first()
	for pos := first; pos < n && pos < first+h; pos++ {
		e := t.entry(t.seqAt(pos))
		txt := truncate(e.text, w)
		switch e.kind {
		case lineMarker:
			out = append(out, st.Dim.Render(txt))
		case lineReady:
			out = append(out, st.OK.Render(txt))
		case lineFailure:
			out = append(out, st.Crit.Render(txt))
		default:
			out = append(out, t.highlight(txt, st))
		}
	}
	return out
}

// highlight paints the first filter match in a line.
func (t *logTail) highlight(s string, st *Styles) string {
	if t.filter == "" || !isASCII(t.filter) {
		return s
	}
	i := indexFoldASCII(s, t.filter)
	if i < 0 {
		return s
	}
	j := i + len(t.filter)
	return s[:i] + st.Accent.Render(s[i:j]) + s[j:]
}

// containsFold reports whether s contains the lower-case needle q,
// ignoring case. ASCII needles are matched without allocating.
func containsFold(s, q string) bool {
	if isASCII(q) {
		return indexFoldASCII(s, q) >= 0
	}
	return strings.Contains(strings.ToLower(s), q)
}

// indexFoldASCII returns the byte index of the lower-case ASCII needle q in
// s ignoring ASCII case, or -1.
func indexFoldASCII(s, q string) int {
	n := len(q)
	if n == 0 {
		return 0
	}
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != q[j] {
				break
			}
		}
		if j == n {
			return i
		}
	}
	return -1
}
