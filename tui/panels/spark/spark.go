// Package spark is the cockpit's tok/s line: the series of throughput
// figures from event.TokRate events (a gap for an idle period, a new run
// after a relaunch), drawn as block-glyph bars on an axis (Axis: around
// the baseline by default, auto, from zero; the scale is on the row) with
// the latest figure, the median over the bars drawn, the accept length
// and the baseline, the bars under it marked.
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

	axis Axis    // how the bars are scaled
	base float64 // the baseline's median tok/s, 0 when none is marked

	cache    string
	cacheKey cacheKey
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

// SetAxis sets how the bars are scaled (the axis key cycles it).
func (s *Series) SetAxis(a Axis) { s.axis = a % numAxes }

// Axis is how the bars are scaled.
func (s *Series) Axis() Axis { return s.axis }

// SetBaseline gives the baseline experiment's median tok/s (0 or less:
// none is marked): the row names it, AxisBaseline centres on it, and bars
// more than LowBy under it are drawn in the Warn tone.
func (s *Series) SetBaseline(tokPerSec float64) {
	if !(tokPerSec > 0) || math.IsInf(tokPerSec, 0) {
		tokPerSec = 0
	}
	s.base = tokPerSec
}

// LowBy is how far under the baseline, as a fraction of it, a figure is
// drawn as below it (the Warn tone: yellow, bold without colours): beyond
// the launch-to-launch noise of a tuned host (A/A ±0.3-1 %) and the
// within-launch jitter of the log's figures, under one level of
// AxisBaseline.
const LowBy = 0.02

// minBars is how many bars the row keeps before its figures give way.
// What the axis is (the words after its bounds) is shown only with at
// least qualifierBars bars: the bars are the history, and the help says
// what the modes are.
const (
	minBars       = 10
	qualifierBars = 40
)

// Render draws "tok/s <bars>  82.4 now  median 82.1  accept 2.31  base
// 89.1  axis 80.2-95.8 (baseline -10%..+7.5%)" in width cells. The bars
// fill whatever the text leaves, newest at the right, and the median and
// the axis are over exactly the points drawn. Narrow rows drop, in turn,
// what the axis is, the accept length, the median, the baseline and the
// axis, keeping at least minBars bars. The line is cached until the
// width, the series, the axis mode, the baseline or the styles (st.Gen)
// change.
func (s *Series) Render(st *style.Styles, width int) string {
	key := cacheKey{width: width, seq: s.seq, gen: st.Gen, axis: s.axis, base: s.base}
	if key == s.cacheKey && s.cache != "" {
		return s.cache
	}
	s.cacheKey = key
	s.cache = s.draw(st, width)
	return s.cache
}

// cacheKey is what a rendered row depends on.
type cacheKey struct {
	width, seq, gen int
	axis            Axis
	base            float64
}

// The row's optional figures, in the order they are drawn after "now";
// giveWay is the order they are dropped in when the row is narrow.
const (
	partMedian = iota
	partAccept
	partBase
	partAxis
	partQualifier
	numParts
)

var giveWay = [numParts]int{partQualifier, partAccept, partMedian, partBase, partAxis}

