package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// knownPlaceholders are the names a preset may use; Parse rejects others.
var knownPlaceholders = []string{"model", "tp", "port", "host", "draft_model"}

// Render returns the argv for launching p: its Command split with
// SplitWords, then each entry of p.Extra split the same way, with every
// {name} placeholder in those words replaced by vals[name]; then the words
// of extra, appended as they are (no splitting, no placeholders).
//
// vals holds the placeholder values: "model", "tp", "port", "host",
// "draft_model" (the bind address is "host"; the built-in presets use
// 127.0.0.1 and need no value for it). A value is substituted verbatim into
// its word: it is never split, quoted or shell-evaluated, so a value with
// blanks, quotes, $(…) or ; stays inside one argument. The one exception is
// the script of a shell's -c (sh -c 'echo model={model}'), which that shell
// evaluates: there the value is quoted for the quoting context it lands in
// (unquoted, '…' or "…"), so the shell still reads the literal value and
// never runs a $(…) in it. "{{" and "}}" are literal braces.
//
// A placeholder without a value (absent or "") is an error: an errors.Join
// of one *Error per such placeholder, naming it, the preset's key and, for a
// preset from a file, its file and line, e.g.
//
//	config.toml:12: presets.sglang-fp8.command: placeholder {model} has no value (set model in [defaults] or the host, or pass --model)
//
// The hint assumes the command line flags --model, --tp, --port, --host and
// --draft-model. A command or extra entry that SplitWords refuses, an
// unbalanced brace, or a value with a NUL byte is also reported as an *Error.
func (p Preset) Render(vals map[string]string, extra []string) ([]string, error) {
	var argv []string
	var errs []*Error
	missing := map[string]bool{}
	render := func(field, s string) {
		key := keyString("presets", p.Name, field)
		words, err := SplitWords(s)
		if err != nil {
			errs = append(errs, &Error{File: p.File, Line: p.Line, Key: key, Msg: err.Error()})
			return
		}
		scripts := scriptWords(words)
		for i, w := range words {
			out, err := expand(w, scripts[i], func(name string) (string, bool) {
				v := vals[name]
				if strings.IndexByte(v, 0) >= 0 {
					errs = append(errs, &Error{File: p.File, Line: p.Line, Key: key, Msg: fmt.Sprintf("the value of {%s} contains a NUL byte", name)})
					return "", false
				}
				if v == "" {
					if !missing[name] {
						missing[name] = true
						errs = append(errs, &Error{File: p.File, Line: p.Line, Key: key, Msg: fmt.Sprintf("placeholder {%s} has no value%s", name, valueHint(name))})
					}
					return "", false
				}
				return v, true
			})
			if err != nil {
				errs = append(errs, &Error{File: p.File, Line: p.Line, Key: key, Msg: err.Error()})
				return
			}
			argv = append(argv, out)
		}
	}
	render("command", p.Command)
	for _, e := range p.Extra {
		render("extra", e)
	}
	if len(errs) > 0 {
		// Keep the order in which the placeholders appear.
		joined := make([]error, len(errs))
		for i, e := range errs {
			joined[i] = e
		}
		return nil, errors.Join(joined...)
	}
	return append(argv, extra...), nil
}

// valueHint says where a placeholder's value can come from.
func valueHint(name string) string {
	flag := "--" + strings.ReplaceAll(name, "_", "-")
	switch name {
	case "model", "tp", "port", "draft_model":
		return fmt.Sprintf(" (set %s in [defaults] or the host, or pass %s; in the cockpit's launch form: %s)", name, flag, formField(name))
	case "host":
		return fmt.Sprintf(" (pass %s)", flag)
	}
	return ""
}

// expand replaces the placeholders in word with what value returns. A name
// for which value reports false is left out (the caller records the error).
// "{{" and "}}" are literal braces; a "{" without its "}", a lone "}" and an
// empty "{}" are errors. In a word a shell evaluates (script: the argument
// of sh -c), each value is quoted for the quoting context it lands in, so
// that the shell reads it as the literal text it is.
func expand(word string, script bool, value func(name string) (string, bool)) (string, error) {
	if !strings.ContainsAny(word, "{}") {
		return word, nil
	}
	var b strings.Builder
	q, scanned := unquoted, 0 // the script's quoting at b.Len() == scanned
	for i := 0; i < len(word); i++ {
		c := word[i]
		switch {
		case c == '{' && i+1 < len(word) && word[i+1] == '{':
			b.WriteByte('{')
			i++
		case c == '}' && i+1 < len(word) && word[i+1] == '}':
			b.WriteByte('}')
			i++
		case c == '}':
			return "", fmt.Errorf("lone } in %q (write }} for a literal brace)", word)
		case c == '{':
			end := strings.IndexByte(word[i+1:], '}')
			if end < 0 {
				return "", fmt.Errorf("{ without a closing } in %q (write {{ for a literal brace)", word)
			}
			name := word[i+1 : i+1+end]
			if name == "" {
				return "", fmt.Errorf("empty placeholder {} in %q (write {{}} for literal braces)", word)
			}
			if v, ok := value(name); ok {
				if script {
					q = scanQuoting(q, b.String()[scanned:])
					v = quoteIn(q, v)
				}
				b.WriteString(v)
				scanned = b.Len()
			}
			i += 1 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// checkTemplate splits s like Render does and returns why it cannot be
// rendered: a SplitWords error, a brace error, or a placeholder outside
// knownPlaceholders. It returns "" when s is fine.
func checkTemplate(s string) string {
	words, err := SplitWords(s)
	if err != nil {
		return err.Error()
	}
	var unknown string
	for _, w := range words {
		_, err := expand(w, false, func(name string) (string, bool) {
			if unknown == "" && !slices.Contains(knownPlaceholders, name) {
				unknown = name
			}
			return "", true
		})
		if err != nil {
			return err.Error()
		}
		if unknown != "" {
			return fmt.Sprintf("unknown placeholder {%s} (known: {%s}; write {{ and }} for literal braces)", unknown, strings.Join(knownPlaceholders, "}, {"))
		}
	}
	return ""
}

// formField names the cockpit launch form's field for a placeholder.
func formField(name string) string {
	if name == "draft_model" {
		return "draft"
	}
	return name
}
