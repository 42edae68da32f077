package sanitize

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

func TestLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"plain ascii", "[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1", "[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1"},
		{"empty", "", ""},
		{"sgr colour", "\x1b[36mINFO\x1b[0m ready", "INFO ready"},
		{"osc 52 clipboard write (BEL)", "a\x1b]52;c;ZWNobyBwd25lZA==\x07b", "ab"},
		{"osc 52 clipboard write (ST)", "a\x1b]52;c;ZWNobyBwd25lZA==\x1b\\b", "ab"},
		{"title set then title report", "x\x1b]0;evil\x07\x1b[21ty", "xy"},
		{"unterminated osc keeps its text visible", "log \x1b]0;hidden text", `log \x1b]0;hidden text`},
		{"unterminated dcs", "a\x1bPq#0;2;0;0;0", `a\x1bPq#0;2;0;0;0`},
		{"cursor up rewrites earlier lines", "fake\x1b[2Aline", "fakeline"},
		{"erase line", "\x1b[2K\x1b[1Goverwritten", "overwritten"},
		{"two-byte esc", "a\x1b7b\x1b8c", "abc"},
		{"charset designation", "a\x1b(Bb", "ab"},
		{"lone esc at end", "abc\x1b", "abc"},
		{"esc then utf-8", "a\x1bé", "aé"},
		{"carriage return overwrite", "rm -rf /\rls", `rm -rf /\x0dls`},
		{"crlf line ending dropped", "done\r", "done"},
		{"backspace", "ab\bc", `ab\x08c`},
		{"nul", "a\x00b", `a\x00b`},
		{"del", "a\x7fb", `a\x7fb`},
		{"bell", "a\x07b", `a\x07b`},
		{"tab expands to 8", "a\tb", "a       b"},
		{"tab at stop", "12345678\tx", "12345678        x"},
		{"c1 csi as utf-8 u+009b", "a\u009b31mb", `a\u009b31mb`},
		{"c1 nel u+0085", "a\u0085b", `a\u0085b`},
		{"raw 8-bit csi byte", "a\x9b31mb", `a\x9b31mb`},
		{"bidi rlo", "user\u202etxt.exe", `user\u202etxt.exe`},
		{"bidi isolates and marks", "\u2066a\u2069\u200e\u200f\u061c", `\u2066a\u2069\u200e\u200f\u061c`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"zero-width space and joiners", "ad\u200bmin \u200c\u200d", `ad\u200bmin \u200c\u200d`},
		{"bom and word joiner", "\ufeffname\u2060", `\ufeffname\u2060`},
		{"soft hyphen", "pass\u00adword", `pass\u00adword`},
		{"interlinear annotation", "a\ufff9b\ufffac\ufffb", `a\ufff9b\ufffac\ufffb`},
		{"tag characters", "ok\U000e0041\U000e007f\U000e0000", `ok\U000e0041\U000e007f\U000e0000`},
		{"private use", "x\ue000\uf8ff\U000f0000\U0010fffd", `x\ue000\uf8ff\U000f0000\U0010fffd`},
		{"emoji and cjk kept", "ok 🚀 我", "ok 🚀 我"},
		{"invalid utf-8", "caf\xe9 \xff\xfe", `caf\xe9 \xff\xfe`},
		{"truncated utf-8 at end", "ab\xe2\x96", `ab\xe2\x96`},
		{"valid non-ascii kept", "Capturing 100%|██████| 52/52 ½ 我是", "Capturing 100%|██████| 52/52 ½ 我是"},
		{"esc lost sgr", "[36m(RayWorkerVllm pid=5085)[0m [E ProcessGroupNCCL.cpp:475]", "(RayWorkerVllm pid=5085) [E ProcessGroupNCCL.cpp:475]"},
		{"esc lost multi-param", "[1;31mERROR[0m x", "ERROR x"},
		{"bracketed text that is not sgr", "timeout [5m] [2025-10-22 10:27:57 TP0] [1, 2, 4]", "timeout [5m] [2025-10-22 10:27:57 TP0] [1, 2, 4]"},
		{"cloudwatch #033", "#033[2m2024-04-18T22:43:58.111453Z#033[0m #033[32m INFO#033[0m", "2024-04-18T22:43:58.111453Z  INFO"},
		{"cloudwatch lookalike kept", "issue #0331 #033x", "issue #0331 #033x"},
		{"csi cut at end of line", "abc\x1b[3", "abc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line([]byte(tc.in)); got != tc.want {
				t.Errorf("Line(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			checkSafe(t, tc.in, Line([]byte(tc.in)))
		})
	}
}

