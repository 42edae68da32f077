package sanitize

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// SniffLen is how many leading bytes NotText needs to judge an input.
const SniffLen = 1024

// NotText says why the first bytes p of an input (at most SniffLen;
// partial says more follows, so a rune cut at the end is not counted) are
// not text a log or CSV parser should read, or returns "" when they are.
// Text is UTF-8 without NUL bytes; a few invalid bytes (a Latin-1 "é") are
// allowed, more than a quarter of them is binary. Control characters and
// colour codes are text: logs have them. Compressed files and UTF-16 are
// named, with the command that makes them readable.
func NotText(p []byte, partial bool) string {
	switch {
	case bytes.HasPrefix(p, []byte{0x1f, 0x8b}):
		return "gzip-compressed data; decompress it first (zcat)"
	case bytes.HasPrefix(p, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return "zstd-compressed data; decompress it first (zstdcat)"
	case bytes.HasPrefix(p, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return "xz-compressed data; decompress it first (xzcat)"
	case bytes.HasPrefix(p, []byte("BZh")) && len(p) >= 10 && bytes.Equal(p[4:10], []byte("1AY&SY")):
		return "bzip2-compressed data; decompress it first (bzcat)"
	case bytes.HasPrefix(p, []byte{0xff, 0xfe}), bytes.HasPrefix(p, []byte{0xfe, 0xff}):
		return "UTF-16 text; convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"
	}
	if i := bytes.IndexByte(p, 0); i >= 0 {
		return fmt.Sprintf("binary data (NUL byte at offset %d)", i)
	}
	invalid := 0
	for i := 0; i < len(p); {
		if partial && !utf8.FullRune(p[i:]) {
			break // a rune cut by the sniff window
		}
		r, n := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && n == 1 {
			invalid++
		}
		i += n
	}
	if invalid*4 > len(p) {
		return fmt.Sprintf("binary data (%d of the first %d bytes are not UTF-8)", invalid, len(p))
	}
	return ""
}
