package serverlog

import (
	"slices"
)

// The one-pass form of appendOwnDecodeJSON for the decode lines SGLang
// prints most: the prefix "[YYYY-MM-DD HH:MM:SS] " or
// "[YYYY-MM-DD HH:MM:SS TPn] " and the 2025 layout with numbers in their
// plain form. It reads what decodeLayout reads (the same checks, in the
// same places) and writes appendThroughput's record from the numbers'
// text; a line it is not sure of (another prefix, a number with a leading
// zero, a value the copy rule does not cover) is left to
// appendOwnDecodeJSON, so that it only has to be right about the lines
// it takes.

// numSpan is a number's text in a line: b[start:end].
type numSpan struct{ start, end int }

// digitsAt returns the end of the run of ASCII digits at b[i:].
func digitsAt(b []byte, i int) int {
	for i < len(b) && b[i]-'0' <= 9 {
		i++
	}
	return i
}

// spanInt reads what layoutInt reads, 1 to 18 digits and ", ", at b[i:],
// when the digits are written without a leading zero; next is after the
// ", ".
func spanInt(b []byte, i int) (s numSpan, next int, ok bool) {
	j := digitsAt(b, i)
	if j == i || j-i > 18 || (b[i] == '0' && j-i > 1) || j+1 >= len(b) || b[j] != ',' || b[j+1] != ' ' {
		return s, 0, false
	}
	return numSpan{i, j}, j + 2, true
}

// spanDecimal reads what layoutDecimal reads at b[i:] (with rate, the
// '.' is required) when the number's text is what jsonappend.Float writes
// once trailing fraction zeros (and a bare point) are dropped: no leading
// zero before other integer digits, not below 10^-6 unless 0, and, with
// small, at most 6 integer and 9 fraction digits (round9 is then exact).
// s is the text to copy; m and frac give the value, decimal(m, frac).
func spanDecimal(b []byte, i int, rate, small bool) (s numSpan, m uint64, frac, next int, ok bool) {
	s, m, frac, j, ok := decimalAt(b, i, rate, small)
	if !ok || j+1 >= len(b) || b[j] != ',' || b[j+1] != ' ' {
		return s, 0, 0, 0, false
	}
	return s, m, frac, j + 2, true
}

// spanPercent is spanDecimal for a percentage, "12.50%, " (the general
// parsers cut the '%').
func spanPercent(b []byte, i int) (s numSpan, next int, ok bool) {
	s, _, _, j, ok := decimalAt(b, i, false, false)
	if !ok || j+2 >= len(b) || b[j] != '%' || b[j+1] != ',' || b[j+2] != ' ' {
		return s, 0, false
	}
	return s, j + 3, true
}

// decimalAt is spanDecimal up to the end of the number, j.
func decimalAt(b []byte, i int, rate, small bool) (s numSpan, m uint64, frac, j int, ok bool) {
	j = i
	for j < len(b) && b[j]-'0' <= 9 {
		m = m*10 + uint64(b[j]-'0')
		j++
	}
	ints := j - i
	if ints == 0 || (b[i] == '0' && ints > 1) {
		return s, 0, 0, 0, false
	}
	end := j // the text to copy ends here
	if j+1 < len(b) && b[j] == '.' && b[j+1]-'0' <= 9 {
		j++
		d := j
		lastNZ := -1
		for j < len(b) && b[j]-'0' <= 9 {
			if b[j] != '0' {
				lastNZ = j
			}
			m = m*10 + uint64(b[j]-'0')
			j++
		}
		frac = j - d
		if lastNZ >= 0 {
			end = lastNZ + 1
			// 0.000000d is below 10^-6: Float writes an exponent.
			if b[i] == '0' && ints == 1 && firstNonZero(b[d:j]) >= 6 {
				return s, 0, 0, 0, false
			}
		}
	} else if rate {
		return s, 0, 0, 0, false
	}
	if ints+frac > 15 || (small && (ints > 6 || frac > 9)) {
		return s, 0, 0, 0, false
	}
	return numSpan{i, end}, m, frac, j, true
}

