// Package logtail is the cockpit's log panel: the ring of the followed
// server log's lines (and flightdeck's own: Xids, sampler changes), the
// ready and failure highlights the parsers mark, the filter, following and
// scrolling, wrapping, and drawing it at a size. Every line is sanitised
// when it is stored, so drawing never sees an escape sequence.
package logtail

import (
	"sort"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// DefaultLogLines is the default size of the log ring buffer (lines): the
// screen's (event.ScreenLogLines).
const DefaultLogLines = event.ScreenLogLines

// Kind says whose a line is and how it is drawn: the server's (normal,
// ready, failure) or flightdeck's own (a marker, a warning, a critical
// one).
type Kind uint8

const (
	lineNormal  Kind = iota
	LineMarker       // our own marker, e.g. a truncation notice
	LineReady        // the line a event.ServerReady came from
	LineFailure      // the line a event.ServerFailure came from
	LineOwnWarn      // flightdeck's own line among the server's, a warning (an application's Xid)
	LineOwnCrit      // flightdeck's own line, critical (a critical Xid)
)

// ours reports a line flightdeck wrote, not the server: it passes every
// filter (it says what happened around the lines that match) and is
// never a ready/failure highlight.
func (k Kind) ours() bool { return k == LineMarker || k == LineOwnWarn || k == LineOwnCrit }

// Entry is one line of the tail: the server's (or flightdeck's own) text
// and what kind of line it is.
type Entry struct {
	Text string // sanitised (and cut at sanitize.MaxRunes)
	kind Kind
}

// pendingMark is a Ready/Failure whose line has not arrived yet (the parser
// and the follower may deliver in either order).
type pendingMark struct {
	text string
	kind Kind
	seq  int64 // log end when registered; dropped after markHorizon lines
}

const (
	MarkSearch  = event.ScreenMarkSearch  // lines searched back for a Ready/Failure's source line
	MarkHorizon = event.ScreenMarkHorizon // lines a Ready/Failure waits for its source line
	maxPending  = 32
)

// Tail is a ring buffer of sanitised log lines with follow, scrolling,
// soft wrap and a substring filter. Lines are addressed by seq, a count
// since the start that never repeats; the ring keeps seqs [start, end).
// Scrolling moves by source lines, wrapped or not.
type Tail struct {
	buf   []Entry
	cap   int
	Start int64
	end   int64

	Follow   bool
	topSeq   int64 // first visible line when not following
	NewLines int64 // lines appended while not following
	height   int   // visible rows (SetSize's, at least 1: the page size)
	width    int   // cells (SetSize's)
	rows     int   // rows View draws (SetSize's, 0 or more)
	shown    int   // source lines (whole or part) at the last render

	Wrap   bool  // long lines continue on further rows instead of being cut
	bounds []int // scratch for wrapBounds

	// Row breaks of visible non-ASCII lines by seq, for width wrapW: the
	// grapheme walk costs about 30 ns a cluster, and a 4 kB line is
	// walked for the window and again for its rows on every frame.
	wrapW   int
	wrapMem map[int64][]int

	Filter  string  // lower-cased for matching; "" for none
	Query   string  // the filter as typed, for display
	Matches []int64 // seqs that pass the filter, ascending

	pending []pendingMark
	Path    string
	Seen    bool // a event.LogLines or Reset arrived: a log is followed

	// notice is why the followed file cannot be read now (tail's words,
	// sanitised) and noticeShort its gist for the title; "" when readable.
	notice      string
	NoticeShort string
}

// SetNotice records a event.LogNotice: the file is missing, not a file or
// unreadable, or (NoticeAppeared) readable again.
func (t *Tail) SetNotice(n event.LogNotice) {
	switch n.Class {
	case event.NoticeAppeared:
		t.notice, t.NoticeShort = "", ""
		return
	case event.NoticeMissing:
		t.NoticeShort = "missing, waiting for it"
	case event.NoticeNotAFile:
		t.NoticeShort = "not a regular file"
	default:
		t.NoticeShort = "cannot read it"
	}
	t.notice = sanitize.String(n.Text)
	if t.notice == "" {
		t.notice = t.NoticeShort
	}
	if n.Path != "" {
		t.Path = sanitize.String(n.Path)
	}
}

// New returns an empty tail keeping the last capacity lines
// (DefaultLogLines when 0 or less), following.
func New(capacity int) Tail {
	if capacity <= 0 {
		capacity = DefaultLogLines
	}
	return Tail{cap: capacity, Follow: true, height: 1}
}

// Entry is the line of sequence number seq, which must be in the ring
// (Start <= seq < the end).
func (t *Tail) Entry(seq int64) *Entry {
	return &t.buf[seq%int64(t.cap)]
}

func (t *Tail) add(e Entry) {
	if len(t.buf) < t.cap {
		t.buf = append(t.buf, e)
	} else {
		*t.Entry(t.end) = e
		t.Start++
	}
	seq := t.end
	t.end++
	if !t.Follow {
		t.NewLines++
	}
	if t.Filter != "" {
		for len(t.Matches) > 0 && t.Matches[0] < t.Start {
			t.Matches = t.Matches[1:]
		}
		if e.kind.ours() || containsFold(e.Text, t.Filter) {
			t.Matches = append(t.Matches, seq)
		}
	}
}

// AddOwn appends one of flightdeck's own lines (already sanitised), at
// its place in the stream: it scrolls and is filtered with the server's
// lines, and leaves the ring like them. It does not count as a followed
// log (a session without one shows it under the no-log message). It
// returns the line's seq.
func (t *Tail) AddOwn(text string, kind Kind) int64 {
	t.add(Entry{Text: text, kind: kind})
	return t.end - 1
}

// SetOwn replaces the text of flightdeck's own line seq (already
// sanitised), if the ring still holds it: an Xid line's count grows.
func (t *Tail) SetOwn(seq int64, text string) {
	if seq < t.Start || seq >= t.end {
		return
	}
	e := t.Entry(seq)
	if !e.kind.ours() {
		return
	}
	e.Text = text
	delete(t.wrapMem, seq)
}

// Ingest sanitises and appends a batch of raw lines.
func (t *Tail) Ingest(ls event.LogLines) {
	t.Seen = true
	t.notice, t.NoticeShort = "", "" // lines arrive: the file is readable
	if ls.Path != "" {
		t.Path = sanitize.String(ls.Path)
	}
	for _, l := range ls.Lines {
		e := Entry{Text: sanitize.Line(l.Text)}
		if len(t.pending) > 0 {
			e.kind = t.claimPending(e.Text)
		}
		t.add(e)
	}
	// Forget marks whose line never came.
	kept := t.pending[:0]
	for _, p := range t.pending {
		if t.end-p.seq < MarkHorizon {
			kept = append(kept, p)
		}
	}
	t.pending = kept
}

// Reset appends the truncation/rotation marker.
func (t *Tail) Reset(r event.LogReset) {
	t.Seen = true
	t.add(Entry{
		Text: "-- " + sanitize.String(r.Words()) + " --",
		kind: LineMarker,
	})
}

func matchesMark(line, text string) bool {
	return line == text || (len(text) >= 8 && strings.Contains(line, text))
}

func (t *Tail) claimPending(line string) Kind {
	for i, p := range t.pending {
		if matchesMark(line, p.text) {
			t.pending = append(t.pending[:i], t.pending[i+1:]...)
			return p.kind
		}
	}
	return lineNormal
}

// Mark highlights the most recent line equal to text (a Ready's or
// Failure's sanitised line), or remembers it for a line still to come.
func (t *Tail) Mark(text string, kind Kind) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	for seq := t.end - 1; seq >= t.Start && seq >= t.end-MarkSearch; seq-- {
		e := t.Entry(seq)
		if e.kind == lineNormal && matchesMark(e.Text, text) {
			e.kind = kind
			return
		}
	}
	if len(t.pending) == maxPending {
		t.pending = t.pending[1:]
	}
	t.pending = append(t.pending, pendingMark{text: text, kind: kind, seq: t.end})
}

