package journal

// log-lines in format v2: each raw line is stored once, mostly as the
// digits that differ from the line before it, and the events derived from
// the lines (the parsed decode and prefill lines, the tok/s points) ride
// on the same line, rebuilt from the stored text when they are what the
// parser gives for it (docs/journal-format.md, "log-lines").

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote/jsonappend"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// v2 log-lines flag bits (the data's first element).
const (
	// logFlagKey: path and offset follow, and no line refers to a line
	// before this one: the log state starts here.
	logFlagKey = 1
	// logFlagDerived: the last element is the derived events' array.
	logFlagDerived = 2
)

// logEncState is a Writer's log state: the line each new line is written
// against, and the log-lines line being held for the events derived from
// it.
type logEncState struct {
	has   bool
	keyAt time.Time
	path  string
	next  int64  // offset implied for the next line
	prev  []byte // the last line written
	// The held line: written out (finish) at the next event that is not
	// derived from it, or the next flush.
	held    bool
	key     bool // the held line is a key
	heldT   micros
	head    []byte   // `[t,"log-lines",`
	body    []byte   // the elements after the flags, each with its leading ','
	lines   [][]byte // the held lines' texts (in text), for the derived references
	text    []byte   // a copy of the held lines: the payload's bytes are the caller's
	items   []byte   // the derived items, comma-separated
	nItems  int
	scratch [2][]int // digit runs of a line and of the line before
}

// logDecState is a reader's log state.
type logDecState struct {
	has  bool
	key  int32 // the key entry the state comes from
	last int32 // the last log-lines entry decoded into it
	path string
	next int64
	prev []byte
	// derived are the events derived from entry last, in order.
	derived []event.Payload
	runs    [2][]int
}

// holdLines starts holding ls as a v2 log-lines line whose frame start
// is head (Writer.Write; finishLines writes it out).
func (w *Writer) holdLines(t micros, head []byte, at time.Time, ls event.LogLines) {
	s := &w.enc.log
	key := !s.has || ls.Path != s.path || at.Sub(s.keyAt) >= KeyframeEvery || at.Before(s.keyAt) ||
		(len(ls.Lines) > 0 && ls.Lines[0].Offset != s.next)
	s.held, s.key, s.heldT = true, key, t
	s.head = append(s.head[:0], head...)
	s.body = s.body[:0]
	s.lines, s.text = s.lines[:0], s.text[:0]
	s.items, s.nItems = s.items[:0], 0
	if key {
		s.has, s.path, s.prev = true, ls.Path, s.prev[:0]
		s.next = 0
		if len(ls.Lines) > 0 {
			s.next = ls.Lines[0].Offset
		}
		s.body = append(s.body, ',')
		s.body = jsonappend.String(s.body, ls.Path)
		s.body = append(s.body, ',')
		s.body = jsonappend.Float(s.body, float64(s.next))
	}
	first := key
	for _, l := range ls.Lines {
		s.body = append(s.body, ',')
		valid := utf8.Valid(l.Text)
		switch {
		case l.Offset != s.next:
			s.body = append(s.body, `{"o":`...)
			s.body = jsonappend.Float(s.body, float64(l.Offset))
			if valid {
				s.body = append(s.body, `,"t":`...)
				s.body = jsonappend.String(s.body, l.Text)
			} else {
				s.body = append(s.body, `,"b":"`...)
				s.body = base64.StdEncoding.AppendEncode(s.body, l.Text)
				s.body = append(s.body, '"')
			}
			s.body = append(s.body, '}')
		case !valid:
			s.body = append(s.body, `{"b":"`...)
			s.body = base64.StdEncoding.AppendEncode(s.body, l.Text)
			s.body = append(s.body, `"}`...)
		default:
			n := len(s.body)
			ok := false
			if !first && utf8.Valid(s.prev) {
				s.body, ok = s.appendDelta(s.body, l.Text)
			}
			if !ok {
				s.body = jsonappend.String(s.body[:n], l.Text)
			}
		}
		first = false
		s.prev = append(s.prev[:0], l.Text...)
		s.next = l.Offset + int64(len(l.Text)) + 1
		s.text = append(s.text, l.Text...)
		s.lines = append(s.lines, s.text[len(s.text)-len(l.Text):len(s.text):len(s.text)])
	}
	// s.text may have moved while growing: the lines are cut again.
	off := 0
	for k, l := range ls.Lines {
		s.lines[k] = s.text[off : off+len(l.Text) : off+len(l.Text)]
		off += len(l.Text)
	}
	if key {
		s.keyAt = at
	}
}

