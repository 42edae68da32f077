package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  \t ", nil},
		{"python3 -m sglang.launch_server", []string{"python3", "-m", "sglang.launch_server"}},
		{"  a   b\tc  ", []string{"a", "b", "c"}},
		{`'a b' "c d"`, []string{"a b", "c d"}},
		{`a\ b`, []string{"a b"}},
		{`a\\b`, []string{`a\b`}},
		{`a"b c"'d e'f`, []string{"ab cd ef"}},
		{`''`, []string{""}},
		{`a "" b`, []string{"a", "", "b"}},
		{`"a\"b" "c\$d" "e\x" "f\\g"`, []string{`a"b`, `c$d`, `e\x`, `f\g`}},
		{`'$(x)' '$HOME' '` + "`x`" + `' 'a;b|c&d<e>f(g)'`, []string{"$(x)", "$HOME", "`x`", "a;b|c&d<e>f(g)"}},
		{`'it''s'`, []string{"its"}},
		{`"it's"`, []string{"it's"}},
		{`\$HOME \; \| \&`, []string{"$HOME", ";", "|", "&"}},
		{`--speculative-config '{"method": "eagle3"}'`, []string{"--speculative-config", `{"method": "eagle3"}`}},
		// Globs, braces and tildes are literal text: nothing is expanded.
		{`*.log a?b [ab] {a,b} ~/x`, []string{"*.log", "a?b", "[ab]", "{a,b}", "~/x"}},
		{"{model} {{x}} --tp={tp}", []string{"{model}", "{{x}}", "--tp={tp}"}},
		// Words that are shell grammar at the start of a command are plain here.
		{"if then ! { } time A=b", []string{"if", "then", "!", "{", "}", "time", "A=b"}},
		{"FOO=1 --x", []string{"FOO=1", "--x"}},
		{"a#b", []string{"a#b"}},
		{"a \\\n  b", []string{"a", "b"}},
		{"'a\nb'", []string{"a\nb"}},
		{"\"a\\\nb\"", []string{"ab"}},
		{"a\n", []string{"a"}},
		{"héllo wörld", []string{"héllo", "wörld"}},
	}
	for _, tt := range tests {
		got, err := SplitWords(tt.in)
		if err != nil {
			t.Errorf("SplitWords(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("SplitWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSplitWordsRejects(t *testing.T) {
	tests := []struct {
		in        string
		line, col int
		msg       string // substring
	}{
		{"a $(x)", 1, 3, `"$("`},
		{"a $x", 1, 3, `"$"`},
		{"a ${x}", 1, 3, `"$"`},
		{"a $", 1, 3, `"$"`},
		{"a$((1+2))", 1, 2, `"$(("`},
		{"a `x`", 1, 3, "backtick"},
		{`a "$x"`, 1, 4, "inside double quotes"},
		{`a "$(x)"`, 1, 4, "inside double quotes"},
		{`a "b` + "`x`" + `"`, 1, 5, "backtick"},
		{"a $'x'", 1, 3, `$'…'`},
		{`a $"x"`, 1, 3, `$\"…\"`},
		{"a;b", 1, 2, `";"`},
		{"a ; b", 1, 3, `";"`},
		{"a|b", 1, 2, `"|"`},
		{"a || b", 1, 3, `"||"`},
		{"a && b", 1, 3, `"&&"`},
		{"a &", 1, 3, `"&"`},
		{"a > out", 1, 3, `">"`},
		{"a 2>&1", 1, 3, `">&"`},
		{"a <in", 1, 3, `"<"`},
		{"a <<EOF", 1, 3, `"<"`},
		{"a <<EOF\nx\nEOF", 1, 3, "redirection"},
		{"a <(b)", 1, 3, `"<("`},
		{"a (b)", 1, 3, `"("`},
		{"a )", 1, 3, `")"`},
		{"a # comment", 1, 3, "comment"},
		{"a\nb", 1, 2, "newline"},
		{"a \\\nb;c", 2, 2, `";"`},
		{"a 'b\x00'", 1, 5, "NUL"},
		{"a \\\n b\x00", 2, 3, "NUL"},
		{"a 'b", 1, 3, "quote"},
		{`a "b`, 1, 3, "quote"},
	}
	for _, tt := range tests {
		got, err := SplitWords(tt.in)
		if err == nil {
			t.Errorf("SplitWords(%q) = %q, want an error", tt.in, got)
			continue
		}
		var se *SplitError
		if !errors.As(err, &se) {
			t.Errorf("SplitWords(%q): error %T %v, want *SplitError", tt.in, err, err)
			continue
		}
		if se.Line != tt.line || se.Col != tt.col || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("SplitWords(%q): %d:%d %q, want %d:%d containing %q", tt.in, se.Line, se.Col, se.Msg, tt.line, tt.col, tt.msg)
		}
	}
}

func TestSplitWordsMessage(t *testing.T) {
	_, err := SplitWords("python3 x; rm -rf /")
	want := `column 10: ";" needs a shell, but the command is an argv, not a shell script (put it in single quotes to pass it literally)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	_, err = SplitWords("a \\\n b | c")
	if err == nil || !strings.HasPrefix(err.Error(), "line 2, column 4: ") {
		t.Errorf("multi-line input: got %v, want line 2, column 4", err)
	}
}
