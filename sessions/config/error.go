package config

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem with a configuration: a TOML syntax error, an unknown
// key, a value of the wrong type, or a semantic error (an unknown preset, a
// bad environment variable name, a missing placeholder, an extends cycle).
// Line and Col are 1-based; zero means unknown (Col is usually only known for
// syntax and type errors). Key is the dotted TOML key path of the offending
// key, e.g. "presets.sglang-fp8.command".
type Error struct {
	File string // the name given to Parse (the path for Load); "" for built-ins
	Line int
	Col  int
	Key  string
	Msg  string
}

// Error formats e as "file:line:col: key: msg", leaving out the parts that
// are zero or empty.
func (e *Error) Error() string {
	var b strings.Builder
	pos := e.File
	if e.Line > 0 {
		if pos != "" {
			pos += ":"
		}
		pos += strconv.Itoa(e.Line)
		if e.Col > 0 {
			pos += ":" + strconv.Itoa(e.Col)
		}
	}
	if pos != "" {
		b.WriteString(pos)
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// joinSorted returns nil for no problems, else an errors.Join of them sorted
// by position, so that printing the error lists one problem per line in file
// order.
func joinSorted(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Key, b.Key), cmp.Compare(a.Msg, b.Msg))
	})
	errs = slices.CompactFunc(errs, func(a, b *Error) bool { return *a == *b })
	joined := make([]error, len(errs))
	for i, e := range errs {
		joined[i] = e
	}
	return errors.Join(joined...)
}

// keyString writes a key path the way TOML would: dotted, with parts that
// are not bare keys quoted.
func keyString(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		if isBareKey(p) {
			b.WriteString(p)
		} else {
			b.WriteString(strconv.Quote(p))
		}
	}
	return b.String()
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