// TestName: a name keeps what String removes, escaped, so two different
// names never look the same (issue 19, item 8).
func TestName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"model/pynccl.py", "model/pynccl.py"},
		{"f-\x1b]2;x\x07-\x1b[31mred", `f-\x1b]2;x\x07-\x1b[31mred`},
		{"f--red", "f--red"},
		{"[36mnot sgr", "[36mnot sgr"},
		{"#033[2mx", "#033[2mx"},
		{"a\tb", `a\x09b`},
		{"crlf\r", `crlf\x0d`},
		{"bidi \u202eexe.txt", `bidi \u202eexe.txt`},
		{"zw\u200bsp", `zw\u200bsp`},
		{"caf\xe9", `caf\xe9`},
		{"我的文件.py", "我的文件.py"},
	} {
		got := Name(tc.in)
		if got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.in, got, tc.want)
		}
		checkSafe(t, tc.in, got)
	}
	if Name("f-\x1b[31mred") == Name("f-red") {
		t.Error("two names look the same")
	}
	if got := TypedLine("KV for [1m ctx]\r\nsecond\x1b[0m"); got != "KV for [1m ctx] second" {
		t.Errorf("TypedLine: %q", got)
	}
	long := strings.Repeat("x", MaxRunes+10) + "\x1b"
	if got := Name(long); !strings.HasSuffix(got, TruncMarker+"11 bytes]") {
		t.Errorf("long name not cut: ...%q", got[len(got)-20:])
	}
}

// TestVerbatim: a patch line keeps its escape sequences, escaped, while
// its tabs expand as String's do.
func TestVerbatim(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"+\tx := 1", "+       x := 1"},
		{"+\tfmt.Print(\"\x1b[31mred\")", `+       fmt.Print("\x1b[31mred")`},
		{"-line\r", "-line"},
		{"+ \u202e", `+ \u202e`},
	} {
		got := Verbatim(tc.in)
		if got != tc.want {
			t.Errorf("Verbatim(%q) = %q, want %q", tc.in, got, tc.want)
		}
		checkSafe(t, tc.in, got)
	}
}

func TestStringPlainDoesNotCopy(t *testing.T) {
	s := "[2025-11-11 04:06:27] Decode batch, #running-req: 46, gen throughput (token/s): 1447.08"
	got := String(s)
	if unsafe.StringData(got) != unsafe.StringData(s) {
		t.Error("String copied a plain ASCII line")
	}
	if n := testing.AllocsPerRun(100, func() { _ = String(s) }); n != 0 {
		t.Errorf("String on plain ASCII allocates %v times, want 0", n)
	}
}

// TestOneLine: line breaks become spaces, then the text is String's.
func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                     "plain",
		"two\nlines":                "two lines",
		"crlf\r\nend\r":             "crlf end ",
		"esc \x1b[31mred\x1b[0m\tx": "esc red x",
	} {
		got := OneLine(in)
		if got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
		checkSafe(t, in, got)
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("a", MaxRunes+100)
	got := Line([]byte(long))
	want := strings.Repeat("a", MaxRunes) + " [+100 bytes]"
	if got != want {
		t.Errorf("long ASCII line: got %d runes ending %q, want ending %q", utf8.RuneCountInString(got), got[len(got)-20:], want[len(want)-20:])
	}

	exact := strings.Repeat("b", MaxRunes)
	if got := Line([]byte(exact)); got != exact {
		t.Errorf("a line of exactly MaxRunes runes was changed")
	}

	wide := strings.Repeat("我", MaxRunes+1)
	got = String(wide)
	if !strings.HasSuffix(got, " [+3 bytes]") || utf8.RuneCountInString(got) != MaxRunes+len(" [+3 bytes]") {
		t.Errorf("multi-byte long line: got suffix %q, %d runes", got[len(got)-12:], utf8.RuneCountInString(got))
	}
	checkSafe(t, wide, got)
}

func TestHasEscapesAndStrip(t *testing.T) {
	tests := []struct {
		in    string
		has   bool
		strip string
	}{
		{"[2025-10-22 10:27:57 TP0] Decode batch. gen throughput (token/s): 1.0", false, "[2025-10-22 10:27:57 TP0] Decode batch. gen throughput (token/s): 1.0"},
		{"\x1b[32mINFO\x1b[0m x", true, "INFO x"},
		{"[32mINFO[0m x", true, "INFO x"},
		{"#033[32m INFO#033[0m x", true, " INFO x"},
		{"a\x1b]0;title", true, "a"},
		{"tab\tand\rcr", false, "tab\tand\rcr"},
	}
	for _, tc := range tests {
		if got := HasEscapes([]byte(tc.in)); got != tc.has {
			t.Errorf("HasEscapes([]byte %q) = %v, want %v", tc.in, got, tc.has)
		}
		if got := string(AppendStripped(nil, []byte(tc.in))); got != tc.strip {
			t.Errorf("AppendStripped(%q) = %q, want %q", tc.in, got, tc.strip)
		}
	}
}

