package style

import (
	"context"
	"errors"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// ErrText is an error on one sanitised line, for a flash or a banner; a
// cancelled context (the cockpit is quitting) says so.
func ErrText(err error) string {
	if errors.Is(err, context.Canceled) {
		return "cancelled (the cockpit is quitting)"
	}
	return sanitize.String(err.Error())
}

// Age is the age of t at now in one unit, for lists: "40s", "3m", "2h",
// "5d" (Ago gives two); "" when either time is unknown or t is in the
// future (another clock).
func Age(now, t time.Time) string {
	if now.IsZero() || t.IsZero() || now.Before(t) {
		return ""
	}
	s := int64(now.Sub(t) / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m"
	case s < 86400:
		return strconv.FormatInt(s/3600, 10) + "h"
	}
	return strconv.FormatInt(s/86400, 10) + "d"
}

// BaseNames lists the base names of paths, the first n then "+K more" (K
// counted from total when it is larger than the list): "pynccl.py,
// parallel_state.py +3 more".
func BaseNames(paths []string, total, n int) string {
	total = max(total, len(paths))
	var b strings.Builder
	for i, p := range paths {
		if i == n {
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(path.Base(p))
	}
	if more := total - min(n, len(paths)); more > 0 {
		b.WriteString(" +" + strconv.Itoa(more) + " more")
	}
	return b.String()
}
