// Package spark is the cockpit's tok/s line: the series of throughput
// figures from event.TokRate events (a gap for an idle period, a new run
// after a relaunch), drawn as block-glyph bars with the latest figure,
// the median over the bars drawn and the accept length.
package spark

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Glyphs are the eight block elements the bars are drawn with, lowest
// first. They are narrow in every terminal (unlike braille or emoji), so
// tmux keeps columns.
var Glyphs = [8]string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

// Points is how many figures a Series keeps (event.ScreenRatePoints):
// wider than any terminal.
const Points = event.ScreenRatePoints

// minSpan: the y range is at least 5% of the window max, so ±0.5 tok/s
// noise is not a cliff.
const minSpan = 0.05

// Series is the tok/s series from event.TokRate events. A Dropped rate
// (the idle-gap artefact) becomes a gap (NaN), drawn as a blank. The zero
// value is an empty series.
type Series struct {
	vals      []float64 // ring buffer, len ≤ Points
	head      int       // index of the oldest value once full
	last      float64   // latest kept rate, tok/s
	hasLast   bool
	accept    float64 // latest accept length
	hasAccept bool
	ranks     int
	seq       int // bumped on every change, for the render cache
	total     int // values ever pushed
	runFrom   int // total at the start of the current run: the median covers only its values

	cache    string
	cacheKey [3]int // width, seq, styles generation
}

func (s *Series) push(v float64) {
	s.total++
	if len(s.vals) < Points {
		s.vals = append(s.vals, v)
	} else {
		s.vals[s.head] = v
		s.head = (s.head + 1) % Points
	}
	s.seq++
}

// at returns the i-th value, oldest first.
func (s *Series) at(i int) float64 {
	return s.vals[(s.head+i)%len(s.vals)]
}

// EndRun marks the end of a server run (a relaunch, a kill, a new log):
// the bars so far stay, after a gap, but "now" waits for the next run's
// first figure and the median covers only the next run's.
func (s *Series) EndRun() {
	if n := len(s.vals); n > 0 && !math.IsNaN(s.at(n-1)) {
		s.push(math.NaN())
	}
	s.runFrom = s.total
	s.hasLast, s.hasAccept = false, false
	s.seq++
}

// Apply adds one figure, or a gap for a dropped one (one gap per idle
// period, not one per dropped line).
func (s *Series) Apply(r event.TokRate) {
	if r.Dropped || math.IsNaN(r.TokPerSec) || math.IsInf(r.TokPerSec, 0) {
		// Mark one gap per idle period, not one per dropped line.
		if n := len(s.vals); n > 0 && !math.IsNaN(s.at(n-1)) {
			s.push(math.NaN())
		}
		return
	}
	s.push(r.TokPerSec)
	s.last, s.hasLast = r.TokPerSec, true
	s.ranks = r.Ranks
	if r.HasAccept {
		s.accept, s.hasAccept = r.AcceptLength, true
	}
}

// Render draws "tok/s <bars>  82.4 now  median 82.1  accept 2.31" in width
// cells. The bars fill whatever the text leaves, newest at the right, and
// the median is over exactly the points drawn. The line is cached until
// the width, the series or the styles (st.Gen) change.
func (s *Series) Render(st *style.Styles, width int) string {
	key := [3]int{width, s.seq, st.Gen}
	if key == s.cacheKey && s.cache != "" {
		return s.cache
	}
	s.cacheKey = key
	s.cache = s.draw(st, width)
	return s.cache
}

func (s *Series) draw(st *style.Styles, width int) string {
	const label = "tok/s "
	if !s.hasLast && len(s.vals) == 0 {
		return Note(st, width, "waiting for throughput lines in the log")
	}
	nowTxt := "-"
	if s.hasLast {
		nowTxt = strconv.FormatFloat(s.last, 'f', 1, 64)
	}
	accTxt := strconv.FormatFloat(s.accept, 'f', 2, 64)
	// Narrow panels drop the accept length, then the median, keeping at
	// least 8 bars; the width estimate allows a median as long as "now".
	withMed, withAcc := true, s.hasAccept
	statsW := func(medW int) int {
		w := 2 + len(nowTxt) + len(" now")
		if withMed {
			w += len("  median ") + medW
		}
		if withAcc {
			w += len("  accept ") + len(accTxt)
		}
		return w
	}
	if width-len(label)-statsW(len(nowTxt)+1) < 8 {
		withAcc = false
		if width-len(label)-statsW(len(nowTxt)+1) < 8 {
			withMed = false
		}
	}
	// The median is over exactly the bars drawn, and the bar count depends
	// on the median's width: settle it in a few rounds (widths change by at
	// most a digit).
	var window []float64
	medTxt := ""
	bw := width - len(label) - statsW(len(nowTxt))
	for range 4 {
		n := style.Clamp(bw, 0, len(s.vals))
		window = window[:0]
		for i := len(s.vals) - n; i < len(s.vals); i++ {
			window = append(window, s.at(i))
		}
		// The median: the drawn points of the current run only.
		first := len(window) - style.Clamp(s.total-s.runFrom, 0, len(window))
		medTxt = "-"
		if med, ok := median(window[first:]); ok {
			medTxt = strconv.FormatFloat(med, 'f', 1, 64)
		}
		next := width - len(label) - statsW(len(medTxt))
		if next >= n && next <= bw {
			bw = next
			break
		}
		bw = next
	}
	if bw < len(window) { // did not settle: keep the width exact
		window = window[len(window)-max(bw, 0):]
	}

	var b strings.Builder
	b.WriteString(st.Title.Render("tok/s"))
	b.WriteByte(' ')
	b.WriteString(style.Spaces(bw - len(window)))
	b.WriteString(st.Spark.Render(bars(window)))
	b.WriteString("  ")
	b.WriteString(st.Accent.Render(nowTxt))
	b.WriteString(st.Dim.Render(" now"))
	if withMed {
		b.WriteString(st.Dim.Render("  median "))
		b.WriteString(medTxt)
	}
	if withAcc {
		b.WriteString(st.Dim.Render("  accept "))
		b.WriteString(accTxt)
	}
	if len(label)+max(bw, 0)+statsW(len(medTxt)) > width {
		// Narrower than the figures alone: cut, never wider than the
		// terminal.
		return style.AnsiTruncate(b.String(), width)
	}
	return b.String()
}

// Note is the line in place of the series, width cells at most: "tok/s"
// and text, dimmed (no figure yet, or no log followed).
func Note(st *style.Styles, width int, text string) string {
	return st.Title.Render(style.Truncate("tok/s", width)) + " " + st.Dim.Render(style.Truncate(text, width-len("tok/s ")))
}

// bars maps values to block glyphs between the window's max and
// max-span (span at least minSpan of the max); NaN is a gap.
func bars(v []float64) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		if !math.IsNaN(x) {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	span := max(hi-lo, math.Abs(hi)*minSpan)
	var b strings.Builder
	b.Grow(len(v) * 3)
	for _, x := range v {
		switch {
		case math.IsNaN(x):
			b.WriteByte(' ')
		case span <= 0:
			b.WriteString(Glyphs[0])
		default:
			lvl := int(math.Round((x - (hi - span)) / span * 7))
			b.WriteString(Glyphs[style.Clamp(lvl, 0, 7)])
		}
	}
	return b.String()
}

// median of the non-gap values; ok is false when there are none.
func median(v []float64) (float64, bool) {
	xs := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m], true
	}
	return (xs[m-1] + xs[m]) / 2, true
}
