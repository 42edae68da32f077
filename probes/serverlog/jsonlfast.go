package serverlog

import (
	"strconv"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// WriteJSONL's fast path for the lines that make up most of a busy SGLang
// log: a decode or prefill line that ownDecodeLine / ownPrefillLine read
// (SGLang's own prefix and the 2025 layout) is written as its JSON record
// straight from the line's text. A number printed as a plain decimal of at
// most 15 digits is already what the JSON holds once its leading and
// trailing zeros go: the double nearest to it prints back as those digits
// (two decimals of at most 15 significant digits never share a double),
// so the text is copied instead of formatting the parsed value. What this
// writes is byte for byte what appendThroughput / appendPrefill write for
// the same line (TestFastJSONMatchesPayload, FuzzFastJSONMatchesPayload);
// a line it is unsure of goes the general way.

// tputPoint is what the idle marker needs of a decode line written by the
// fast path (the Aggregator's inputs), kept typed in the block: no
// interface value per line.
type tputPoint struct {
	tokS, accept float64
	stamp        string // interned
	line         int
	key          int  // DP rank, -1 when none
	hasAccept    bool // "accept len" was on the line
	counts       bool // the Aggregator reads it: a DP rank, TP0 or no rank tag
}

// appendOwnDecodeJSON appends the throughput record of line, which has
// SGLang's own prefix (own = ownPrefixEnd(line) > 0), and fills *p; ok is
// false, with dst unchanged, when line is not a decode line that
// ownDecodeLine reads or a number's text is not one that copies.
func appendOwnDecodeJSON(dst []byte, an *analyzer, line []byte, own, lineNo int, p *tputPoint) ([]byte, bool) {
	var t event.Throughput
	stamp, ok := ownDecodeLine(&t, line, own)
	if !ok {
		return dst, false
	}
	// The layout is known to be exactly decodeLayout's: the numbers are
	// found by walking it.
	b := line[own+14:]
	running, i := numText(b, 14)
	tokens, i := numText(b, i+2+8)
	usage, i := numText(b, i+2+13)
	var alen, arate []byte
	if t.Has&event.HasAcceptLength != 0 {
		alen, i = numText(b, i+2+12)
		arate, i = numText(b, i+2+13)
	}
	if t.CUDAGraph {
		i += 2 + 16
	} else {
		i += 2 + 17
	}
	rate, i := numText(b, i+2+26)
	queued, _ := numText(b, i+2+12)
	if !canonFloat(rate) || !canonFloat(usage) || !canonFloat(alen) || !canonFloat(arate) || round9(t.TokenUsage) != t.TokenUsage {
		return dst, false
	}
	n := len(dst)
	dst = append(dst, `{"type":"throughput","tok_s":`...)
	dst = appendCanon(dst, rate)
	dst = strField(dst, `,"rank":`, t.Rank)
	if alen != nil {
		dst = appendCanon(append(dst, `,"accept_length":`...), alen)
		dst = appendCanon(append(dst, `,"accept_rate":`...), arate)
	}
	dst = append(dst, `,"server":"sglang","running":`...)
	dst = appendCanon(dst, running)
	dst = appendCanon(append(dst, `,"queued":`...), queued)
	dst = appendCanon(append(dst, `,"tokens":`...), tokens)
	dst = appendCanon(append(dst, `,"token_usage":`...), usage)
	if t.CUDAGraph {
		dst = append(dst, `,"cuda_graph":true`...)
	} else {
		dst = append(dst, `,"cuda_graph":false`...)
	}
	dst, ok = appendStamp(dst, stamp)
	if !ok {
		return dst[:n], false
	}
	dst = strconv.AppendInt(append(dst, `,"line":`...), int64(lineNo), 10)
	dst = append(dst, "}\n"...)
	*p = tputPoint{
		tokS: t.TokPerSec, accept: t.AcceptLength, stamp: an.intern(stamp), line: lineNo,
		key: t.DP, hasAccept: t.Has&event.HasAcceptLength != 0, counts: t.DP >= 0 || isTP0OrNone(t.Rank),
	}
	return dst, true
}

// appendOwnPrefillJSON is appendOwnDecodeJSON for a prefill line that
// ownPrefillLine reads.
func appendOwnPrefillJSON(dst []byte, line []byte, own, lineNo int) ([]byte, bool) {
	var p event.Prefill
	stamp, ok := ownPrefillLine(&p, line, own)
	if !ok {
		return dst, false
	}
	b := line[own+15:]
	seq, i := numText(b, 10)
	newTok, i := numText(b, i+2+12)
	cached, i := numText(b, i+2+15)
	usage, i := numText(b, i+2+13)
	running, i := numText(b, i+2+14)
	queued, _ := numText(b, i+2+12)
	if !canonFloat(usage) {
		return dst, false
	}
	n := len(dst)
	dst = append(dst, `{"type":"prefill"`...)
	dst = strField(dst, `,"rank":`, p.Rank)
	dst = appendCanon(append(dst, `,"new_seq":`...), seq)
	dst = appendCanon(append(dst, `,"new_token":`...), newTok)
	dst = appendCanon(append(dst, `,"cached_token":`...), cached)
	dst = appendCanon(append(dst, `,"token_usage":`...), usage)
	dst = appendCanon(append(dst, `,"running":`...), running)
	dst = appendCanon(append(dst, `,"queued":`...), queued)
	dst, ok = appendStamp(dst, stamp)
	if !ok {
		return dst[:n], false
	}
	dst = strconv.AppendInt(append(dst, `,"line":`...), int64(lineNo), 10)
	return append(dst, "}\n"...), true
}

// appendStamp appends the stamp field; ok is false for a stamp that is
// not "YYYY-MM-DD HH:MM:SS" (which needs no escaping).
func appendStamp(dst, stamp []byte) ([]byte, bool) {
	if len(stamp) == 0 {
		return dst, true // strField omits an empty string
	}
	if len(stamp) != 19 || !isStamp(stamp) {
		return dst, false
	}
	dst = append(dst, `,"stamp":"`...)
	dst = append(dst, stamp...)
	return append(dst, '"'), true
}

// numText returns the number (digits and '.') at b[i:] and the position
// after it.
func numText(b []byte, i int) ([]byte, int) {
	j := i
	for j < len(b) && (b[j]-'0' <= 9 || b[j] == '.') {
		j++
	}
	return b[i:j], j
}

// canonFloat reports whether appendCanon writes what jsonappend.Float
// writes for the value of the decimal text v (digits, optionally '.' and
// digits, at most 15 digits, as layoutDecimal read it): true unless the
// value is below 10^-6 and not 0, which Float writes with an exponent.
// An absent number (nil) is fine.
func canonFloat(v []byte) bool {
	i := 0
	for i < len(v) && (v[i] == '0' || v[i] == '.') {
		i++
	}
	if i == len(v) {
		return true // 0
	}
	// The first non-zero digit is at i: below 10^-6 when it is more than
	// six places after the point, with nothing but zeros before it.
	for j := 0; j < i; j++ {
		if v[j] == '.' {
			return i-j <= 6
		}
	}
	return true
}

// appendCanon appends the decimal text v without its leading zeros (one
// is kept before the point) and, after a point, its trailing zeros and
// then the point when nothing is left after it: the shortest decimal that
// reads back as v's double, as strconv writes it.
func appendCanon(dst, v []byte) []byte {
	end := len(v)
	dot := -1
	for k := 0; k < end; k++ {
		if v[k] == '.' {
			dot = k
			break
		}
	}
	if dot >= 0 {
		for end > dot+1 && v[end-1] == '0' {
			end--
		}
		if end == dot+1 {
			end = dot
		}
	}
	ip := dot
	if ip < 0 {
		ip = end
	}
	start := 0
	for start < ip-1 && v[start] == '0' {
		start++
	}
	return append(dst, v[start:end]...)
}

// jsonFast is the worker's half of the fast path: it writes the record of
// a decode or prefill line with SGLang's own prefix into dst. kind is
// fastDecode (with *p filled), fastPrefill, or fastNone when the line goes
// the general way.
func jsonFast(dst []byte, an *analyzer, line []byte, own, lineNo int, p *tputPoint) ([]byte, uint8) {
	b := line[own:]
	if len(b) >= 12 && string(b[:12]) == "Decode batch" {
		if out, ok := appendDecodeRecord(dst, an, line, own, lineNo, p); ok {
			return out, fastDecode
		}
		if out, ok := appendOwnDecodeJSON(dst, an, line, own, lineNo, p); ok {
			return out, fastDecode
		}
	} else if len(b) >= 13 && string(b[:13]) == "Prefill batch" {
		if out, ok := appendPrefillRecord(dst, an, line, own, lineNo); ok {
			return out, fastPrefill
		}
		if out, ok := appendOwnPrefillJSON(dst, line, own, lineNo); ok {
			return out, fastPrefill
		}
	}
	return dst, fastNone
}

// Kinds of jsonFast.
const (
	fastNone uint8 = iota
	fastDecode
	fastPrefill
)
