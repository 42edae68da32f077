package remote

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// shEcho returns what /bin/sh prints for `printf %s WORDS`.
func shPrintf(t testing.TB, words string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "printf %s "+words).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", "printf %s "+words, err)
	}
	return string(out)
}

func TestQuoteRoundTripsThroughSh(t *testing.T) {
	for _, s := range []string{
		"", "abc", "a b", "a'b", `a"b`, `a\b`, "$(touch pwned)", "`id`", "x;rm -rf /", "*", "~root",
		"$HOME", "a=b", "--upload-pack=evil", "!", "#x", "{a,b}", "é 日本", "'", "''", `"'"`, "a  b",
		"if", "then", "&&", "|", ">f", "<f", "(x)", "%s", "\\n",
	} {
		q, err := Quote(s)
		if err != nil {
			t.Errorf("Quote(%q): %v", s, err)
			continue
		}
		if got := shPrintf(t, q); got != s {
			t.Errorf("Quote(%q) = %s; sh printed %q", s, q, got)
		}
	}
}

func TestQuoteFailsClosed(t *testing.T) {
	for _, s := range []string{"a\nb", "a\x00b", "\xff", "a\tb", "\r", "\x1b[2J", "\x7f", "\u202e", "ok\xc3"} {
		if q, err := Quote(s); err == nil {
			t.Errorf("Quote(%q) = %q, want an error", s, q)
		} else if strings.Contains(err.Error(), s) {
			t.Errorf("Quote(%q): error %q repeats the input", s, err)
		}
	}
}

func TestCommand(t *testing.T) {
	cmd, err := Command("printf", "%s|", "a b", "it's", "$(id)", "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", cmd).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "a b|it's|$(id)||"; string(out) != want {
		t.Errorf("%s printed %q, want %q", cmd, out, want)
	}
	if _, err := Command("echo", "ok", "bad\nword"); err == nil || !strings.Contains(err.Error(), "word 2") {
		t.Errorf("Command with a newline: err = %v, want one naming word 2", err)
	}
}

func TestEnvAssignment(t *testing.T) {
	w, err := EnvAssignment("NCCL_P2P_DISABLE", "1; touch /tmp/pwned")
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := Command("env", w, "sh", "-c", `printf %s "$NCCL_P2P_DISABLE"`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", cmd).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "1; touch /tmp/pwned" {
		t.Errorf("env value arrived as %q", out)
	}
	for _, name := range []string{"", "1X", "-i", "A-B", "A=B", "A B"} {
		if _, err := EnvAssignment(name, "v"); !errors.Is(err, ErrBadEnvName) {
			t.Errorf("EnvAssignment(%q): err = %v, want ErrBadEnvName", name, err)
		}
	}
	if _, err := EnvAssignment("X", "a\nb"); err == nil {
		t.Error("EnvAssignment with a newline in the value: no error")
	}
}

// FuzzQuote checks that every string Quote accepts comes back unchanged
// through a real /bin/sh, and that everything it refuses is something POSIX
// quoting cannot carry.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a'b", "$(x)", "\n", "é", "\xff", "a\"b\\c", "~", "-n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Quote(s)
		if err != nil {
			if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
				t.Fatalf("Quote(%q) refused a printable string: %v", s, err)
			}
			return
		}
		if got := shPrintf(t, q); got != s {
			t.Fatalf("Quote(%q) = %s; sh printed %q", s, q, got)
		}
	})
}

func BenchmarkCommand(b *testing.B) {
	for b.Loop() {
		if _, err := Command("nvidia-smi", "--query-gpu=index,utilization.gpu,memory.used", "--format=csv,noheader,nounits", "-lms", "1000"); err != nil {
			b.Fatal(err)
		}
	}
}
