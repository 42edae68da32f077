package sanitize

import "strings"

// All returns a sanitised copy of ss (String on each); nil for nil.
func All(ss []string) []string { return each(ss, String) }

// Names returns a copy of ss with Name applied to each; nil for nil.
func Names(ss []string) []string { return each(ss, Name) }

// each returns a copy of ss with f applied to each; nil for nil.
func each(ss []string, f func(string) string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// Lines are the non-empty lines of raw remote text (command output, an
// error), trimmed and sanitised, at most n of them (n <= 0: all).
func Lines(raw string, n int) []string {
	var out []string
	for _, l := range strings.FieldsFunc(raw, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if n > 0 && len(out) == n {
			break
		}
		out = append(out, String(l))
	}
	return out
}

// FirstLine is the first non-empty line of raw remote text, trimmed and
// sanitised; "" when there is none.
func FirstLine(raw string) string {
	if ls := Lines(raw, 1); len(ls) > 0 {
		return ls[0]
	}
	return ""
}
