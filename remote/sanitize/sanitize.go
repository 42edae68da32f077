// Package sanitize makes remote text (server log lines, command output, git
// branch names, process names) safe to print in a terminal.
//
// Server logs carry user prompts, so their bytes are attacker-controlled
// (CVE-2021-25743 class: OSC 52 clipboard writes, CSI 21t title reports that
// type into the operator's stdin, ESC[2A / \r rewriting earlier lines, bidi
// overrides that reorder what is shown). The policy, applied in order:
//
//  1. Escape sequences are removed: 7-bit ESC sequences (CSI, OSC, DCS, APC,
//     PM, SOS, two-byte ESC x) as delimited by the charmbracelet/x/ansi
//     parser's state table, plus two damaged forms found in real logs: the ESC
//     byte lost ("[36m", vllm#2734) and ESC rendered as the text "#033"
//     ("#033[2m", CloudWatch exports, TGI#1763). A string sequence (OSC, DCS,
//     APC, PM, SOS) still open at the end of the line is not removed: its ESC
//     is shown as \x1b and its text is kept, so a stray ESC cannot hide the
//     rest of a line.
//  2. What remains is escaped so that it is visible and inert:
//     C0 controls and DEL as \xNN (\r is \x0d, backspace \x08, NUL \x00);
//     C1 controls U+0080–U+009F (including U+009B, the 8-bit CSI) as \u00NN;
//     invisible characters as \uNNNN or \UNNNNNNNN: format characters
//     (category Cf: bidi controls such as U+202E, zero-width U+200B–U+200D,
//     U+2060–U+2064, the BOM U+FEFF, the interlinear annotations
//     U+FFF9–U+FFFB, the tag characters U+E0000–U+E007F), private use
//     (U+E000–U+F8FF and planes 15–16) and the line/paragraph separators
//     U+2028/U+2029; each byte that is not valid UTF-8 as \xNN.
//  3. A tab becomes spaces up to the next multiple of 8 columns (columns are
//     counted in runes), so width arithmetic in the UI stays exact. One
//     trailing \r (a CRLF line ending) is dropped.
//  4. The result is cut at MaxRunes runes, and TruncMarker plus the number of
//     input bytes not shown is appended: " [+1234 bytes]".
//
// A literal backslash is not escaped, so the text `\x1b` in the input looks
// like an escaped ESC; this keeps Windows paths and regexes readable.
//
// The output is always valid UTF-8 and never contains ESC, another C0
// control (tab included), DEL, a C1 control, a format (Cf) or a private-use
// character.
package sanitize

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi/parser"
)

// MaxRunes is the most runes of sanitised text a line keeps; longer lines
// are cut and end with TruncMarker. 4096 runes is about 20 screen widths at
// 200 columns: enough for any real log record (SGLang's server_args echo is
// ~5,000 bytes and is the longest seen).
const MaxRunes = 4096

// TruncMarker starts the suffix of a cut line; it is followed by the number
// of input bytes left out and "bytes]", e.g. " [+1234 bytes]".
const TruncMarker = " [+"

// tabWidth is the tab-stop interval used when expanding tabs.
const tabWidth = 8

// Line returns b as text that is safe to print in a terminal (see the
// package documentation for what is removed and escaped). A line of plain
// printable ASCII costs one scan and one copy.
func Line(b []byte) string {
	if isPlain(b) {
		return string(b)
	}
	return slow(b, stripMode)
}

// String is Line for a string; plain printable ASCII is returned as is,
// without a copy.
func String(s string) string {
	if isPlain(s) {
		return s
	}
	return slow(s, stripMode)
}

// Typed is String for text a person typed (a note, an experiment's name,
// hypothesis or conclusion): ESC sequences are removed and controls
// escaped as String does, but the damaged forms found in server logs
// ("[31m" whose ESC was lost, "#033[2m") are text here and are kept, so
// that "KV for [1m ctx]" is stored as typed.
func Typed(s string) string {
	if len(s) <= MaxRunes && isPrintableASCII(s) {
		return s
	}
	return slow(s, typedMode)
}

// Name is String for an identifier — a file name, a commit subject, a
// branch, an author, a line of a patch — where two different values must
// never look the same: nothing is removed. Escape sequences are shown
// escaped (ESC as \x1b, the rest as text), and so are tabs (\x09) and a
// final \r, along with everything String escapes; the result is cut at
// MaxRunes runes like String's. "f-\x1b]2;x\x07-\x1b[31mred" reads
// `f-\x1b]2;x\x07-\x1b[31mred`, not "f--red".
func Name(s string) string {
	if len(s) <= MaxRunes && isPrintableASCII(s) {
		return s
	}
	return slow(s, nameMode)
}

// Verbatim is String without the stripping, for a line of text whose
// bytes matter (a line of a patch): escape sequences are shown escaped
// (ESC as \x1b, the rest as text); tabs expand and a final \r is dropped
// as in String.
func Verbatim(s string) string {
	if len(s) <= MaxRunes && isPrintableASCII(s) {
		return s
	}
	return slow(s, verbatimMode)
}

