package tui

import "github.com/flightdeck-dev/flightdeck/remote/sanitize"

// Every remote string (log lines, host names, error texts, GPU names, the
// HEAD text) passes through these before it is stored in the model, so View
// never sees an escape sequence, a control character or a bidi override.

func sanitizeLine(b []byte) string { return sanitize.Line(b) }

func sanitizeString(s string) string { return sanitize.String(s) }
