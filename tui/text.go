package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// isASCII reports whether s is printable ASCII, where cells equal bytes and
// the grapheme-aware (and much slower) x/ansi functions are not needed.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// textWidth is the width of plain (escape-free) text in cells.
func textWidth(s string) int {
	if isASCII(s) {
		return len(s)
	}
	return ansi.StringWidth(s)
}

// truncate cuts plain text to at most w cells.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if isASCII(s) {
		if len(s) > w {
			return s[:w]
		}
		return s
	}
	return ansi.Truncate(s, w, "")
}

// truncateLeft keeps the last w cells of plain text.
func truncateLeft(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if isASCII(s) {
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

// padRight pads plain text with spaces to w cells (never truncates).
func padRight(s string, w int) string {
	if n := w - textWidth(s); n > 0 {
		return s + spaces(n)
	}
	return s
}

const blanks = "                                                                                                                                                                                                                                                                "

func spaces(n int) string {
	if n <= 0 {
		return ""
	}
	if n <= len(blanks) {
		return blanks[:n]
	}
	return strings.Repeat(" ", n)
}

func clamp(v, lo, hi int) int {
	if hi < lo {
		hi = lo
	}
	return max(lo, min(v, hi))
}

// ago formats the age of t at now as "42s", "3m12s", "2h05m", "3d04h"; ""
// when either time is unknown or t is in the future.
func ago(now, t time.Time) string {
	if now.IsZero() || t.IsZero() || now.Before(t) {
		return ""
	}
	return shortDur(now.Sub(t))
}

// shortDur formats a non-negative duration compactly, to the second.
func shortDur(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m" + two(s%60) + "s"
	case s < 86400:
		return strconv.FormatInt(s/3600, 10) + "h" + two(s%3600/60) + "m"
	}
	return strconv.FormatInt(s/86400, 10) + "d" + two(s%86400/3600) + "h"
}

func two(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// ansiTruncate cuts styled text to w cells without breaking sequences.
func ansiTruncate(s string, w int) string { return ansi.Truncate(s, w, "") }

// stripSGR removes escape sequences, for measuring styled text.
func stripSGR(s string) string { return ansi.Strip(s) }