// SetFilter filters displayed lines by a case-insensitive substring.
func (t *Tail) SetFilter(q string) {
	t.Query = sanitize.String(q) // typed or pasted: shown in the title
	q = strings.ToLower(q)
	if q == t.Filter {
		return
	}
	t.Filter = q
	t.Matches = t.Matches[:0]
	if q == "" {
		t.Matches = nil
		return
	}
	for seq := t.Start; seq < t.end; seq++ {
		e := t.Entry(seq)
		if e.kind.ours() || containsFold(e.Text, q) {
			t.Matches = append(t.Matches, seq)
		}
	}
}

// Count is the number of displayable lines (after the filter).
func (t *Tail) Count() int {
	if t.Filter != "" {
		return len(t.Matches)
	}
	return int(t.end - t.Start)
}

// seqAt maps a display position to a line seq.
func (t *Tail) seqAt(pos int) int64 {
	if t.Filter != "" {
		return t.Matches[pos]
	}
	return t.Start + int64(pos)
}

// posOf maps a seq to the display position of the first line at or after it.
func (t *Tail) posOf(seq int64) int {
	if t.Filter != "" {
		return sort.Search(len(t.Matches), func(i int) bool { return t.Matches[i] >= seq })
	}
	return int(max(seq, t.Start) - t.Start)
}

