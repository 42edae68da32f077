// Package jsonappend appends JSON strings and numbers to a byte slice,
// byte for byte as encoding/json writes them, without reflection and
// without allocating beyond the slice's growth.
//
// It exists for flightdeck's measured hot paths, where encoding/json's
// reflection costs what a stated goal cannot spare: the JSON Lines of
// `flightdeck parse log` (probes/serverlog) and `flightdeck parse gpu`
// (probes/gpu), and the session journal's writer (sessions/journal); see
// docs/performance.md. Everything else uses encoding/json.
//
// What "as encoding/json writes them" means:
//
//   - String is json.Encoder's encoding of a string with SetEscapeHTML(false):
//     '"' and '\\' escaped, control characters as \b, \f, \n, \r, \t or
//     \u00XX, U+2028 and U+2029 as \u2028 and \u2029, each byte that is not
//     valid UTF-8 as \ufffd, everything else (<, >, & included) as is.
//   - Float is json.Marshal's encoding of a finite float64: the shortest
//     decimal that reads back as the value, without an exponent when its
//     magnitude is in [1e-6, 1e21) (or 0), else in exponent form ("1e-7",
//     "1e+21"). JSON has no infinities or NaN, and encoding/json refuses
//     them; Float writes them as the strings "inf", "-inf" and "nan", the
//     convention of flightdeck's outputs.
//
// FuzzString and FuzzFloat check both against encoding/json.
//
// The package imports the standard library only, so that every layer of
// flightdeck (remote, probes, sessions) may use it.
package jsonappend

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// plain marks the bytes that String writes as they are and that need no
// UTF-8 decoding: printable ASCII and DEL, other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// String appends s as a JSON string, quotes included, as encoding/json's
// Encoder writes it with SetEscapeHTML(false) (see the package
// documentation). It never fails: invalid UTF-8 becomes \ufffd.
func String[S ~string | ~[]byte](b []byte, s S) []byte {
	i := 0
	for i < len(s) && plain[s[i]] {
		i++
	}
	b = append(b, '"')
	if i == len(s) {
		b = append(b, s...)
		return append(b, '"')
	}
	return appendEscaped(b, s, i)
}

// appendEscaped appends the rest of String's output for s, whose bytes
// before i are plain; b already holds the opening quote.
func appendEscaped[S ~string | ~[]byte](b []byte, s S, i int) []byte {
	start := 0
	for i < len(s) {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		// A short conversion: on the stack for a []byte, free for a string.
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Float appends v as a JSON number, as json.Marshal writes a float64 (see
// the package documentation); an infinity or NaN as the JSON string
// "inf", "-inf" or "nan".
func Float(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, `"inf"`...)
	case math.IsInf(v, -1):
		return append(b, `"-inf"`...)
	case math.IsNaN(v):
		return append(b, `"nan"`...)
	}
	// Fast paths, each writing what the general one below would: the
	// integers that readings mostly are, and the values servers print
	// (rates and fractions in hundredths).
	if v == math.Trunc(v) && math.Abs(v) < 1e15 && !(v == 0 && math.Signbit(v)) {
		return strconv.AppendInt(b, int64(v), 10)
	}
	if b, ok := appendHundredths(b, v); ok {
		return b
	}
	abs := math.Abs(v)
	if abs == 0 || abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	b = strconv.AppendFloat(b, v, 'e', -1, 64)
	// encoding/json writes e-07 as e-7.
	if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// appendHundredths writes v the way strconv.AppendFloat(b, v, 'f', -1, 64)
// does when v is a whole number of hundredths n/100 with n < 10^15 (and v
// not -0), as the servers print their rates and fractions ("178.86",
// "0.49"); ok is false for any other v. Such an n/100 reads back as v (v is
// the double nearest to it), and it is the shortest decimal that does: two
// different decimals of at most 15 significant digits never read back as
// the same double. Formatting it needs no shortest-digits search.
func appendHundredths(b []byte, v float64) ([]byte, bool) {
	if !(v >= 0 && v < 1e13) || math.Signbit(v) {
		return b, false
	}
	c := float64(int64(v*100 + 0.5)) // any candidate will do: the test below decides
	if c/100 != v {
		return b, false
	}
	n := uint64(c)
	b = strconv.AppendUint(b, n/100, 10)
	if f := n % 100; f != 0 {
		b = append(b, '.', byte('0'+f/10))
		if f%10 != 0 {
			b = append(b, byte('0'+f%10))
		}
	}
	return b, true
}
