package experiments

import (
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// expRow is one experiment's row, its cells plain and sanitised, or an
// earlier session's row (session set: its text, the other cells empty).
type expRow struct {
	id, name, commit, profile, rate, n, delta, state string
	stTone                                           style.Token
	exp                                              string // the experiment's id (marks); "" for a session row
	session                                          string
}

// rows are the panel's rows (items) and the baseline's id: the one marked
// with B, else the first experiment with a result ("" when none has
// one). An earlier session's experiment shows its id within the session
// ("e3", indented); the detail names it in full.
func (p *Panel) rows() ([]expRow, string) {
	base, baseID := p.implicitBase()
	if b := p.baseline(); b != nil {
		base, baseID = 0, b.ID
		if r := p.resultOf(b); r.N > 0 && r.Median > 0 {
			base = r.Median
		}
	} else if m := p.markedBaseline(); m != "" {
		base, baseID = 0, m // marked, not at hand: no deltas
	}
	baseID = sanitize.String(baseID)
	its := p.items()
	rows := make([]expRow, len(its))
	for i, it := range its {
		e := p.expAt(it)
		if e == nil {
			g := &p.hist[it.group]
			fold := "+ "
			if g.open {
				fold = "- "
			}
			rows[i] = expRow{session: fold + g.sessionTitle()}
			continue
		}
		r := p.resultOf(e)
		shown := sanitize.String(e.ID)
		if it.group >= 0 {
			_, id, _ := strings.Cut(shown, ":")
			if id == "" {
				id = shown
			}
			shown = "  " + id
		}
		row := expRow{exp: e.ID, id: shown, name: sanitize.String(e.Name), commit: "-", profile: "-", rate: "-", n: strconv.Itoa(r.N), delta: "-"}
		if fp := e.Fingerprint; fp != nil && fp.Git != nil && fp.Git.Head != "" {
			row.commit = git.ShortID(sanitize.String(fp.Git.Head))
			if fp.Git.PatchBytes > 0 || len(fp.Git.Untracked) > 0 {
				row.commit += "+" // dirty
			}
		}
		if prof := expProfile(e); prof != "" {
			row.profile = prof
		}
		if r.N > 0 {
			row.rate = MedianText(r) + " " + IntervalText(r)
			switch {
			case sanitize.String(e.ID) == baseID:
				row.delta = "base"
			case base > 0:
				row.delta = DeltaText(r.Median, base)
			}
		}
		if e.Open() {
			row.state, row.stTone = "open", style.OK
		} else {
			row.state, row.stTone = EndedHow(e.EndedBy), style.Dim
			switch e.EndedBy {
			case event.TriggerExit:
				row.stTone = style.Warn
			case "": // a start came with no end before it: the cockpit crashed
				row.state, row.stTone = "end lost", style.Warn
			}
		}
		rows[i] = row
	}
	return rows, baseID
}

// expProfile is the env profile of an experiment's launch, sanitised.
func expProfile(e *ledger.Experiment) string {
	switch {
	case e.Launch != nil && e.Launch.Profile != "":
		return sanitize.String(e.Launch.Profile)
	case e.Fingerprint != nil && e.Fingerprint.Launch != nil:
		return sanitize.String(e.Fingerprint.Launch.Profile)
	}
	return ""
}

// SetSize gives the panel w cells by h lines.
func (p *Panel) SetSize(w, h int) { p.w, p.h = w, h }

// View draws the panel after lines at SetSize's size: its title, the rows
// (a window around the cursor) and the selected experiment's details.
func (p *Panel) View(lines []string, st *style.Styles) []string {
	w, h := p.w, p.h
	if h <= 0 {
		return lines
	}
	rows, baseID := p.rows()
	baseShown := shortQualified(baseID) // "11-30:e1", as the header names it
	if p.baseline() == nil && p.markedBaseline() != "" {
		baseShown = baseID + ", not at hand" // an earlier journal not loaded: named in full, to be found
	}
	bh := h - 1
	// The rows get up to half the area (all of them when they fit), the
	// details the rest; the window keeps the cursor in view.
	vis, cur := 0, p.sel()
	if len(rows) > 0 && bh > 0 {
		vis = min(len(rows), max(1, bh/2-1))
		if len(rows)+1 <= bh/2 {
			vis = len(rows)
		}
		p.height = vis
		p.top = style.Clamp(p.top, 0, len(rows)-vis)
		if cur < p.top {
			p.top = cur
		}
		if cur >= p.top+vis {
			p.top = cur - vis + 1
		}
	}
	var tail []component.TitlePart
	if n := len(rows); n > 0 {
		own := len(p.ledger.Experiments())
		he, hs := p.HistoryCount()
		count := "  " + style.Plural(own, "experiment")
		switch {
		case vis > 0 && vis < n && hs == 0:
			// Rows above or below the window: which ones show.
			count = "  " + strconv.Itoa(p.top+1) + "-" + strconv.Itoa(p.top+vis) + "/" + style.Plural(n, "experiment")
		case vis > 0 && vis < n:
			count = "  rows " + strconv.Itoa(p.top+1) + "-" + strconv.Itoa(p.top+vis) + "/" + strconv.Itoa(n) + ": " + style.Plural(own, "experiment")
		}
		if hs > 0 {
			count += ", " + strconv.Itoa(he) + " earlier"
		}
		if p.histMore > 0 {
			count += ", +" + strconv.Itoa(p.histMore) + " older" // not loaded: journal ls --host lists them
		}
		if n := len(p.histErrors); n > 0 {
			count += ", " + strconv.Itoa(n) + " unreadable"
		}
		tail = append(tail, component.TitlePart{Text: count, Tone: st.Dim})
		if cur := p.ledger.Current(); cur != nil {
			tail = append(tail, component.TitlePart{Text: "  " + sanitize.String(cur.ID) + " open", Tone: st.OK})
		}
		switch {
		case p.markedBaseline() != "":
			tail = append(tail, component.TitlePart{Text: "  delta vs " + baseShown + " (baseline)", Tone: st.Dim})
		case baseID != "":
			tail = append(tail, component.TitlePart{Text: "  delta vs " + baseID, Tone: st.Dim})
		}
		if n := len(p.marked); n > 0 {
			tail = append(tail, component.TitlePart{Text: "  " + strconv.Itoa(n) + " marked", Tone: st.Accent})
		}
	}
	lines = append(lines, component.TitleRule(st, w, "experiments", "", tail))
	if bh <= 0 {
		return lines
	}
	var body []string
	if len(rows) == 0 {
		why := "no experiments yet: e starts one (a launch from here starts one too)"
		switch {
		case p.Replay:
			why = "no experiments recorded by this point of the journal"
		case p.watching():
			why = "no experiments in this cockpit's journal: the driving cockpit records them in its own (flightdeck follow shows it)"
		case p.Ctl == nil:
			why = NoJournalText
		}
		body = append(body, st.Dim.Render(style.Truncate(why, w)))
	} else {
		body = append(body, p.table(st, rows, p.top, vis, cur, w)...)
		body = append(body, "")
		if it := p.items()[cur]; it.session() {
			body = append(body, p.sessionDetail(st, &p.hist[it.group], w)...)
		} else {
			body = append(body, p.detail(st, p.expAt(it), w)...)
		}
	}
	for i := range bh {
		if i < len(body) {
			lines = append(lines, body[i])
		} else {
			lines = append(lines, "")
		}
	}
	return lines
}

// table is the column header and rows top..top+vis, the cursor's row
// marked. Columns that do not fit go: profile, then commit, then n.
func (p *Panel) table(st *style.Styles, rows []expRow, top, vis, cur, w int) []string {
	head := expRow{id: "id", name: "name", commit: "commit", profile: "profile", rate: "tok/s [launch 95%]", n: "n", delta: "delta", state: "state"}
	width := func(f func(expRow) string) int {
		n := style.Width(f(head))
		for _, r := range rows {
			n = max(n, style.Width(f(r)))
		}
		return n
	}
	wid := width(func(r expRow) string { return r.id })
	wcommit := width(func(r expRow) string { return r.commit })
	wprof := min(width(func(r expRow) string { return r.profile }), 16)
	wrate := width(func(r expRow) string { return r.rate })
	wn := width(func(r expRow) string { return r.n })
	wdelta := width(func(r expRow) string { return r.delta })
	wstate := width(func(r expRow) string { return r.state })
	wname := min(width(func(r expRow) string { return r.name }), 40)
	showProf, showCommit, showN := true, true, true
	fixed := func() int {
		n := 2 + wid + 2 + 2 + wrate + 2 + wdelta + 2 + wstate // "> " id, name's gap, ...
		if showProf {
			n += wprof + 2
		}
		if showCommit {
			n += wcommit + 2
		}
		if showN {
			n += wn + 2
		}
		return n
	}
	const minName = 12
	for _, drop := range []*bool{&showProf, &showCommit, &showN} {
		if w-fixed() >= min(wname, minName) {
			break
		}
		*drop = false
	}
	wname = max(min(wname, w-fixed()), 4)
	line := func(r expRow, mark string, tn style.Tone, stTone style.Tone) string {
		var b strings.Builder
		b.WriteString(mark)
		b.WriteString(tn.Render(style.PadRight(r.id, wid)) + "  ")
		name := r.name
		if style.Width(name) > wname {
			name = style.Truncate(name, max(wname-3, 1)) + "..."
		}
		b.WriteString(tn.Render(style.PadRight(name, wname)) + "  ")
		if showCommit {
			b.WriteString(style.PadRight(r.commit, wcommit) + "  ")
		}
		if showProf {
			b.WriteString(style.PadRight(style.Truncate(r.profile, wprof), wprof) + "  ")
		}
		b.WriteString(style.PadRight(r.rate, wrate) + "  ")
		if showN {
			b.WriteString(style.Spaces(wn-style.Width(r.n)) + r.n + "  ")
		}
		b.WriteString(style.Spaces(wdelta-style.Width(r.delta)) + r.delta + "  ")
		b.WriteString(stTone.Render(r.state))
		return style.TruncateStyled(strings.TrimRight(b.String(), " "), w)
	}
	out := []string{line(head, "  ", st.Title, st.Title)}
	for i := top; i < top+vis && i < len(rows); i++ {
		// The cursor, then a "*" on the experiments marked with space.
		cursor, tn, mark := " ", st.Text, " "
		if i == cur {
			cursor, tn = st.Accent.Render(">"), st.Accent
		}
		if r := rows[i]; r.session != "" {
			if i != cur {
				tn = st.Dim
			}
			out = append(out, style.TruncateStyled(cursor+" "+tn.Render(style.Truncate(r.session, max(w-2, 1))), w))
			continue
		}
		if slices.Contains(p.marked, rows[i].exp) {
			mark = st.Accent.Render("*")
		}
		out = append(out, line(rows[i], cursor+mark, tn, st.Tone(rows[i].stTone)))
	}
	return out
}

// detailLabel is the width of the detail lines' label column.
const detailLabel = 12

// detail is the selected experiment's details: when and how it
// started and ended, hypothesis, conclusion, result, fingerprint summary
// and notes.
func (p *Panel) detail(st *style.Styles, e *ledger.Experiment, w int) []string {
	var out []string
	head := st.Accent.Render(style.Truncate(component.JoinWords(sanitize.String(e.ID), sanitize.String(e.Name)), w))
	when := "  started " + Clock(e.Started)
	if e.StartedBy != "" {
		when += " (" + sanitize.String(string(e.StartedBy)) + ")"
	}
	if e.Open() {
		if age := style.Ago(p.now(), e.Started); age != "" {
			when += ", open for " + age
		}
	} else {
		how := EndedHow(e.EndedBy)
		if how == "" {
			how = "end lost, closed"
		}
		when += ", " + how + " " + Clock(e.Ended)
		if d := e.Ended.Sub(e.Started); d >= 0 {
			when += " after " + style.ShortDur(d)
		}
	}
	out = append(out, style.TruncateStyled(head+st.Dim.Render(style.Truncate(when, w-style.Width(style.StripSGR(head)))), w))
	// fieldN wraps text beside its label onto up to maxLines lines (0:
	// all), the last one ending in "..." when more would follow.
	fieldN := func(label, text string, tn style.Tone, maxLines int) {
		if text == "" {
			return
		}
		lw := max(w-detailLabel, 8)
		ls := style.Wrap(text, lw)
		if maxLines > 0 && len(ls) > maxLines {
			ls = ls[:maxLines]
			ls[maxLines-1] = style.Truncate(ls[maxLines-1], max(lw-3, 1)) + "..."
		}
		for i, l := range ls {
			lab := ""
			if i == 0 {
				lab = label
			}
			out = append(out, style.TruncateStyled(st.Dim.Render(style.PadRight(lab, detailLabel))+tn.Render(l), w))
		}
	}
	field := func(label, text string, tn style.Tone) { fieldN(label, text, tn, 0) }
	cut := func(label, text string, tn style.Tone) {
		if text != "" {
			out = append(out, style.TruncateStyled(st.Dim.Render(style.PadRight(label, detailLabel))+tn.Render(style.Truncate(text, w-detailLabel)), w))
		}
	}
	field("hypothesis", sanitize.Typed(e.Hypothesis), st.Text)
	field("conclusion", sanitize.Typed(e.Conclusion), st.Text)
	r := p.resultOf(e)
	res := ResultText(r)
	warm := p.WarmingUp(e, r)
	if warm != "" {
		res = warm
	}
	if r.N > 0 {
		if r.Confidence > 0 && r.Lo != nil {
			res += " (" + strconv.FormatFloat(r.Confidence*100, 'f', 1, 64) + "% conf.)"
		}
		if r.Dropped > 0 {
			res += ", " + strconv.Itoa(r.Dropped) + " warm-up dropped"
		}
		if r.AcceptLength > 0 {
			res += ", accept length " + compare.FormatValue(r.AcceptLength, compare.UnitTokens)
		}
	}
	if e.Open() && warm == "" {
		res += " so far"
	}
	cut("tok/s", res, st.Text)
	if base := p.baseExp(); base != nil {
		if row := p.VerdictVs(base, e); row != nil {
			// The across-launch verdict, as compare and the reports give
			// it: the interval above is this launch's spread only.
			fieldN("verdict", "vs "+sanitize.String(shortQualified(base.ID))+": "+Chrome(row.VerdictText()), st.Tone(VerdictTone(row.Verdict, row.WithinNoise)), 2)
		}
	}
	for _, wn := range r.Warnings {
		if warm == "" { // "no samples": the warm-up says why
			cut("", "warning: "+sanitize.String(wn), st.Warn)
		}
	}
	for i := range e.Bench {
		lab := ""
		if i == 0 {
			lab = "bench"
		}
		d := &e.Bench[i]
		tn := st.Text
		if d.Result == nil {
			tn = st.Crit
		} else if d.Result.Failed > 0 || d.Result.Cancelled {
			tn = st.Warn
		}
		fieldN(lab, sanitize.String(report.BenchRunText(*d)), tn, 2) // two lines: the counts come after the latencies
	}
	if r := e.Repeat; r != nil {
		cut("repeat", "launch "+strconv.Itoa(r.I)+" of "+strconv.Itoa(r.N)+" of "+sanitize.String(r.Series), st.Text)
	}
	fp := e.Fingerprint
	launch := e.Launch
	if fp != nil && fp.Launch != nil {
		launch = fp.Launch
	}
	if launch != nil {
		l := sanitize.String(launch.Preset) + component.Paren(profileWord(sanitize.String(launch.Profile)))
		cmd := ""
		if fp != nil {
			cmd = sanitize.String(fp.CommandLine)
		}
		if cmd == "" {
			// Before the fingerprint: redacted here too (a journal written
			// elsewhere may hold a launch that is not).
			cmd = sanitize.String(server.CommandLine(server.RedactLaunch(*launch)))
		}
		if cmd != "" {
			l += ": " + cmd
		}
		cut("launch", l, st.Text)
	}
	switch {
	case fp == nil && e.Open():
		cut("fingerprint", "capturing ...", st.Dim)
	case fp == nil:
		cut("fingerprint", "none recorded", st.Dim)
	default:
		cut("git", gitSummary(fp.Git), st.Text)
		cut("versions", versionsSummary(fp.Versions), st.Text)
		cut("gpus", gpuSummary(fp.GPUs), st.Text)
		cut("host", component.JoinWords(sanitize.String(fp.Hostname), prefixed("kernel ", sanitize.String(fp.Kernel))), st.Text)
		if len(fp.Errors) > 0 {
			errs := sanitize.All(fp.Errors)
			cut("errors", strings.Join(errs, "; "), st.Warn)
		}
	}
	for i, n := range e.Notes {
		lab := ""
		if i == 0 {
			lab = "notes"
		}
		field(lab, Clock(n.At)+"  "+sanitize.Typed(n.Text), st.Text)
	}
	return out
}

// Footer is the cockpit's footer while the panel has the screen, width
// cells at most: the cockpit's help key, "up/down select", the panel's
// keys, the cockpit's experiment and note keys, then its own toggle key
// with esc ("x/esc close") and quit, which always show; the others show
// while they fit, in that order. Keys that cannot act are dimmed.
func (p *Panel) Footer(st *style.Styles, width int, help, experiment, note, toggle, quit *component.Binding) string {
	type item struct {
		key, desc string
		b         *component.Binding
	}
	of := func(b *component.Binding) item { return item{b.Help().Key, b.Help().Desc, b} }
	items := []item{of(help), {"up/down", "select", nil}, of(&p.MarkKey), of(&p.CompareKey), of(&p.BaselineKey),
		of(&p.ConcludeKey), of(experiment), of(note)}
	if len(p.hist) > 0 {
		items = slices.Insert(items, 5, of(&p.FoldKey))
	}
	last := []item{{toggle.Help().Key + "/esc", "close", nil}, of(quit)}
	used := -2
	for _, it := range last {
		used += component.HintWidth(it.key, it.desc)
	}
	hint := func(it item) string {
		kt := st.Key
		if it.b != nil && it.b.Why() != "" {
			kt = st.Dim
		}
		return kt.Render(it.key) + " " + st.Dim.Render(it.desc)
	}
	var b strings.Builder
	for _, it := range items {
		pw := component.HintWidth(it.key, it.desc)
		if used+pw > width {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString(hint(it))
		used += pw
	}
	for _, it := range last {
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString(hint(it))
	}
	return style.TruncateStyled(b.String(), width)
}