func firstNonZero(b []byte) int {
	for k, c := range b {
		if c != '0' {
			return k
		}
	}
	return len(b)
}

// appendSpan appends b's text at s.
func appendSpan(dst, b []byte, s numSpan) []byte { return append(dst, b[s.start:s.end]...) }

// appendDecodeRecord is appendOwnDecodeJSON in one pass for the lines
// described above; ok is false, with dst unchanged, for any other line.
func appendDecodeRecord(dst []byte, an *analyzer, line []byte, own, lineNo int, p *tputPoint) ([]byte, bool) {
	rank, ok := simpleRank(line, own)
	if !ok {
		return dst, false
	}
	b := line[own:]
	if len(b) < 28 || string(b[:12]) != "Decode batch" || (b[12] != '.' && b[12] != ',') || b[13] != ' ' || string(b[14:28]) != "#running-req: " {
		return dst, false
	}
	b = b[14:]
	running, i, ok := spanInt(b, 14)
	if !ok || len(b) < i+8 || string(b[i:i+8]) != "#token: " {
		return dst, false
	}
	tokens, i, ok := spanInt(b, i+8)
	if !ok || len(b) < i+13 || string(b[i:i+13]) != "token usage: " {
		return dst, false
	}
	usage, _, _, i, ok := spanDecimal(b, i+13, false, true)
	if !ok {
		return dst, false
	}
	var alen, arate numSpan
	var am uint64
	var af int
	spec := len(b) >= i+12 && string(b[i:i+12]) == "accept len: "
	if spec {
		if alen, am, af, i, ok = spanDecimal(b, i+12, false, false); !ok || len(b) < i+13 || string(b[i:i+13]) != "accept rate: " {
			return dst, false
		}
		if arate, _, _, i, ok = spanDecimal(b, i+13, false, false); !ok {
			return dst, false
		}
	}
	graph := false
	switch {
	case len(b) >= i+18 && string(b[i:i+16]) == "cuda graph: True" && string(b[i+16:i+18]) == ", ":
		graph, i = true, i+18
	case len(b) >= i+19 && string(b[i:i+16]) == "cuda graph: Fals" && string(b[i+16:i+19]) == "e, ":
		i += 19
	default:
		return dst, false
	}
	if len(b) < i+26 || string(b[i:i+16]) != "gen throughput (" || string(b[i+16:i+26]) != "token/s): " {
		return dst, false
	}
	rate, tm, tf, i, ok := spanDecimal(b, i+26, true, false)
	if !ok || len(b) < i+12 || string(b[i:i+12]) != "#queue-req: " {
		return dst, false
	}
	queued, ok := lastInt(b, i+12)
	if !ok {
		return dst, false
	}

	dst = slices.Grow(dst, recRoom)
	n := len(dst)
	w, bx := dst[:n+recRoom], b[:cap(b)] // bx: the line and what follows it in the block
	n = putPad(w, n, &padTputHead)
	n = putSpan(w, n, bx, rate)
	if rank >= 0 {
		n = putPad(w, n, &rankPads[rank])
	}
	if spec {
		n = putSpan(w, putPad(w, n, &padAcceptLength), bx, alen)
		n = putSpan(w, putPad(w, n, &padAcceptRate), bx, arate)
	}
	n = putSpan(w, putPad(w, n, &padServerRunning), bx, running)
	n = putSpan(w, putPad(w, n, &padQueued), bx, queued)
	n = putSpan(w, putPad(w, n, &padTokens), bx, tokens)
	n = putSpan(w, putPad(w, n, &padTokenUsage), bx, usage)
	if graph {
		n = putPad(w, n, &padGraphTrueStamp)
	} else {
		n = putPad(w, n, &padGraphFalseStamp)
	}
	n = putStampLine(w, n, line, &an.lineEnd, lineNo)
	dst = w[:n]
	*p = tputPoint{tokS: decimal(tm, tf), stamp: an.intern(line[1:20]), line: lineNo, key: -1, hasAccept: spec, counts: rank <= 0}
	if spec {
		p.accept = decimal(am, af)
	}
	return dst, true
}

