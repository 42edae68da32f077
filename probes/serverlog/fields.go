package serverlog

import (
	"bytes"
	"math"
	"strconv"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// This file holds the byte-level helpers every parser shares: ANSI
// cleaning, the "key: value, key: value" splitter, number parsing, and the
// rank / timestamp found in a line's prefix. None of them allocates.

// cleanBufSize is the stack buffer used to strip colour codes from a line
// before matching; longer coloured lines fall back to the heap.
const cleanBufSize = 1024

// clean returns line without ANSI escape sequences (raw ESC, ESC lost,
// CloudWatch "#033"), using buf when it is large enough. Lines without
// any are returned as they are: one scan, no copy.
func clean(line []byte, buf *[cleanBufSize]byte) []byte {
	if !sanitize.HasEscapes(line) {
		return line
	}
	return sanitize.AppendStripped(buf[:0], line)
}

// cleanFirst prepares a line whose keyword kw is at line[at:] for parsing:
// it strips escape sequences into buf when the line has a raw ESC anywhere
// or a damaged escape ("[32m", "#033[2m") before the keyword. Damaged
// escapes after the keyword are looked for only when the first parse fails
// (cleanAgain), so a plain line costs two short scans. ownPrefix says that
// line[:at] is the line's own SGLang prefix (ownPrefixEnd), which has no
// escapes. It returns the line to parse, the keyword's position in it (-1
// when stripping removed it) and whether it was cleaned.
func cleanFirst(line []byte, at int, kw []byte, buf *[cleanBufSize]byte, ownPrefix bool) ([]byte, int, bool) {
	if bytes.IndexByte(line, 0x1b) < 0 && (ownPrefix || !sanitize.HasEscapes(line[:at])) {
		return line, at, false
	}
	line = sanitize.AppendStripped(buf[:0], line)
	return line, bytes.Index(line, kw), true
}

// cleanAgain strips a line whose first parse failed or met an unreadable
// value, when it has damaged escapes; otherwise it returns -1 (no retry).
func cleanAgain(line, kw []byte, buf *[cleanBufSize]byte) ([]byte, int) {
	if !sanitize.HasEscapes(line) {
		return line, -1
	}
	line = sanitize.AppendStripped(buf[:0], line)
	return line, bytes.Index(line, kw)
}

// kvIter walks the "key: value" pieces of an SGLang batch line or a vLLM
// metrics line: pieces are separated by ", " and the key is what comes
// before the piece's last ": " (research notes §0.4).
type kvIter struct {
	rest []byte
}

// next returns the next piece's key and value; last reports that the piece
// ended the line (it was not followed by ", "), so a number in it may have
// been cut by a log shipper. ok is false at the end.
func (it *kvIter) next() (key, val []byte, last, ok bool) {
	for len(it.rest) > 0 {
		var piece []byte
		if i := indexCommaSpace(it.rest); i >= 0 {
			piece, it.rest = it.rest[:i], it.rest[i+2:]
		} else {
			piece, it.rest, last = it.rest, nil, true
		}
		j := lastColonSpace(piece)
		if j < 0 {
			continue // "#cache_miss" style noise or an empty piece
		}
		return piece[:j], trimValue(piece[j+2:]), last, true
	}
	return nil, nil, false, false
}

var commaSpace = []byte(", ")

// indexCommaSpace is bytes.Index(b, ", ") by way of IndexByte, which is
// cheaper for the comma-sparse pieces of a metrics line.
func indexCommaSpace(b []byte) int {
	for off := 0; ; {
		i := bytes.IndexByte(b[off:], ',')
		if i < 0 {
			return -1
		}
		off += i
		if off+1 < len(b) && b[off+1] == ' ' {
			return off
		}
		off++
	}
}

// lastColonSpace is bytes.LastIndex(piece, ": ") for short pieces, without
// Rabin-Karp.
func lastColonSpace(piece []byte) int {
	for j := len(piece) - 2; j >= 0; j-- {
		if piece[j] == ':' && piece[j+1] == ' ' {
			return j
		}
	}
	return -1
}

// trimValue strips surrounding spaces and a trailing ',', '.', '\r'
// (notes §0.4: values end in ", " or "." or have padding).
func trimValue(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 {
		switch v[len(v)-1] {
		case ' ', ',', '.', '\r', '\t':
			v = v[:len(v)-1]
			continue
		}
		break
	}
	return v
}

// pow10 holds the exactly representable powers of ten used by parseFloat.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// parseFloat parses a plain decimal number ("178.86", "0.07", "-1.5") as
// strconv.ParseFloat would, correctly rounded. The common case (≤ 15
// significant digits) is one exact integer division; anything else
// ("inf", exponents, long digit strings) goes to strconv. Trailing
// garbage is an error: the caller trims units first.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	i, neg := 0, false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		i++
	}
	var mant uint64
	digits, frac, sawDot := 0, 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
			if sawDot {
				frac++
			}
		case c == '.' && !sawDot:
			sawDot = true
		default:
			return slowFloat(b)
		}
	}
	if digits == 0 {
		return 0, false
	}
	if digits > 15 {
		return slowFloat(b)
	}
	// mant < 10^15 < 2^53 and 10^frac are exact, so one IEEE division
	// is correctly rounded (Clinger's fast path).
	f := float64(mant) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// slowFloat parses what the fast path does not; "inf", "nan" and
