package bisect

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	sbisect "github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// NoBisectText is the panel's body before any bisect.
const NoBisectText = "no bisect yet: b in a compare view (x, then c) or I on a reflog entry of the git panel (g) starts one"

// wideAt is the width from which the rows show the interval in full and
// the subjects at length.
const wideAt = 120

// Row is one tested commit of the evidence table, its cells plain and
// sanitised.
type Row struct {
	Commit   *sbisect.Commit
	Short    string // 7 hex digits, or git's abbreviation
	Tag      string // "good", "bad" for the endpoints, "culprit" at the end; "" else
	Subject  string
	Launches string // "3", "2+1 failed" (wide) or "2+1f"
	Median   string // "82.3"; "-" without a sample
	CI       string // "+-1%" (compact) or "[81.9, 82.9]"; "?" unbounded
	Delta    string // "-8.1%" against the good endpoint's median; "" for good itself
	Verdict  string // "good", "bad", "unknown", "between", "mixed", "skipped"
	P        string // "0.002"; "" when no test ran
}

// Rows is the evidence table of st, in range order: every commit with a
// launch (sample or failure), the endpoints first and last; wide says the
// CI is written as an interval rather than its half-width. culprit tags
// its commit.
func Rows(st *sbisect.State, wide bool, culprit string) []Row {
	if st == nil {
		return nil
	}
	cs := st.Commits()
	var good float64
	if len(cs) > 0 && len(cs[0].Samples) > 0 {
		good = ledger.Summarize(cs[0].Samples).Median
	}
	var out []Row
	for i, c := range cs {
		if len(c.Samples) == 0 && len(c.Failures) == 0 {
			continue
		}
		r := Row{Commit: c, Short: shortOf(c.BisectCommit), Subject: sanitize.Name(c.Subject), Median: "-", Verdict: string(c.Verdict)}
		switch {
		case c.ID == culprit && culprit != "":
			r.Tag = "culprit"
		case i == 0:
			r.Tag = "good"
		case i == len(cs)-1:
			r.Tag = "bad"
		}
		r.Launches = strconv.Itoa(len(c.Samples))
		if n := len(c.Failures); n > 0 && wide {
			r.Launches += "+" + strconv.Itoa(n) + " failed"
		} else if n > 0 {
			r.Launches += "+" + strconv.Itoa(n) + "f"
		}
		if len(c.Samples) > 0 {
			s := ledger.Summarize(c.Samples)
			r.Median = report.FormatNum(s.Median)
			r.CI = ciText(s, wide)
			if i > 0 && good > 0 {
				r.Delta = fmt.Sprintf("%+.1f%%", (s.Median-good)/good*100)
			}
		}
		if r.Verdict == "" {
			r.Verdict = "-"
		}
		if c.P > 0 {
			r.P = pText(c.P)
		}
		out = append(out, r)
	}
	return out
}

// ciText is s's 95 % interval: its half-width ("+-1%"; "?" with too few
// samples: benchmath needs 6 for a finite one) or, wide, the interval
// ("[81.9, 82.9]", "?" for a side benchmath leaves unbounded). ASCII
// only: ± and ∞ are of ambiguous width in terminals.
func ciText(s ledger.Summary, wide bool) string {
	if !wide {
		if s.Lo == nil || s.Hi == nil {
			return "?"
		}
		return "+-" + s.PctRange()
	}
	side := func(v *float64) string {
		if v == nil {
			return "?"
		}
		return report.FormatNum(*v)
	}
	return "[" + side(s.Lo) + ", " + side(s.Hi) + "]"
}

// pText is a p-value in three significant digits, "<0.001" below.
func pText(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'g', 3, 64)
}

// shortOf is c's short id, sanitised.
func shortOf(c event.BisectCommit) string {
	if c.Short != "" {
		return sanitize.Name(c.Short)
	}
	return git.ShortID(sanitize.Name(c.ID))
}

// short is the short id of the range's commit id, else id's first 7.
func (p *Panel) short(id string) string {
	if p.state != nil {
		if c := p.state.Commit(id); c != nil {
			return shortOf(c.BisectCommit)
		}
	}
	for _, c := range p.start.Commits {
		if c.ID == id {
			return shortOf(c)
		}
	}
	return git.ShortID(sanitize.Name(id))
}

