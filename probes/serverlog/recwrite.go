package serverlog

import "strconv"

// Writing the one-pass records (appendDecodeRecord, appendPrefillRecord)
// with fixed-size moves. A record is a dozen short pieces: constant keys
// and the numbers' text. Appending each piece costs a call of memmove
// with a length known only at run time (a fifth of `parse log`'s CPU for a
// busy log, in perf); a move of a fixed 16 or 32 bytes compiles to two
// vector loads and stores. So every piece is written as a fixed-size
// move that may write past the piece, and the record's length advances by
// the piece's own length: the next piece, or the next record, overwrites
// the rest. The record is written into recRoom bytes of room, which holds
// the longest record these functions write (333 bytes) plus the widest
// move (32).

// recRoom is the room a one-pass record is written into.
const recRoom = 384

// pad32 is a constant piece of at most 32 bytes, zero-padded to 32.
type pad32 struct {
	b [32]byte
	n int // its length
}

func mkPad(s string) pad32 {
	var p pad32
	if len(s) > len(p.b) {
		panic("serverlog: record piece over 32 bytes: " + s)
	}
	p.n = copy(p.b[:], s)
	return p
}

// The constant pieces of the one-pass records, in their order.
var (
	padTputHead        = mkPad(`{"type":"throughput","tok_s":`)
	padAcceptLength    = mkPad(`,"accept_length":`)
	padAcceptRate      = mkPad(`,"accept_rate":`)
	padServerRunning   = mkPad(`,"server":"sglang","running":`)
	padQueued          = mkPad(`,"queued":`)
	padTokens          = mkPad(`,"tokens":`)
	padTokenUsage      = mkPad(`,"token_usage":`)
	padGraphTrueStamp  = mkPad(`,"cuda_graph":true,"stamp":"`)
	padGraphFalseStamp = mkPad(`,"cuda_graph":false,"stamp":"`)
	padPrefillHead     = mkPad(`{"type":"prefill"`)
	padNewSeq          = mkPad(`,"new_seq":`)
	padNewToken        = mkPad(`,"new_token":`)
	padCachedToken     = mkPad(`,"cached_token":`)
	padCacheHitRate    = mkPad(`,"cache_hit_rate_pct":`)
	padRunning         = mkPad(`,"running":`)
	padStamp           = mkPad(`,"stamp":"`)
	padLineKey         = mkPad(`","line":`)
	// rankPads[n] is the rank field of TPn (simpleRank).
	rankPads = func() (p [10]pad32) {
		for n := range p {
			p[n] = mkPad(`,"rank":"` + tpTags[n] + `"`)
		}
		return p
	}()
)

// putPad writes p at w[n:] and returns the end of its text; w has 32
// bytes from n.
func putPad(w []byte, n int, p *pad32) int {
	*(*[32]byte)(w[n:]) = p.b
	return n + p.n
}

// putSpan writes src[s.start:s.end] at w[n:] and returns the end: one
// 16-byte move when the span is at most 16 bytes and src has 16 bytes
// from its start (src is the line with what follows it in its block),
// else a copy. w has 32 bytes from n.
func putSpan(w []byte, n int, src []byte, s numSpan) int {
	if l := s.end - s.start; l <= 16 && s.start+16 <= len(src) {
		*(*[16]byte)(w[n:]) = *(*[16]byte)(src[s.start:])
		return n + l
	}
	return n + copy(w[n:], src[s.start:s.end])
}

// putStampLine writes the end of a one-pass record at w[n:]: the stamp
// of line (its bytes 1 to 19; a one-pass line is longer than 33 bytes),
// `","line":`, the line number lineNo and "}\n"; it returns the end.
func putStampLine(w []byte, n int, line []byte, e *recordEnd, lineNo int) int {
	*(*[32]byte)(w[n:]) = *(*[32]byte)(line[1:33])
	n = putPad(w, n+19, &padLineKey)
	e.set(lineNo)
	*(*[24]byte)(w[n:]) = e.buf
	return n + e.len
}

// recordEnd is the end of a one-pass record, a line number's digits and
// "}\n" in buf[:len], kept from record to record: the lines of a block
// come in order, so the next number is the last one plus a few, added to
// the digits (no division per record).
type recordEnd struct {
	n   int
	len int // 0 until set
	buf [24]byte
}

// set makes e the end of the record of line n.
func (e *recordEnd) set(n int) {
	d := n - e.n
	if e.len == 0 || e.n < 0 || d < 0 || d > 9 {
		k := len(strconv.AppendInt(e.buf[:0], int64(n), 10)) // at most 20 bytes
		e.buf[k], e.buf[k+1] = '}', '\n'
		e.n, e.len = n, k+2
		return
	}
	e.n = n
	i := e.len - 3 // the last digit
	v := e.buf[i] + byte(d)
	for v > '9' {
		e.buf[i] = v - 10
		if i == 0 {
			// One digit more: 999 + 1.
			copy(e.buf[1:], e.buf[:e.len])
			e.buf[0] = '1'
			e.len++
			return
		}
		i--
		v = e.buf[i] + 1
	}
	e.buf[i] = v
}

// text returns the end set last, valid until the next set.
func (e *recordEnd) text() []byte { return e.buf[:e.len] }