// appendDelta writes line as the digit runs that differ from s.prev's,
// `[i,"digits",...]`, when the two lines are the same but for their
// digit runs and that is shorter than the line; ok is false otherwise.
func (s *logEncState) appendDelta(b, line []byte) ([]byte, bool) {
	a, c := digitRuns(s.prev, s.scratch[0][:0]), digitRuns(line, s.scratch[1][:0])
	s.scratch[0], s.scratch[1] = a, c
	if len(a) != len(c) || !sameSkeleton(s.prev, a, line, c) {
		return b, false
	}
	n := len(b)
	b = append(b, '[')
	k := 0
	for r := 0; r < len(a); r += 2 {
		x, y := s.prev[a[r]:a[r+1]], line[c[r]:c[r+1]]
		if bytes.Equal(x, y) {
			continue
		}
		if k > 0 {
			b = append(b, ',')
		}
		b = jsonappend.Float(b, float64(r/2))
		b = append(b, ',', '"')
		b = append(b, y...)
		b = append(b, '"')
		k++
	}
	b = append(b, ']')
	if len(b)-n >= len(line)+2 {
		return b[:n], false
	}
	return b, true
}

// digitRuns appends the [start, end) of each maximal run of ASCII digits
// in line to out.
func digitRuns(line []byte, out []int) []int {
	for i := 0; i < len(line); {
		if line[i] < '0' || line[i] > '9' {
			i++
			continue
		}
		j := i + 1
		for j < len(line) && line[j] >= '0' && line[j] <= '9' {
			j++
		}
		out = append(out, i, j)
		i = j
	}
	return out
}

// sameSkeleton reports whether lines a and c (digit runs ra and rc, as
// many of each) are the same outside their digit runs.
func sameSkeleton(a []byte, ra []int, c []byte, rc []int) bool {
	pa, pc := 0, 0
	for r := 0; r < len(ra); r += 2 {
		if !bytes.Equal(a[pa:ra[r]], c[pc:rc[r]]) {
			return false
		}
		pa, pc = ra[r+1], rc[r+1]
	}
	return bytes.Equal(a[pa:], c[pc:])
}

// absorb adds a derived event at t to the held line, when it is one the
// line can carry: a throughput or prefill (a reference to its line when
// the parser gives exactly it, else its data) or a tok/s point. It
// reports whether it did.
func (w *Writer) absorb(t micros, p event.Payload) bool {
	s := &w.enc.log
	if !s.held || t != s.heldT {
		return false
	}
	n := len(s.items)
	if s.nItems > 0 {
		s.items = append(s.items, ',')
	}
	// Only the three kinds a log line derives are absorbed; every other
	// kind is written on its own line (so not an exhaustive switch over
	// event.Payload: any(p) keeps go-check-sumtype from asking for one).
	switch v := any(p).(type) {
	case event.Throughput:
		if j := s.lineOf(v); j >= 0 {
			s.items = jsonappend.Float(s.items, float64(j))
		} else {
			s.items = append(s.items, `"throughput",`...)
			var err error
			if s.items, err = encThroughput(nil, s.items, time.Time{}, v); err != nil {
				s.items = s.items[:n]
				return false
			}
		}
	case event.Prefill:
		s.items = append(s.items, `"prefill",`...)
		if j := s.prefillLineOf(v); j >= 0 {
			s.items = jsonappend.Float(s.items, float64(j))
		} else {
			var err error
			if s.items, err = encPrefill(nil, s.items, time.Time{}, v); err != nil {
				s.items = s.items[:n]
				return false
			}
		}
	case event.TokRate:
		s.items, _ = encRate(nil, s.items, time.Time{}, v)
	default:
		s.items = s.items[:n]
		return false
	}
	s.nItems++
	return true
}

// lineOf returns the index of the held line from which parseThroughput
// gives v, -1 when none.
func (s *logEncState) lineOf(v event.Throughput) int {
	for j, l := range s.lines {
		if got, ok := parseThroughput(l); ok && got == v {
			return j
		}
	}
	return -1
}

func (s *logEncState) prefillLineOf(v event.Prefill) int {
	for j, l := range s.lines {
		if got, ok := serverlog.ParseSGLangPrefill(l); ok && got == v {
			return j
		}
	}
	return -1
}

