package spark

import (
	"math"
	"strconv"
)

// Axis is how the sparkline maps tok/s figures onto its eight glyphs. The
// zero Axis is AxisBaseline, the default: a fixed relative scale, so that
// the height of a bar means the same however the window scrolls.
type Axis uint8

const (
	// AxisBaseline is a fixed scale around a reference: the baseline
	// experiment's median tok/s when one is marked, else the current run's
	// median. One glyph level is Step (2.5 %) of the reference, which sits
	// on the middle glyph (level RefLevel): the bars span -10 % (the lowest
	// glyph) to +7.5 % (the highest), and figures beyond clamp to them. A
	// 1 % dip stays on the reference's glyph (noise of a tuned host is
	// well under half a level); an 8 % drop is three levels lower.
	AxisBaseline Axis = iota
	// AxisAuto scales to the window: its lowest figure to its highest,
	// the span at least 5 % of the highest (today's scale before the
	// axis modes: a zoom, which magnifies noise once the window is flat).
	AxisAuto
	// AxisZero scales from 0 to the window's highest figure (or the
	// baseline, if higher): proportions as they are, coarse (an 8 % drop
	// is about one level).
	AxisZero
	numAxes
)

// Step is one glyph level of AxisBaseline, as a fraction of the
// reference; RefLevel is the reference's glyph level (0 is the lowest).
const (
	Step     = 0.025
	RefLevel = 4
)

// Next is the mode after a, in the order the axis key cycles them:
// baseline, auto, zero, baseline.
func (a Axis) Next() Axis { return (a + 1) % numAxes }

// String names the mode: "baseline", "auto", "zero".
func (a Axis) String() string {
	switch a {
	case AxisAuto:
		return "auto"
	case AxisZero:
		return "zero"
	}
	return "baseline"
}

// Describe says what the mode does, for the help and the key's answer.
func (a Axis) Describe() string {
	switch a {
	case AxisAuto:
		return "auto, the window's min to max"
	case AxisZero:
		return "from zero, 0 to the window's max"
	}
	return "around the baseline, -10% to +7.5% of it (of the run's median without one)"
}

// scale maps figures to glyph levels 0-7 for one drawing: lo and hi are
// the figures at the lowest and highest level (what the row's "axis"
// says); ref, for AxisBaseline, the reference.
type scale struct {
	axis   Axis
	lo, hi float64
	ref    float64
	refIs  string // "baseline" or "run median": what ref is, for the row
	ok     bool   // false: no figure to scale (every level is 0)
}

// newScale is the scale of window (NaN gaps skipped) in mode a; base is
// the baseline's median (0 when none is marked), runMed the current run's
// median over the window (NaN when it has none).
func newScale(a Axis, window []float64, base, runMed float64) scale {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range window {
		if !math.IsNaN(x) {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	if math.IsInf(hi, -1) {
		return scale{axis: a}
	}
	switch a {
	case AxisBaseline:
		ref, is := base, "baseline"
		if ref <= 0 {
			ref, is = runMed, "run median"
			if math.IsNaN(ref) || ref <= 0 {
				ref, _ = median(window) // between runs: the window's
				is = "median"
			}
		}
		if ref > 0 {
			return scale{axis: a, ref: ref, refIs: is, ok: true,
				lo: ref * (1 - RefLevel*Step), hi: ref * (1 + (7-RefLevel)*Step)}
		}
		a = AxisAuto // nothing positive to centre on
	case AxisZero:
		hi = max(hi, base)
		if hi <= 0 {
			return scale{axis: a}
		}
		return scale{axis: a, lo: 0, hi: hi, ok: true}
	}
	span := max(hi-lo, math.Abs(hi)*minSpan)
	if span <= 0 {
		return scale{axis: a}
	}
	return scale{axis: a, lo: hi - span, hi: hi, ok: true}
}

// level is x's glyph level, 0-7.
func (s scale) level(x float64) int {
	if !s.ok {
		return 0
	}
	var l float64
	if s.axis == AxisBaseline {
		l = RefLevel + (x/s.ref-1)/Step
	} else {
		l = (x - s.lo) / (s.hi - s.lo) * 7
	}
	return min(max(int(math.Round(l)), 0), 7)
}

// text is the row's scale, "axis 80.2-95.8", and what it is, in long
// form: " (baseline -10%..+7.5%)", " (auto)", " (from 0)".
func (s scale) text() (short, qualifier string) {
	if !s.ok {
		return "", ""
	}
	short = "axis " + axisNum(s.lo) + "-" + axisNum(s.hi)
	switch s.axis {
	case AxisBaseline:
		return short, " (" + s.refIs + " -" + pct(RefLevel*Step) + "..+" + pct((7-RefLevel)*Step) + ")"
	case AxisZero:
		return short, " (from 0)"
	}
	return short, " (auto)"
}

// axisNum is a bound of the axis: "0", "80.2".
func axisNum(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// pct is f as a percentage without trailing zeros: 0.1 is "10%", 0.075
// "7.5%".
func pct(f float64) string { return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%" }
