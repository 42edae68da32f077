package config

import (
	"path"
	"strings"
)

// shells are the programs whose -c argument is a script they evaluate:
// a placeholder value inside that script must be quoted for it, or
// "sh -c 'echo {model}'" with --model '$(touch /tmp/x)' would run the
// command substitution.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true, "ksh": true, "mksh": true, "yash": true}

// scriptWords returns the indices of the words of a template's argv that a
// shell evaluates as a script: the first non-option word after a shell
// (by basename: sh, bash, dash, ash, zsh, ksh, mksh, yash) given an option
// with c among its letters ("-c", "-ec", "-lc", "-e -c"). Nothing else is
// evaluated by a shell; python -c and the like are not shell code.
func scriptWords(words []string) map[int]bool {
	var out map[int]bool
	for i := 0; i < len(words); i++ {
		if !shells[path.Base(words[i])] {
			continue
		}
		c := false
		j := i + 1
		for ; j < len(words) && strings.HasPrefix(words[j], "-") && words[j] != "-" && words[j] != "--"; j++ {
			if w := words[j]; !strings.HasPrefix(w, "--") && strings.ContainsRune(w[1:], 'c') {
				c = true
			}
		}
		if j < len(words) && words[j] == "--" {
			j++
		}
		if c && j < len(words) {
			if out == nil {
				out = map[int]bool{}
			}
			out[j] = true
			i = j
		}
	}
	return out
}

// shellQuoting is the POSIX quoting context at a point of a script.
type shellQuoting uint8

const (
	unquoted shellQuoting = iota
	inSingle              // inside '…': nothing is special but '
	inDouble              // inside "…": $ ` " \ are special
)

// quoteIn returns v written so that a POSIX shell reads it back as the
// literal text v at a point of its script in context q: unquoted, v in
// single quotes; inside single quotes, v with each of its quotes written
// as close-quote, backslash-quote, open-quote; inside double quotes, a
// backslash before each $ ` " \.
func quoteIn(q shellQuoting, v string) string {
	switch q {
	case inSingle:
		return strings.ReplaceAll(v, "'", `'\''`)
	case inDouble:
		var b strings.Builder
		for _, r := range v {
			if strings.ContainsRune("$`\"\\", r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// scanQuoting returns the quoting context after the literal script text s,
// starting in context q (POSIX rules: a backslash outside single quotes
// escapes the next byte; ' and " open and close their quotes).
func scanQuoting(q shellQuoting, s string) shellQuoting {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case q == inSingle:
			if c == '\'' {
				q = unquoted
			}
		case c == '\\':
			i++ // the escaped byte is literal
		case q == inDouble:
			if c == '"' {
				q = unquoted
			}
		case c == '\'':
			q = inSingle
		case c == '"':
			q = inDouble
		}
	}
	return q
}
