package config

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// SplitError reports why SplitWords refused a string. Line and Col (1-based,
// Col in bytes) point into the string given to SplitWords.
type SplitError struct {
	Line int
	Col  int
	Msg  string
}

// Error formats e as "column C: msg", or "line L, column C: msg" when the
// problem is past the first line.
func (e *SplitError) Error() string {
	if e.Line > 1 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("column %d: %s", e.Col, e.Msg)
}

// splitPrefix is parsed in front of the input so that the whole input is in
// argument position: a leading "if", "!", "{", "time" or "A=b" is then a
// plain word, as it is in an argv, instead of shell grammar.
const splitPrefix = "x "

// SplitWords splits a command line (a preset command, the user's "extra
// flags" field) into words with POSIX shell rules for quoting: blanks
// separate words; single quotes keep everything literally; double quotes
// keep everything but let a backslash escape $ ` " \ and newline; outside
// quotes a backslash escapes the next character and backslash-newline joins
// lines. Nothing is expanded: *, ?, [, {a,b} and ~ stay literal text.
//
// The result is an argv, not a shell script, so anything a shell would have
// to evaluate is refused with a *SplitError naming its column: $ (variables,
// $(…), $((…)), $'…', also inside double quotes), backticks, ; & | && ||,
// redirections < > and here-documents, ( ), a # that starts a comment, and a
// newline outside quotes. Each is accepted inside single quotes. A NUL
// byte, which no argument can hold, is refused anywhere. An empty or blank
// string gives no words and no error.
func SplitWords(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		line := 1 + strings.Count(s[:i], "\n")
		return nil, &SplitError{Line: line, Col: i - strings.LastIndexByte(s[:i], '\n'), Msg: "a NUL byte cannot be in an argument"}
	}
	p := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash))
	f, err := p.Parse(strings.NewReader(splitPrefix+s), "")
	if err != nil {
		return nil, splitParseError(s, err)
	}
	var bad offenses
	bad.file(f)
	if bad.found {
		return nil, bad.err()
	}
	call := f.Stmts[0].Cmd.(*syntax.CallExpr) // bad.file checked it
	words := make([]string, 0, len(call.Args)-1)
	for _, w := range call.Args[1:] {
		words = append(words, wordString(w))
	}
	return words, nil
}

// needsShell is the message for a piece of shell syntax found outside
// single quotes.
func needsShell(what string) string {
	return what + " needs a shell, but the command is an argv, not a shell script (put it in single quotes to pass it literally)"
}

// splitParseError turns a parse error into a *SplitError. The parser stops
// at constructs it cannot place in a simple command, such as "(" in an
// argument; name the character there when it is a shell metacharacter.
func splitParseError(s string, err error) error {
	var pos syntax.Pos
	var msg string
	var pe syntax.ParseError
	var le syntax.LangError
	switch {
	case errors.As(err, &pe):
		pos, msg = pe.Pos, pe.Text
	case errors.As(err, &le):
		pos, msg = le.Pos, needsShell(le.Feature)
	default:
		return &SplitError{Line: 1, Col: 1, Msg: err.Error()}
	}
	line, col := inputPos(pos)
	off := int(pos.Offset()) - len(splitPrefix)
	if off >= 0 && off < len(s) && strings.IndexByte(";&|<>()$`", s[off]) >= 0 {
		msg = needsShell(fmt.Sprintf("%q", s[off:off+1]))
	}
	return &SplitError{Line: line, Col: col, Msg: msg}
}

// inputPos maps a parser position to one in the string without splitPrefix.
func inputPos(p syntax.Pos) (line, col int) {
	line, col = int(p.Line()), int(p.Col())
	if line == 1 {
		col -= len(splitPrefix)
	}
	if col < 1 {
		col = 1
	}
	return line, col
}

// offenses remembers the earliest piece of shell syntax in a parsed input.
type offenses struct {
	found bool
	pos   syntax.Pos
	msg   string
}

func (o *offenses) add(pos syntax.Pos, msg string) {
	if !o.found || pos.Offset() < o.pos.Offset() {
		o.found, o.pos, o.msg = true, pos, msg
	}
}

func (o *offenses) err() error {
	line, col := inputPos(o.pos)
	return &SplitError{Line: line, Col: col, Msg: o.msg}
}

func (o *offenses) file(f *syntax.File) {
	for _, c := range f.Last {
		o.add(c.Hash, "# starts a shell comment, but the command is an argv, not a shell script (quote it to pass it literally)")
	}
	if len(f.Stmts) == 0 {
		o.add(syntax.NewPos(0, 1, 1), "no command")
		return
	}
	if len(f.Stmts) > 1 {
		first := f.Stmts[0]
		if !first.Semicolon.IsValid() {
			o.add(first.End(), "a newline outside quotes ends a shell command, but the command is an argv (end the line with \\ to continue it)")
		}
		for _, st := range f.Stmts[1:] {
			o.add(st.Pos(), "a second command: the command is an argv, not a shell script")
		}
	}
	o.stmt(f.Stmts[0])
}

