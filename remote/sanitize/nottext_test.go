package sanitize

import (
	"strings"
	"testing"
)

func TestNotText(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      []byte
		partial bool
		want    string // substring of the reason; "" for text
	}{
		{"log line", []byte("[2025-10-22 10:27:58 TP0] Decode batch. #running-req: 1\n"), false, ""},
		{"colour codes and a Latin-1 byte", []byte("\x1b[36mINFO\x1b[0m temp 41\xb0C ok, all good here\n"), false, ""},
		{"empty", nil, false, ""},
		{"gzip", []byte{0x1f, 0x8b, 8, 0, 0}, false, "gzip-compressed"},
		{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd, 1}, false, "zstd-compressed"},
		{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0, 0}, false, "xz-compressed"},
		{"bzip2", []byte("BZh91AY&SY\x00"), false, "bzip2-compressed"},
		{"UTF-16", []byte{0xff, 0xfe, 'a', 0}, false, "UTF-16"},
		{"NUL", []byte("ELF\x00\x01"), false, "NUL byte at offset 3"},
		{"mostly invalid UTF-8", []byte("\xc0\xfe\xfd\xfc\xfb abc"), false, "not UTF-8"},
		// A rune cut by the sniff window is not held against a partial input.
		{"cut rune", append([]byte(strings.Repeat("a", 2)), 0xe2, 0x82), true, ""},
	} {
		got := NotText(c.in, c.partial)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: NotText = %q, want %q", c.name, got, c.want)
		}
	}
}
