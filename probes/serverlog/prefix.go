package serverlog

import (
	"bytes"
	"encoding/binary"
)

// SGLang's own line prefix, "[2025-10-22 10:27:57 TP0] ": recognised once
// per line (ownPrefixEnd) and used by the batch-line parsers to skip their
// keyword search, escape check and rank and stamp search.

// prefixRankStamp returns the interned rank tag, DP rank and timestamp of a
// batch line's prefix, as findRank, internRank and findStamp do. own says
// that prefix is the line's own prefix (see ownPrefixEnd); then
// "[2025-10-22 10:27:57] " and "[2025-10-22 10:27:57 TP3] " are read
// directly.
func prefixRankStamp(prefix []byte, own bool) (rank string, dp int, stamp []byte) {
	if own {
		// rest ends in "] "; "TP1".."TP9" and "TP10".."TP15" are what
		// internRank keeps as constants.
		switch rest := prefix[20:]; {
		case len(rest) == 2:
			return "", -1, prefix[1:20]
		case len(rest) == 6 && string(rest[:3]) == " TP" && isDigit(rest[3]):
			return tpTags[rest[3]-'0'], -1, prefix[1:20]
		case len(rest) == 7 && string(rest[:4]) == " TP1" && rest[4] >= '0' && rest[4] <= '5':
			return tpTags[10+rest[4]-'0'], -1, prefix[1:20]
		}
	}
	r, dp := findRank(prefix)
	if r != nil {
		rank = internRank(r)
	}
	return rank, dp, findStamp(prefix)
}

// Templates for isStamp: the separators of "dddd-dd-dd dd:dd:dd" and '0'
// in the digit places, as little-endian words over bytes 0–7, 8–15 and
// 11–18; the masks select the separator places.
const (
	stampTmpl0 = 0x2d30302d30303030 // "0000-00-"
	stampTmpl1 = 0x30303a3030203030 // "00 00:00"
	stampTmpl2 = 0x30303a30303a3030 // "00:00:00"
	stampSep0  = 0xff0000ff00000000
	stampSep1  = 0x0000ff0000ff0000
	stampSep2  = 0x0000ff0000ff0000
)

// isStamp reports whether b starts with a timestamp of the shape
// "dddd-dd-dd dd:dd:dd" (d a digit): matchShape(b[:19], ...), eight bytes
// at a time.
func isStamp(b []byte) bool {
	if len(b) < 19 {
		return false
	}
	return stampWord(binary.LittleEndian.Uint64(b), stampTmpl0, stampSep0) &&
		stampWord(binary.LittleEndian.Uint64(b[8:]), stampTmpl1, stampSep1) &&
		stampWord(binary.LittleEndian.Uint64(b[11:]), stampTmpl2, stampSep2)
}

// stampWord checks eight bytes against a template: the separator places
// equal, every other byte a digit. x^tmpl is 0–9 exactly for a digit; a
// byte under 10 plus 0x76 stays under 0x80, and a byte that overflows
// into the next one has its top bit set already.
func stampWord(w, tmpl, sep uint64) bool {
	x := w ^ tmpl
	return x&sep == 0 && ((x+0x7676767676767676)|x)&0x8080808080808080 == 0
}

// ownPrefixEnd returns the length of SGLang's own line prefix
// "[2025-10-22 10:27:57] " or "[2025-10-22 10:27:57 DP1 TP0] " at the start
// of line: '[', a timestamp, spaces, digits and capitals, "] ". It is 0
// when line does not start with one. Such a prefix holds no lower-case
// letter, '[' (but the first), '#' or ESC, which the parsers use: a
// keyword with a lower-case letter found right after it is its first
// occurrence, and it has no escape sequence (the '[' before four digits
// starts none).
func ownPrefixEnd(line []byte) int {
	if len(line) < 22 || line[0] != '[' || !isStamp(line[1:]) {
		return 0
	}
	// "] " and " TP3] ", the usual ends, directly.
	if line[20] == ']' && line[21] == ' ' {
		return 22
	}
	if len(line) >= 26 && string(line[20:23]) == " TP" && isDigit(line[23]) && line[24] == ']' && line[25] == ' ' {
		return 26
	}
	for j := 20; j < len(line)-1 && j < 40; j++ {
		switch c := line[j]; {
		case c == ']':
			if line[j+1] == ' ' {
				return j + 2
			}
			return 0
		case c != ' ' && !isDigit(c) && (c < 'A' || c > 'Z'):
			return 0
		}
	}
	return 0
}

// indexDecodeBatch is bytes.Index(line, kwDecodeBatch), checked first
// right after the line's own prefix (own from ownPrefixEnd).
func indexDecodeBatch(line []byte, own int) int {
	// A string literal, not kwDecodeBatch: see fastpath.go.
	if b := line[own:]; own > 0 && len(b) >= 12 && string(b[:12]) == "Decode batch" {
		return own
	}
	return bytes.Index(line, kwDecodeBatch)
}

// indexPrefillBatch is indexDecodeBatch for kwPrefillBatch.
func indexPrefillBatch(line []byte, own int) int {
	if b := line[own:]; own > 0 && len(b) >= 13 && string(b[:13]) == "Prefill batch" {
		return own
	}
	return bytes.Index(line, kwPrefillBatch)
}