// checkSafe fails when out could act on a terminal or is not valid UTF-8.
func checkSafe(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("output of %q is not valid UTF-8: %q", in, out)
	}
	for i, r := range out {
		switch {
		case r < 0x20, r == 0x7f:
			t.Fatalf("output of %q has control %U at byte %d: %q", in, r, i, out)
		case r >= 0x80 && r < 0xa0:
			t.Fatalf("output of %q has C1 control %U at byte %d: %q", in, r, i, out)
		case unicode.Is(unicode.Bidi_Control, r), r == 0x2028, r == 0x2029:
			t.Fatalf("output of %q has bidi/separator %U at byte %d: %q", in, r, i, out)
		case unicode.In(r, unicode.Cf, unicode.Co), r >= 0xe0000 && r <= 0xe007f:
			t.Fatalf("output of %q has invisible %U at byte %d: %q", in, r, i, out)
		}
	}
	if n := utf8.RuneCountInString(out); n > MaxRunes+32 {
		t.Fatalf("output of %d bytes has %d runes, over the cap", len(in), n)
	}
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{
		"plain", "\x1b]52;c;AAAA\x07", "\x1b[21t", "\x1b]0;x", "\x1b[2A", "a\rb", "\u202e", "\xff\xfe",
		"\x00", "\u200b\ufeff\U000e0041\ue000", "[36mx[0m", "#033[2mx#033[0m", "\x9b31m", "\u009b", "a\tb", "\x1bP\x1b\\", "é\x1b",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := Line(b)
		checkSafe(t, string(b), out)
		checkSafe(t, string(b), Name(string(b)))
		checkSafe(t, string(b), Verbatim(string(b)))
		if String(string(b)) != out {
			t.Fatalf("Line and String differ on %q", b)
		}
		stripped := AppendStripped(nil, b)
		if len(stripped) > len(b) {
			t.Fatalf("AppendStripped grew %q to %q", b, stripped)
		}
		if !HasEscapes(b) && string(stripped) != string(b) {
			t.Fatalf("HasEscapes(%q) = false but AppendStripped changed it to %q", b, stripped)
		}
	})
}

var sink string

func BenchmarkLinePlainASCII(b *testing.B) {
	line := []byte("[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, #token: 186, token usage: 0.00, accept len: 1.95, accept rate: 0.49, cuda graph: True, gen throughput (token/s): 178.86, #queue-req: 0, ")
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		sink = Line(line)
	}
}

func BenchmarkLineANSI(b *testing.B) {
	line := []byte("\x1b[32mINFO\x1b[0m 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, \x1b]52;c;QUFB\x07Avg generation throughput: 1055.3 tokens/s\t\u202e done")
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		sink = Line(line)
	}
}

func BenchmarkLineUTF8(b *testing.B) {
	line := []byte("Capturing batches (bs=1 avail_mem=38.07 GB): 100%|██████████████████████████████| 52/52 [00:04<00:00, 11.61it/s]")
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		sink = Line(line)
	}
}

// TestTyped: typed text keeps what only looks like a log's damaged escape
// ("[1m" whose ESC was lost, "#033[2m"); a real escape sequence and
// controls go as in String; plain ASCII is returned as is.
func TestTyped(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"KV for [1m ctx]", "KV for [1m ctx]"},
		{"a[31mb #033[2mdim", "a[31mb #033[2mdim"},
		{"red \x1b[31mtext\x1b[0m", "red text"},
		{"title \x1b]2;pwned\x07 done", "title  done"},
		{"bell\a tab\tend\r", "bell\\x07 tab    end"},
		{"bidi \u202e here ünï", "bidi \\u202e here ünï"},
		{"bad \xff byte", "bad \\xff byte"},
	} {
		if got := Typed(c.in); got != c.want {
			t.Errorf("Typed(%q) = %q, want %q", c.in, got, c.want)
		}
		if got, plain := Typed(c.in), String(c.in); strings.Contains(c.in, "\x1b") && got != plain {
			t.Errorf("Typed(%q) = %q, String gives %q: a real escape must go the same way", c.in, got, plain)
		}
	}
	if got := TypedLine("KV for [1m ctx]\r\nsecond\x1b[0m"); got != "KV for [1m ctx] second" {
		t.Errorf("TypedLine: %q", got)
	}
	long := strings.Repeat("x", MaxRunes+10)
	if got := Typed(long); !strings.HasSuffix(got, TruncMarker+"10 bytes]") {
		t.Errorf("Typed of %d bytes ends %q", len(long), got[len(got)-20:])
	}
}