// Soft wrap: continuation rows start with wrapMark (wrapMarkW cells), so
// they are not mistaken for indented lines such as traceback frames.
const (
	WrapMark     = "↳ "
	wrapMarkW    = 2
	minWrapWidth = 8 // narrower than this, lines are cut even with wrap on
)

func (t *Tail) wrapping() bool { return t.Wrap && t.width >= minWrapWidth }

// rowsAt is how many rows the line at display position pos takes.
func (t *Tail) rowsAt(pos int) int {
	if !t.wrapping() {
		return 1
	}
	seq := t.seqAt(pos)
	s := t.Entry(seq).Text
	first, rest := t.width, t.width-wrapMarkW
	if style.IsASCII(s) {
		if len(s) <= first {
			return 1
		}
		return 1 + (len(s)-first+rest-1)/rest
	}
	return len(t.rowBounds(seq)) - 1
}

// maxWrapMem bounds the row-break cache (lines); far more than a screen.
const maxWrapMem = 512

// rowBounds returns the row breaks of line seq at the current width (see
// wrapBounds). The slice is shared: read it before the next call.
func (t *Tail) rowBounds(seq int64) []int {
	s := t.Entry(seq).Text
	if style.IsASCII(s) {
		t.bounds = wrapBounds(t.bounds[:0], s, t.width, t.width-wrapMarkW)
		return t.bounds
	}
	if t.wrapW != t.width || len(t.wrapMem) >= maxWrapMem {
		t.wrapW = t.width
		clear(t.wrapMem)
	}
	if b, ok := t.wrapMem[seq]; ok {
		return b
	}
	if t.wrapMem == nil {
		t.wrapMem = make(map[int64][]int)
	}
	b := wrapBounds(nil, s, t.width, t.width-wrapMarkW)
	t.wrapMem[seq] = b
	return b
}

// fromBottom is the window that ends with the newest line's last row: the
// first line at least partly visible and how many of its rows are above
// the top.
func (t *Tail) fromBottom() (pos, skip int) {
	h, rows := max(t.height, 1), 0
	for p := t.Count() - 1; p >= 0; p-- {
		rows += t.rowsAt(p)
		if rows >= h {
			return p, rows - h
		}
	}
	return 0, 0
}

// maxTop is the last display position a paused view may start at: the
// view still ends at the newest line, which is shown whole.
func (t *Tail) maxTop() int {
	n := t.Count()
	if !t.wrapping() {
		return max(0, n-max(t.height, 1))
	}
	top, skip := t.fromBottom()
	if skip > 0 && top < n-1 {
		top++
	}
	return top
}

// window is the display position of the first visible line and how many
// of its rows are hidden above the top (only when following with wrap).
func (t *Tail) window() (first, skip int) {
	switch {
	case t.Follow && t.wrapping():
		return t.fromBottom()
	case t.Follow:
		return max(0, t.Count()-max(t.height, 1)), 0
	}
	return style.Clamp(t.posOf(t.topSeq), 0, t.maxTop()), 0
}

// Page is how many lines pgup/pgdn move: a screenful less one, counted in
// source lines.
func (t *Tail) Page() int {
	if t.wrapping() {
		return max(t.shown-1, 1)
	}
	return max(t.height-1, 1)
}

// Move moves the view by delta lines (negative is up); moving up pauses
// follow so that new lines do not pull the view away.
func (t *Tail) Move(delta int) {
	n := t.Count()
	if n == 0 {
		return
	}
	first, _ := t.window()
	pos := style.Clamp(first+delta, 0, t.maxTop())
	if delta < 0 && t.Follow {
		t.Pause()
	}
	if !t.Follow {
		t.topSeq = t.seqAt(min(pos, n-1))
	}
}

