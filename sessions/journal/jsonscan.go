package journal

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// The compact codecs' reading side: numbers, integers and strings read
// from the bytes of one element, and arrays split without decoding them
// (what Open's index and CatchUp need to stay fast). Writing is
// remote/jsonappend's.

var errSyntax = errors.New("malformed data")

// parseNum reads a JSON number, or one of the strings jsonappend.Float
// writes for non-finite values.
func parseNum(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if b[0] == '"' {
		switch string(b) {
		case `"inf"`:
			return math.Inf(1), true
		case `"-inf"`:
			return math.Inf(-1), true
		case `"nan"`:
			return math.NaN(), true
		}
		return 0, false
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}

// parseInt reads a JSON integer.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	if i == len(b) {
		return 0, false
	}
	var n int64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseString reads a JSON string. The common case, no escapes, costs one
// allocation.
func parseString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	plain := true
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(in), true
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", false
	}
	return s, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipValue returns the index just past the JSON value starting at b[i]
// (which is not a space). It checks brackets and strings, not scalars.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return i, errSyntax
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return len(b), errSyntax
	case '[', '{':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			case '"':
				k, err := skipValue(b, j)
				if err != nil {
					return k, err
				}
				j = k - 1
			}
		}
		return len(b), errSyntax
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != ']' && b[j] != '}' && !isSpace(b[j]) {
		j++
	}
	if j == i {
		return j, errSyntax
	}
	return j, nil
}

// splitArray appends the elements of the JSON array b to out.
func splitArray(b []byte, out [][]byte) ([][]byte, error) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i >= len(b) || b[i] != '[' {
		return out, errSyntax
	}
	i++
	first := true
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return out, errSyntax
		}
		if b[i] == ']' {
			i++
			break
		}
		if !first {
			if b[i] != ',' {
				return out, errSyntax
			}
			i++
			for i < len(b) && isSpace(b[i]) {
				i++
			}
		}
		j, err := skipValue(b, i)
		if err != nil {
			return out, err
		}
		out = append(out, b[i:j])
		i, first = j, false
	}
	for ; i < len(b); i++ {
		if !isSpace(b[i]) {
			return out, errSyntax
		}
	}
	return out, nil
}
