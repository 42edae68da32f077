package gpu

import (
	"bytes"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Cell parsing for nvidia-smi --query-gpu CSV (driver ≥ 450). Cells are
// separated by ", " and never quoted; every non-value is one of a handful of
// literal tokens, kept as a Status so that it never turns into 0.

// nextCell returns the first ", "-separated cell of line, trimmed, and the
// rest after the separator. ok is false when line held no more cells.
func nextCell(line []byte) (cell, rest []byte, more bool) {
	off := 0
	for {
		i := bytes.IndexByte(line[off:], ',')
		if i < 0 {
			return trimCell(line), nil, false
		}
		i += off
		if i+1 < len(line) && line[i+1] == ' ' {
			return trimCell(line[:i]), line[i+2:], true
		}
		if i+1 == len(line) {
			// "…, x, " with its trailing space lost: the last cell is empty.
			return trimCell(line[:i]), line[i+1:], true
		}
		// A comma not followed by a space belongs to the cell.
		off = i + 1
	}
}

// splitCells returns the ", "-separated cells of line, trimmed, appended to
// dst[:0].
func splitCells(dst [][]byte, line []byte) [][]byte {
	dst = dst[:0]
	for {
		c, rest, more := nextCell(line)
		dst = append(dst, c)
		if !more {
			return dst
		}
		line = rest
	}
}

func trimCell(c []byte) []byte {
	for len(c) > 0 && (c[0] == ' ' || c[0] == '\t') {
		c = c[1:]
	}
	for len(c) > 0 && (c[len(c)-1] == ' ' || c[len(c)-1] == '\t' || c[len(c)-1] == '\r') {
		c = c[:len(c)-1]
	}
	return c
}

// Literal non-value tokens, as nvidia-smi prints them.
const (
	tokNA          = "[N/A]"
	tokNABare      = "N/A"
	tokNotSup      = "[Not Supported]"
	tokUnknownErr  = "[Unknown Error]"
	tokLost        = "[GPU is lost]"
	tokErr         = "ERR!"
	tokDeprecated  = "[Requested functionality has been deprecated]"
	maxRawTokenLen = 120
)

// token classifies a non-value cell. It returns OK (and "") when c is not a
// token. The returned string is a constant for the known tokens, so the
// common case does not allocate.
func token(c []byte) (event.CellStatus, string) {
	if len(c) == 0 {
		return event.CellEmpty, ""
	}
	switch string(c) {
	case tokNA:
		return event.CellNA, tokNA
	case tokNABare:
		return event.CellNA, tokNABare
	case tokNotSup:
		return event.CellNotSupported, tokNotSup
	case tokUnknownErr:
		return event.CellUnknownError, tokUnknownErr
	case tokLost:
		return event.CellLost, tokLost
	case tokErr:
		return event.CellErr, tokErr
	case tokDeprecated:
		return event.CellDeprecated, tokDeprecated
	}
	if c[0] == '[' && c[len(c)-1] == ']' {
		return event.CellOther, cleanText(c, maxRawTokenLen)
	}
	return event.CellOK, ""
}

// pow10 holds the exact powers of ten a float64 can represent.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDecimal parses -?digits(.digits)? exactly as strconv.ParseFloat
// would, without allocating: a mantissa below 2^53 divided by an exact power
// of ten is correctly rounded (Clinger's fast path). Longer numbers fall
// back to strconv.
func parseDecimal(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i = 1
	}
	var mant uint64
	digits, frac := 0, 0
	dot := false
	start := i
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			if digits < 19 {
				mant = mant*10 + uint64(c-'0')
			}
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	// At least one digit on each side of the dot ("5", "5.0"; not ".5", "5.").
	if digits == 0 || b[start] == '.' || b[len(b)-1] == '.' {
		return 0, false
	}
	if digits > 15 || frac >= len(pow10) {
		v, err := strconv.ParseFloat(string(b), 64)
		if err != nil || math.IsInf(v, 0) {
			return 0, false
		}
		return v, true
	}
	v := float64(mant) / pow10[frac]
	if neg {
		v = -v
	}
	return v, true
}

