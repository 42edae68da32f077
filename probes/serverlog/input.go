package serverlog

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrBinaryInput is wrapped by the error WriteJSONL returns for input that
// is not a text log: a compressed log, an executable, UTF-16 text. Test for
// it with errors.Is; the message after it says what was found.
var ErrBinaryInput = errors.New("binary input (compressed?)")

// sniffLen is how much of the input WriteJSONL looks at before it parses a
// line, to tell a text log from binary data.
const sniffLen = 1024

// binaryReason says why the first bytes of an input (at most sniffLen; full
// says whether more may follow) are not a text log, or "" when they are.
// Text is UTF-8 without NUL bytes; a few invalid bytes (a Latin-1 "é" in a
// prompt) are allowed, more than a quarter of them is binary. Colour codes
// and other control characters are text: logs have them.
func binaryReason(p []byte, full bool) string {
	switch {
	case bytes.HasPrefix(p, []byte{0x1f, 0x8b}):
		return "gzip-compressed data; decompress it first (zcat FILE | flightdeck parse log)"
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
		return fmt.Sprintf("NUL byte at offset %d", i)
	}
	invalid := 0
	for i := 0; i < len(p); {
		if full && !utf8.FullRune(p[i:]) {
			break // a rune cut by the sniff window
		}
		r, n := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && n == 1 {
			invalid++
		}
		i += n
	}
	if invalid*4 > len(p) {
		return fmt.Sprintf("%d of the first %d bytes are not UTF-8 text", invalid, len(p))
	}
	return ""
}
