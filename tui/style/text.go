package style

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Wrap breaks plain text into lines of at most w cells at spaces,
// cutting words longer than a line.
func Wrap(s string, w int) []string {
	w = max(w, 1)
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		for Width(word) > w {
			if line != "" {
				out = append(out, line)
				line = ""
			}
			head := Truncate(word, w)
			if head == "" { // a character wider than the line
				_, n := utf8.DecodeRuneInString(word)
				head = word[:n]
			}
			out = append(out, head)
			word = word[len(head):]
		}
		switch {
		case line == "":
			line = word
		case Width(line)+1+Width(word) <= w:
			line += " " + word
		default:
			out = append(out, line)
			line = word
		}
	}
	if line != "" || len(out) == 0 {
		out = append(out, line)
	}
	return out
}

// TruncateStyled cuts a string that may hold escape sequences.
func TruncateStyled(s string, w int) string {
	if IsASCII(s) {
		return Truncate(s, w)
	}
	return AnsiTruncate(s, w)
}

// IsASCII reports whether s is printable ASCII, where cells equal bytes and
// the grapheme-aware (and much slower) x/ansi functions are not needed.
func IsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// Width is the width of plain (escape-free) text in cells.
func Width(s string) int {
	if IsASCII(s) {
		return len(s)
	}
	return ansi.StringWidth(s)
}

// Truncate cuts plain text to at most w cells.
func Truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if IsASCII(s) {
		if len(s) > w {
			return s[:w]
		}
		return s
	}
	return ansi.Truncate(s, w, "")
}

// TruncateLeft keeps the last w cells of plain text.
func TruncateLeft(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if IsASCII(s) {
		if len(s) > w {
			return s[len(s)-w:]
		}
		return s
	}
	if sw := ansi.StringWidth(s); sw > w {
		return ansi.TruncateLeft(s, sw-w, "")
	}
	return s
}

// PadRight pads plain text with spaces to w cells (never truncates).
func PadRight(s string, w int) string {
	if n := w - Width(s); n > 0 {
		return s + Spaces(n)
	}
	return s
}

// PadLeft right-aligns plain text in w cells with spaces before it (never
// truncates).
func PadLeft(s string, w int) string { return Spaces(w-Width(s)) + s }

const blanks = "                                                                                                                                                                                                                                                                "

func Spaces(n int) string {
	if n <= 0 {
		return ""
	}
	if n <= len(blanks) {
		return blanks[:n]
	}
	return strings.Repeat(" ", n)
}

func Clamp(v, lo, hi int) int {
	if hi < lo {
		hi = lo
	}
	return max(lo, min(v, hi))
}

// Ago formats the age of t at now as "42s", "3m12s", "2h05m", "3d04h"; ""
// when either time is unknown or t is in the future.
func Ago(now, t time.Time) string {
	if now.IsZero() || t.IsZero() || now.Before(t) {
		return ""
	}
	return ShortDur(now.Sub(t))
}

// ShortDur formats a non-negative duration compactly, to the second.
func ShortDur(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m" + Two(s%60) + "s"
	case s < 86400:
		return strconv.FormatInt(s/3600, 10) + "h" + Two(s%3600/60) + "m"
	}
	return strconv.FormatInt(s/86400, 10) + "d" + Two(s%86400/3600) + "h"
}

func Two(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// AnsiTruncate cuts styled text to w cells without breaking sequences.
func AnsiTruncate(s string, w int) string { return ansi.Truncate(s, w, "") }

// StripSGR removes escape sequences, for measuring styled text.
func StripSGR(s string) string { return ansi.Strip(s) }

// Plural is a count of what in words: "1 commit", "2 commits", "2
// stashes" (es after s, x, z, ch and sh). The cockpit's one plural.
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	s := "s"
	for _, end := range []string{"s", "x", "z", "ch", "sh"} {
		if strings.HasSuffix(what, end) {
			s = "es"
			break
		}
	}
	return strconv.Itoa(n) + " " + what + s
}
