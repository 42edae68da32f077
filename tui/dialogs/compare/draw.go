package compare

import (
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	scompare "github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/experiments"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The compare view's drawing: the two experiments, the results with
// their verdicts, the fingerprint table, the commit range and the A/A
// noise, as scrollable lines in a box over the body area.

// View implements component.Dialog: a box over the whole area between
// the header and the footer of a w x h screen, its content scrolled to
// Top; the title says which lines show when they do not all fit.
func (v *View) View(st *style.Styles, w, h int) component.Box {
	avail := h - 2
	if avail < 3 || w < 12 {
		return component.Box{}
	}
	iw := w - 4
	content := v.lines(st, iw)
	bh := avail - 2
	v.height = bh
	v.top = style.Clamp(v.top, 0, len(content)-bh)
	end := min(v.top+bh, len(content))
	body := slices.Clone(content[v.top:end])
	for len(body) < bh {
		body = append(body, "")
	}
	title := "compare " + sanitize.String(v.A) + " vs " + sanitize.String(v.B)
	if len(content) > bh {
		title += "  " + strconv.Itoa(v.top+1) + "-" + strconv.Itoa(end) + "/" + strconv.Itoa(len(content))
	}
	return component.Box{Title: title, Frame: style.Accent, Body: body, Width: iw}
}

// lines is the view's content for inner width iw.
func (v *View) lines(st *style.Styles, iw int) []string {
	d := v.diff
	var out []string
	add := func(s string) { out = append(out, style.TruncateStyled(s, iw)) }
	side := func(label string, e *ledger.Experiment, why string) {
		s := st.Accent.Render(label) + "  "
		if e == nil {
			add(s + st.Dim.Render("unknown"))
			return
		}
		s += st.Title.Render(component.JoinWords(sanitize.String(e.ID), sanitize.String(e.Name)))
		s += st.Dim.Render(" (" + why + ")  " + expWhen(e))
		add(s)
	}
	side("A", d.A, v.AWhy)
	side("B", d.B, v.BWhy)
	if n := len(d.LaunchesA) + len(d.LaunchesB); n > 2 {
		add(st.Dim.Render("   launches of each configuration: " + launchIDs(d.LaunchesA) + " vs " + launchIDs(d.LaunchesB)))
	}
	out = append(out, "")
	out = append(out, v.results(st, iw)...)
	out = append(out, "")
	out = append(out, v.fields(st, iw)...)
	out = append(out, "")
	out = append(out, v.commits(st, iw)...)
	out = append(out, "")
	out = append(out, v.noise(st, iw)...)
	return out
}

// expWhen is "started 10:27:10, killed after 35s" or "open".
func expWhen(e *ledger.Experiment) string {
	s := "started " + experiments.Clock(e.Started)
	if e.Open() {
		return s + ", open"
	}
	how := firstOf(experiments.EndedHow(e.EndedBy), "closed")
	if dur := e.Ended.Sub(e.Started); dur >= 0 {
		return s + ", " + how + " after " + style.ShortDur(dur)
	}
	return s + ", " + how
}

// launchIDs is "e1, e4, e5" (sanitised), "-" when none.
func launchIDs(es []*ledger.Experiment) string {
	if len(es) == 0 {
		return "-"
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = sanitize.String(e.ID)
	}
	return strings.Join(ids, ", ")
}

// results is the results section: per metric A, B, delta, then
// the verdict with p and n and the A/A noise (on the same line when it
// fits).
func (v *View) results(st *style.Styles, iw int) []string {
	d := v.diff
	if len(d.Results) == 0 {
		return []string{st.Title.Render("results") + st.Dim.Render(style.Truncate("  none: neither side has tok/s samples or a benchmark", iw-7))}
	}
	type row struct{ metric, a, b, delta, verdict string }
	rows := make([]row, len(d.Results))
	head := row{"results", "A " + sanitize.String(d.A.ID), "B " + sanitize.String(d.B.ID), "delta", ""}
	wm, wa, wb, wd := style.Width(head.metric), style.Width(head.a), style.Width(head.b), style.Width(head.delta)
	for i := range d.Results {
		r := &d.Results[i]
		rw := row{metric: sanitize.String(report.FormatMetric(r)), a: scompare.FormatSummary(r.A, r.Unit), b: scompare.FormatSummary(r.B, r.Unit),
			delta: report.FormatRowDelta(r), verdict: sanitize.String(experiments.Chrome(r.VerdictText()))}
		rows[i] = rw
		wm, wa, wb, wd = max(wm, style.Width(rw.metric)), max(wa, style.Width(rw.a)), max(wb, style.Width(rw.b)), max(wd, style.Width(rw.delta))
	}
	wm = min(wm, 28) // "ITL median per request (ms)"
	line := func(r row, t style.Tone) string {
		return t.Render(style.PadRight(style.Truncate(r.metric, wm), wm)) + "  " + style.PadRight(r.a, wa) + "  " + style.PadRight(r.b, wb) + "  " + style.PadLeft(r.delta, wd)
	}
	fixed := wm + 2 + wa + 2 + wb + 2 + wd
	out := []string{style.TruncateStyled(st.Title.Render(strings.TrimRight(line(head, st.Title), " ")), iw)}
	for i, r := range rows {
		vt := st.Tone(experiments.VerdictTone(d.Results[i].Verdict, d.Results[i].WithinNoise))
		l := line(r, st.Text)
		if fixed+2+style.Width(r.verdict) <= iw {
			out = append(out, l+"  "+vt.Render(r.verdict))
			continue
		}
		out = append(out, style.TruncateStyled(l, iw))
		for _, w := range style.Wrap(r.verdict, iw-4) {
			out = append(out, "    "+vt.Render(w))
		}
	}
	return out
}

// fields is the fingerprint table: changed rows first and
// highlighted, rows known on one side only dimmed with a "?", unchanged
// rows folded into one line unless a shows them.
func (v *View) fields(st *style.Styles, iw int) []string {
	d := v.diff
	changed, unknown, same := 0, 0, 0
	for _, f := range d.Fields {
		switch {
		case f.Changed:
			changed++
		case f.Unknown:
			unknown++
		default:
			same++
		}
	}
	sum := []string{strconv.Itoa(changed) + " changed"}
	if unknown > 0 {
		sum = append(sum, strconv.Itoa(unknown)+" known on one side only")
	}
	sum = append(sum, strconv.Itoa(same)+" unchanged")
	out := []string{style.TruncateStyled(st.Title.Render("fingerprint")+st.Dim.Render("  "+strings.Join(sum, ", ")), iw)}
	if len(d.Fields) == 0 {
		return append(out, st.Dim.Render(style.Truncate("  none recorded", iw)))
	}
	wg, wn := len("group"), len("name")
	for _, f := range d.Fields {
		wg, wn = max(wg, style.Width(sanitize.String(f.Group))), max(wn, style.Width(sanitize.String(f.Name)))
	}
	wg, wn = min(wg, 8), min(wn, 28)
	rest := max(iw-2-wg-2-wn-2-2, 8)
	wa := rest / 2
	wb := rest - wa
	cell := func(s string, w int) string {
		if style.Width(s) > w {
			s = style.Truncate(s, max(w-3, 1)) + "..."
		}
		return style.PadRight(s, w)
	}
	line := func(mark, g, n, a, b string, t style.Tone) string {
		return style.TruncateStyled(t.Render(strings.TrimRight(mark+" "+cell(g, wg)+"  "+cell(n, wn)+"  "+cell(a, wa)+"  "+cell(b, wb), " ")), iw)
	}
	out = append(out, line(" ", "group", "name", "A "+sanitize.String(d.A.ID), "B "+sanitize.String(d.B.ID), st.Title))
	val := func(s string) string { return sanitize.String(report.FieldValue(s)) }
	for _, f := range d.Fields {
		g, n, a, b := sanitize.String(f.Group), sanitize.String(f.Name), val(f.A), val(f.B)
		switch {
		case f.Changed:
			out = append(out, line("~", g, n, a, b, st.Warn))
		case f.Unknown:
			if f.A == "" {
				a = "? (not captured)"
			}
			if f.B == "" {
				b = "? (not captured)"
			}
			out = append(out, line("?", g, n, a, b, st.Dim))
		case v.all:
			out = append(out, line(" ", g, n, a, b, st.Dim))
		}
	}
	switch {
	case same > 0 && !v.all:
		out = append(out, st.Dim.Render(style.Truncate("  "+strconv.Itoa(same)+" unchanged - a shows them", iw)))
	case same > 0:
		out = append(out, st.Dim.Render(style.Truncate("  a folds the unchanged rows", iw)))
	}
	return out
}

// commits is the commit range: the commits B has that A lacks (+)
// and those A has that B lacks (-), as `git log --oneline` lines, and
// the files the range touches.
func (v *View) commits(st *style.Styles, iw int) []string {
	d := v.diff
	title := st.Title.Render("commits")
	from, to := headOf(d.A), headOf(d.B)
	span := ""
	if from != "" && to != "" {
		span = "  " + git.ShortID(sanitize.String(from)) + ".." + git.ShortID(sanitize.String(to))
	}
	r := d.Range
	if r == nil {
		var note string
		var tn style.Tone
		switch {
		case v.reading:
			note, tn = "reading git log ...", st.Dim
		case v.rangeErr != "":
			note, tn = "git log failed: "+v.rangeErr, st.Crit
		case from != "" && from == to:
			note, tn = "same commit", st.Dim
		default:
			note, tn = firstOf(sanitize.String(d.RangeNote), "not recorded"), st.Dim
		}
		return []string{style.TruncateStyled(title+st.Dim.Render(span)+"  "+tn.Render(note), iw)}
	}
	out := []string{style.TruncateStyled(title+st.Dim.Render(span+"  "+sanitize.String(d.RangeNote)), iw)}
	if c, ok := d.Culprit(); ok {
		// Where the measurements put the change, before the commits: the
		// newest commit is not the cause for being on top.
		tn := st.Dim
		if c.Decided {
			tn = st.Warn
		}
		for _, l := range style.Wrap(experiments.Chrome(c.Text()), iw-2) {
			out = append(out, tn.Render("  "+l))
		}
	}
	list := func(sign, what string, items []string, total int, t style.Tone) {
		if total == 0 && len(items) == 0 {
			return
		}
		out = append(out, st.Dim.Render(style.Truncate("  "+style.Plural(max(total, len(items)), "commit")+" "+what, iw)))
		for _, c := range items {
			out = append(out, style.TruncateStyled(t.Render("  "+sign+" "+sanitize.FirstLine(c)), iw))
		}
		if more := total - len(items); more > 0 {
			out = append(out, st.Dim.Render(style.Truncate("    ... "+strconv.Itoa(more)+" more", iw)))
		}
	}
	list("+", "in B, not in A", r.Ahead, r.AheadTotal, st.Text)
	list("-", "in A, not in B (B is behind)", r.Behind, r.BehindTotal, st.Warn)
	if n := max(r.FilesTotal, len(r.Files)); n > 0 {
		out = append(out, st.Dim.Render(style.Truncate("  "+style.Plural(n, "file")+" touched", iw)))
		for _, f := range r.Files {
			out = append(out, style.Truncate("    "+sanitize.FirstLine(f), iw))
		}
		if more := r.FilesTotal - len(r.Files); more > 0 {
			out = append(out, st.Dim.Render(style.Truncate("    ... "+strconv.Itoa(more)+" more", iw)))
		}
	}
	if e := sanitize.String(r.Err); e != "" {
		out = append(out, st.Warn.Render(style.Truncate("  incomplete: "+e, iw)))
	}
	return out
}

// noise is the A/A noise measured in the session, one line per
// configuration with at least two launches.
func (v *View) noise(st *style.Styles, iw int) []string {
	d := v.diff
	title := st.Title.Render("A/A noise")
	if len(d.Noise) == 0 {
		return []string{style.TruncateStyled(title+st.Dim.Render("  not measured: R relaunches a configuration to measure it"), iw)}
	}
	out := []string{style.TruncateStyled(title+st.Dim.Render("  launch to launch, same configuration"), iw)}
	for _, n := range d.Noise {
		out = append(out, style.Truncate("  "+sanitize.String(n.Config)+"  "+scompare.FormatLaunches(n.Launches)+"  "+sanitize.String(n.Metric)+
			" "+experiments.Chrome(scompare.FormatNoise(n.Spread))+" ("+scompare.FormatValue(n.Lo, scompare.UnitTokS)+" to "+scompare.FormatValue(n.Hi, scompare.UnitTokS)+")", iw))
	}
	return out
}

// firstOf is the first of ss that is not "".
func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