// isPrintableASCII reports whether every byte of s is in 0x20–0x7e.
func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// OneLine makes remote or typed text (a note, a name, a command's output)
// one line that is safe to print: "\r\n", "\n" and "\r" become spaces,
// then escape sequences and controls are made inert (String, which also
// cuts it at MaxRunes runes).
func OneLine(s string) string { return String(newlines.Replace(s)) }

// TypedLine is OneLine for text a person typed (Typed): what only looks
// like a log's damaged escape ("[1m") is kept.
func TypedLine(s string) string { return Typed(newlines.Replace(s)) }

// newlines turns each line break into a space (OneLine).
var newlines = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// isPlain reports whether s is printable ASCII no longer than MaxRunes with
// nothing that looks like a damaged escape sequence ("[36m", "#033[").
func isPlain[T string | []byte](s T) bool {
	if len(s) > MaxRunes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f {
			return false
		}
		if (c == '[' && lostSGRLen(s, i) > 0) || (c == '#' && cloudWatchLen(s, i) > 0) {
			return false
		}
	}
	return true
}

// HasEscapes reports whether b contains something AppendStripped would
// remove: an ESC byte, a lost-ESC SGR sequence ("[1;32m") or a CloudWatch
// "#033[..m". It is a few vectorised scans and does not allocate.
func HasEscapes(b []byte) bool {
	if bytes.IndexByte(b, 0x1b) >= 0 {
		return true
	}
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '[')
		if j < 0 {
			break
		}
		if lostSGRLen(b, i+j) > 0 {
			return true
		}
		i += j + 1
	}
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], cloudWatchIntro)
		if j < 0 {
			break
		}
		if cloudWatchLen(b, i+j) > 0 {
			return true
		}
		i += j + 1
	}
	return false
}

var cloudWatchIntro = []byte("#033[")

// AppendStripped appends b to dst without its escape sequences (the three
// forms of step 1 in the package documentation) and returns the extended
// buffer. Other bytes, controls included, are copied unchanged: this is for
// parsers that match text, not for display. An unterminated string sequence
// is removed to the end of the line.
func AppendStripped(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		if n := escapeLen(b, i); n > 0 {
			i += n
			continue
		}
		if b[i] == 0x1b {
			// Unterminated string sequence: for matching, drop the rest.
			break
		}
		dst = append(dst, b[i])
		i++
	}
	return dst
}

// escapeLen returns the length of the escape sequence starting at s[i] in
// any of the three forms, 0 when none starts there; an unterminated string
// sequence (OSC, DCS, APC, PM, SOS) returns 0, so its ESC stays visible.
func escapeLen[T string | []byte](s T, i int) int {
	switch s[i] {
	case 0x1b:
		return escSeqLen(s, i)
	case '[':
		return lostSGRLen(s, i)
	case '#':
		return cloudWatchLen(s, i)
	}
	return 0
}

// escSeqLen returns the length of the 7-bit sequence that starts with the
// ESC at s[i], following the DEC/ECMA-48 state machine of
// github.com/charmbracelet/x/ansi/parser (the one ansi.Strip uses): CSI
// up to its final byte, OSC up to BEL or ST, DCS/SOS/PM/APC up to ST, ESC x.
// A sequence broken off by another ESC, CAN/SUB, a C1 control or a
// printable non-ASCII character ends before that byte. A CSI or ESC
// sequence cut by the end of the line is removed to the end; a string
// sequence still open there returns 0.
func escSeqLen[T string | []byte](s T, i int) int {
	state := parser.EscapeState
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		next, action := parser.Table.Transition(state, c)
		switch {
		case c == 0x1b:
			if isStringState(state) && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2 - i // ST
			}
			return j - i
		case next == parser.Utf8State,
			next == parser.GroundState && action == parser.ExecuteAction,
			next == parser.GroundState && action == parser.IgnoreAction && (c == 0x18 || c == 0x1a):
			return j - i // broken off; the byte is shown (escaped) on its own
		case next == parser.GroundState:
			return j + 1 - i
		}
		state = next
	}
	if isStringState(state) {
		return 0
	}
	return len(s) - i
}

func isStringState(st parser.State) bool {
	switch st {
	case parser.OscStringState, parser.SosStringState, parser.PmStringState, parser.ApcStringState,
		parser.DcsEntryState, parser.DcsParamState, parser.DcsIntermediateState, parser.DcsStringState:
		return true
	}
	return false
}

// lostSGRLen returns the length of an SGR sequence whose ESC was lost
// ("[0m", "[1;36m") starting at s[i], or 0. To keep ordinary bracketed text,
// the parameters are 1–3 digit numbers separated by ';' and the sequence
// must not be followed by ']' ("timeout [5m]" is text).
func lostSGRLen[T string | []byte](s T, i int) int {
	j := i + 1
	digits := 0
	for ; j < len(s) && j-i <= 16; j++ {
		c := s[j]
		switch {
		case c >= '0' && c <= '9':
			digits++
			if digits > 3 {
				return 0
			}
		case c == ';':
			if digits == 0 {
				return 0
			}
			digits = 0
		case c == 'm':
			if digits == 0 || (j+1 < len(s) && s[j+1] == ']') {
				return 0
			}
			return j + 1 - i
		default:
			return 0
		}
	}
	return 0
}

