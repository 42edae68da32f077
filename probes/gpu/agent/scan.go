package agent

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner reads one JSON line without reflection. Errors are sticky: after
// the first, every method returns zero values and err holds the first.
type scanner struct {
	b   []byte
	i   int
	err *SyntaxError
	buf []byte // string unescaping
}

func (s *scanner) reset(b []byte) {
	s.b, s.i, s.err = b, 0, nil
}

func (s *scanner) fail(msg string) {
	if s.err == nil {
		s.err = &SyntaxError{Offset: s.i, Msg: msg}
	}
	s.i = len(s.b)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) bool {
	if s.peek() != c || s.err != nil {
		s.fail("expected '" + string(c) + "'")
		return false
	}
	s.i++
	return true
}

// open consumes '{' or '['.
func (s *scanner) open(c byte) bool { return s.expect(c) }

// more reports whether the object or array being read has another member,
// consuming the ',' before it or the closing byte after the last. n counts
// the members read so far.
func (s *scanner) more(n *int, closing byte) bool {
	if s.err != nil {
		return false
	}
	c := s.peek()
	if c == closing {
		s.i++
		return false
	}
	if *n > 0 {
		if c != ',' {
			s.fail("expected ',' or '" + string(closing) + "'")
			return false
		}
		s.i++
	}
	*n++
	return true
}

// key reads a member's key and the colon after it. The key's bytes are
// returned as written (escapes are not decoded: every key of the protocol
// is plain ASCII, and an escaped one is merely unknown).
func (s *scanner) key() []byte {
	raw, _ := s.rawString()
	if !s.expect(':') {
		return nil
	}
	return raw
}

// rawString reads a string and returns its bytes between the quotes, and
// whether they are plain (no escapes, ASCII only).
func (s *scanner) rawString() (raw []byte, plain bool) {
	if s.peek() != '"' || s.err != nil {
		s.fail("expected a string")
		return nil, false
	}
	start := s.i + 1
	plain = true
	b := s.b
	for j := start; j < len(b); j++ {
		c := b[j]
		if strPlain[c] {
			continue
		}
		switch {
		case c == '"':
			s.i = j + 1
			return b[start:j], plain
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			s.i = j
			s.fail("control character in string")
			return nil, false
		default: // c >= utf8.RuneSelf
			plain = false
		}
	}
	s.i = len(s.b)
	s.fail("unterminated string")
	return nil, false
}

// strPlain marks the bytes a string holds as they are: printable ASCII
// other than '"' and '\\'.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// unescape decodes the contents of a JSON string into s.buf and returns
// it. Invalid UTF-8 and lone surrogates become U+FFFD, as encoding/json
// does.
func (s *scanner) unescape(raw []byte) []byte {
	out := s.buf[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, raw[i:i+n]...)
			}
			i += n
			continue
		}
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			s.fail("bad escape in string")
			return nil
		}
		e := raw[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw, i)
			if !ok {
				s.fail("bad \\u escape in string")
				return nil
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if x, ok := hex4(raw, i+2); ok {
						if d := utf16.DecodeRune(r, x); d != utf8.RuneError {
							r2 = d
							i += 6
						}
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			s.fail("bad escape in string")
			return nil
		}
	}
	s.buf = out
	return out
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number reads a JSON number and returns its bytes; intOnly refuses a
// fraction or exponent.
func (s *scanner) number(intOnly bool) []byte {
	s.ws()
	start := s.i
	b := s.b
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		s.fail("expected a number")
		return nil
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		if intOnly {
			s.i = i
			s.fail("expected an integer")
			return nil
		}
		if b[i] == '.' {
			i++
			d := i
			for i < len(b) && b[i] >= '0' && b[i] <= '9' {
				i++
			}
			if i == d {
				s.i = i
				s.fail("expected a digit after '.'")
				return nil
			}
		}
		if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
			i++
			if i < len(b) && (b[i] == '+' || b[i] == '-') {
				i++
			}
			d := i
			for i < len(b) && b[i] >= '0' && b[i] <= '9' {
				i++
			}
			if i == d {
				s.i = i
				s.fail("expected a digit in the exponent")
				return nil
			}
		}
	}
	s.i = i
	return b[start:i]
}

// int64 reads an integer that fits in int64.
func (s *scanner) int64() int64 {
	b := s.number(true)
	if s.err != nil {
		return 0
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n uint64
	for _, c := range b {
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			s.fail("integer out of range")
			return 0
		}
		n = n*10 + d
	}
	switch {
	case neg && n <= 1<<63:
		return int64(-n)
	case !neg && n < 1<<63:
		return int64(n)
	}
	s.fail("integer out of range")
	return 0
}

// uint64 reads a non-negative integer that fits in uint64.
func (s *scanner) uint64() uint64 {
	b := s.number(true)
	if s.err != nil {
		return 0
	}
	if b[0] == '-' {
		s.fail("expected a non-negative integer")
		return 0
	}
	var n uint64
	for _, c := range b {
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			s.fail("integer out of range")
			return 0
		}
		n = n*10 + d
	}
	return n
}

// int reads an integer that fits in int.
func (s *scanner) int() int {
	n := s.int64()
	if n < math.MinInt || n > math.MaxInt {
		s.fail("integer out of range")
		return 0
	}
	return int(n)
}

// pow10 holds the powers of ten a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float reads a number as strconv.ParseFloat would, without allocating for
// the common short decimals: a mantissa of at most 15 digits divided by an
// exact power of ten is correctly rounded (Clinger's fast path).
func (s *scanner) float() float64 {
	b := s.number(false)
	if s.err != nil {
		return 0
	}
	neg := b[0] == '-'
	d := b
	if neg {
		d = d[1:]
	}
	var mant uint64
	digits, frac := 0, 0
	dot := false
	for _, c := range d {
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
			if digits > 15 {
				return s.slowFloat(b)
			}
		case c == '.':
			dot = true
		default: // an exponent
			return s.slowFloat(b)
		}
	}
	v := float64(mant) / pow10[frac]
	if neg {
		v = -v
	}
	return v
}

func (s *scanner) slowFloat(b []byte) float64 {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		s.fail("number out of range")
		return 0
	}
	return v
}

// literal reads true, false or null and returns its first byte.
func (s *scanner) literal() byte {
	c := s.peek()
	var w string
	switch c {
	case 't':
		w = "true"
	case 'f':
		w = "false"
	case 'n':
		w = "null"
	default:
		s.fail("expected true, false or null")
		return 0
	}
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		s.fail("expected " + w)
		return 0
	}
	s.i += len(w)
	return c
}

func (s *scanner) bool() bool {
	switch s.literal() {
	case 't':
		return true
	case 'f':
		return false
	}
	s.fail("expected true or false")
	return false
}

// maxDepth bounds the nesting of a skipped value.
const maxDepth = 64

// skip reads and discards any JSON value (an unknown key's).
func (s *scanner) skip(depth int) {
	if depth > maxDepth {
		s.fail("value nested too deeply")
		return
	}
	switch c := s.peek(); {
	case c == '"':
		s.rawString()
	case c == '{':
		s.i++
		for n := 0; s.more(&n, '}'); {
			s.key()
			s.skip(depth + 1)
		}
	case c == '[':
		s.i++
		for n := 0; s.more(&n, ']'); {
			s.skip(depth + 1)
		}
	case c == '-' || c >= '0' && c <= '9':
		s.number(false)
	default:
		s.literal()
	}
}

// end checks that nothing but spaces follows the value.
func (s *scanner) end() {
	if s.peek() != 0 && s.err == nil {
		s.fail("unexpected data after the object")
	}
}
