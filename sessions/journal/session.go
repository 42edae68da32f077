package journal

import (
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// DescribeSession says who recorded the session h heads in one sanitised line,
// "flightdeck VERSION pid N (user@hostname)" with the parts that are
// known: "flightdeck v0.5.0 pid 4242 (ana@laptop)".
func DescribeSession(h event.SessionHeader) string {
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
	return sanitize.OneLine(strings.Join(parts, " "))
}
