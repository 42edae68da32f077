package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{
		"python3 -m sglang.launch_server --model-path {model}",
		`a 'b c' "d\"e" f\ g`, "a $(x)", "a;b", "a | b", "a > b", "a `x`", "a # c",
		"a \\\nb", "'unterminated", `"$x"`, "a <(b)", "a (b)", "{{x}}", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitWords(s)
		if err != nil {
			var se *SplitError
			if !errors.As(err, &se) {
				t.Fatalf("SplitWords(%q): %T %v, want *SplitError", s, err, err)
			}
			if se.Line < 1 || se.Col < 1 || se.Msg == "" {
				t.Fatalf("SplitWords(%q): bad position or message %+v", s, se)
			}
			return
		}
		// Single-quoting every word gives a string that splits back into
		// the same words (words without a single quote; one with a quote
		// is written as 'a'\''b').
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
		}
		again, err := SplitWords(strings.Join(quoted, " "))
		if err != nil {
			t.Fatalf("SplitWords(%q) = %q; re-quoted: %v", s, words, err)
		}
		if len(words) == 0 {
			words = nil
		}
		if !slices.Equal(again, words) {
			t.Fatalf("SplitWords(%q) = %q; re-quoted gives %q", s, words, again)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add(Example)
	f.Add(profilesFile)
	for _, s := range []string{
		"[defaults\n", "[presets.p]\ncomand = 1\n", "[hosts.a]\npreset = \"x\"\n",
		"[profiles.a]\nextends = \"b\"\n[profiles.b]\nextends = \"a\"\n",
		"[profiles.a]\nenv = { x = 1.5, Y = [1], Z = {a = 1} }\n",
		"[presets.p]\ncommand = \"a {x} $(y)\"\nextra = [\"{\"]\n",
		"hosts = 1\n", "[[presets]]\n", "a.b.c = 1\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse("f.toml", []byte(s))
		if err == nil {
			if c == nil {
				t.Fatal("nil config and nil error")
			}
			return
		}
		if c != nil {
			t.Fatal("config and error")
		}
		j, ok := err.(interface{ Unwrap() []error })
		if !ok {
			t.Fatalf("error %T is not a join", err)
		}
		for _, e := range j.Unwrap() {
			if pe, ok := e.(*Error); !ok || pe.File != "f.toml" || pe.Msg == "" {
				t.Fatalf("problem %T %v is not a *Error of f.toml", e, e)
			}
		}
	})
}
