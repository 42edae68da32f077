package replay

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The replay's timeline: one line at the bottom of the screen with the
// play state, position / duration (h:mm:ss), speed, a bar with the
// experiments' starts and ends and the notes marked, and the experiment
// open at the position. While t is pressed it is the time input instead.

// maxClock bounds typed times (and so durations built from them): 100000
// hours is far past any journal.
const maxClock = 100000 * time.Hour

// errClock is the error of a time that is not h:mm:ss, mm:ss or seconds.
var errClock = errors.New("not a time: use h:mm:ss, mm:ss, seconds or a duration such as 90s")

// ParseClock reads a position in a journal, as typed after t in replay or
// given to replay --at: "1:02:03" (h:mm:ss), "62:03" (mm:ss, minutes may
// pass 59), "3723" or "3723.5" (seconds), or a Go duration with units
// ("1h2m3s", "90s"). Spaces around it are ignored. It returns an error
// wrapping errClock, with the text, for anything else, negative times and
// times past 100,000 h included.
func ParseClock(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := func() (time.Duration, error) { return 0, fmt.Errorf("%q: %w", style.Truncate(s, 20), errClock) }
	if s == "" {
		return bad()
	}
	if strings.ContainsAny(s, "hms") {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > maxClock {
			return bad()
		}
		return d, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return bad()
	}
	// The last part is seconds, possibly fractional; the others whole
	// numbers, each after the first below 60.
	secs, err := strconv.ParseFloat(parts[len(parts)-1], 64)
	last := parts[len(parts)-1]
	if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || secs < 0 || last == "" || strings.ContainsAny(last, "+-eEpPxXiInN_") {
		return bad()
	}
	if len(parts) > 1 && secs >= 60 {
		return bad()
	}
	total := secs
	mult := 60.0
	for i := len(parts) - 2; i >= 0; i-- {
		p := parts[i]
		if p == "" || len(p) > 9 || strings.Trim(p, "0123456789") != "" {
			return bad()
		}
		v, _ := strconv.Atoi(p)
		if i > 0 && v >= 60 {
			return bad()
		}
		total += float64(v) * mult
		mult *= 60
	}
	if total > maxClock.Seconds() {
		return bad()
	}
	return time.Duration(math.Round(total * float64(time.Second))), nil
}

// fmtClock formats a position as h:mm:ss, rounded down to the second;
// negative durations format as 0:00:00.
func fmtClock(d time.Duration) string {
	s := max(int64(d/time.Second), 0)
	return strconv.FormatInt(s/3600, 10) + ":" + style.Two(s%3600/60) + ":" + style.Two(s%60)
}

// timeline renders the replay's bottom line for a w-cell terminal.
func (r *Model) timeline(w int) string {
	m := r.inner
	st := m.Styles()
	if r.jumping {
		hint := "  h:mm:ss, mm:ss or seconds; enter jumps, esc cancels"
		r.jump.SetWidth(max(min(12, w-10), 1))
		in := st.Accent.Render("jump to ") + r.jump.View()
		return style.TruncateStyled(in+st.Dim.Render(style.Truncate(hint, max(w-10-12, 0))), w)
	}
	state, stTone := "paused", st.Warn
	switch {
	case r.seeking:
		state, stTone = "seek", st.Dim
	case r.playing:
		state, stTone = "play", st.OK
	case r.fol != nil && r.fol.live:
		state, stTone = "live", st.OK
	}
	pos := fmtClock(r.pos) + "/" + fmtClock(r.dur)
	speed := strconv.Itoa(r.speed) + "x"
	left := stTone.Render(style.PadRight(state, 6)) + " " + pos + "  " + st.Accent.Render(speed)
	lw := 6 + 1 + style.Width(pos) + 2 + style.Width(speed)
	name := ""
	if cur := m.Experiments().Ledger().Current(); cur != nil {
		name = component.JoinWords(sanitize.String(cur.ID), sanitize.String(cur.Name))
		name = style.Truncate(name, 32)
	}
	const minBar = 10
	barW := w - lw - 2
	// A follower's LIVE (or why not) at the right end: kept before the
	// bar and the experiment's name.
	tail, tailW := "", 0
	if r.fol != nil {
		tail, tailW = r.followTail()
		if tailW > 0 {
			barW -= 2 + tailW
		}
	}
	if name != "" {
		barW -= 2 + style.Width(name)
		if barW < minBar {
			barW += 2 + style.Width(name)
			name = ""
		}
	}
	var b strings.Builder
	b.WriteString(left)
	if barW >= minBar {
		b.WriteString("  ")
		b.WriteString(r.bar(barW))
	}
	if name != "" {
		b.WriteString("  " + st.Title.Render(name))
	}
	if tail != "" {
		used := lw
		if barW >= minBar {
			used += 2 + barW
		}
		if name != "" {
			used += 2 + style.Width(name)
		}
		if pad := w - used - tailW; pad >= 2 {
			b.WriteString(strings.Repeat(" ", pad))
		} else {
			b.WriteString("  ")
		}
		b.WriteString(tail)
	}
	return style.TruncateStyled(b.String(), w)
}

// bar is the timeline's bar, n cells: "=" played, "-" to come, "[" an
// experiment's start, "]" its end, "n" a note, "#" the position (over a
// mark in the same cell).
func (r *Model) bar(n int) string {
	st := r.inner.Styles()
	cells := make([]byte, n)
	cell := func(t time.Duration) int {
		if r.dur <= 0 {
			return 0
		}
		return style.Clamp(int(int64(n)*int64(t)/int64(r.dur)), 0, n-1)
	}
	at := cell(r.pos)
	for i := range cells {
		cells[i] = '-'
		if i < at {
			cells[i] = '='
		}
	}
	for _, mk := range r.marks {
		c := byte(0)
		switch mk.Kind {
		case event.KindExperimentStart:
			c = '['
		case event.KindExperimentEnd:
			c = ']'
		case event.KindNote:
			c = 'n'
		}
		if c == 0 {
			continue
		}
		i := cell(mk.T)
		// A start drawn over an end in the same cell stays visible.
		if cells[i] != '[' {
			cells[i] = c
		}
	}
	cells[at] = '#'
	var b strings.Builder
	run := func(from, to int) {
		if from >= to {
			return
		}
		s := string(cells[from:to])
		switch c := cells[from]; {
		case c == '#':
			b.WriteString(st.Accent.Render(s))
		case c == '=':
			b.WriteString(st.Spark.Render(s))
		case c == '-':
			b.WriteString(st.Dim.Render(s))
		default:
			b.WriteString(st.Key.Render(s))
		}
	}
	from := 0
	for i := 1; i <= n; i++ {
		if i == n || cells[i] != cells[from] {
			run(from, i)
			from = i
		}
	}
	return b.String()
}