// overflowing values are refused, since no rate or count can be infinite
// (the one "inf" a tool prints, bench_serving's request rate, is handled
// where it is read).
func slowFloat(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// parseInt parses a non-negative decimal integer, allowing the thousands
// separators vLLM prints ("922,496").
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 24 {
		return 0, false
	}
	var n int64
	digits := 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + int64(c-'0')
			digits++
		case c == ',' && digits > 0:
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 18 {
		return 0, false
	}
	return n, true
}

// cutSuffix returns v without suffix and whether it was there.
func cutSuffix(v []byte, suffix string) ([]byte, bool) {
	if len(v) >= len(suffix) && string(v[len(v)-len(suffix):]) == suffix {
		return bytes.TrimRight(v[:len(v)-len(suffix)], " "), true
	}
	return v, false
}

// hasFraction reports whether a number was printed with a decimal part:
// SGLang prints rates with "%.2f" and vLLM with "%.1f", so a rate without
// one was cut short by a log shipper and is not trusted.
func hasFraction(v []byte) bool {
	i := bytes.IndexByte(v, '.')
	return i >= 0 && i < len(v)-1
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// findStamp returns the first timestamp in prefix: "2025-10-22 10:27:57"
// (SGLang, custom logging formats) or "05-19 10:13:11" (vLLM, no year).
// Fractional seconds are not part of the result.
func findStamp(prefix []byte) []byte {
	for i := 0; i+14 <= len(prefix); i++ {
		if !isDigit(prefix[i]) || (i > 0 && isDigit(prefix[i-1])) {
			continue
		}
		if i+19 <= len(prefix) && matchShape(prefix[i:i+19], "dddd-dd-dd dd:dd:dd") {
			return prefix[i : i+19]
		}
		if matchShape(prefix[i:i+14], "dd-dd dd:dd:dd") {
			return prefix[i : i+14]
		}
	}
	return nil
}

// matchShape matches b against shape, where 'd' is any digit and every
// other byte must be equal.
func matchShape(b []byte, shape string) bool {
	for i := 0; i < len(shape); i++ {
		if shape[i] == 'd' {
			if !isDigit(b[i]) {
				return false
			}
		} else if b[i] != shape[i] {
			return false
		}
	}
	return true
}

// findRank returns the rank tag in an SGLang line prefix: the rank tokens
// (TPn, DPn, EPn, PPn, ...: 2–4 capital letters and a number) of the first
// [...] group that has any, joined by single spaces. "[2025-10-22 10:27:57
// DP1 TP0]" gives "DP1 TP0"; the custom format "[DP3 TP3 EP3
// scheduler_metrics_mixin.py:222]" gives "DP3 TP3 EP3". dp is the DPn
// number, -1 when absent.
func findRank(prefix []byte) (rank []byte, dp int) {
	for {
		open := bytes.IndexByte(prefix, '[')
		if open < 0 {
			return nil, -1
		}
		prefix = prefix[open+1:]
		end := bytes.IndexByte(prefix, ']')
		if end < 0 {
			end = len(prefix)
		}
		group := prefix[:end]
		start, stop := -1, -1
		dp = -1
		for i := 0; i < len(group); {
			j := i
			for j < len(group) && group[j] != ' ' {
				j++
			}
			tok := group[i:j]
			if n, ok := rankToken(tok); ok {
				if start < 0 {
					start = i
				}
				stop = j
				if tok[0] == 'D' && tok[1] == 'P' {
					dp = n
				}
			} else if start >= 0 {
				break // rank tokens are contiguous
			}
			i = j + 1
		}
		if start >= 0 {
			return group[start:stop], dp
		}
		if end == len(prefix) {
			return nil, -1
		}
		prefix = prefix[end+1:]
	}
}

// rankToken reports whether tok looks like "TP0", "DP12", "EP3", "PP1",
// "ATTN0": 2–4 capital letters then 1–4 digits. It returns the number.
func rankToken(tok []byte) (int, bool) {
	letters := 0
	for letters < len(tok) && tok[letters] >= 'A' && tok[letters] <= 'Z' {
		letters++
	}
	if letters < 2 || letters > 4 || len(tok)-letters < 1 || len(tok)-letters > 4 {
		return 0, false
	}
	n := 0
	for _, c := range tok[letters:] {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// internRank returns rank as a string, without allocating for the common
// single tags TP0–TP15.
func internRank(rank []byte) string {
	if len(rank) >= 3 && len(rank) <= 4 && rank[0] == 'T' && rank[1] == 'P' {
		// "TP01" is not "TP1": the tag is kept as printed.
		if n, ok := rankToken(rank); ok && n < len(tpTags) && string(rank) == tpTags[n] {
			return tpTags[n]
		}
	}
	return string(rank)
}

var tpTags = [...]string{"TP0", "TP1", "TP2", "TP3", "TP4", "TP5", "TP6", "TP7",
	"TP8", "TP9", "TP10", "TP11", "TP12", "TP13", "TP14", "TP15"}

// processTag returns the vLLM multiprocess tag at the start of a prefix,
// without its pid: "(VllmWorker rank=7 pid=240)" gives "VllmWorker rank=7",
// "(EngineCore pid=104)" gives "EngineCore". nil when there is none.
func processTag(prefix []byte) []byte {
	open := bytes.IndexByte(prefix, '(')
	if open < 0 {
		return nil
	}
	rest := prefix[open+1:]
	end := bytes.IndexByte(rest, ')')
	if end < 0 {
		return nil
	}
	tag := rest[:end]
	pid := bytes.LastIndex(tag, []byte(" pid="))
	if pid < 0 {
		return nil
	}
	return tag[:pid]
}