// Pause stops following: the view stays where it is while lines arrive
// (NewLines counts them).
func (t *Tail) Pause() {
	if !t.Follow {
		return
	}
	first, _ := t.window()
	t.Follow = false
	t.NewLines = 0
	if t.Count() > 0 {
		t.topSeq = t.seqAt(first)
	} else {
		t.topSeq = t.end
	}
}

// Resume follows again: the view jumps to the newest lines.
func (t *Tail) Resume() {
	t.Follow = true
	t.NewLines = 0
}

// Home pauses and shows the oldest line kept.
func (t *Tail) Home() {
	t.Pause()
	t.topSeq = t.Start
}

// SetSize gives the tail w cells by h rows: the page size and, with wrap
// on, where lines break.
func (t *Tail) SetSize(w, h int) { t.height, t.width, t.rows = max(h, 1), w, max(h, 0) }

// End shows the newest lines and follows the log again (G/end).
func (t *Tail) End() { t.Resume() }

// View appends up to h rows (SetSize's) of the visible window to out, none
// wider than w cells: one per line cut to w, or with wrap on, each line's
// rows. Only the window is touched, whatever the buffer holds.
func (t *Tail) View(out []string, st *style.Styles) []string {
	w, h := t.width, t.rows
	n := t.Count()
	if n == 0 && t.notice != "" && h > 0 {
		// Nothing to show yet and the file cannot be read: say why.
		return append(out, st.Warn.Render(style.Truncate(t.notice, w)))
	}
	first, skip := t.window()
	wrap := t.wrapping()
	t.shown = 0
	for pos, rows := first, 0; pos < n && rows < h; pos++ {
		e := t.Entry(t.seqAt(pos))
		t.shown++
		mi := t.match(e)
		if !wrap {
			out = append(out, t.paint(e, style.Truncate(e.Text, w), 0, mi, st))
			rows++
			continue
		}
		b := t.rowBounds(t.seqAt(pos))
		for r := skip; r+1 < len(b) && rows < h; r++ {
			row := t.paint(e, e.Text[b[r]:b[r+1]], b[r], mi, st)
			if r > 0 {
				row = st.Dim.Render(WrapMark) + row
			}
			out = append(out, row)
			rows++
		}
		skip = 0
	}
	return out
}

// match is the byte offset of the first filter match in a normal line, or
// -1 (marked lines are painted whole; non-ASCII filters are not painted).
func (t *Tail) match(e *Entry) int {
	if t.Filter == "" || e.kind != lineNormal || !style.IsASCII(t.Filter) {
		return -1
	}
	return indexFoldASCII(e.Text, t.Filter)
}

// paint styles s, the part of e.text that starts at byte off: by line kind,
// or for a normal line with the part of the match at mi (if any) that
// falls inside s highlighted.
func (t *Tail) paint(e *Entry, s string, off, mi int, st *style.Styles) string {
	switch e.kind {
	case LineMarker:
		return st.Dim.Render(s)
	case LineReady:
		return st.OK.Render(s)
	case LineFailure, LineOwnCrit:
		return st.Crit.Render(s)
	case LineOwnWarn:
		return st.Warn.Render(s)
	}
	if mi < 0 {
		return s
	}
	i, j := max(mi, off)-off, min(mi+len(t.Filter), off+len(s))-off
	if i >= j {
		return s
	}
	return s[:i] + st.Accent.Render(s[i:j]) + s[j:]
}

// wrapBounds appends to dst the byte offsets that cut plain text s into
// rows of at most first cells, then rest cells each: 0, then one offset per
// break, then len(s). Grapheme clusters are never split; a wide one that
// does not fit starts the next row. rest must be at least 2.
func wrapBounds(dst []int, s string, first, rest int) []int {
	dst = append(dst, 0)
	if style.IsASCII(s) {
		for i, lim := 0, first; len(s)-i > lim; lim = rest {
			i += lim
			dst = append(dst, i)
		}
		return append(dst, len(s))
	}
	w, lim := 0, first
	for i := 0; i < len(s); {
		cl, cw := ansi.FirstGraphemeCluster(s[i:], ansi.GraphemeWidth)
		if len(cl) == 0 {
			cl = s[i : i+1]
		}
		if w+cw > lim && w > 0 {
			dst = append(dst, i)
			w, lim = 0, rest
		}
		w += cw
		i += len(cl)
	}
	return append(dst, len(s))
}

// containsFold reports whether s contains the lower-case needle q,
// ignoring case. ASCII needles are matched without allocating.
func containsFold(s, q string) bool {
	if style.IsASCII(q) {
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