func (s *Series) draw(st *style.Styles, width int) string {
	const label = "tok/s "
	if !s.hasLast && len(s.vals) == 0 {
		return Note(st, width, "waiting for throughput lines in the log")
	}
	nowTxt := "-"
	if s.hasLast {
		nowTxt = strconv.FormatFloat(s.last, 'f', 1, 64)
	}
	var txt [numParts]string
	txt[partAccept] = strconv.FormatFloat(s.accept, 'f', 2, 64)
	if s.base > 0 {
		txt[partBase] = strconv.FormatFloat(s.base, 'f', 1, 64)
	}
	has := [numParts]bool{true, s.hasAccept, s.base > 0, true, true}
	partW := func(p int) int {
		switch p {
		case partMedian:
			return len("  median ") + len(txt[p])
		case partAccept:
			return len("  accept ") + len(txt[p])
		case partBase:
			return len("  base ") + len(txt[p])
		case partAxis:
			return 2 + len(txt[p])
		}
		return len(txt[p])
	}
	var keep [numParts]bool
	// fit keeps the parts there are, dropping them in giveWay order until
	// minBars bars fit; it returns the width left for the bars.
	fit := func() int {
		statsW := 2 + len(nowTxt) + len(" now")
		for p := range numParts {
			keep[p] = has[p] && txt[p] != ""
			if keep[p] {
				statsW += partW(p)
			}
		}
		for _, p := range giveWay {
			need := minBars
			if keep[partQualifier] {
				need = qualifierBars
			}
			if width-len(label)-statsW >= need {
				break
			}
			if keep[p] {
				keep[p] = false
				statsW -= partW(p)
			}
		}
		return width - len(label) - statsW
	}
	// The median and the axis are over exactly the bars drawn, and the
	// bar count depends on their widths: settle it in a few rounds
	// (widths change by at most a few digits). The first guess allows a
	// median and bounds as long as "now".
	txt[partMedian] = nowTxt + "0"
	txt[partAxis] = "axis " + nowTxt + "-" + nowTxt
	txt[partQualifier] = " (run median -10%..+7.5%)"
	var window []float64
	var sc scale
	bw := fit()
	for range 4 {
		n := style.Clamp(bw, 0, len(s.vals))
		window = window[:0]
		for i := len(s.vals) - n; i < len(s.vals); i++ {
			window = append(window, s.at(i))
		}
		// The median: the drawn points of the current run only.
		first := len(window) - style.Clamp(s.total-s.runFrom, 0, len(window))
		med, ok := median(window[first:])
		txt[partMedian] = "-"
		if ok {
			txt[partMedian] = strconv.FormatFloat(med, 'f', 1, 64)
		} else {
			med = math.NaN()
		}
		sc = newScale(s.axis, window, s.base, med)
		txt[partAxis], txt[partQualifier] = sc.text()
		next := fit()
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
	s.bars(&b, st, window, sc)
	b.WriteString("  ")
	b.WriteString(st.Accent.Render(nowTxt))
	b.WriteString(st.Dim.Render(" now"))
	used := len(label) + max(bw, 0) + 2 + len(nowTxt) + len(" now")
	for p := range numParts {
		if !keep[p] {
			continue
		}
		used += partW(p)
		switch p {
		case partMedian:
			b.WriteString(st.Dim.Render("  median "))
			b.WriteString(txt[p])
		case partAccept:
			b.WriteString(st.Dim.Render("  accept "))
			b.WriteString(txt[p])
		case partBase:
			b.WriteString(st.Dim.Render("  base "))
			b.WriteString(txt[p])
		case partAxis:
			b.WriteString(st.Dim.Render("  " + txt[p]))
		case partQualifier:
			b.WriteString(st.Dim.Render(txt[p]))
		}
	}
	if used > width {
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

// bars writes v as block glyphs on sc, a gap (NaN) as a blank: runs of
// figures more than LowBy under the baseline in the Warn tone, the rest
// in the Spark tone.
func (s *Series) bars(b *strings.Builder, st *style.Styles, v []float64, sc scale) {
	var run strings.Builder
	run.Grow(len(v) * 3)
	low := false
	flush := func() {
		if low {
			b.WriteString(st.Warn.Render(run.String()))
		} else {
			b.WriteString(st.Spark.Render(run.String()))
		}
		run.Reset()
	}
	for _, x := range v {
		isLow := s.base > 0 && !math.IsNaN(x) && x < s.base*(1-LowBy)
		if isLow != low && !math.IsNaN(x) {
			flush()
			low = isLow
		}
		if math.IsNaN(x) {
			run.WriteByte(' ')
			continue
		}
		run.WriteString(Glyphs[sc.level(x)])
	}
	flush()
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
