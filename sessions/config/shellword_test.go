package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRenderQuotesPlaceholdersInShellScripts: a value placed in the script
// of sh -c (unquoted, inside '…' or "…" of that script) reaches the real
// shell as the literal text it is; no $(…), backtick or quote in it runs.
func TestRenderQuotesPlaceholdersInShellScripts(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	mark := filepath.Join(dir, "pwned")
	values := []string{
		"$(touch " + mark + ")",
		"`touch " + mark + "`",
		"it's; touch " + mark,
		`a"b\c$HOME` + "\n" + `"; touch ` + mark + `; "`,
		"/models/Kimi K2.5",
	}
	scripts := []struct{ name, command string }{
		{"unquoted", `sh -c 'printf "%s|" model={model}'`},
		{"double quotes", `sh -c 'printf "%s|" "model={model}"'`},
		{"single quotes", `bash -ec "printf '%s|' 'model={model}'"`},
		{"after --", `/bin/sh -e -c -- 'printf "%s|" {model}{model}'`},
	}
	for _, sc := range scripts {
		for _, v := range values {
			p := Preset{Name: "t", Command: sc.command}
			argv, err := p.Render(map[string]string{"model": v}, nil)
			if err != nil {
				t.Fatalf("%s: %v", sc.name, err)
			}
			if _, err := exec.LookPath(argv[0]); err != nil {
				t.Skipf("no %s", argv[0])
			}
			out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			if err != nil {
				t.Errorf("%s, %q: the shell failed: %v\n%s", sc.name, v, err, out)
				continue
			}
			want := "model=" + v + "|"
			if sc.name == "after --" {
				want = v + v + "|"
			}
			if string(out) != want {
				t.Errorf("%s, %q: the shell printed %q, want %q (argv %q)", sc.name, v, out, want, argv)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatalf("%s, %q: the value ran as shell code (argv %q)", sc.name, v, argv)
			}
		}
	}
}

// TestRenderLeavesArgvWordsVerbatim: outside a shell's script a value is
// one argument, as it is, whatever it holds (python -c is not a shell).
func TestRenderLeavesArgvWordsVerbatim(t *testing.T) {
	v := "$(touch x) it's"
	for _, command := range []string{
		"python3 -m sglang.launch_server --model-path {model}",
		"python3 -c 'print(1)' {model}",
		"sh script.sh {model}", // a script file's arguments are not evaluated
		"env sh -x {model}",
	} {
		argv, err := Preset{Name: "t", Command: command}.Render(map[string]string{"model": v}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := argv[len(argv)-1]; got != v {
			t.Errorf("%s: last word %q, want %q", command, got, v)
		}
	}
}

func TestScriptWords(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  map[int]bool
	}{
		{[]string{"sh", "-c", "s"}, map[int]bool{2: true}},
		{[]string{"/usr/bin/bash", "-lc", "s", "arg0"}, map[int]bool{2: true}},
		{[]string{"env", "A=b", "dash", "-e", "-c", "s"}, map[int]bool{5: true}},
		{[]string{"bash", "-c", "--", "s"}, map[int]bool{3: true}},
		{[]string{"bash", "script.sh", "-c"}, nil},
		{[]string{"bash", "--norc", "s"}, nil},
		{[]string{"python3", "-c", "s"}, nil},
		{[]string{"sh", "-c"}, nil},
	} {
		if got := scriptWords(c.words); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, want %v", strings.Join(c.words, " "), got, c.want)
		}
	}
}