// parseThroughput is a throughput reference's parser: SGLang's decode
// line, else vLLM's throughput line.
func parseThroughput(line []byte) (event.Throughput, bool) {
	if t, ok := serverlog.ParseSGLangDecode(line); ok {
		return t, true
	}
	return serverlog.ParseVLLMThroughput(line)
}

// finishLines writes the held line, if any, to w.buf.
func (w *Writer) finishLines() {
	s := &w.enc.log
	if !s.held {
		return
	}
	s.held = false
	flags := 0
	b := append(w.buf, s.head...)
	b = append(b, '[')
	if s.key {
		flags |= logFlagKey
	}
	if s.nItems > 0 {
		flags |= logFlagDerived
	}
	b = jsonappend.Float(b, float64(flags))
	b = append(b, s.body...)
	if s.nItems > 0 {
		b = append(b, ',', '[')
		b = append(b, s.items...)
		b = append(b, ']')
	}
	w.buf = append(b, ']', ']', '\n')
}

// decLinesV2 decodes v2 log-lines data el (split, the flags first) with
// the log state st, which it advances; the derived events go to
// st.derived.
func decLinesV2(st *logDecState, el [][]byte) (event.LogLines, error) {
	var ls event.LogLines
	flags, ok := parseInt(el[0])
	if !ok || flags < 0 || flags > logFlagKey|logFlagDerived {
		return ls, fmt.Errorf("log-lines flags: %w", errSyntax)
	}
	el = el[1:]
	st.derived = st.derived[:0]
	if flags&logFlagKey != 0 {
		if len(el) < 2 {
			return ls, fmt.Errorf("log-lines key: %w", errSyntax)
		}
		path, ok1 := parseString(el[0])
		next, ok2 := parseInt(el[1])
		if !ok1 || !ok2 {
			return ls, fmt.Errorf("log-lines key: %w", errSyntax)
		}
		st.has, st.path, st.next, st.prev = true, path, next, st.prev[:0]
		el = el[2:]
	} else if !st.has {
		return ls, fmt.Errorf("log-lines: its key line is missing or damaged")
	}
	var derived []byte
	if flags&logFlagDerived != 0 {
		if len(el) == 0 {
			return ls, fmt.Errorf("log-lines derived: %w", errSyntax)
		}
		derived, el = el[len(el)-1], el[:len(el)-1]
	}
	ls.Path = st.path
	first := flags&logFlagKey != 0
	if len(el) > 0 {
		ls.Lines = make([]event.LogLine, len(el))
	}
	for i, e := range el {
		l := &ls.Lines[i]
		l.Offset = st.next
		switch e[0] {
		case '"', '{':
			var err error
			if l.Offset, l.Text, err = decLine(e, st.next); err != nil {
				st.has = false
				return ls, fmt.Errorf("log-lines line %d: %w", i+1, err)
			}
		case '[':
			if first || !utf8.Valid(st.prev) {
				st.has = false
				return ls, fmt.Errorf("log-lines line %d: a delta without the line before it", i+1)
			}
			text, ok := applyDelta(st, e)
			if !ok {
				st.has = false
				return ls, fmt.Errorf("log-lines line %d: %w", i+1, errSyntax)
			}
			l.Text = text
		default:
			st.has = false
			return ls, fmt.Errorf("log-lines line %d: %w", i+1, errSyntax)
		}
		first = false
		st.prev = append(st.prev[:0], l.Text...)
		st.next = l.Offset + int64(len(l.Text)) + 1
	}
	if derived != nil {
		if err := decDerived(st, derived, ls.Lines); err != nil {
			return ls, err
		}
	}
	return ls, nil
}

// decLine reads a line element in a string or object form (as v1 writes
// them); next is its implied offset.
func decLine(e []byte, next int64) (int64, []byte, error) {
	if e[0] == '"' {
		s, ok := parseString(e)
		if !ok {
			return 0, nil, errSyntax
		}
		return next, []byte(s), nil
	}
	var o lineJSON
	if err := json.Unmarshal(e, &o); err != nil || (o.T == nil) == (o.B == nil) {
		return 0, nil, errSyntax
	}
	if o.O != nil {
		next = *o.O
	}
	if o.T != nil {
		return next, []byte(*o.T), nil
	}
	return next, o.B, nil
}