// commit is the range's commit of full id, nil when it is not listed.
func (p *Panel) commit(id string) *event.BisectCommit {
	for i := range p.start.Commits {
		if p.start.Commits[i].ID == id {
			return &p.start.Commits[i]
		}
	}
	return nil
}

// culpritDetail is "Dev <dev@example.com>, 2025-10-22 02:27, touches
// fused_moe.py, pynccl.py +3 more", sanitised; "" when nothing is known.
func culpritDetail(c event.BisectCommit) string {
	var parts []string
	if a := sanitize.Name(c.Author); a != "" {
		parts = append(parts, a)
	}
	if !c.Date.IsZero() {
		parts = append(parts, c.Date.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if len(c.Files) > 0 || c.FilesTotal > 0 {
		parts = append(parts, "touches "+style.BaseNames(sanitize.Names(c.Files), c.FilesTotal, 3))
	}
	return strings.Join(parts, ", ")
}

// subject is the range's commit id's subject, sanitised; "" unknown.
func (p *Panel) subject(id string) string {
	for _, c := range p.start.Commits {
		if c.ID == id {
			return sanitize.Name(c.Subject)
		}
	}
	return ""
}

// View implements component.Component: the title, what the bisect is
// doing (or how it ended), then the evidence table, scrolled.
func (p *Panel) View(lines []string, st *style.Styles) []string {
	w, h := p.w, p.h
	if h <= 0 {
		return lines
	}
	lines = append(lines, p.title(st, w))
	bh := h - 1
	p.height = bh
	body := p.body(st, w)
	p.top = style.Clamp(p.top, 0, max(len(body)-bh, 0))
	for i := p.top; i < p.top+bh; i++ {
		if i < len(body) {
			lines = append(lines, style.AnsiTruncate(body[i], w))
		} else {
			lines = append(lines, "")
		}
	}
	return lines
}

// title is "bisect b1  a6d51c0..65b09bf  64 commits  tok/s  running".
func (p *Panel) title(st *style.Styles, w int) string {
	type part = component.TitlePart
	if p.start == nil {
		return component.TitleRule(st, w, "bisect", "", nil)
	}
	s := p.start
	c := s.Commits
	var tail []part
	if len(c) >= 2 {
		tail = append(tail, part{Text: "  " + shortOf(c[0]) + ".." + shortOf(c[len(c)-1]), Tone: st.Text},
			part{Text: "  " + style.Plural(len(c), "commit"), Tone: st.Dim})
	}
	metric := sanitize.Name(s.Metric)
	if metric == "" {
		metric = "tok/s"
	}
	if s.Lower {
		metric += " (lower is better)"
	}
	tail = append(tail, part{Text: "  " + metric, Tone: st.Dim})
	switch {
	case p.end == nil:
		tail = append(tail, part{Text: "  running", Tone: st.Warn})
	default:
		tail = append(tail, part{Text: "  " + sanitize.Name(p.end.Outcome), Tone: outcomeTone(st, p.end.Outcome)})
	}
	return component.TitleRule(st, w, "bisect ", sanitize.Name(s.ID), tail)
}

// outcomeTone is the tone an outcome is written in.
func outcomeTone(st *style.Styles, o string) style.Tone {
	switch o {
	case event.BisectCulprit:
		return st.OK
	case event.BisectFailed:
		return st.Crit
	}
	return st.Warn
}

// body is every line under the title, styled.
func (p *Panel) body(st *style.Styles, w int) []string {
	var out []string
	if p.err != "" {
		out = append(out, st.Crit.Render(style.Truncate("bisect failed: "+p.err, w)))
	}
	if p.start == nil {
		return append(out, st.Dim.Render(style.Truncate(NoBisectText, w)))
	}
	if p.foldErr != "" {
		out = append(out, st.Crit.Render(style.Truncate("the records do not fold: "+p.foldErr, w)))
	}
	if p.end != nil {
		out = append(out, p.outcome(st, w)...)
	} else {
		out = append(out, st.Text.Render(style.Truncate(p.progress(w), w)))
	}
	culprit := ""
	if p.end != nil {
		culprit = p.end.Culprit
	}
	wide := w >= wideAt
	rows := Rows(p.state, wide, culprit)
	if len(rows) == 0 {
		return append(out, st.Dim.Render(style.Truncate("no launch measured yet", w)))
	}
	return append(out, table(st, w, wide, rows)...)
}

// progress is the running bisect's line: "12 left  65b09bf launch 2:
// measuring 7/10  ETA 4m10s  3m12s in".
func (p *Panel) progress(w int) string {
	var parts []string
	if p.state != nil {
		parts = append(parts, strconv.Itoa(p.state.Left())+" left")
	}
	if pr := p.prog; p.hasProg {
		s := ""
		if pr.Commit != "" {
			s = p.short(pr.Commit) + " "
		}
		if pr.Launch > 0 {
			s += "launch " + strconv.Itoa(pr.Launch) + ": "
		}
		s += sanitize.Name(pr.Phase)
		if pr.Need > 0 {
			s += " " + strconv.Itoa(pr.Samples) + "/" + strconv.Itoa(pr.Need)
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "waiting for the next launch")
	}
	parts = append(parts, p.eta())
	if a := style.Age(p.now(), p.startAt); a != "" && w >= 60 {
		parts = append(parts, a+" in")
	}
	return strings.Join(parts, "  ")
}

// eta is "ETA 6m00s": the driver's (BisectProgress.ETA), else the
// launches the decision procedure still expects times their mean wall
// time so far ("ETA ~4m30s"), else "ETA unknown".
func (p *Panel) eta() string {
	if p.hasProg && p.prog.ETA > 0 {
		return "ETA " + style.ShortDur(p.prog.ETA.Round(time.Second))
	}
	if p.state != nil {
		if n, mean := p.state.LaunchesLeft(), p.MeanLaunch(); n > 0 && mean > 0 {
			return "ETA ~" + style.ShortDur((time.Duration(n) * mean).Round(time.Second))
		}
	}
	return "ETA unknown"
}

// Banners is the line under the header while a bisect runs and the panel
// is closed: "bisect b1: 7 left, 3207427 launch 3: measuring 7/10, ETA
// 6m00s  (i shows it)"; none otherwise.
func (p *Panel) Banners() []component.Banner {
	if !p.Running() || p.Open {
		return nil
	}
	s := "bisect " + sanitize.Name(p.start.ID) + ": "
	if p.state != nil {
		s += strconv.Itoa(p.state.Left()) + " left, "
	}
	if pr := p.prog; p.hasProg {
		if pr.Commit != "" {
			s += p.short(pr.Commit) + " "
		}
		s += sanitize.Name(pr.Phase)
		if pr.Need > 0 {
			s += " " + strconv.Itoa(pr.Samples) + "/" + strconv.Itoa(pr.Need)
		}
		s += ", "
	}
	s += p.eta()
	return []component.Banner{{Text: s + "  (i shows it)", Short: s, Tone: style.Warn}}
}

// outcome is the ended bisect's lines: what it found and why, then what
// the checkout was left at.
func (p *Panel) outcome(st *style.Styles, w int) []string {
	e := p.end
	tn := outcomeTone(st, e.Outcome)
	why := sanitize.FirstLine(e.Why)
	var head string
	switch e.Outcome {
	case event.BisectCulprit:
		head = "culprit " + p.short(e.Culprit)
		if s := p.subject(e.Culprit); s != "" {
			head += " " + s
		}
	case event.BisectNoDifference:
		head = "no difference: the endpoints do not differ"
	case event.BisectNotSingleStep:
		head = "not a single step"
		if len(e.Suspects) > 0 {
			var ss []string
			for _, id := range e.Suspects {
				ss = append(ss, p.short(id))
			}
			head += ": suspects " + strings.Join(ss, ", ")
		}
	case event.BisectStopped, event.BisectCancelled:
		head = sanitize.Name(e.Outcome) + " (flightdeck bisect --resume continues it)"
	default:
		head = sanitize.Name(e.Outcome)
	}
	var out []string
	for _, l := range style.Wrap(head, w) {
		out = append(out, tn.Render(l))
	}
	if e.Outcome == event.BisectCulprit {
		if c := p.commit(e.Culprit); c != nil {
			if s := culpritDetail(*c); s != "" {
				out = append(out, st.Dim.Render(style.Truncate(s, w)))
			}
		}
	}
	if why != "" {
		for _, l := range style.Wrap(why, w) {
			out = append(out, st.Text.Render(l))
		}
	}
	if r := sanitize.FirstLine(e.Restored); r != "" {
		out = append(out, st.Dim.Render(style.Truncate("restored: "+r, w)))
	}
	return out
}

// table is the evidence table's header and rows, fitted to w: the subject
// takes what the other columns leave (none below 8 cells).
func table(st *style.Styles, w int, wide bool, rows []Row) []string {
	hdr := Row{Short: "commit", Launches: "n", Median: "median", CI: "CI", Delta: "vs good", Verdict: "verdict", P: "p"}
	if wide {
		hdr.CI = "95% CI"
	}
	cells := func(r Row) []string { return []string{r.Short, r.Launches, r.Median, r.CI, r.Delta, r.Verdict, r.P} }
	widths := make([]int, 7)
	for _, r := range append([]Row{hdr}, rows...) {
		for i, c := range cells(r) {
			widths[i] = max(widths[i], style.Width(c))
		}
	}
	fixed := 0
	for _, cw := range widths {
		fixed += cw + 1
	}
	tagW := 8 // "culprit "
	subjW := w - fixed - tagW - 1
	if subjW < 8 {
		subjW = 0
	}
	if wide {
		subjW = min(subjW, 72)
	}
	type cell struct {
		s     string
		w     int
		right bool
		t     style.Tone
	}
	line := func(r Row, head bool) string {
		var cs []cell
		put := func(s string, cw int, right bool, t style.Tone) {
			if cw > 0 {
				cs = append(cs, cell{style.Truncate(s, cw), cw, right, t})
			}
		}
		tone := st.Text
		vt := st.Text
		if head {
			tone, vt = st.Dim, st.Dim
		} else if r.Commit != nil {
			vt = verdictTone(st, r.Commit.Verdict)
		}
		tag := r.Tag
		if head {
			tag = ""
		}
		put(r.Short, widths[0], false, tone)
		put(tag, tagW-1, false, tagTone(st, tag))
		put(r.Subject, subjW, false, tone)
		put(r.Launches, widths[1], true, tone)
		put(r.Median, widths[2], true, tone)
		put(r.CI, widths[3], false, st.Dim)
		put(r.Delta, widths[4], true, tone)
		put(r.Verdict, widths[5], false, vt)
		put(r.P, widths[6], true, tone)
		last := len(cs) - 1
		for last > 0 && cs[last].s == "" {
			last--
		}
		var b strings.Builder
		for i, c := range cs[:last+1] {
			s := c.s
			switch {
			case c.right:
				s = style.PadLeft(s, c.w)
			case i < last:
				s = style.PadRight(s, c.w)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(c.t.Render(s))
		}
		return b.String()
	}
	out := []string{line(hdr, true)}
	for _, r := range rows {
		out = append(out, line(r, false))
	}
	return out
}

// tagTone is an endpoint's or the culprit's tag tone.
func tagTone(st *style.Styles, tag string) style.Tone {
	switch tag {
	case "good":
		return st.OK
	case "bad", "culprit":
		return st.Crit
	}
	return st.Dim
}

// EstimateText is the start dialog's estimate: steps and launches as
// sessions/bisect.Estimate gives them for the range, each launch taking
// mean (0: unknown): "~6 steps, ~20 launches, ~1h40m00s at 5m00s a
// launch"; launches ≤ 0 says there is no estimate.
func EstimateText(steps, launches int, mean time.Duration) string {
	if launches <= 0 {
		return "launches and time: unknown (no estimate for this range)"
	}
	s := "~" + style.Plural(steps, "step") + ", ~" + style.Plural(launches, "launch")
	if mean <= 0 {
		return s + ", time unknown (no launch measured yet)"
	}
	total := time.Duration(math.Round(float64(mean) * float64(launches)))
	return s + ", ~" + style.ShortDur(total) + " at " + style.ShortDur(mean) + " a launch"
}