func (o *offenses) stmt(st *syntax.Stmt) {
	for _, c := range st.Comments {
		o.add(c.Hash, "# starts a shell comment, but the command is an argv, not a shell script (quote it to pass it literally)")
	}
	if st.Semicolon.IsValid() {
		tok := ";"
		if st.Background {
			tok = "&"
		}
		o.add(st.Semicolon, needsShell(fmt.Sprintf("%q", tok)))
	}
	for _, r := range st.Redirs {
		o.add(r.Pos(), needsShell(fmt.Sprintf("the redirection %q", r.Op.String())))
	}
	switch cmd := st.Cmd.(type) {
	case *syntax.CallExpr:
		for _, a := range cmd.Assigns {
			o.add(a.Pos(), "an environment assignment needs a shell (put variables in a profile)")
		}
		for _, w := range cmd.Args {
			o.word(w.Parts, false)
		}
	case *syntax.BinaryCmd:
		o.add(cmd.OpPos, needsShell(fmt.Sprintf("%q", cmd.Op.String())))
		o.stmt(cmd.X)
	case nil:
		o.add(st.Pos(), "no command")
	default:
		o.add(cmd.Pos(), needsShell("shell syntax"))
	}
}

func (o *offenses) word(parts []syntax.WordPart, inDouble bool) {
	for _, wp := range parts {
		switch wp := wp.(type) {
		case *syntax.Lit:
			if i := unescapedDollar(wp.Value); i >= 0 {
				o.add(syntax.NewPos(wp.ValuePos.Offset()+uint(i), wp.ValuePos.Line(), wp.ValuePos.Col()+uint(i)), needsShell(`"$"`))
			}
		case *syntax.SglQuoted:
			if wp.Dollar {
				o.add(wp.Left, needsShell(`"$'…'"`))
			}
		case *syntax.DblQuoted:
			if wp.Dollar {
				o.add(wp.Left, needsShell(`"$\"…\""`))
			}
			o.word(wp.Parts, true)
		case *syntax.ParamExp:
			o.add(wp.Pos(), needsShell(`"$"`+inDoubleNote(inDouble)))
		case *syntax.CmdSubst:
			if wp.Backquotes {
				o.add(wp.Pos(), needsShell("a backtick"+inDoubleNote(inDouble)))
			} else {
				o.add(wp.Pos(), needsShell(`"$("`+inDoubleNote(inDouble)))
			}
		case *syntax.ArithmExp:
			o.add(wp.Pos(), needsShell(`"$(("`+inDoubleNote(inDouble)))
		case *syntax.ProcSubst:
			o.add(wp.Pos(), needsShell(fmt.Sprintf("%q", wp.Op.String())))
		case *syntax.ExtGlob:
			o.add(wp.Pos(), needsShell(fmt.Sprintf("%q", wp.Op.String())))
		default:
			o.add(wp.Pos(), needsShell("shell syntax"))
		}
	}
}

func inDoubleNote(inDouble bool) string {
	if inDouble {
		return " (it expands inside double quotes too)"
	}
	return ""
}

// unescapedDollar returns the index of the first $ in a literal that no
// backslash escapes, or -1.
func unescapedDollar(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '$':
			return i
		}
	}
	return -1
}

// wordString removes the quoting from a word that offenses accepted: only
// literals, single-quoted and double-quoted literal parts remain.
func wordString(w *syntax.Word) string {
	var b strings.Builder
	for _, wp := range w.Parts {
		switch wp := wp.(type) {
		case *syntax.Lit:
			unescape(&b, wp.Value, false)
		case *syntax.SglQuoted:
			b.WriteString(wp.Value)
		case *syntax.DblQuoted:
			for _, dp := range wp.Parts {
				if lit, ok := dp.(*syntax.Lit); ok {
					unescape(&b, lit.Value, true)
				}
			}
		}
	}
	return b.String()
}

// unescape writes s with its backslash escapes applied: outside quotes a
// backslash quotes any character; inside double quotes only $ ` " \ and
// newline (the parser has already removed backslash-newline pairs).
func unescape(b *strings.Builder, s string, inDouble bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			next := s[i+1]
			if !inDouble || strings.IndexByte("$`\"\\\n", next) >= 0 {
				i++
				if next != '\n' {
					b.WriteByte(next)
				}
				continue
			}
		}
		b.WriteByte(c)
	}
}