// cloudWatchLen returns the length of a CSI sequence whose ESC is rendered
// as the text "#033" ("#033[2m", "#033[0m") starting at s[i], or 0.
func cloudWatchLen[T string | []byte](s T, i int) int {
	const intro = "#033["
	if len(s)-i < len(intro)+1 || string(s[i:i+len(intro)]) != intro {
		return 0
	}
	for j := i + len(intro); j < len(s) && j-i <= 32; j++ {
		c := s[j]
		switch {
		case c >= 0x30 && c <= 0x3f: // parameter bytes
		case c >= 0x20 && c <= 0x2f: // intermediate bytes
		case c >= 0x40 && c <= 0x7e: // final byte
			return j + 1 - i
		default:
			return 0
		}
	}
	return 0
}

// mode is what slow does beyond escaping: strip escape sequences (String),
// keep them escaped (Verbatim), or also escape tabs and a final \r (Name).
type mode uint8

const (
	stripMode mode = iota
	verbatimMode
	nameMode
	typedMode // stripMode for ESC sequences only (Typed)
)

// slow is the general path: strip (stripMode), escape, expand tabs
// (except nameMode), cut.
func slow[T string | []byte](s T, m mode) string {
	n := len(s)
	if m != nameMode && n > 0 && s[n-1] == '\r' {
		n-- // CRLF line ending
	}
	s = s[:n]

	var out strings.Builder
	out.Grow(min(n, MaxRunes) + 16)
	runes := 0
	for i := 0; i < n; {
		if runes >= MaxRunes {
			out.WriteString(TruncMarker)
			out.WriteString(strconv.Itoa(n - i))
			out.WriteString(" bytes]")
			break
		}
		c := s[i]
		if k := escapeLen(s, i); k > 0 && m == stripMode {
			i += k
			continue
		}
		if c == 0x1b && m == typedMode {
			if k := escSeqLen(s, i); k > 0 {
				i += k
				continue
			}
		}
		switch {
		case c == '\t' && m != nameMode:
			pad := tabWidth - runes%tabWidth
			for range pad {
				out.WriteByte(' ')
			}
			runes += pad
			i++
			continue
		case c < 0x20 || c == 0x7f:
			runes += writeByteEscape(&out, c)
			i++
			continue
		case c < 0x80:
			out.WriteByte(c)
			runes++
			i++
			continue
		}
		r, size := decodeRune(s, i)
		switch {
		case r == utf8.RuneError && size <= 1:
			runes += writeByteEscape(&out, c)
			i++
			continue
		case r < 0xa0 || Invisible(r):
			runes += writeRuneEscape(&out, r)
		default:
			out.WriteRune(r)
			runes++
		}
		i += size
	}
	return out.String()
}

// decodeRune decodes the rune at s[i] without converting the rest of s.
func decodeRune[T string | []byte](s T, i int) (rune, int) {
	var buf [utf8.UTFMax]byte
	k := copy(buf[:], s[i:])
	return utf8.DecodeRune(buf[:k])
}

const hexDigits = "0123456789abcdef"

// writeByteEscape writes c as \xNN and returns the runes written.
func writeByteEscape(out *strings.Builder, c byte) int {
	out.WriteString(`\x`)
	out.WriteByte(hexDigits[c>>4])
	out.WriteByte(hexDigits[c&0xf])
	return 4
}

// writeRuneEscape writes r as \uNNNN (≤ U+FFFF) or \UNNNNNNNN and returns
// the runes written.
func writeRuneEscape(out *strings.Builder, r rune) int {
	if r > 0xffff {
		out.WriteString(`\U`)
		for sh := 28; sh >= 0; sh -= 4 {
			out.WriteByte(hexDigits[r>>sh&0xf])
		}
		return 10
	}
	out.WriteString(`\u`)
	b := [4]byte{hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf]}
	out.Write(b[:])
	return 6
}

// Invisible reports whether r (≥ U+00A0) draws nothing or may draw
// anything: format characters (Unicode category Cf: bidi controls, U+00AD,
// U+200B–U+200D, U+2060–U+2064, U+FEFF, U+FFF9–U+FFFB, the tag characters),
// the unassigned rest of the tag block U+E0000–U+E007F, private use (Co),
// and the line and paragraph separators U+2028/U+2029. Two names that
// differ only in these would look the same.
func Invisible(r rune) bool {
	switch {
	case r == 0xad:
		return true
	case r < 0x600:
		return false
	case r == 0x2028 || r == 0x2029, r >= 0xe0000 && r <= 0xe007f:
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Co)
}