// splitUnit splits "123.00 W" into "123.00" and "W". A cell without a space
// has no unit.
func splitUnit(c []byte) (num, unit []byte) {
	i := bytes.LastIndexByte(c, ' ')
	if i < 0 {
		return c, nil
	}
	return bytes.TrimRight(c[:i], " "), c[i+1:]
}

// reading parses a numeric cell: a token, a number with or without the
// field's unit ("53 %", "53"), or Invalid with the cell as Raw.
func reading(c []byte, unit string) event.Reading {
	if st, raw := token(c); st != event.CellOK {
		return event.Reading{Status: st, Raw: raw}
	}
	num, u := splitUnit(c)
	if u == nil || (unit != "" && string(u) == unit) {
		if v, ok := parseDecimal(num); ok {
			return event.Reading{Value: v}
		}
	}
	return event.Reading{Status: event.CellInvalid, Raw: cleanText(c, maxRawTokenLen)}
}

// mask parses a 0x-prefixed hex bitmask ("0x0000000000000001").
func mask(c []byte) event.ClockEvents {
	if st, raw := token(c); st != event.CellOK {
		return event.ClockEvents{Status: st, Raw: raw}
	}
	if len(c) > 2 && len(c) <= 18 && c[0] == '0' && (c[1] == 'x' || c[1] == 'X') {
		var m uint64
		ok := true
		for _, d := range c[2:] {
			switch {
			case d >= '0' && d <= '9':
				m = m<<4 | uint64(d-'0')
			case d >= 'a' && d <= 'f':
				m = m<<4 | uint64(d-'a'+10)
			case d >= 'A' && d <= 'F':
				m = m<<4 | uint64(d-'A'+10)
			default:
				ok = false
			}
		}
		if ok {
			return event.ClockEvents{Mask: event.ClockEventReason(m)}
		}
	}
	return event.ClockEvents{Status: event.CellInvalid, Raw: cleanText(c, maxRawTokenLen)}
}

// parseIndex parses a GPU index: 1 to 4 decimal digits.
func parseIndex(c []byte) (int, bool) {
	if len(c) == 0 || len(c) > 4 {
		return 0, false
	}
	n := 0
	for _, d := range c {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int(d-'0')
	}
	return n, true
}

// plainASCII reports whether c holds only printable ASCII, the common case
// that needs no sanitising.
func plainASCII(c []byte) bool {
	for _, b := range c {
		if b < 0x20 || b >= 0x7f {
			return false
		}
	}
	return true
}

// cleanText returns c as a string that is safe to print on a terminal:
// C0/C1 controls, DEL, bidi overrides and invalid UTF-8 become U+FFFD, and
// the result is cut to at most max bytes (at a rune boundary).
func cleanText(c []byte, max int) string {
	if plainASCII(c) {
		if len(c) > max {
			c = c[:max]
		}
		return string(c)
	}
	var sb strings.Builder
	for len(c) > 0 && sb.Len() < max {
		r, n := utf8.DecodeRune(c)
		if n == 1 && r == utf8.RuneError || unsafeRune(r) {
			r = utf8.RuneError
		}
		if sb.Len()+utf8.RuneLen(r) > max {
			break
		}
		sb.WriteRune(r)
		c = c[n:]
	}
	return sb.String()
}

// safeText reports whether c can be printed as is (see cleanText).
func safeText(c []byte) bool {
	if plainASCII(c) {
		return true
	}
	for len(c) > 0 {
		r, n := utf8.DecodeRune(c)
		if n == 1 && r == utf8.RuneError || unsafeRune(r) {
			return false
		}
		c = c[n:]
	}
	return true
}

// unsafeRune reports a rune a terminal would act on instead of printing.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true // bidi embeddings, overrides, isolates and marks
	}
	return false
}

// maxTextLen bounds a Text cell; nvidia-smi's longest (names, UUIDs) are
// under 100 bytes.
const maxTextLen = 256