// applyDelta rebuilds a line from st.prev and the delta e:
// [run index, "digits", ...] with increasing run indices.
func applyDelta(st *logDecState, e []byte) ([]byte, bool) {
	var arr [16][]byte
	el, err := splitArray(e, arr[:0])
	if err != nil || len(el)%2 != 0 {
		return nil, false
	}
	runs := digitRuns(st.prev, st.runs[0][:0])
	st.runs[0] = runs
	out := make([]byte, 0, len(st.prev)+8)
	pos, last := 0, -1
	for k := 0; k < len(el); k += 2 {
		r, ok := parseInt(el[k])
		d, ok2 := parseString(el[k+1])
		if !ok || !ok2 || r <= int64(last) || r >= int64(len(runs)/2) || d == "" || !allDigits(d) {
			return nil, false
		}
		last = int(r)
		out = append(out, st.prev[pos:runs[2*r]]...)
		out = append(out, d...)
		pos = runs[2*r+1]
	}
	return append(out, st.prev[pos:]...), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// decDerived decodes the derived items b of lines into st.derived.
func decDerived(st *logDecState, b []byte, lines []event.LogLine) error {
	el, err := splitArray(b, nil)
	if err != nil {
		return fmt.Errorf("log-lines derived: %w", errSyntax)
	}
	line := func(e []byte) ([]byte, bool) {
		j, ok := parseInt(e)
		if !ok || j < 0 || j >= int64(len(lines)) {
			return nil, false
		}
		return lines[j].Text, true
	}
	bad := func(what string) error { return fmt.Errorf("log-lines derived %s: %w", what, errSyntax) }
	for i := 0; i < len(el); i++ {
		e := el[i]
		switch e[0] {
		case '[':
			p, err := decRate(nil, time.Time{}, e)
			if err != nil {
				return err
			}
			st.derived = append(st.derived, p)
		case '"':
			kind, ok := parseString(e)
			if !ok || i+1 >= len(el) {
				return bad("kind")
			}
			i++
			d := el[i]
			switch kind {
			case "throughput":
				p, err := decThroughput(nil, time.Time{}, d)
				if err != nil {
					return bad(kind)
				}
				st.derived = append(st.derived, p)
			case "prefill":
				if d[0] != '{' {
					l, ok := line(d)
					if !ok {
						return bad(kind)
					}
					p, ok := serverlog.ParseSGLangPrefill(l)
					if !ok {
						return fmt.Errorf("log-lines derived prefill: its line is not a prefill line")
					}
					st.derived = append(st.derived, p)
					continue
				}
				p, err := decPrefill(nil, time.Time{}, d)
				if err != nil {
					return bad(kind)
				}
				st.derived = append(st.derived, p)
			default:
				// A kind a newer writer puts on a log line: skipped here,
				// counted by the index (derivedKinds).
			}
		default:
			l, ok := line(e)
			if !ok {
				return bad("reference")
			}
			p, ok := parseThroughput(l)
			if !ok {
				return fmt.Errorf("log-lines derived throughput: its line is not a throughput line")
			}
			st.derived = append(st.derived, p)
		}
	}
	return nil
}

// derivedKinds returns the kinds of the derived items of v2 log-lines
// data (split, flags first) and, for tok/s points, their index aux bits;
// nil when it carries none. Items of kinds it does not know (a newer
// writer's) are left out and passed to unknown. It reads only what the
// index needs.
func derivedKinds(el [][]byte, kinds []event.Kind, aux []uint64, unknown func(name []byte)) ([]event.Kind, []uint64, bool) {
	flags, ok := parseInt(el[0])
	if !ok || flags&logFlagDerived == 0 || len(el) < 2 {
		return kinds, aux, ok
	}
	items, err := splitArray(el[len(el)-1], nil)
	if err != nil {
		return kinds, aux, false
	}
	for i := 0; i < len(items); i++ {
		e := items[i]
		switch e[0] {
		case '[':
			var a uint64
			if p, err := decRate(nil, time.Time{}, e); err == nil {
				r := p.(event.TokRate)
				if r.Dropped {
					a |= rateDropped
				}
				if !isFinite(r.TokPerSec) {
					a |= rateNotFinite
				}
			}
			kinds, aux = append(kinds, event.KindTokRate), append(aux, a)
		case '"':
			switch string(e) {
			case `"throughput"`:
				kinds = append(kinds, event.KindThroughput)
			case `"prefill"`:
				kinds = append(kinds, event.KindPrefill)
			default:
				// A newer writer's: not an entry (decDerived skips it too).
				if unknown != nil {
					unknown(e)
				}
				i++
				continue
			}
			aux = append(aux, 0)
			i++
		default:
			kinds, aux = append(kinds, event.KindThroughput), append(aux, 0)
		}
	}
	return kinds, aux, true
}