// appendPrefillRecord is appendDecodeRecord for a prefill line in the 2025
// layout (prefillLayout's checks: appendOwnPrefillJSON in one pass), or in
// v0.4.1's, which has "cache hit rate: P%, " after the cached tokens (the
// general parsers read it; the record has it in the same place).
func appendPrefillRecord(dst []byte, an *analyzer, line []byte, own, lineNo int) ([]byte, bool) {
	rank, ok := simpleRank(line, own)
	if !ok {
		return dst, false
	}
	b := line[own:]
	if len(b) < 25 || string(b[:13]) != "Prefill batch" || (b[13] != '.' && b[13] != ',') || b[14] != ' ' || string(b[15:25]) != "#new-seq: " {
		return dst, false
	}
	b = b[15:]
	seq, i, ok := spanInt(b, 10)
	if !ok || len(b) < i+12 || string(b[i:i+12]) != "#new-token: " {
		return dst, false
	}
	newTok, i, ok := spanInt(b, i+12)
	if !ok || len(b) < i+15 || string(b[i:i+15]) != "#cached-token: " {
		return dst, false
	}
	cached, i, ok := spanInt(b, i+15)
	if !ok {
		return dst, false
	}
	// v0.4.1 printed the cache hit rate here.
	var hit numSpan
	hasHit := len(b) >= i+16 && string(b[i:i+16]) == "cache hit rate: "
	if hasHit {
		if hit, i, ok = spanPercent(b, i+16); !ok {
			return dst, false
		}
	}
	if len(b) < i+13 || string(b[i:i+13]) != "token usage: " {
		return dst, false
	}
	usage, _, _, i, ok := spanDecimal(b, i+13, false, false)
	if !ok || len(b) < i+14 || string(b[i:i+14]) != "#running-req: " {
		return dst, false
	}
	running, i, ok := spanInt(b, i+14)
	if !ok || len(b) < i+12 || string(b[i:i+12]) != "#queue-req: " {
		return dst, false
	}
	queued, ok := lastInt(b, i+12)
	if !ok {
		return dst, false
	}
	dst = slices.Grow(dst, recRoom)
	n := len(dst)
	w, bx := dst[:n+recRoom], b[:cap(b)]
	n = putPad(w, n, &padPrefillHead)
	if rank >= 0 {
		n = putPad(w, n, &rankPads[rank])
	}
	n = putSpan(w, putPad(w, n, &padNewSeq), bx, seq)
	n = putSpan(w, putPad(w, n, &padNewToken), bx, newTok)
	n = putSpan(w, putPad(w, n, &padCachedToken), bx, cached)
	if hasHit {
		n = putSpan(w, putPad(w, n, &padCacheHitRate), bx, hit)
	}
	n = putSpan(w, putPad(w, n, &padTokenUsage), bx, usage)
	n = putSpan(w, putPad(w, n, &padRunning), bx, running)
	n = putSpan(w, putPad(w, n, &padQueued), bx, queued)
	n = putStampLine(w, putPad(w, n, &padStamp), line, &an.lineEnd, lineNo)
	return w[:n], true
}

// simpleRank returns the rank of the prefixes the one-pass records take:
// -1 for "[YYYY-MM-DD HH:MM:SS] " (no tag), n for
// "[YYYY-MM-DD HH:MM:SS TPn] " (the tag prefixRankStamp reads, TP0 to
// TP9); ok is false for any other prefix.
func simpleRank(line []byte, own int) (int, bool) {
	switch {
	case own == 22:
		return -1, true
	case own == 26 && string(line[20:23]) == " TP" && line[23]-'0' <= 9:
		return int(line[23] - '0'), true
	}
	return 0, false
}

// lastInt reads the line's last number, as decodeLayout and
// prefillLayout read it: 1 to 18 digits (here without a leading zero)
// that end the line, with or without ", ".
func lastInt(b []byte, i int) (numSpan, bool) {
	j := digitsAt(b, i)
	if j == i || j-i > 18 || (b[i] == '0' && j-i > 1) || !(j == len(b) || (j+2 == len(b) && b[j] == ',' && b[j+1] == ' ')) {
		return numSpan{}, false
	}
	return numSpan{i, j}, true
}
