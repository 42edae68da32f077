package journal

import (
	"strconv"
	"strings"
)

// Session marks the start of another cockpit session appending to an
// existing journal (--journal FILE again, e.g. after a crash): it carries
// the new session's header (Created is when it began; Format and Version
// are this package's). Append writes it as the first line it adds. It is
// an event payload (kind "session"); the header's fields are its JSON
// fields, as on line 1.
type Session struct {
	Header
}

// Kind implements event.Payload.
func (Session) Kind() string { return "session" }

// DescribeSession says who recorded the session h heads in one sanitised line,
// "flightdeck VERSION pid N (user@hostname)" with the parts that are
// known: "flightdeck v0.5.0 pid 4242 (ana@laptop)".
func DescribeSession(h Header) string {
	parts := []string{"flightdeck"}
	if h.Flightdeck != "" {
		parts = append(parts, h.Flightdeck)
	}
	if h.PID != 0 {
		parts = append(parts, "pid "+strconv.Itoa(h.PID))
	}
	switch {
	case h.User != "" && h.Hostname != "":
		parts = append(parts, "("+h.User+"@"+h.Hostname+")")
	case h.User != "":
		parts = append(parts, "(user "+h.User+")")
	case h.Hostname != "":
		parts = append(parts, "(on "+h.Hostname+")")
	}
	if h.Name != "" {
		parts = append(parts, "session "+strconv.Quote(h.Name))
	}
	return OneLine(strings.Join(parts, " "))
}
